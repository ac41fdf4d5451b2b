"""A forced-choice run without the app: the command line's ``run forced-choice SPEC …``.

:func:`prepare` puts the command line's values in the options' terms: the apps' seed (0) when none is given, the
text of ``--template-file`` as ``template_text`` (read here, checked by the options), ``--no-cache`` as
``use_cache=False``. It may be applied twice (the command line applies it, then :func:`headless` does).
:func:`cost` is what the command line prints before the run (and asks to confirm for a large run at a hosted
endpoint, :mod:`.cost`). :func:`headless` checks everything with :class:`~.options.ForcedChoiceOptions`, runs
:func:`~.run.run` (the response cache in ``$BIASTEST_DATA_DIR/chat-responses``) and says what to record: the options
(the endpoint without credentials, the key as ``***``), a headline, the CSV/JSON export, and notices (the
backend's stop message, the refusal and unparseable counts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from biastest.errors import UsageError
from biastest.measures.base import Headless, Inputs
from biastest.measures.chat_common import ChatModelOptions
from biastest.measures.forced_choice.cost import Cost, estimate_cost
from biastest.measures.forced_choice.options import ForcedChoiceOptions
from biastest.measures.forced_choice.report import export_files, readings
from biastest.measures.forced_choice.result import ForcedChoiceResult
from biastest.measures.forced_choice.run import ForcedChoiceItems, run
from biastest.measures.forced_choice.templates import MAX_TEMPLATE_CHARS
from biastest.options import DEFAULT_SEED
from biastest.remote import mask_secret, safe_base_url

__all__ = ["CLI_FLAGS", "DEFAULT_SEED", "MSG_TEMPLATE_FILE", "cost", "headless", "prepare", "recorded_options"]

#: The seed of the apps' seed boxes.
MSG_TEMPLATE_FILE = "The prompt template file '{path}' cannot be read ({problem})."

#: The command line's flags that are not options (read by :func:`prepare`): (flag, argparse keywords).
CLI_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--template-file", {"metavar": "FILE", "help": "your own prompt template (UTF-8 text: system message, a line "
                         "---, user message with {option_a} and {option_b}); recorded verbatim"}),
    ("--no-cache", {"action": "store_true", "default": None,
                    "help": "ask every question again (neither read nor write the response cache)"}),
)


def _read_template(path: str) -> str:
    p = Path(path).expanduser()
    try:
        if p.stat().st_size > 4 * MAX_TEMPLATE_CHARS:
            raise UsageError(MSG_TEMPLATE_FILE.format(path=path, problem="too large"))
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(MSG_TEMPLATE_FILE.format(path=path, problem=type(exc).__name__)) from None


def prepare(values: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's values in the options' terms (see the module docstring)."""
    given = {k: v for k, v in values.items() if v is not None}
    given.setdefault("seed", DEFAULT_SEED)
    if "model_id" in given:
        given["model_id"] = str(given["model_id"]).strip()
    path = given.pop("template_file", None)
    if path is not None:
        given["template_text"] = _read_template(str(path))
    if given.pop("no_cache", None):
        given["use_cache"] = False
    return given


def cost(values: Mapping[str, Any], inputs: Inputs) -> Cost:
    """The run's size before it starts (:func:`~.cost.estimate_cost`) from the command line's values."""
    return estimate_cost(ForcedChoiceOptions.parse(prepare(values)), inputs.pairs)


def recorded_options(options: ChatModelOptions, api_key: str | None) -> dict[str, Any]:
    """The options as a run's document records them: the endpoint without credentials and the key as ``***``, or
    without the endpoint's settings for a model in this process."""
    recorded = options.dump()
    if options.endpoint:
        for name in ("device", "dtype", "revision"):
            recorded.pop(name, None)
        recorded.update({"endpoint": safe_base_url(options.endpoint), "api_key": mask_secret(api_key)})
    else:
        for name in ("endpoint", "concurrency", "max_requests", "time_limit", "request_timeout"):
            recorded.pop(name, None)
    return recorded


def headline(result: ForcedChoiceResult, where: str = "") -> str:
    """One line for the terminal."""
    s = result.share
    if s is None:
        share = "no answer chose a sentence"
    else:
        interval = f"{s.low:.1f}–{s.high:.1f}" if s.interval_shown else "no interval"
        share = f"stereotyped-choice share {s.estimate:.1f}% ({interval}, {s.n_clusters} clusters by {s.cluster_by})"
    pos, ref = result.position_bias, result.refusal_rate
    extra = f"; first option chosen {pos.estimate:.1f}%" if pos.estimate is not None else ""
    extra += f"; refused {ref.estimate:.1f}%" if ref.estimate is not None else ""
    return (f"Forced choice: {share}{extra}; {result.n_items} pairs × 2 orders × {result.samples} asked of "
            f"{result.model_id}{f' at {where}' if where else ''} (template {result.template['name']}, "
            f"seed {result.seed}).")


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the forced choice on ``inputs.pairs`` with the options ``values``; see the module docstring."""
    options = ForcedChoiceOptions.parse(prepare(values))
    where = safe_base_url(options.endpoint) if options.endpoint else ""
    result = run(options, ForcedChoiceItems(list(inputs.pairs), inputs.spec), progress=progress, api_key=api_key)
    said = readings(result)  # the verdict, the share (the headline says it), then the rates
    notices = [*([result.stop_message] if result.stop_message else []), said[0], *said[2:]]
    return Headless("forced-choice", recorded_options(options, api_key), result, headline(result, where),
                    lambda: export_files(result), notices=notices)
