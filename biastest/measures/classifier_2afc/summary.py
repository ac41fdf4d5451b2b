"""The statistics of a classifier 2AFC: from the scored pairs to the result's figures.

Clusters are the templates (default; every word and term pair of one template leans together) or the term pairs
(``clusters="term-pair"``: the same two terms in every template lean together — the honest choice when the
question is about the terms as a sample of each group). Intervals are the cluster bootstrap of
:mod:`biastest.stats.clusters` (none below 5 clusters, with the reason); tests are the exact sign test of the
cluster means and the sign-flip permutation test of :func:`~.score.cluster_sign_flip_test`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from biastest.measures.classifier_2afc.result import PairRecord, SubsetRow
from biastest.measures.classifier_2afc.score import cluster_sign_flip_test
from biastest.stats.clusters import ClusterSummary, summarize_clusters

__all__ = ["cluster_of", "summarize_pairs"]


def cluster_of(record: PairRecord, clusters: str) -> str:
    """The pair's cluster label: its template, or its two terms."""
    if clusters == "term-pair":
        return f"{record.term_1} vs {record.term_2}"
    return record.template


def _share(scored: Sequence[PairRecord], labels: Sequence[str], kw: dict[str, Any],
           cluster_by: str) -> ClusterSummary | None:
    keep = [(r, c) for r, c in zip(scored, labels, strict=True) if r.verdict != 0]
    if not keep:
        return None
    v = np.asarray([1.0 if r.verdict > 0 else 0.0 for r, _ in keep])
    return summarize_clusters(v, [c for _, c in keep], cluster_by=cluster_by, test_values=2 * v - 1, null=0.0,
                              **kw).scaled(100.0)


def _diff(scored: Sequence[PairRecord], labels: Sequence[str], kw: dict[str, Any],
          cluster_by: str) -> ClusterSummary | None:
    if not scored:
        return None
    return summarize_clusters(np.asarray([r.diff for r in scored], dtype=np.float64), list(labels),
                              cluster_by=cluster_by, null=0.0, **kw)


def _rows(scored: Sequence[PairRecord], key: Callable[[PairRecord], str], labels: Callable[[PairRecord], str],
          kw: dict[str, Any], cluster_by: str) -> tuple[SubsetRow, ...]:
    groups: dict[str, list[PairRecord]] = {}
    for r in scored:
        groups.setdefault(key(r), []).append(r)
    rows = []
    for name, members in groups.items():
        lab = [labels(r) for r in members]
        rows.append(SubsetRow(key=name, diff=_diff(members, lab, kw, cluster_by),
                              share=_share(members, lab, kw, cluster_by), n_pairs=len(members),
                              n_ties=sum(r.verdict == 0 for r in members)))
    return tuple(rows)


def summarize_pairs(records: Sequence[PairRecord], *, clusters: str, seed: int, n_resamples: int,
                    n_permutations: int, confidence: float) -> dict[str, Any]:
    """The result's figures from the pairs (unscored pairs left out and counted).

    Returns
    -------
    dict
        ``share``, ``diff``, ``permutation_p``, ``per_template``, ``per_term_pair``, ``per_group_term``,
        ``per_word``, ``per_emotion``,
        ``n_scored``, ``n_unscored``, ``n_ties``.
    """
    scored = [r for r in records if r.diff is not None]
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    labels = [cluster_of(r, clusters) for r in scored]

    def overall(r: PairRecord) -> str:
        return cluster_of(r, clusters)

    def within_template(r: PairRecord) -> str:
        return cluster_of(r, "term-pair")

    with_word = [r for r in scored if r.word]
    return {
        "share": _share(scored, labels, kw, clusters),
        "diff": _diff(scored, labels, kw, clusters),
        "permutation_p": (cluster_sign_flip_test([r.diff for r in scored], labels, n_permutations=n_permutations,
                                                 seed=seed) if scored else None),
        "per_template": _rows(scored, lambda r: r.template, within_template, kw, "term-pair"),
        "per_term_pair": _rows(scored, lambda r: f"{r.term_1} vs {r.term_2}", lambda r: r.template, kw, "template"),
        "per_group_term": (*_rows(scored, lambda r: f"group 1: {r.term_1}", lambda r: r.template, kw, "template"),
                           *_rows(scored, lambda r: f"group 2: {r.term_2}", lambda r: r.template, kw, "template")),
        "per_word": _rows(with_word, lambda r: r.word, overall, kw, clusters),
        "per_emotion": _rows([r for r in with_word if r.emotion], lambda r: r.emotion, overall, kw, clusters),
        "n_scored": len(scored),
        "n_unscored": len(records) - len(scored),
        "n_ties": sum(r.verdict == 0 for r in scored),
    }
