"""A 2AFC run of a chat model without the app: the command line's ``run twoafc-chat SPEC --model … [--endpoint …]``.

The command line's values are put in the options' terms by the forced-choice measure's
:func:`~biastest.measures.forced_choice.headless.prepare` (the apps' seed 0 when none is given, ``--template-file``
read as ``template_text``, ``--no-cache`` as ``use_cache=False``); :func:`cost` is what the command line prints before
the run (and asks to confirm for a large run at a hosted endpoint); :func:`headless` runs :func:`~.run.run` and
says what to record (the options without credentials, a headline, the CSV/JSON export, notices).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from biastest.measures.base import Headless, Inputs
from biastest.measures.chat_twoafc.cost import estimate_cost
from biastest.measures.chat_twoafc.options import TwoAFCChatOptions
from biastest.measures.chat_twoafc.report import export_files, readings
from biastest.measures.chat_twoafc.result import TwoAFCChatResult
from biastest.measures.chat_twoafc.run import TwoAFCChatItems, run
from biastest.measures.forced_choice.cost import Cost
from biastest.measures.forced_choice.headless import prepare, recorded_options
from biastest.remote import safe_base_url

__all__ = ["CLI_FLAGS", "cost", "headless", "headline", "prepare"]

#: The command line's flags that are not options (read by :func:`prepare`): (flag, argparse keywords).
CLI_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--template-file", {"metavar": "FILE", "help": "your own question template (UTF-8 text: system message, a "
                         "line ---, user message with {target}, {option_a} and {option_b}); recorded verbatim"}),
    ("--no-cache", {"action": "store_true", "default": None,
                    "help": "ask every question again (neither read nor write the response cache)"}),
)


def cost(values: Mapping[str, Any], inputs: Inputs) -> Cost:
    """The run's size before it starts (:func:`~.cost.estimate_cost`) from the command line's values."""
    return estimate_cost(TwoAFCChatOptions.parse(prepare(values)), inputs.spec)


def headline(result: TwoAFCChatResult, where: str = "") -> str:
    """One line for the terminal."""
    lab, r = result.labour, result.p_cue1_rate
    if lab is None:
        corr = "no target in the labour table"
    elif lab.pearson_r is None:
        corr = f"correlation with % women not defined ({lab.reason})"
    else:
        interval = ("no interval" if lab.pearson_low is None
                    else f"{lab.confidence:.0%} interval {lab.pearson_low:.3f}–{lab.pearson_high:.3f}")
        corr = f"Pearson r with % women {lab.pearson_r:.3f} ({interval}, n = {lab.n})"
    share = "no answer chose a cue" if r.estimate is None else f"P({result.cue1_name} cue) {r.estimate:.1f}% overall"
    pos = result.position_bias.estimate
    extra = f"; first option chosen {pos:.1f}%" if pos is not None else ""
    return (f"2AFC of a chat model: {corr}; {share}{extra}; {result.n_targets} targets × {len(result.cue_pairs)} "
            f"cue pairs × 2 orders × {result.samples} asked of {result.model_id}{f' at {where}' if where else ''} "
            f"(template {result.template['name']}, seed {result.seed}).")


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the 2AFC questions on ``inputs.spec`` with the options ``values``; see the module docstring."""
    options = TwoAFCChatOptions.parse(prepare(values))
    where = safe_base_url(options.endpoint) if options.endpoint else ""
    result = run(options, TwoAFCChatItems(inputs.spec), progress=progress, api_key=api_key)
    said = readings(result)  # the verdict, the share (the headline says it), then the rates
    notices = [*([result.stop_message] if result.stop_message else []), said[0], *said[2:]]
    return Headless("twoafc-chat", recorded_options(options, api_key), result, headline(result, where),
                    lambda: export_files(result), notices=notices)
