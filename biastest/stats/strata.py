"""Strata for the cluster bootstrap: fixed conditions of a design, resampled within, never across.

A test's **conditions** — the spec's image terms of a vision-language test, the attribute terms of a
stereotype-score test — are chosen by the experimenter, not drawn: a repetition of the experiment would have the
same conditions, with other pictures or sentences in each. So they are **strata**, not clusters: the bootstrap
resamples the units (clusters: shared generators such as a prompt or a template; else the single items)
**within** each stratum, and every resample keeps each stratum's number of clusters (the stratified bootstrap of
Davison & Hinkley 1997, §3.7; the "with-replacement bootstrap" of survey sampling, Rao & Wu 1988, JASA 83:231,
with one resampled unit per unit). Treating the conditions themselves as clusters (the former ``image-term`` /
``attribute-term`` clusterings) asks what another draw of conditions would give — with two image terms that
question has two "clusters" and no interval at all.

**Resampling.** Cluster c belongs to the stratum of its first item. Resample b draws ``n_h`` clusters with
replacement from the ``n_h`` clusters of each stratum h (strata in order of first appearance, one
``rng.integers(0, n_h, (rows, n_h))`` per stratum and chunk); ``k_bc`` is cluster c's multiplicity. The mean is
``θ*_b = Σ_c k_bc·Y_c / Σ_c k_bc·n_c`` (``Y_c`` the cluster's sum, ``n_c`` its size), the median that of the
items repeated ``k_bc`` times — as the unstratified cluster bootstrap, with the draws confined to the strata.

**Lonely strata.** A stratum with one cluster has nothing to resample and no variance estimate of its own
(the "lonely PSU" of survey sampling). Such strata are pooled into one collapsed stratum (collapsed strata,
Cochran 1977 §5A.12, which errs on the wide side); when only one such cluster exists it joins the stratum with
the most clusters. After collapsing, one stratum left means the plain cluster bootstrap.

**Widening.** The bootstrap variance of a stratified mean is the sum over strata of ``(n_h − 1)/n_h`` times
each stratum's unbiased part, and its studentised form is nearer Student's t with ``C − H`` degrees of freedom
(C clusters, H strata). With residuals ``e_i = y_i − θ̂``, cluster totals ``E_c`` and
``S_h = Σ_{c∈h} (E_c − Ē_h)²`` the percentile interval is widened about θ̂ by::

    f = √( Σ_h n_h/(n_h − 1)·S_h / Σ_h S_h ) · t_{C−H}(1 − α/2) / z(1 − α/2)

which is the unstratified :func:`biastest.stats.clusters.small_cluster_factor` when H = 1. An interval is given
when there are at least :data:`biastest.stats.clusters.MIN_CLUSTERS_FOR_INTERVAL` clusters and ``C − H`` is at
least one less than that (the same four degrees of freedom the unstratified rule asks for).

Measured coverage (``benchmarks/bench_coverage.py``, ``stratified`` settings) is in docs/testing.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["cluster_strata", "stratified_factor", "stratified_multiplicities", "stratum_members"]


def cluster_strata(codes: np.ndarray, n_clusters: int, strata: Sequence[Any] | np.ndarray | None) -> np.ndarray | None:
    """Stratum code (0..H−1) of each of the C clusters, lonely strata collapsed; None when one stratum is left.

    ``codes`` are the items' cluster codes (0..C−1), ``strata`` one stratum label per item (None: no strata).
    A cluster takes the stratum of its first item.
    """
    if strata is None:
        return None
    labels = list(strata)
    if len(labels) != codes.size:
        raise ValueError(f"{len(labels)} stratum labels for {codes.size} values")
    first_item = np.full(n_clusters, -1, dtype=np.int64)
    for i in range(codes.size - 1, -1, -1):  # the first item of each cluster wins
        first_item[codes[i]] = i
    index: dict[Any, int] = {}
    per_cluster = np.fromiter((index.setdefault(labels[i], len(index)) for i in first_item), dtype=np.int64,
                              count=n_clusters)
    counts = np.bincount(per_cluster, minlength=len(index))
    lonely = np.flatnonzero(counts == 1)
    if lonely.size:
        pooled = len(index)  # a new code for the collapsed stratum
        if lonely.size == 1:  # one lonely cluster: it joins the largest stratum
            pooled = int(np.argmax(np.where(counts == 1, -1, counts)))
        per_cluster = np.where(np.isin(per_cluster, lonely), pooled, per_cluster)
    _, dense = np.unique(per_cluster, return_inverse=True)
    order = {}
    for s in dense:  # codes in order of first appearance
        order.setdefault(int(s), len(order))
    out = np.array([order[int(s)] for s in dense], dtype=np.int64)
    return None if len(order) < 2 else out


def stratum_members(cluster_stratum: np.ndarray) -> list[np.ndarray]:
    """The cluster codes of each stratum, in stratum order."""
    return [np.flatnonzero(cluster_stratum == h) for h in range(int(cluster_stratum.max()) + 1)]


def stratified_multiplicities(rng: np.random.Generator, members: Sequence[np.ndarray], n_clusters: int,
                              rows: int) -> np.ndarray:
    """(rows × C) multiplicities: each stratum's ``n_h`` clusters drawn with replacement from themselves."""
    k = np.zeros((rows, n_clusters), dtype=np.int64)
    ar = np.arange(rows)[:, None]
    for m in members:
        idx = rng.integers(0, m.size, size=(rows, m.size))
        np.add.at(k, (ar, m[idx]), 1)
    return k


def stratified_factor(x: np.ndarray, codes: np.ndarray, cluster_stratum: np.ndarray, estimate: float,
                      confidence: float) -> float:
    """The widening ``f`` of the module docstring (C clusters in H strata)."""
    from scipy.stats import norm, t  # late: scipy.stats is slow to import (~0.6 s)

    n_clusters = cluster_stratum.size
    n_strata = int(cluster_stratum.max()) + 1
    totals = np.bincount(codes, weights=x - estimate, minlength=n_clusters)
    num = den = 0.0
    for m in stratum_members(cluster_stratum):
        s_h = float(np.sum((totals[m] - totals[m].mean()) ** 2))
        num += m.size / (m.size - 1) * s_h
        den += s_h
    ratio = num / den if den > 0 else 1.0
    q = 1.0 - (1.0 - confidence) / 2.0
    return float(np.sqrt(ratio) * t.ppf(q, n_clusters - n_strata) / norm.ppf(q))
