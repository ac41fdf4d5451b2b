"""Text classifiers against each other on the same occupations: the house's paired comparison of P(cue 1 | target).

:func:`compare_twoafc_classifier` — several :class:`~.result.TwoAFCClassifierResult` on the same specification,
targets matched by name: each target's value is its **P(cue 1 | target)** among its untied comparisons (every cue
pair and template; a target every comparison of which tied for some classifier is left out for every classifier and
counted), compared with the paired machinery of :mod:`biastest.stats.compare` (paired bootstrap over targets of the
difference of mean P, exact sign test of the paired differences, Holm over the pairs). Targets are the units: the
cue pairs and templates are nested in them, and both classifiers read the very same sentences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biastest.errors import DataError
from biastest.measures.classifier_twoafc.result import TwoAFCClassifierResult
from biastest.stats.compare import (
    MSG_BAD_RESULT,
    BootstrapSettings,
    ComparedQuantity,
    Comparison,
    ModelItems,
    check_settings,
    compare_items,
    keyed,
)

__all__ = ["KIND_TWOAFC_CLASSIFIER", "compare_twoafc_classifier"]

#: The kind of a comparison of classifiers' 2AFC (:attr:`biastest.stats.compare.Comparison.kind`).
KIND_TWOAFC_CLASSIFIER = "twoafc-classifier-p-cue1"


def _as_result(result: Any, index: int) -> TwoAFCClassifierResult:
    if isinstance(result, TwoAFCClassifierResult):
        return result
    if isinstance(result, Mapping):
        return TwoAFCClassifierResult.from_dict(dict(result))
    raise DataError(MSG_BAD_RESULT.format(index=index, what="twoafc-classifier", type_name=type(result).__name__))


def compare_twoafc_classifier(results: Sequence[Any], *, seed: int, n_resamples: int = 10_000,
                              confidence: float = 0.95, labels: Sequence[str] | None = None,
                              clusters: str | None = None) -> Comparison:
    """Compare classifiers' P(cue 1 | target) on the same targets (see the module docstring).

    Parameters
    ----------
    results : sequence of TwoAFCClassifierResult (or their ``to_dict()``)
        Two or more, on the same targets.
    seed, n_resamples, confidence :
        Bootstrap settings (recorded).
    labels : sequence of str, optional
    clusters : None
        Accepted for the audit's call; the targets are the units.

    Raises
    ------
    DataError
        Fewer than two results, no target in common, none decided by all.
    """
    settings = check_settings(seed, n_resamples, confidence)
    models = []
    for i, raw in enumerate(results):
        r = _as_result(raw, i)
        keys = keyed([t.target.casefold() for t in r.targets])
        values = {k: (None if t.estimate is None else t.estimate / 100.0) for k, t in zip(keys, r.targets, strict=True)}
        records = {k: {"target": t.target} for k, t in zip(keys, r.targets, strict=True)}
        own = None if r.p_cue1_rate.estimate is None else r.p_cue1_rate.estimate / 100.0
        models.append(ModelItems(model_id=r.model_id, method=f"label {r.label}", own=own, values=values,
                                 ties=dict.fromkeys(keys, False), records=records))
    quantity = ComparedQuantity(kind=KIND_TWOAFC_CLASSIFIER, binary=False,
                                measure="P(cue 1 | target): mean over targets of the share of a target's untied "
                                        "comparisons (every cue pair and template) that cue 1's sentence won")
    return compare_items(models, labels=labels, what="targets", quantity=quantity,
                         settings=BootstrapSettings(*settings))
