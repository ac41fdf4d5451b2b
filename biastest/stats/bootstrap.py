"""Seeded, vectorised percentile bootstrap confidence intervals for means.

The one entry point, :func:`bootstrap_mean_ci`, resamples observations with
replacement ``n_resamples`` times (numpy ``default_rng(seed)``), computes the
mean of each resample, and returns the percentile interval
``[q((1 − confidence)/2), q((1 + confidence)/2)]`` of those means (Efron's
percentile method; ``numpy.quantile`` with linear interpolation).

With ``strata`` the resampling is *stratified*: every stratum is resampled
within itself, keeping its size, and the statistic is either

- ``average="micro"``: the mean over all observations (strata only fix the
  resampling), or
- ``average="macro"``: the mean of the per-stratum means (each stratum weighs
  the same however many observations it has).

Uses: a proportion of 0/1 verdicts (stereotype score), a mean of soft
probabilities in [0, 1] (vision-language score), macro averages over terms.
Work is done in chunks of at most ~2 million numbers, so 10,000 resamples of
5,000 observations need no more than ~16 MB at a time; results depend only on
the inputs and the seed.

Examples
--------
>>> import numpy as np
>>> ci = bootstrap_mean_ci(np.array([1, 0, 1, 1, 0, 1]), seed=0, n_resamples=2000)
>>> round(ci.estimate, 3), ci.low <= ci.estimate <= ci.high
(0.667, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from biastest.errors import DataError

__all__ = ["BootstrapCI", "bootstrap_mean_ci", "check_confidence", "check_n_resamples", "check_seed"]

MSG_EMPTY = "There are no values to compute a confidence interval from."
MSG_NOT_FINITE = "The values contain {count} missing or infinite numbers; remove them before computing an interval."
MSG_BAD_CONFIDENCE = "The confidence level must be a number between 0 and 1 (for example 0.95), got {value!r}."
MSG_BAD_RESAMPLES = "The number of bootstrap resamples must be a whole number of at least 100, got {value!r}."
MSG_BAD_SEED = "The seed must be a whole number, got {value!r}."
MSG_BAD_STRATA = "The strata must give one label per value ({n_values} values, {n_strata} labels)."
MSG_BAD_AVERAGE = "Unknown average '{value}'. Choose 'micro' (over all values) or 'macro' (mean of group means)."

_CHUNK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class BootstrapCI:
    """A bootstrap percentile confidence interval of a mean.

    Attributes
    ----------
    estimate : float
        The statistic on the original data (micro or macro mean).
    low, high : float
        Interval bounds.
    confidence : float
    n_resamples : int
    seed : int
    stratified : bool
    average : {"micro", "macro"}
    method : str
        ``"percentile bootstrap"``.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n_resamples: int
    seed: int
    stratified: bool
    average: str
    method: str = "percentile bootstrap"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_confidence(confidence: Any) -> float:
    """Validate a confidence level in (0, 1)."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < float(confidence) < 1:
        raise DataError(MSG_BAD_CONFIDENCE.format(value=confidence))
    return float(confidence)


def check_n_resamples(n_resamples: Any) -> int:
    """Validate a number of resamples (whole number ≥ 100)."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer) or n_resamples < 100:
        raise DataError(MSG_BAD_RESAMPLES.format(value=n_resamples))
    return int(n_resamples)


def check_seed(seed: Any) -> int:
    """Validate a seed (whole number)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise DataError(MSG_BAD_SEED.format(value=seed))
    return int(seed)


def _resampled_sums(values: np.ndarray, rng: np.random.Generator, n_resamples: int) -> np.ndarray:
    """Sum of each of ``n_resamples`` resamples (with replacement, same size) of ``values``."""
    m = values.size
    out = np.empty(n_resamples, dtype=np.float64)
    rows = max(1, _CHUNK_ELEMENTS // max(m, 1))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, m, size=(stop - start, m))
        out[start:stop] = values[idx].sum(axis=1)
    return out


def bootstrap_mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    strata: Sequence[Any] | None = None,
    average: str = "micro",
) -> BootstrapCI:
    """Percentile bootstrap confidence interval of a (micro or macro) mean.

    Formula: for b = 1..B draw indices with replacement (within each stratum
    when ``strata`` is given), compute ``θ*_b`` (the mean, or the mean of the
    stratum means for ``average="macro"``), and report
    ``[quantile(θ*, α/2), quantile(θ*, 1 − α/2)]`` with α = 1 − confidence
    (Efron & Tibshirani 1993, ch. 13).

    Parameters
    ----------
    values : array-like of float
        Observations (e.g. 1 = stereotyped, 0 = not; or probabilities).
    seed : int
        Seed of ``numpy.random.default_rng``; recorded in the result.
    n_resamples : int
        Number of bootstrap resamples (≥ 100).
    confidence : float
        Coverage of the interval, in (0, 1).
    strata : sequence, optional
        One label per value; resampling keeps each stratum's size.
    average : {"micro", "macro"}
        Mean over all values, or mean of per-stratum means (``macro`` without
        strata is the same as ``micro``).

    Returns
    -------
    BootstrapCI

    Raises
    ------
    DataError
        Empty or non-finite values, bad confidence, resamples, seed or strata.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise DataError(MSG_EMPTY)
    bad = int(np.count_nonzero(~np.isfinite(x)))
    if bad:
        raise DataError(MSG_NOT_FINITE.format(count=bad))
    confidence = check_confidence(confidence)
    n_resamples = check_n_resamples(n_resamples)
    seed = check_seed(seed)
    if average not in ("micro", "macro"):
        raise DataError(MSG_BAD_AVERAGE.format(value=average))
    rng = np.random.default_rng(seed)
    if strata is None:
        groups = [x]
    else:
        labels = list(strata)
        if len(labels) != x.size:
            raise DataError(MSG_BAD_STRATA.format(n_values=x.size, n_strata=len(labels)))
        order: dict[Any, list[int]] = {}
        for i, lab in enumerate(labels):
            order.setdefault(lab, []).append(i)
        groups = [x[np.asarray(ix)] for ix in order.values()]
    if average == "macro" and strata is not None:
        estimate = float(np.mean([g.mean() for g in groups]))
        stats = np.zeros(n_resamples)
        for g in groups:
            stats += _resampled_sums(g, rng, n_resamples) / g.size
        stats /= len(groups)
    else:
        estimate = float(x.mean())
        stats = np.zeros(n_resamples)
        for g in groups:
            stats += _resampled_sums(g, rng, n_resamples)
        stats /= x.size
    alpha = 1.0 - confidence
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return BootstrapCI(
        estimate=estimate,
        low=float(low),
        high=float(high),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        stratified=strata is not None,
        average=average if strata is not None else "micro",
    )
