"""The statistics of a paired comparison: the exact sign and McNemar tests, the paired bootstrap and its settings.

The formulas and references are in :mod:`biastest.stats.compare`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from biastest.stats.bootstrap import bootstrap_mean_ci, check_confidence, check_n_resamples, check_seed
from biastest.stats.clusters import MIN_CLUSTERS_FOR_INTERVAL, cluster_bootstrap_ci

CHUNK_ELEMENTS = 2_000_000
"""At most this many numbers are drawn per block of bootstrap resamples (bounds the memory of the draws)."""


def sign_test(n_plus: int, n_minus: int) -> float | None:
    """Exact two-sided sign test: ``p = min(1, 2 · P(X ≤ min(n₊, n₋)))``, ``X ~ Binomial(n₊ + n₋, 1/2)``.

    None when ``n₊ + n₋ == 0`` (nothing to test). Computed from the binomial distribution function; equal to
    ``scipy.stats.binomtest(n₊, n₊ + n₋, 0.5).pvalue`` (the distribution is symmetric).
    """
    from scipy.stats import binom  # late: scipy.stats is slow to import (~0.6 s)

    n_plus, n_minus = int(n_plus), int(n_minus)
    n = n_plus + n_minus
    if n == 0:
        return None
    return float(min(1.0, 2.0 * binom.cdf(min(n_plus, n_minus), n, 0.5)))


def mcnemar_exact(b: int, c: int) -> float | None:
    """Exact two-sided McNemar p-value of ``b`` and ``c`` discordant items (McNemar 1947, exact form).

    ``p = min(1, 2 · P(X ≤ min(b, c)))``, ``X ~ Binomial(b + c, 1/2)``: the sign test of the discordant items.
    None when ``b + c == 0`` (no discordant item: nothing to test).

    Examples
    --------
    >>> mcnemar_exact(3, 3), mcnemar_exact(0, 0)
    (1.0, None)
    """
    return sign_test(b, c)


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    """``[quantile(draws, α/2), quantile(draws, 1 − α/2)]``, α = 1 − confidence (linear interpolation)."""
    alpha = 1.0 - confidence
    low, high = np.quantile(np.asarray(draws, dtype=np.float64), [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided paired bootstrap p-value of resampled differences against 0.

    ``p = min(1, 2 · min(1 + #{Δ* ≤ 0}, 1 + #{Δ* ≥ 0}) / (B + 1))`` (Efron & Tibshirani 1993 §15–16).
    """
    d = np.asarray(differences, dtype=np.float64)
    below = int(np.count_nonzero(d <= 0))
    above = int(np.count_nonzero(d >= 0))
    return float(min(1.0, 2.0 * (1 + min(below, above)) / (d.size + 1)))


def item_draws(values: np.ndarray, *, seed: int, n_resamples: int) -> np.ndarray:
    """Bootstrap means of every column of ``values`` (n, k), the same resampled rows for every column.

    Each resample draws ``rng.integers(0, n, size=n)`` (``numpy.random.default_rng(seed)``), in the order
    :func:`biastest.stats.bootstrap.bootstrap_mean_ci` draws them, so a column's draws are exactly that function's
    for the column alone (the per-model intervals) and the difference of two columns' draws is its draws for the
    per-item differences (the intervals of the differences): one pass instead of one per model and per pair.

    Returns
    -------
    ndarray (n_resamples, k)
    """
    x = np.asarray(values, dtype=np.float64)
    n, k = x.shape
    rng = np.random.default_rng(seed)
    out = np.empty((n_resamples, k), dtype=np.float64)
    rows = max(1, CHUNK_ELEMENTS // max(1, n * k))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = x[idx].sum(axis=1) / n
    return out


def mean_interval(values: np.ndarray, clusters: list[Any] | None, *, seed: int, n_resamples: int,
                  confidence: float, draws: np.ndarray | None = None) -> tuple[float | None, float | None]:
    """Bootstrap interval of the mean of ``values``: items (from ``draws`` when given), or whole clusters (None
    below the minimum).

    Parameters
    ----------
    values : ndarray (n,)
        One model's values, or the paired differences of two, on the compared items.
    clusters : list, optional
        One cluster label per item (None: items are resampled).
    seed, n_resamples, confidence :
        The bootstrap settings.
    draws : ndarray (n_resamples,), optional
        The item bootstrap's resampled means, already drawn (:func:`item_draws`).

    Returns
    -------
    tuple of (float or None, float or None)
        The percentile interval; ``(None, None)`` below
        :data:`~biastest.stats.clusters.MIN_CLUSTERS_FOR_INTERVAL` clusters.
    """
    if clusters is None:
        if draws is not None:
            return percentile_interval(draws, confidence)
        ci = bootstrap_mean_ci(values, seed=seed, n_resamples=n_resamples, confidence=confidence)
        return ci.low, ci.high
    if len(set(clusters)) < MIN_CLUSTERS_FOR_INTERVAL:
        return None, None
    cci = cluster_bootstrap_ci(values, clusters, seed=seed, n_resamples=n_resamples, confidence=confidence)
    return cci.low, cci.high


class BootstrapSettings(NamedTuple):
    """The seeded bootstrap of a comparison (checked by :func:`check_settings`; unpacks as a tuple)."""

    seed: int
    n_resamples: int
    confidence: float


def check_settings(seed: Any, n_resamples: Any, confidence: Any) -> BootstrapSettings:
    """The bootstrap settings of a comparison, checked with the project's bound messages.

    Parameters
    ----------
    seed : int
        Recorded; every resample comes from ``numpy.random.default_rng(seed)``.
    n_resamples : int
    confidence : float
        In (0, 1).

    Returns
    -------
    BootstrapSettings

    Raises
    ------
    DataError
        A setting out of its bounds (:mod:`biastest.stats.bootstrap`'s messages).
    """
    return BootstrapSettings(check_seed(seed), check_n_resamples(n_resamples), check_confidence(confidence))
