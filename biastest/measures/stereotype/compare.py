"""Comparing language models' stereotype scores on the same sentence pairs.

The measure's part of a comparison: reading :class:`~biastest.measures.stereotype.result.StereotypeResult`
records (or their JSON), matching pairs by ``pair_id`` and, when the pairs lean together, labelling each
with its cluster. The paired statistics (exact McNemar test, paired or cluster bootstrap, Holm) are the
generic machinery of :mod:`biastest.stats.compare`, where their formulas and references are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biastest.errors import DataError
from biastest.measures.stereotype.clusters import CLUSTER_LABELS, cluster_keys, resolve_clusters
from biastest.measures.stereotype.result import StereotypeResult
from biastest.stats.compare import (
    CLUSTER_FIELD,
    KIND_STEREOTYPE,
    MSG_BAD_RESULT,
    BootstrapSettings,
    ComparedQuantity,
    Comparison,
    ModelItems,
    check_settings,
    compare_items,
    keyed,
)

__all__ = ["compare_stereotype"]


def _as_stereotype(result: Any, index: int) -> StereotypeResult:
    if isinstance(result, StereotypeResult):
        return result
    if isinstance(result, Mapping):
        return StereotypeResult.from_dict(dict(result))
    raise DataError(MSG_BAD_RESULT.format(index=index, what="stereotype-test", type_name=type(result).__name__))


def compare_stereotype(
    results: Sequence[Any],
    *,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    labels: Sequence[str] | None = None,
    clusters: str | None = None,
    cluster_by: str | None = None,
) -> Comparison:
    """Compare language models' stereotype scores on the same sentence pairs.

    ``x_mi = 1[model m preferred the stereotyped sentence of pair i]`` (ties 0, counted);
    ``Δ_AB = 100 · (b − c) / n``; paired (or cluster) bootstrap interval; exact McNemar test (the sign test on
    cluster means of the differences with clusters); Holm over the pairs. See :mod:`biastest.stats.compare` for the
    formulas and references.

    Parameters
    ----------
    results : sequence of StereotypeResult (or their ``to_dict()``)
        Two or more, on the same pairs (matched by ``pair_id``).
    seed : int
        Bootstrap seed (recorded).
    n_resamples : int
    confidence : float
    labels : sequence of str, optional
        Display names (default: :func:`model_labels`).
    clusters : {"auto", "template", "attribute-term", "pair"}, optional
        The pairs that lean together, as a single test's results choose them
        (:data:`biastest.measures.stereotype.clusters.CLUSTERINGS`; ``"auto"`` resolved on the first result's pairs,
        :func:`~biastest.measures.stereotype.clusters.cluster_keys`); ``"pair"`` or None: pairs are independent.
    cluster_by : str, optional
        Instead of ``clusters``: a pair field whose values form the clusters (``"attribute_term"`` …).

    Returns
    -------
    Comparison

    Raises
    ------
    DataError
        Fewer than two results, no pair in common, nothing scored by all, bad settings.
    """
    seed, n_resamples, confidence = check_settings(seed, n_resamples, confidence)
    items = []
    for i, r in enumerate(results):
        r = _as_stereotype(r, i)
        keys = keyed([p.pair_id for p in r.pairs])
        items.append(
            ModelItems(
                model_id=r.model_id,
                method=r.method,
                own=r.overall.score,
                values={k: (None if p.verdict is None else float(p.verdict == "stereotyped"))
                        for k, p in zip(keys, r.pairs, strict=True)},
                ties={k: p.verdict == "tie" for k, p in zip(keys, r.pairs, strict=True)},
                records={k: p.to_dict() for k, p in zip(keys, r.pairs, strict=True)},
                own_interval=r.headline_interval if abs(r.overall.confidence - confidence) < 1e-12 else None,
            )
        )
    cluster_name = None
    if clusters is not None:
        first = _as_stereotype(results[0], 0)
        resolved = resolve_clusters(first.pairs, clusters)
        if resolved != "pair":
            for k, label in zip(keyed([p.pair_id for p in first.pairs]), cluster_keys(first.pairs, resolved),
                                strict=True):
                items[0].records[k] = {**items[0].records[k], CLUSTER_FIELD: label}
            cluster_by, cluster_name = CLUSTER_FIELD, CLUSTER_LABELS[resolved]
    quantity = ComparedQuantity(
        kind=KIND_STEREOTYPE, binary=True,
        measure="stereotype score: % of sentence pairs where the stereotyped sentence is preferred")
    return compare_items(items, labels=labels, what="sentence pairs", cluster_by=cluster_by,
                         cluster_name=cluster_name, quantity=quantity,
                         settings=BootstrapSettings(seed, n_resamples, confidence))
