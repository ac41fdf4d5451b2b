"""The stereotype score of a language model: how often it prefers the stereotyped sentence of a pair.

One folder holds the whole measure:

* :mod:`.options` — :class:`StereotypeOptions`, every setting with its default and check;
* :mod:`.score` — the scoring methods (``pll-unmodified``, ``mean-logprob-modified``, ``template-mask``,
  ``causal-sum``, ``causal-diff-span``), formulas and references;
* :mod:`.result` — :class:`StereotypeResult`, :class:`PairScore`, :class:`TermSummary` (JSON once);
* :mod:`.clusters`, :mod:`.summary` — the clusters and the statistics over the scores;
* :mod:`.pairs` — pairs from single sentences (:func:`pairs_from_templates`);
* :mod:`.run` — ``run.run`` (options, items → result; :func:`run_stereotype` here, ``MEASURE.run``),
  :func:`run_lm_test` as the apps run it (the package's ``run`` stays the module, so tests can patch it);
* :mod:`.report` — tables, figures, readings, CSV/JSON files;
* :mod:`.compare` — :func:`compare_stereotype`, models against each other on the same pairs.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.stereotype import report
from biastest.measures.stereotype.clusters import CLUSTERINGS, check_clusters
from biastest.measures.stereotype.compare import compare_stereotype
from biastest.measures.stereotype.headless import headless, prepare
from biastest.measures.stereotype.options import StereotypeOptions
from biastest.measures.stereotype.pairs import PairBuild, pairs_from_templates
from biastest.measures.stereotype.result import PairScore, StereotypeResult, TermSummary
from biastest.measures.stereotype.run import LMEndpoint, StereotypeItems, check_lm_endpoint, run_lm_test
from biastest.measures.stereotype.run import run as run_stereotype
from biastest.measures.stereotype.score import METHODS, get_method, methods_for_kind, score_pairs
from biastest.measures.stereotype.summary import summarize_stereotype, with_clusters

__all__ = [
    "CLUSTERINGS",
    "MEASURE",
    "METHODS",
    "LMEndpoint",
    "PairBuild",
    "PairScore",
    "StereotypeItems",
    "StereotypeOptions",
    "StereotypeResult",
    "TermSummary",
    "check_clusters",
    "check_lm_endpoint",
    "compare_stereotype",
    "get_method",
    "methods_for_kind",
    "pairs_from_templates",
    "run_lm_test",
    "run_stereotype",
    "score_pairs",
    "summarize_stereotype",
    "with_clusters",
]

MEASURE = Measure(
    name="stereotype",
    kind="lm",
    title="Stereotype score of a language model on sentence pairs",
    Options=StereotypeOptions,
    run=run_stereotype,
    Result=StereotypeResult,
    report=report,
    compare=compare_stereotype,
    card="docs/measures/stereotype.md",
    headless=headless,
    prepare=prepare,
    label="Stereotype score",
    choices={"method": tuple(METHODS)},
    extra={"methods": tuple(METHODS)},
)
