"""A classifier 2AFC without an app: the command line's ``run classifier-2afc SPEC --model …``.

:func:`prepare` reads ``--templates FILE`` into ``templates_text`` (UTF-8, bounded; checked by the options) and may
be applied twice; :func:`headless` checks the options, runs :func:`~.run.run` and says what to record (the
endpoint without credentials, the key as ``***``), the headline, the export and the notices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from biastest.errors import UsageError
from biastest.measures.base import Headless, Inputs
from biastest.measures.classifier_2afc.options import Classifier2AFCOptions, ClassifierModelOptions
from biastest.measures.classifier_2afc.report import export_files, headline
from biastest.measures.classifier_2afc.run import Classifier2AFCItems, run
from biastest.measures.classifier_2afc.templates import MAX_TEMPLATE_CHARS, MAX_TEMPLATES
from biastest.remote import mask_secret, safe_base_url

__all__ = ["CLI_FLAGS", "MSG_TEMPLATES_FILE", "headless", "prepare"]

MSG_TEMPLATES_FILE = "The templates file '{path}' cannot be read ({problem})."
_MAX_FILE_BYTES = 4 * MAX_TEMPLATES * MAX_TEMPLATE_CHARS

#: The command line's flags that are not options (read by :func:`prepare`).
CLI_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--templates", {"metavar": "FILE", "help": "your own templates (UTF-8 text, one a line, each with {person} "
                     "and at most one {word}; # starts a comment); recorded verbatim"}),
)


def _read(path: str) -> str:
    p = Path(path).expanduser()
    try:
        if p.stat().st_size > _MAX_FILE_BYTES:
            raise UsageError(MSG_TEMPLATES_FILE.format(path=path, problem="too large"))
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(MSG_TEMPLATES_FILE.format(path=path, problem=type(exc).__name__)) from None


def prepare(values: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's values in the options' terms (``--templates FILE`` read as ``templates_text``)."""
    given = {k: v for k, v in values.items() if v is not None}
    path = given.pop("templates", None)
    if path is not None:
        given["templates_text"] = _read(str(path))
    if "model_id" in given:
        given["model_id"] = str(given["model_id"]).strip()
    return given


def recorded_options(options: ClassifierModelOptions, api_key: str | None) -> dict[str, Any]:
    """The options as the run's document records them (the endpoint without credentials, the key masked)."""
    recorded = options.dump()
    if options.endpoint:
        for name in ("device", "dtype", "revision"):
            recorded.pop(name, None)
        recorded.update({"endpoint": safe_base_url(options.endpoint), "api_key": mask_secret(api_key)})
    else:
        for name in ("endpoint", "max_requests", "time_limit"):
            recorded.pop(name, None)
    return recorded


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the classifier 2AFC on ``inputs.spec`` with the options ``values``."""
    options = Classifier2AFCOptions.parse(prepare(values))
    result = run(options, Classifier2AFCItems(inputs.spec), progress=progress, api_key=api_key)
    notices = [result.stop_message] if result.stop_message else []
    if result.n_unscored:
        notices.append(f"{result.n_unscored} of {result.n_pairs} pairs were not scored; they are left out.")
    return Headless("classifier-2afc", recorded_options(options, api_key), result, headline(result),
                    lambda: export_files(result), notices=notices)
