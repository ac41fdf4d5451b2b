"""The JND of the 2AFC test on embeddings: its two named definitions and their intervals.

The just-noticeable difference (JND) says how sharply a target's answers turn
from one cue to the other. This module names two definitions, in α units (the
share of cue 2 in the stimulus), and never mixes them:

* **Replicate JND** (``jnd_sd``, the paper's definition, Liang & Acuna 2020,
  Fig. 2): the standard deviation (ddof = 1) across R replicate embedding
  models of the target's PSE (the mean over cue pairs in each model),
  ``JND = sqrt(Σ_r (PSE_r − mean PSE)² / (R − 1))``. Its interval is a seeded
  BCa bootstrap over the replicate models (:func:`replicate_sd_interval`).
* **Curve JND** (``jnd_curve``, when there are no replicates, or beside the
  replicate JND): the standard deviation of the distribution whose cumulative
  distribution function is the fitted psychometric function
  ``Ψ(α) = F((α − μ)/s)``: ``JND = s`` for the cumulative normal and
  ``JND = π·s/√3`` for the logistic — the house definition of
  :func:`biastest.stats.psychometric.jnd_from_scale` (the chat-curve JND).
  Pooled answers of replicates that each answer by a step at their own PSE
  follow Ψ = the CDF of those PSEs, so the two definitions agree when the
  PSEs follow the fitted family. With one model the curve pooled over cue
  pairs is the distribution of the cue pairs' PSEs, so the curve JND is
  their spread as the fitted function sees it. Its interval maps each
  bootstrap slope to a JND: the slope at the PSE is ``(1 − γ − λ)·f(0)/s``,
  so ``JND_b = JND · slope / slope_b`` (exact for every resample when the
  lapse rate is not fitted; with a fitted lapse rate, which moves between
  resamples, there is no interval: :data:`MSG_JND_NO_INTERVAL_LAPSE`).

(It is not the 50 → 75 % distance some labs call the JND: that is
``0.674·s`` for the cumulative normal and ``ln 3 · s = 1.099·s`` for the
logistic.)

The paper validates the JND against labour statistics: the JND of each
occupation against the binomial standard deviation of the share of women in
it, ``sqrt(p(1 − p))`` with ``p`` = % women / 100 (|r| = 0.401, p = 0.031 on
its 32 bootstrapped GloVe models). :func:`binomial_sd` gives it;
:func:`biastest.measures.twoafc.labor.jnd_labor_correlation` correlates.

Reference: Liang & Acuna (2020), Artificial mental phenomena: psychophysics as
a framework to detect perception biases in AI models. FAT* '20, §2.2, §5.1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from biastest.measures.twoafc.score import MIN_UNITS_FOR_INTERVAL
from biastest.stats.psychometric import PsychometricFit, jnd_from_scale

__all__ = [
    "JND_CURVE_DEFINITION",
    "JND_REPLICATE_DEFINITION",
    "MSG_JND_NO_FIT",
    "MSG_JND_NO_INTERVAL_LAPSE",
    "MSG_JND_NO_REPLICATE_INTERVAL",
    "MSG_JND_NO_SLOPE_INTERVAL",
    "binomial_sd",
    "curve_jnd",
    "curve_jnd_interval",
    "replicate_sd_interval",
]

JND_REPLICATE_DEFINITION = (
    "standard deviation of the PSE across replicate models (ddof=1): the replicate JND, the paper's definition"
)
JND_CURVE_DEFINITION = (
    "standard deviation of the fitted psychometric function's distribution: the curve JND, s for the cumulative "
    "normal, π·s/√3 for the logistic (Ψ(α) = F((α − PSE)/s))"
)

MSG_JND_NO_FIT = "No curve JND: the psychometric function could not be fitted ({status})."
MSG_JND_NO_SLOPE_INTERVAL = "No interval of the curve JND: the fit has no bootstrap interval."
MSG_JND_NO_INTERVAL_LAPSE = (
    "No interval of the curve JND: the lapse rate was fitted, and it changes between resamples, so the slope's "
    "interval does not translate into one of the JND."
)
MSG_JND_NO_REPLICATE_INTERVAL = (
    "No interval of the replicate JND: it needs at least {minimum} replicate models and some resamples."
)


def binomial_sd(pct_female: float | np.ndarray) -> float | np.ndarray:
    """The binomial standard deviation of a share: ``sqrt(p(1 − p))`` with ``p = pct_female / 100``.

    Examples
    --------
    >>> float(binomial_sd(50.0)), round(float(binomial_sd(10.0)), 4)
    (0.5, 0.3)
    """
    p = np.asarray(pct_female, dtype=np.float64) / 100.0
    out = np.sqrt(p * (1.0 - p))
    return float(out) if out.ndim == 0 else out


def curve_jnd(fit: PsychometricFit | None) -> float | None:
    """The curve JND of a fit: ``s`` (norm) or ``π·s/√3`` (logistic); None when the fit is not ``"ok"``.

    Examples
    --------
    >>> from biastest.stats.psychometric import fit_psychometric_proportions, psychometric_function
    >>> x = np.linspace(0, 1, 101)
    >>> f = fit_psychometric_proportions(x, psychometric_function(x, pse=0.4, scale=0.1, sigmoid="logistic")[None],
    ...                                  sigmoid="logistic")[0]
    >>> round(curve_jnd(f), 4)  # π·0.1/√3
    0.1814
    """
    if fit is None or not fit.ok or fit.scale is None:
        return None
    return float(jnd_from_scale(fit.scale, fit.sigmoid))


def curve_jnd_interval(fit: PsychometricFit | None) -> tuple[tuple[float, float] | None, str]:
    """The curve JND's interval from the fit's bootstrap slopes, or None and why.

    ``JND_b = JND · slope / slope_b`` (a decreasing map, so the interval's ends swap).
    """
    jnd = curve_jnd(fit)
    if fit is None or jnd is None:
        return None, MSG_JND_NO_FIT.format(status=fit.status if fit is not None else "no fit")
    if fit.lapse_fitted:
        return None, MSG_JND_NO_INTERVAL_LAPSE
    if fit.slope_ci is None or fit.slope is None or min(fit.slope_ci) <= 0:
        return None, MSG_JND_NO_SLOPE_INTERVAL
    lo, hi = fit.slope_ci
    return (jnd * fit.slope / hi, jnd * fit.slope / lo), ""


def _sd(values: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.std(values, axis=axis, ddof=1)


def replicate_sd_interval(
    values: Sequence[float], *, n_bootstrap: int, seed: int, ci_level: float
) -> tuple[float, float] | None:
    """BCa bootstrap interval of the standard deviation (ddof=1) of ``values`` (replicate PSEs).

    ``scipy.stats.bootstrap`` (``method="BCa"``) with ``n_bootstrap``
    resamples of the replicate models drawn from
    ``numpy.random.default_rng(seed)``. On normal values the nominal 95 %
    interval covers about 93 % with 32 replicates and 90 % with 16 (1,000
    resamples; the percentile interval covers 87 % and 84 %:
    ``tests/test_twoafc_jnd.py`` checks 32). None with fewer than
    :data:`~biastest.measures.twoafc.score.MIN_UNITS_FOR_INTERVAL` values,
    no resamples, or values that do not vary.
    """
    v = np.asarray(values, dtype=np.float64)
    if not n_bootstrap or v.size < MIN_UNITS_FOR_INTERVAL or not np.all(np.isfinite(v)) or np.ptp(v) == 0:
        return None
    res = stats.bootstrap((v,), _sd, n_resamples=int(n_bootstrap), confidence_level=float(ci_level), method="BCa",
                          rng=np.random.default_rng(seed), vectorized=True)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    return lo, hi
