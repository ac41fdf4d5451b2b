"""A text classifier's 2AFC on occupations: for each target (an occupation) and each cue pair (woman/man, she/he …),
two sentences that differ only in the cue ("The woman is a nurse." / "The man is a nurse.", several neutral
templates), which one the classifier scores higher on the chosen label; P(cue 1 | target) with cluster-aware
intervals, validated against labour statistics (the paper's Fig. 2). See ``docs/measures/twoafc-classifier.md``.

* :mod:`.templates` — the shipped templates (by the cue word's role) and the user's own (checked);
* :mod:`.options` — :class:`TwoAFCClassifierOptions`;
* :mod:`.summary` — the comparisons, their outcomes and the statistics;
* :mod:`.result`, :mod:`.run`, :mod:`.headless`, :mod:`.report`, :mod:`.compare`, :mod:`.audit`; the validation is
  :mod:`biastest.measures.labour` (shared with the chat model's 2AFC).
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.classifier_twoafc import report
from biastest.measures.classifier_twoafc.audit import AUDIT_USE
from biastest.measures.classifier_twoafc.compare import KIND_TWOAFC_CLASSIFIER, compare_twoafc_classifier
from biastest.measures.classifier_twoafc.headless import CLI_FLAGS, headless, prepare
from biastest.measures.classifier_twoafc.options import TwoAFCClassifierOptions
from biastest.measures.classifier_twoafc.result import Comparison, TargetRecord, TwoAFCClassifierResult
from biastest.measures.classifier_twoafc.run import TwoAFCClassifierItems
from biastest.measures.classifier_twoafc.run import run as run_twoafc_classifier

__all__ = [
    "KIND_TWOAFC_CLASSIFIER",
    "MEASURE",
    "Comparison",
    "TargetRecord",
    "TwoAFCClassifierItems",
    "TwoAFCClassifierOptions",
    "TwoAFCClassifierResult",
    "compare_twoafc_classifier",
    "run_twoafc_classifier",
]

MEASURE = Measure(
    name="twoafc-classifier",
    kind="classifier",
    title="2AFC of a text classifier: P(cue 1 | target) from counterfactual sentences, validated against labour "
          "statistics",
    Options=TwoAFCClassifierOptions,
    run=run_twoafc_classifier,
    Result=TwoAFCClassifierResult,
    report=report,
    compare=compare_twoafc_classifier,
    card="docs/measures/twoafc-classifier.md",
    headless=headless,
    prepare=prepare,
    spec_type="twoafc",
    extra={"cli_flags": CLI_FLAGS, "audit": AUDIT_USE, "model_kind": ("twoafc", "classifier")},
)
