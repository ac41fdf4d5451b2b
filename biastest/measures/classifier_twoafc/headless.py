"""A classifier's 2AFC on occupations without an app: the command line's ``run twoafc-classifier SPEC --model …``
(also ``run twoafc SPEC --model-kind classifier``).

The command line's values are put in the options' terms by the classifier 2AFC's
:func:`~biastest.measures.classifier_2afc.headless.prepare` (``--templates FILE`` read as ``templates_text``);
:func:`headless` checks the options, runs :func:`~.run.run` and says what to record (the endpoint without
credentials, the key as ``***``), the headline, the export and the notices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from biastest.measures.base import Headless, Inputs
from biastest.measures.classifier_2afc.headless import prepare, recorded_options
from biastest.measures.classifier_twoafc.options import TwoAFCClassifierOptions
from biastest.measures.classifier_twoafc.report import export_files, headline
from biastest.measures.classifier_twoafc.run import TwoAFCClassifierItems, run

__all__ = ["CLI_FLAGS", "headless", "prepare"]

#: The command line's flags that are not options (read by :func:`prepare`).
CLI_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--templates", {"metavar": "FILE", "help": "your own templates (UTF-8 text, one a line, each with {cue} and "
                     "{a_target} or {target}; # starts a comment); recorded verbatim"}),
)


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the classifier's 2AFC on ``inputs.spec`` with the options ``values``."""
    options = TwoAFCClassifierOptions.parse(prepare(values))
    result = run(options, TwoAFCClassifierItems(inputs.spec), progress=progress, api_key=api_key)
    notices = [result.stop_message] if result.stop_message else []
    n_unscored = result.counts.get("unscored", 0)
    if n_unscored:
        notices.append(f"{n_unscored} of {result.n_comparisons} comparisons were not scored; they are left out.")
    if result.labour is not None and result.labour.reason:
        notices.append(result.labour.reason)
    return Headless("twoafc-classifier", recorded_options(options, api_key), result, headline(result),
                    lambda: export_files(result), notices=notices)
