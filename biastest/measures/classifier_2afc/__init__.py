"""Classifier 2AFC: which of two sentences that differ only in a group term a text classifier scores as more
positive (the Equity Evaluation Corpus design, with templates written for biastest; METHODS §6, card
``docs/measures/classifier-2afc.md``).

* :mod:`.templates` — the shipped templates and emotion words, the user's templates (checked);
* :mod:`.options` — :class:`Classifier2AFCOptions`;
* :mod:`.score` — the pairs, the paired difference, the verdicts, the sign-flip permutation test;
* :mod:`.result`, :mod:`.summary` — the records and the cluster-aware figures;
* :mod:`.run`, :mod:`.headless`, :mod:`.report`.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.classifier_2afc import report
from biastest.measures.classifier_2afc.audit import AUDIT_USE
from biastest.measures.classifier_2afc.headless import CLI_FLAGS, headless, prepare
from biastest.measures.classifier_2afc.options import Classifier2AFCOptions
from biastest.measures.classifier_2afc.result import Classifier2AFCResult, PairRecord, SubsetRow
from biastest.measures.classifier_2afc.run import Classifier2AFCItems, resolve_positive_label
from biastest.measures.classifier_2afc.run import run as run_classifier_2afc
from biastest.measures.classifier_2afc.score import build_items, cluster_sign_flip_test, term_pairs, verdicts

__all__ = [
    "MEASURE",
    "Classifier2AFCItems",
    "Classifier2AFCOptions",
    "Classifier2AFCResult",
    "PairRecord",
    "SubsetRow",
    "build_items",
    "cluster_sign_flip_test",
    "resolve_positive_label",
    "run_classifier_2afc",
    "term_pairs",
    "verdicts",
]

MEASURE = Measure(
    name="classifier-2afc",
    kind="classifier",
    title="Classifier 2AFC: which of two sentences differing only in the group term a text classifier scores higher",
    Options=Classifier2AFCOptions,
    run=run_classifier_2afc,
    Result=Classifier2AFCResult,
    report=report,
    card="docs/measures/classifier-2afc.md",
    headless=headless,
    prepare=prepare,
    extra={"cli_flags": CLI_FLAGS, "audit": AUDIT_USE},
)
