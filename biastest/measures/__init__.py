"""The measures: one folder each, and :data:`MEASURES`, the one list of them.

A measure's folder holds its options, scoring, result, summary, run, report and
comparison (see ``docs/DESIGN.md``, "Adding a measure"). The command line's
``run <measure>`` subcommands and the audit grid's methods are made from
:data:`MEASURES`; the apps (``biastest/ui``) still give each of their measures
a place of its own.

Adding a measure is one folder and one line below.
"""

from __future__ import annotations

from biastest.measures import (
    bayes,
    bbq,
    chat_twoafc,
    classifier_2afc,
    classifier_twoafc,
    forced_choice,
    posterior,
    psychometric_chat,
    stereotype,
    twoafc,
    vlm,
    weat,
)
from biastest.measures.base import Measure, MeasureRegistry, OptionsBase, ResultBase

__all__ = ["MEASURES", "Measure", "MeasureRegistry", "OptionsBase", "ResultBase", "get_measure"]

#: Every measure, in the order lists show them (one line each).
MEASURES = MeasureRegistry([
    stereotype.MEASURE,
    vlm.MEASURE,
    twoafc.MEASURE,
    weat.MEASURE,
    bayes.MEASURE,
    posterior.MEASURE,
    forced_choice.MEASURE,
    bbq.MEASURE,
    chat_twoafc.MEASURE,
    psychometric_chat.MEASURE,
    classifier_2afc.MEASURE,
    classifier_twoafc.MEASURE,
])


def get_measure(name: str) -> Measure:
    """The measure called ``name`` or one of its aliases; "did you mean" on a typo."""
    return MEASURES.get_measure(name)
