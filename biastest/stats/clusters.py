"""Cluster-aware uncertainty: cluster bootstrap intervals, design effect and a sign test on cluster means.

Test items come in families. Generated sentence pairs share a template (one
template yields a pair per group-term swap), many templates share an attribute
term, images share a prompt. Items of one family lean together, so a bootstrap
or a sign test that treats every item as independent gives intervals that are
too narrow and p-values that are too small — exactly when a few families
dominate. This module gives the uncertainty of a mean over items that respects
the families ("clusters"):

**Estimate.** The statistic over all items, unchanged by the clustering:
``mean``: the ratio of sums ``θ̂ = Σ_c Y_c / Σ_c n_c`` (``Y_c`` = sum of cluster
c's values, ``n_c`` its size), i.e. the plain mean over items (a share when the
values are 0/1); ``median``: the median over items.

**Interval** (:func:`cluster_bootstrap_ci`, :data:`INTERVAL_CLUSTER_BOOTSTRAP`).
The cluster ("pairs", "case-resampling") bootstrap of Davison & Hinkley (1997,
§3.8) and Field & Welsh (2007, JRSS B 69:369): for b = 1..B draw C clusters
with replacement from the C observed ones (numpy ``default_rng(seed)``), give
each cluster its multiplicity ``k_bc``, and compute the statistic over all
items of the drawn clusters — ``θ*_b = Σ_c k_bc·Y_c / Σ_c k_bc·n_c`` for the
mean, the median of the items repeated ``k_bc`` times for the median. The
interval is the percentile interval ``[q(α/2), q(1 − α/2)]`` of the θ*
(α = 1 − confidence, ``numpy.quantile``, linear). Whole clusters are resampled,
so the within-cluster correlation stays in every resample. With one item per
cluster it is the ordinary bootstrap over items. Vectorised: resamples are
drawn as a (chunk × C) integer matrix of cluster indices whose cluster sums and
sizes are gathered and added (the median: turned into multiplicities with one
``bincount``), in chunks of at most ~2 million numbers.

For the mean, the percentile interval is widened about θ̂ by
``f = √(C/(C − 1)) · t_{C−1}(1 − α/2) / z(1 − α/2)`` (:func:`small_cluster_factor`):
``[θ̂ − f·(θ̂ − q_lo), θ̂ + f·(q_hi − θ̂)]``, clipped to the range of the values.
The bootstrap variance over C clusters is (C − 1)/C of the unbiased (CR1)
variance, and the studentised mean of C clusters is nearer Student's t(C − 1)
than the normal — the two small-cluster corrections Cameron & Miller (2015,
§VI.B–C) recommend. Measured coverage of a 95 % interval over 1,000 planted
datasets per setting (``benchmarks/bench_coverage.py``: 0/1 verdicts with
template random effects, symmetric or skewed truth, and normal Δ; templates of
2–18 pairs): without the widening 92–94 % at 20–40 clusters and 74–86 % at 3–5;
with it 94–95 % at 20–40 and 91–95 % at 3–10. f is 1.04 at C = 40 and tends
to 1, so with many clusters (or one item per cluster) it changes nothing. The
median's interval is the plain percentile one.

**Strata.** Fixed conditions of the design (the spec's image terms or attribute terms) are strata, never
clusters: with ``strata`` the clusters are resampled within their stratum and the widening uses ``C − H``
degrees of freedom (:mod:`biastest.stats.strata`, which gives the formulas); without, the above.

**Too few clusters.** With C clusters there are only ``binom(2C − 1, C)``
distinct resamples: 10 for C = 3, 35 for C = 4, 126 for C = 5. Below
:data:`MIN_CLUSTERS_FOR_INTERVAL` = 5 clusters the 2.5 % and 97.5 % points of
so few values are the extremes of the resampling, and the interval is the
widening factor alone (f = 2.5 at C = 3), not an estimate; and the sign test
cannot reach p < 0.05 with fewer than 6 clusters. So below 5 clusters no
interval is given (``interval_shown`` False, ``low``/``high`` None) and the
summary says why (:data:`MSG_TOO_FEW_CLUSTERS`). From 5 clusters on the
measured coverage is 91–95 % (skewed truth with unequal clusters is the hard
case: 90.8 % at C = 5, 92.2 % at C = 10, 94.8 % at C = 20); with few clusters
every method under-covers somewhat (Cameron, Gelbach & Miller 2008, REStat
90:414; Cameron & Miller 2015, J. Human Resources 50:317, §VI "few
clusters"), which the summary's cluster count lets a reader weigh.

**Design effect** (:func:`design_effect`). Kish's (1965, *Survey Sampling*
§8.2) design effect: the variance of the estimate under clustering over its
variance if the n items were independent, here with the cluster-robust
(sandwich, CR1) variance of the mean (Cameron & Miller 2015, eq. 11 with the
``C/(C − 1)`` correction) over the usual ``s²/n``. With residuals
``e_i = y_i − ȳ`` and cluster totals ``E_c = Σ_{i∈c} e_i``::

    V_cluster = C/(C − 1) · Σ_c E_c² / n²
    V_iid     = n/(n − 1) · Σ_i e_i² / n²            (= s²/n)
    deff      = V_cluster / V_iid

It is 1 exactly when every cluster has one item, ≈ ``1 + (m̄ − 1)·ICC`` for
clusters of mean size m̄ and intra-cluster correlation ICC (Kish), and
``n / deff`` is the effective number of independent items. None when all
values are equal (no variance to compare) or there is one cluster.

**Test** (:func:`cluster_sign_test`, :data:`TEST_CLUSTER_SIGN`). An exact
two-sided sign test on cluster means: each cluster's mean of the test values
is compared with the null value (0 for signs ±1 of pair verdicts or for
log-probability differences, 0.5 for probabilities); clusters above count as
successes, clusters below as failures, clusters exactly at the null are left
out (as ties are in the item-level sign test), and
``p = binomtest(n_above, n_above + n_below, 1/2)``. This is the "cluster-level
analysis" of cluster-randomised trials (Donner & Klar 2000, *Design and
Analysis of Cluster Randomization Trials*, ch. 6; Hayes & Moulton 2017, ch. 9):
the cluster summaries are independent under the model, so the test is exact
for any number of clusters, needs no distributional assumption and no
iterative fit, and reduces to the item-level sign test when every cluster has
one item. Its null is "a cluster is as likely to lean one way as the other"
(each cluster weighs the same, whatever its size). It was chosen over a
logistic mixed model with random intercepts for template and attribute term
because such a model has no exact small-sample p-value, can fail to converge
with crossed random effects on a few hundred binary outcomes, and would need a
new heavy dependency; the price is some power (a cluster counts once, however
large or strongly leaning). With fewer than 6 non-tied clusters no two-sided
p-value can fall below 0.05 (``2·0.5⁵ = 0.0625``) — which is the honest answer
for so few independent families.

Examples
--------
>>> import numpy as np
>>> y = np.array([1, 1, 1, 0, 0, 0, 1, 0] * 5, dtype=float)
>>> c = np.repeat(np.arange(10), 4)
>>> s = summarize_clusters(y, c, seed=0, n_resamples=1000, cluster_by="template")
>>> s.estimate, s.n_items, s.n_clusters, s.interval_shown
(0.5, 40, 10, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.stats.bootstrap import check_confidence, check_n_resamples, check_seed
from biastest.stats.proportion import binomial_p_value
from biastest.stats.strata import cluster_strata, stratified_factor, stratified_multiplicities, stratum_members
from biastest.words import plural

__all__ = [
    "INTERVAL_CLUSTER_BOOTSTRAP",
    "MIN_CLUSTERS_FOR_INTERVAL",
    "MSG_TOO_FEW_CLUSTERS",
    "MSG_TOO_FEW_CLUSTERS_STRATA",
    "STATISTICS",
    "TEST_CLUSTER_SIGN",
    "TEST_NONE_ALL_AT_NULL",
    "ClusterCI",
    "ClusterSummary",
    "cluster_bootstrap_ci",
    "cluster_bootstrap_mean_cis",
    "cluster_codes",
    "cluster_means",
    "cluster_sign_test",
    "design_effect",
    "small_cluster_factor",
    "summarize_cluster_means",
    "summarize_clusters",
]

#: Fewest clusters for which an interval is given (see the module docstring and benchmarks/bench_coverage.py).
MIN_CLUSTERS_FOR_INTERVAL = 5
STATISTICS = ("mean", "median")

INTERVAL_CLUSTER_BOOTSTRAP = (
    "percentile cluster bootstrap (whole clusters resampled with replacement, seeded), widened by "
    "√(C/(C−1))·t(C−1)/z for few clusters"
)
TEST_CLUSTER_SIGN = (
    "exact two-sided sign test on cluster means (clusters above vs below the null; clusters at the null left out)"
)
TEST_NONE_ALL_AT_NULL = "none (every cluster's mean equals the null value, nothing to test)"

MSG_EMPTY = "There are no values to compute a cluster-aware summary from."
MSG_NOT_FINITE = "The values contain {count} missing or infinite numbers; remove them before computing an interval."
MSG_BAD_CLUSTERS = "The clusters must give one label per value ({n_values} values, {n_labels} labels)."
MSG_BAD_STATISTIC = "Unknown statistic '{value}'. Choose 'mean' or 'median'."
MSG_TOO_FEW_CLUSTERS = (
    "No interval: the {items} fall into only {clusters} ({cluster_by}), fewer than the {minimum} a cluster "
    "bootstrap needs to mean anything."
)
MSG_TOO_FEW_CLUSTERS_STRATA = (
    "No interval: the {items} fall into only {clusters} ({cluster_by}) within {strata} ({strata_by}), leaving "
    "{df} degrees of freedom, fewer than the {minimum} a stratified cluster bootstrap needs to mean anything."
)

_CHUNK_ELEMENTS = 2_000_000


def cluster_codes(clusters: Sequence[Any] | np.ndarray, n_values: int) -> tuple[np.ndarray, int]:
    """Integer codes 0..C−1 (in order of first appearance) for cluster labels, and C.

    Raises
    ------
    DataError
        :data:`MSG_BAD_CLUSTERS` when the number of labels differs from ``n_values``.
    """
    labels = list(clusters)
    if len(labels) != n_values:
        raise DataError(MSG_BAD_CLUSTERS.format(n_values=n_values, n_labels=len(labels)))
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(lab, len(index)) for lab in labels), dtype=np.int64, count=n_values)
    return codes, len(index)


def _values(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise DataError(MSG_EMPTY)
    bad = int(np.count_nonzero(~np.isfinite(x)))
    if bad:
        raise DataError(MSG_NOT_FINITE.format(count=bad))
    return x


def cluster_means(values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Mean of the values of each cluster, in order of first appearance of the cluster label."""
    x = _values(values)
    codes, n_clusters = cluster_codes(clusters, x.size)
    return np.bincount(codes, weights=x, minlength=n_clusters) / np.bincount(codes, minlength=n_clusters)


@dataclass(frozen=True)
class ClusterCI:
    """A cluster bootstrap percentile interval.

    Attributes
    ----------
    estimate : float
        The statistic over all items.
    low, high : float
        Percentile interval of the resampled statistic.
    statistic : {"mean", "median"}
    confidence : float
    n_resamples, seed : int
    n_items, n_clusters : int
    widening : float
        :func:`small_cluster_factor` applied about the estimate (1.0: plain percentile interval).
    """

    estimate: float
    low: float
    high: float
    statistic: str
    confidence: float
    n_resamples: int
    seed: int
    n_items: int
    n_clusters: int
    widening: float = 1.0
    n_strata: int = 1


def _multiplicities(rng: np.random.Generator, n_clusters: int, rows: int) -> np.ndarray:
    """(rows × C) counts of how often each cluster was drawn in each of ``rows`` resamples of C clusters."""
    idx = rng.integers(0, n_clusters, size=(rows, n_clusters))
    flat = idx + n_clusters * np.arange(rows)[:, None]
    return np.bincount(flat.ravel(), minlength=rows * n_clusters).reshape(rows, n_clusters)


def _weighted_medians(sorted_values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Row-wise median of ``sorted_values`` repeated ``weights[r, i]`` times (integer weights, rows × n)."""
    cum = np.cumsum(weights, axis=1)
    total = cum[:, -1]
    lo = (total + 1) // 2  # 1-based positions of the two middle order statistics
    hi = total // 2 + 1
    i_lo = (cum < lo[:, None]).sum(axis=1)
    i_hi = (cum < hi[:, None]).sum(axis=1)
    return 0.5 * (sorted_values[i_lo] + sorted_values[i_hi])


def cluster_bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray,
    *,
    seed: int,
    statistic: str = "mean",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    small_cluster_correction: bool = True,
    strata: Sequence[Any] | np.ndarray | None = None,
) -> ClusterCI:
    """Percentile cluster bootstrap interval of the mean (ratio of sums) or median over items.

    Formula: for b = 1..B draw C cluster indices uniformly with replacement,
    let ``k_bc`` be cluster c's multiplicity; ``θ*_b = Σ_c k_bc·Y_c / Σ_c
    k_bc·n_c`` (``mean``) or the median of the items of the drawn clusters,
    each repeated ``k_bc`` times (``median``); report ``[quantile(θ*, α/2),
    quantile(θ*, 1 − α/2)]`` (Davison & Hinkley 1997 §3.8; Field & Welsh 2007).

    Parameters
    ----------
    values : array-like of float
        One value per item (0/1 verdict indicators, differences, probabilities).
    clusters : sequence
        One cluster label per item (any hashable); items with the same label are resampled together.
    seed : int
        Seed of ``numpy.random.default_rng`` (recorded).
    statistic : {"mean", "median"}
    n_resamples : int
        Bootstrap resamples (≥ 100).
    confidence : float
        In (0, 1).
    strata : sequence, optional
        One stratum label per item (a fixed condition: an image term, an attribute term): clusters are drawn
        within their stratum (:mod:`biastest.stats.strata`, lonely strata collapsed). None, or one stratum:
        the unstratified bootstrap above.

    Returns
    -------
    ClusterCI

    Raises
    ------
    DataError
        Empty or non-finite values, labels of the wrong length, a bad statistic, confidence, resamples or seed.
    """
    x = _values(values)
    codes, n_clusters = cluster_codes(clusters, x.size)
    if statistic not in STATISTICS:
        raise DataError(MSG_BAD_STATISTIC.format(value=statistic))
    confidence = check_confidence(confidence)
    n_resamples = check_n_resamples(n_resamples)
    seed = check_seed(seed)
    rng = np.random.default_rng(seed)
    cs = cluster_strata(codes, n_clusters, strata)
    if statistic == "mean":
        stats = _mean_distributions(x[:, None], codes, n_clusters, rng, n_resamples, cs)[:, 0]
        estimate = float(x.mean())
    else:
        stats = np.empty(n_resamples, dtype=np.float64)
        order = np.argsort(x, kind="stable")
        sorted_values, sorted_codes = x[order], codes[order]
        estimate = float(np.median(x))
        rows = max(1, _CHUNK_ELEMENTS // max(x.size, n_clusters))
        members = None if cs is None else stratum_members(cs)
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            k = (_multiplicities(rng, n_clusters, stop - start) if members is None
                 else stratified_multiplicities(rng, members, n_clusters, stop - start))
            stats[start:stop] = _weighted_medians(sorted_values, k[:, sorted_codes])
    return _percentile(stats, x, estimate, statistic=statistic, n_clusters=n_clusters, confidence=confidence,
                       n_resamples=n_resamples, seed=seed, correction=small_cluster_correction,
                       design=None if cs is None else (codes, cs))


def _mean_distributions(
    x: np.ndarray, codes: np.ndarray, n_clusters: int, rng: np.random.Generator, n_resamples: int,
    cluster_stratum: np.ndarray | None = None,
) -> np.ndarray:
    """(B × k) resampled means of the k columns of ``x`` (n × k), every column from the same cluster draws.

    Each resample draws C cluster indices (within their strata when ``cluster_stratum`` is given); its mean is
    (sum of the drawn clusters' sums) / (sum of their sizes).
    """
    sums = np.stack([np.bincount(codes, weights=x[:, j], minlength=n_clusters) for j in range(x.shape[1])], axis=1)
    sizes = np.bincount(codes, minlength=n_clusters).astype(np.float64)
    stats = np.empty((n_resamples, x.shape[1]), dtype=np.float64)
    if cluster_stratum is not None:
        members = stratum_members(cluster_stratum)
        rows = max(1, _CHUNK_ELEMENTS // (n_clusters * (x.shape[1] + 2)))
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            k = stratified_multiplicities(rng, members, n_clusters, stop - start).astype(np.float64)
            stats[start:stop] = (k @ sums) / (k @ sizes)[:, None]
        return stats
    rows = max(1, _CHUNK_ELEMENTS // (n_clusters * (x.shape[1] + 1)))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n_clusters, size=(stop - start, n_clusters))
        total = sizes[idx].sum(axis=1)
        for j in range(x.shape[1]):
            stats[start:stop, j] = sums[idx, j].sum(axis=1) / total
    return stats


def _percentile(
    stats: np.ndarray, x: np.ndarray, estimate: float, *, statistic: str, n_clusters: int, confidence: float,
    n_resamples: int, seed: int, correction: bool, design: tuple[np.ndarray, np.ndarray] | None = None,
) -> ClusterCI:
    """The (widened) percentile interval; ``design`` = (item cluster codes, cluster strata) when stratified."""
    alpha = 1.0 - confidence
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    factor = 1.0
    if statistic == "mean" and correction and n_clusters >= 2:
        factor = (small_cluster_factor(n_clusters, confidence) if design is None
                  else stratified_factor(x, design[0], design[1], estimate, confidence))
        low = max(float(x.min()), estimate - factor * (estimate - low))
        high = min(float(x.max()), estimate + factor * (high - estimate))
    return ClusterCI(
        estimate=estimate,
        low=float(low),
        high=float(high),
        statistic=statistic,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        n_items=int(x.size),
        n_clusters=n_clusters,
        widening=factor,
        n_strata=1 if design is None else int(design[1].max()) + 1,
    )


def cluster_bootstrap_mean_cis(
    columns: Sequence[Sequence[float] | np.ndarray],
    clusters: Sequence[Any] | np.ndarray,
    *,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    small_cluster_correction: bool = True,
    strata: Sequence[Any] | np.ndarray | None = None,
) -> list[ClusterCI]:
    """:func:`cluster_bootstrap_ci` of the mean of several value columns over the same items, in one pass.

    Every column is resampled with the same cluster draws (one multiplicity matrix per chunk), so each
    result equals ``cluster_bootstrap_ci(column, clusters, seed=seed, …)`` exactly, at the cost of one.
    """
    xs = [_values(c) for c in columns]
    if not xs:
        raise DataError(MSG_EMPTY)
    for x in xs[1:]:
        if x.size != xs[0].size:
            raise DataError(MSG_BAD_CLUSTERS.format(n_values=x.size, n_labels=xs[0].size))
    codes, n_clusters = cluster_codes(clusters, xs[0].size)
    confidence = check_confidence(confidence)
    n_resamples = check_n_resamples(n_resamples)
    seed = check_seed(seed)
    cs = cluster_strata(codes, n_clusters, strata)
    stats = _mean_distributions(np.stack(xs, axis=1), codes, n_clusters, np.random.default_rng(seed), n_resamples,
                                cs)
    return [
        _percentile(stats[:, j], x, float(x.mean()), statistic="mean", n_clusters=n_clusters, confidence=confidence,
                    n_resamples=n_resamples, seed=seed, correction=small_cluster_correction,
                    design=None if cs is None else (codes, cs))
        for j, x in enumerate(xs)
    ]


def small_cluster_factor(n_clusters: int, confidence: float) -> float:
    """Widening of the percentile interval for C clusters: ``√(C/(C − 1)) · t_{C−1}(1 − α/2) / z(1 − α/2)``.

    The bootstrap variance of a mean over C resampled clusters is (C − 1)/C of the unbiased (CR1) one, and
    with C clusters the studentised mean is closer to Student's t with C − 1 degrees of freedom than to the
    normal; Cameron & Miller (2015, §VI.B–C) recommend both corrections for cluster-robust inference with
    few clusters. The factor is 1.22 for C = 10, 1.04 for C = 40 and tends to 1 as C grows.
    """
    from scipy.stats import norm, t  # late: scipy.stats is slow to import (~0.6 s)

    q = 1.0 - (1.0 - confidence) / 2.0
    return float(np.sqrt(n_clusters / (n_clusters - 1)) * t.ppf(q, n_clusters - 1) / norm.ppf(q))


def design_effect(values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray) -> float | None:
    """Kish design effect of the mean: cluster-robust (CR1) variance over the independent-items variance.

    Formula: with ``e_i = y_i − ȳ`` and ``E_c = Σ_{i∈c} e_i``,
    ``deff = [C/(C − 1)·Σ_c E_c²] / [n/(n − 1)·Σ_i e_i²]`` (Kish 1965 §8.2;
    Cameron & Miller 2015, eq. 11 with the CR1 factor). 1 when every cluster
    has one item; ≈ ``1 + (m̄ − 1)·ICC`` for clusters of mean size m̄.

    Returns
    -------
    float or None
        None when there is one cluster, one item, or no variance (all values equal); 0 when every cluster
        has the same mean (the clusters vary less than independent items would, e.g. two clusters alike).
    """
    x = _values(values)
    codes, n_clusters = cluster_codes(clusters, x.size)
    n = x.size
    if n_clusters < 2 or n < 2:
        return None
    e = x - x.mean()
    within = float(np.sum(e * e))
    if within <= 1e-12 * n * max(1.0, float(np.max(np.abs(x))) ** 2):
        return None
    totals = np.bincount(codes, weights=e, minlength=n_clusters)
    between = float(np.sum(totals * totals))
    if between <= 1e-12 * within:  # every cluster has the same mean: round-off, not a variance
        return 0.0
    v_cluster = n_clusters / (n_clusters - 1) * between
    v_iid = n / (n - 1) * within
    return v_cluster / v_iid


def cluster_sign_test(
    values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray, *, null: float = 0.0
) -> tuple[float | None, int, int, int]:
    """Exact two-sided sign test on cluster means against ``null``.

    Formula: ``m_c`` = mean of cluster c's values; ``a = #{m_c > null}``,
    ``b = #{m_c < null}``; ``p = binomtest(a, a + b, 1/2, two-sided)``
    (clusters with ``m_c == null`` are left out; Donner & Klar 2000 ch. 6).

    Returns
    -------
    p_value, n_above, n_below, n_at_null : float or None, int, int, int
        ``p_value`` is None when every cluster mean equals the null.
    """
    means = cluster_means(values, clusters)
    tol = 1e-12 * max(1.0, abs(null))
    above = int(np.count_nonzero(means > null + tol))
    below = int(np.count_nonzero(means < null - tol))
    at_null = int(means.size) - above - below
    return binomial_p_value(above, above + below), above, below, at_null


@dataclass(frozen=True)
class ClusterSummary:
    """A cluster-aware summary of a mean or median over items: estimate, interval, design effect, test.

    Attributes
    ----------
    estimate : float
        The statistic over all items (in the units of the values; callers may rescale, e.g. to percent).
    low, high : float or None
        Cluster bootstrap interval; None when ``interval_shown`` is False.
    confidence : float
    statistic : {"mean", "median"}
    n_items, n_clusters : int
    cluster_by : str
        What the clusters are (e.g. ``"template"``, ``"attribute term"``, ``"pair"``).
    design_effect : float or None
        :func:`design_effect` (None: not defined, see there).
    p_value : float or None
        :func:`cluster_sign_test` of the test values against ``null_value``.
    null_value : float
    n_clusters_above, n_clusters_below, n_clusters_at_null : int
        The sign test's counts.
    test : str
        :data:`TEST_CLUSTER_SIGN` or :data:`TEST_NONE_ALL_AT_NULL`.
    interval_method : str
        :data:`INTERVAL_CLUSTER_BOOTSTRAP`.
    interval_shown : bool
        False when there are fewer than :data:`MIN_CLUSTERS_FOR_INTERVAL` clusters.
    reason : str or None
        Why there is no interval (:data:`MSG_TOO_FEW_CLUSTERS`, formatted), else None.
    n_resamples, seed : int
    n_strata : int
        Strata the clusters were resampled within (1: none; lonely strata collapsed, :mod:`biastest.stats.strata`).
    strata_by : str
        What the strata are (e.g. ``"image term"``); "" without strata.
    """

    estimate: float
    low: float | None
    high: float | None
    confidence: float
    statistic: str
    n_items: int
    n_clusters: int
    cluster_by: str
    design_effect: float | None
    p_value: float | None
    null_value: float
    n_clusters_above: int
    n_clusters_below: int
    n_clusters_at_null: int
    test: str
    interval_method: str
    interval_shown: bool
    reason: str | None
    n_resamples: int
    seed: int
    n_strata: int = 1
    strata_by: str = ""

    @property
    def effective_n(self) -> float | None:
        """``n_items / design_effect``: the number of independent items worth as much (None without a deff)."""
        if self.design_effect is None or self.design_effect <= 0:
            return None
        return self.n_items / self.design_effect

    def scaled(self, factor: float) -> ClusterSummary:
        """The same summary with estimate and interval multiplied by ``factor`` (e.g. 100 for percent).

        The test (its null value and counts) is unchanged: it is about the test values, not the scale shown.
        """
        return replace(
            self,
            estimate=self.estimate * factor,
            low=None if self.low is None else self.low * factor,
            high=None if self.high is None else self.high * factor,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (inverse: :meth:`from_dict`); without strata, the keys of files before them."""
        out = asdict(self)
        if self.n_strata <= 1:
            out.pop("n_strata")
            out.pop("strata_by")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterSummary:
        """Rebuild from :meth:`to_dict` (unknown keys are ignored, so later versions' files still read)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def summarize_clusters(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray,
    *,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    statistic: str = "mean",
    cluster_by: str = "",
    test_values: Sequence[float] | np.ndarray | None = None,
    null: float = 0.0,
    strata: Sequence[Any] | np.ndarray | None = None,
    strata_by: str = "",
) -> ClusterSummary:
    """Estimate, cluster bootstrap interval, design effect and sign test on cluster means, in one summary.

    Parameters
    ----------
    values : array-like of float
        One value per item; the estimate and interval are of their mean or median.
    clusters : sequence
        One cluster label per item.
    seed, n_resamples, confidence, statistic :
        As in :func:`cluster_bootstrap_ci`.
    cluster_by : str
        Name of the clustering (recorded, and used in :data:`MSG_TOO_FEW_CLUSTERS`).
    test_values : array-like of float, optional
        Values whose cluster means the sign test compares with ``null`` (default: ``values``). For pair
        verdicts pass the signs (+1 stereotyped, −1 anti-stereotyped, 0 tie) with ``null=0`` so that a
        cluster leans to the side most of its pairs lean to, ties counting for neither.
    null : float
        Null value of the sign test.
    strata, strata_by : optional
        One stratum label per item (fixed conditions, resampled within: :mod:`biastest.stats.strata`) and what
        they are (recorded).

    Returns
    -------
    ClusterSummary
        The interval only when there are at least :data:`MIN_CLUSTERS_FOR_INTERVAL` clusters (and, with H
        strata, at least ``MIN_CLUSTERS_FOR_INTERVAL − 1`` degrees of freedom ``C − H``).
    """
    x = _values(values)
    codes, n_clusters = cluster_codes(clusters, x.size)
    if statistic not in STATISTICS:
        raise DataError(MSG_BAD_STATISTIC.format(value=statistic))
    n_strata = _n_strata(codes, n_clusters, strata)
    ci = None
    if _enough(n_clusters, n_strata):
        ci = cluster_bootstrap_ci(x, codes, seed=seed, statistic=statistic, n_resamples=n_resamples,
                                  confidence=confidence, strata=strata)
    return _summary(x, codes, n_clusters, ci, seed=seed, n_resamples=n_resamples, confidence=confidence,
                    statistic=statistic, cluster_by=cluster_by, test_values=test_values, null=null,
                    strata=(n_strata, strata_by))


def _n_strata(codes: np.ndarray, n_clusters: int, strata: Sequence[Any] | np.ndarray | None) -> int:
    """Strata the clusters are resampled within, lonely strata collapsed (1: none)."""
    if strata is not None and len(list(strata)) != codes.size:
        raise DataError(MSG_BAD_CLUSTERS.format(n_values=codes.size, n_labels=len(list(strata))))
    cs = cluster_strata(codes, n_clusters, strata)
    return 1 if cs is None else int(cs.max()) + 1


def _enough(n_clusters: int, n_strata: int) -> bool:
    """Whether C clusters in H strata give an interval (C ≥ the minimum, C − H ≥ the minimum − 1)."""
    return n_clusters >= MIN_CLUSTERS_FOR_INTERVAL and n_clusters - n_strata >= MIN_CLUSTERS_FOR_INTERVAL - 1


def _summary(
    x: np.ndarray, codes: np.ndarray, n_clusters: int, ci: ClusterCI | None, *, seed: int, n_resamples: int,
    confidence: float, statistic: str, cluster_by: str, test_values: Sequence[float] | np.ndarray | None,
    null: float, strata: tuple[int, str] = (1, ""),
) -> ClusterSummary:
    """The :class:`ClusterSummary` of ``x`` given its interval (None below :data:`MIN_CLUSTERS_FOR_INTERVAL`)."""
    tv = x if test_values is None else _values(test_values)
    if tv.size != x.size:
        raise DataError(MSG_BAD_CLUSTERS.format(n_values=x.size, n_labels=tv.size))
    shown = ci is not None
    if ci is None:  # no interval to show: validate the settings, skip the resampling
        ci = ClusterCI(estimate=float(x.mean() if statistic == "mean" else np.median(x)), low=float("nan"),
                       high=float("nan"), statistic=statistic, confidence=check_confidence(confidence),
                       n_resamples=check_n_resamples(n_resamples), seed=check_seed(seed), n_items=int(x.size),
                       n_clusters=n_clusters)
    p_value, above, below, at_null = cluster_sign_test(tv, codes, null=null)
    return ClusterSummary(
        estimate=ci.estimate,
        low=ci.low if shown else None,
        high=ci.high if shown else None,
        confidence=ci.confidence,
        statistic=statistic,
        n_items=int(x.size),
        n_clusters=n_clusters,
        cluster_by=cluster_by,
        design_effect=design_effect(x, codes),
        p_value=p_value,
        null_value=float(null),
        n_clusters_above=above,
        n_clusters_below=below,
        n_clusters_at_null=at_null,
        test=TEST_CLUSTER_SIGN if p_value is not None else TEST_NONE_ALL_AT_NULL,
        interval_method=INTERVAL_CLUSTER_BOOTSTRAP,
        interval_shown=shown,
        reason=None if shown else _reason(int(x.size), n_clusters, cluster_by, strata),
        n_resamples=ci.n_resamples,
        seed=ci.seed,
        n_strata=strata[0],
        strata_by=strata[1] if strata[0] > 1 else "",
    )


def _reason(n_items: int, n_clusters: int, cluster_by: str, strata: tuple[int, str]) -> str:
    """Why there is no interval (:data:`MSG_TOO_FEW_CLUSTERS`, or its stratified form)."""
    if strata[0] <= 1 or n_clusters < MIN_CLUSTERS_FOR_INTERVAL:
        return MSG_TOO_FEW_CLUSTERS.format(items=plural(n_items, "item"),
                                           clusters=plural(n_clusters, "independent cluster"),
                                           cluster_by=cluster_by or "clusters", minimum=MIN_CLUSTERS_FOR_INTERVAL)
    return MSG_TOO_FEW_CLUSTERS_STRATA.format(
        items=plural(n_items, "item"), clusters=plural(n_clusters, "independent cluster"),
        cluster_by=cluster_by or "clusters", strata=plural(strata[0], "stratum", "strata"),
        strata_by=strata[1] or "fixed conditions", df=n_clusters - strata[0], minimum=MIN_CLUSTERS_FOR_INTERVAL - 1)


def summarize_cluster_means(
    columns: Sequence[Sequence[float] | np.ndarray],
    clusters: Sequence[Any] | np.ndarray,
    *,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    cluster_by: str = "",
    test_values: Sequence[Sequence[float] | np.ndarray | None] | None = None,
    nulls: Sequence[float] | None = None,
    strata: Sequence[Any] | np.ndarray | None = None,
    strata_by: str = "",
) -> list[ClusterSummary]:
    """:func:`summarize_clusters` (statistic ``mean``) of several value columns over the same items, in one pass.

    Equal, column by column, to ``summarize_clusters(column, clusters, seed=seed, …, test_values=tv,
    null=null)`` (the same cluster draws serve every column; :func:`cluster_bootstrap_mean_cis`).
    """
    xs = [_values(c) for c in columns]
    if not xs:
        raise DataError(MSG_EMPTY)
    tvs = list(test_values) if test_values is not None else [None] * len(xs)
    ns = list(nulls) if nulls is not None else [0.0] * len(xs)
    codes, n_clusters = cluster_codes(clusters, xs[0].size)
    n_strata = _n_strata(codes, n_clusters, strata)
    cis: list[ClusterCI | None] = [None] * len(xs)
    if _enough(n_clusters, n_strata):
        cis = list(cluster_bootstrap_mean_cis(xs, codes, seed=seed, n_resamples=n_resamples, confidence=confidence,
                                              strata=strata))
    return [
        _summary(x, codes, n_clusters, ci, seed=seed, n_resamples=n_resamples, confidence=confidence,
                 statistic="mean", cluster_by=cluster_by, test_values=tv, null=null, strata=(n_strata, strata_by))
        for x, tv, null, ci in zip(xs, tvs, ns, cis, strict=True)
    ]
