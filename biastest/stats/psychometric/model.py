"""The psychometric model, its records and the data checks shared by every fit.

Ψ(x) = γ + (1 − γ − λ)·F((x − μ)/s) (:func:`psychometric_function`), the
fitted record (:class:`PsychometricFit`, :class:`BatchFit`), the checks on
stimulus levels and counts, and the test for perfectly separated data
(:func:`separation_status`). The package docstring
(:mod:`biastest.stats.psychometric`) gives the model and its references.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from biastest.errors import DataError, MethodError

__all__ = [
    "PsychometricFit",
    "BatchFit",
    "psychometric_function",
    "separation_status",
    "SIGMOIDS",
    "MSG_BAD_SIGMOID",
    "MSG_BAD_DATA_SHAPE",
    "MSG_BAD_COUNTS",
    "MSG_BAD_BOOTSTRAP",
    "MSG_SEED_REQUIRED",
    "MSG_BAD_RATES",
]

SIGMOIDS = ("norm", "logistic")

MSG_BAD_SIGMOID = "The psychometric function '{value}' is not known; choose one of: {choices}."
MSG_BAD_DATA_SHAPE = (
    "Stimulus levels, response counts and trial counts must have the same length; got {nx}, {nk} and {nn}."
)
MSG_BAD_COUNTS = (
    "Response counts must be whole numbers between 0 and the number of trials at each level, and every level "
    "needs at least one trial; check the data at level {level}."
)
MSG_BAD_BOOTSTRAP = "The bootstrap kind '{value}' is not known; choose 'parametric' or 'nonparametric'."
MSG_SEED_REQUIRED = "A seed is needed for the bootstrap so that its intervals can be repeated; give seed=<integer>."
MSG_BAD_RATES = (
    "The guess rate must be in [0, 1) and the largest lapse rate in [0, 1); together they must stay below 1. "
    "Got guess rate {guess} and largest lapse rate {lapse}."
)

_EPS = 1e-12
_CHUNK_ELEMENTS = 2_000_000  # bootstrap refits are fitted in chunks of at most this many numbers
_F0 = {"norm": 1.0 / np.sqrt(2.0 * np.pi), "logistic": 0.25}


def _cdf(z: np.ndarray, sigmoid: str) -> np.ndarray:
    return special.ndtr(z) if sigmoid == "norm" else special.expit(z)


def _pdf(z: np.ndarray, sigmoid: str) -> np.ndarray:
    if sigmoid == "norm":
        return np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
    e = special.expit(z)
    return e * (1.0 - e)


def _check_sigmoid(sigmoid: str) -> None:
    if sigmoid not in SIGMOIDS:
        raise MethodError(MSG_BAD_SIGMOID.format(value=sigmoid, choices=", ".join(SIGMOIDS)), value=sigmoid)


def psychometric_function(
    x: np.ndarray | float,
    *,
    pse: float | np.ndarray,
    scale: float | np.ndarray,
    sigmoid: str = "norm",
    guess_rate: float = 0.0,
    lapse_rate: float | np.ndarray = 0.0,
) -> np.ndarray:
    """Ψ(x) = γ + (1 − γ − λ)·F((x − μ)/s).

    Parameters
    ----------
    x : array-like
        Stimulus levels.
    pse : float
        μ, the midpoint of the sigmoid.
    scale : float
        s: the standard deviation (norm) or logistic scale, in units of ``x``.
    sigmoid : {"norm", "logistic"}
    guess_rate, lapse_rate : float
        γ and λ.

    Examples
    --------
    >>> float(psychometric_function(0.3, pse=0.3, scale=0.1))
    0.5
    """
    _check_sigmoid(sigmoid)
    z = (np.asarray(x, dtype=np.float64) - pse) / scale
    return guess_rate + (1.0 - guess_rate - lapse_rate) * _cdf(z, sigmoid)


@dataclass(frozen=True)
class PsychometricFit:
    """A fitted psychometric function with optional bootstrap intervals.

    Attributes
    ----------
    sigmoid : str
    status : str
        ``"ok"``; ``"separated"`` (responses perfectly separated along x: no
        finite MLE, ``pse``/``scale``/``slope`` are None and ``pse_bracket``
        gives the interval holding the crossing); ``"no_variation"`` (all
        responses the same); ``"failed"`` (the optimiser did not converge).
    pse : float or None
        μ (Ψ halfway between its asymptotes; Ψ = 0.5 when γ = λ = 0).
    scale : float or None
        s, in stimulus units.
    slope : float or None
        dΨ/dx at the PSE.
    guess_rate, lapse_rate : float
        γ (fixed) and λ (fitted when ``lapse=True``, else 0).
    log_likelihood : float or None
        Binomial log-likelihood at the fit (with binomial coefficients).
    pse_ci, slope_ci : (float, float) or None
        Percentile bootstrap intervals at ``ci_level``.
    n_bootstrap_valid : int
        Bootstrap data sets that had a finite fit (the others were separated).
    bootstrap : str or None
        ``"parametric"`` or ``"nonparametric"`` (binomial resampling), or what
        the caller resampled (:func:`fit_psychometric_proportions`, e.g. ``"cue pairs"``).
    x, k, n : tuple
        The data fitted (for a fit to proportions, ``k`` holds the expected
        counts ``n·p``, not whole numbers).
    """

    sigmoid: str
    status: str
    pse: float | None
    scale: float | None
    slope: float | None
    guess_rate: float
    lapse_rate: float
    lapse_fitted: bool
    log_likelihood: float | None
    pse_bracket: tuple[float, float] | None
    pse_ci: tuple[float, float] | None
    slope_ci: tuple[float, float] | None
    ci_level: float
    n_bootstrap: int
    n_bootstrap_valid: int
    bootstrap: str | None
    seed: int | None
    x: tuple[float, ...]
    k: tuple[int, ...]
    n: tuple[int, ...]
    provenance: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        """Ψ at ``x`` under the fitted parameters (needs ``status == "ok"``)."""
        if not self.ok:
            raise MethodError(f"This psychometric fit has no finite parameters (status: {self.status}).")
        return psychometric_function(
            x,
            pse=self.pse,
            scale=self.scale,
            sigmoid=self.sigmoid,
            guess_rate=self.guess_rate,
            lapse_rate=self.lapse_rate,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sigmoid": self.sigmoid,
            "status": self.status,
            "pse": self.pse,
            "scale": self.scale,
            "slope": self.slope,
            "guess_rate": self.guess_rate,
            "lapse_rate": self.lapse_rate,
            "lapse_fitted": self.lapse_fitted,
            "log_likelihood": self.log_likelihood,
            "pse_bracket": list(self.pse_bracket) if self.pse_bracket else None,
            "pse_ci": list(self.pse_ci) if self.pse_ci else None,
            "slope_ci": list(self.slope_ci) if self.slope_ci else None,
            "ci_level": self.ci_level,
            "n_bootstrap": self.n_bootstrap,
            "n_bootstrap_valid": self.n_bootstrap_valid,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "x": list(self.x),
            "k": list(self.k),
            "n": list(self.n),
            "provenance": self.provenance,
        }


def _as_data(x: Any, k: Any, n: Any, *, fractional: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if n.ndim == 0:
        n = np.full(k.shape, float(n))
    if x.shape[-1:] != k.shape[-1:] or k.shape != n.shape:
        raise DataError(MSG_BAD_DATA_SHAPE.format(nx=x.shape[-1:], nk=k.shape, nn=n.shape))
    if fractional:  # expected counts of a proportion: any real 0 ≤ k ≤ n, n > 0
        bad = ~(n > 0) | ~(k >= 0) | ~(k <= n) | ~np.isfinite(k) | ~np.isfinite(n)
    else:
        bad = (n < 1) | (k < 0) | (k > n) | (k != np.round(k)) | (n != np.round(n)) | ~np.isfinite(k)
    if np.any(bad):
        where = np.argwhere(bad)[0]
        level = float(np.broadcast_to(x, k.shape)[tuple(where)])
        raise DataError(MSG_BAD_COUNTS.format(level=level), level=level)
    if not np.all(np.isfinite(x)):
        raise DataError(MSG_BAD_COUNTS.format(level="(not a number)"))
    return x, k, n


def separation_status(x: np.ndarray, k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whether each data set (rows of ``k``) has a finite MLE without lapses.

    Returns
    -------
    status : array of str
        ``"ok"``, ``"separated"`` or ``"no_variation"``.
    low, high : arrays
        For separated data, the levels bracketing the crossing (else NaN).
    """
    x = np.broadcast_to(np.asarray(x, dtype=np.float64), k.shape)
    has_yes = k > 0
    has_no = k < n
    inf = np.inf
    min_yes = np.where(has_yes, x, inf).min(axis=-1)
    max_yes = np.where(has_yes, x, -inf).max(axis=-1)
    min_no = np.where(has_no, x, inf).min(axis=-1)
    max_no = np.where(has_no, x, -inf).max(axis=-1)
    no_var = ~has_yes.any(axis=-1) | ~has_no.any(axis=-1)
    sep_up = (min_yes >= max_no) & ~no_var
    sep_down = (max_yes <= min_no) & ~no_var & ~sep_up
    status = np.where(no_var, "no_variation", np.where(sep_up | sep_down, "separated", "ok"))
    low = np.where(sep_up, max_no, np.where(sep_down, max_yes, np.nan))
    high = np.where(sep_up, min_yes, np.where(sep_down, min_no, np.nan))
    return status, low, high


@dataclass(frozen=True)
class BatchFit:
    """Arrays of fits from :func:`~biastest.stats.psychometric.fit_psychometric_batch` (one entry per data set)."""

    sigmoid: str
    pse: np.ndarray
    scale: np.ndarray
    slope: np.ndarray
    log_likelihood: np.ndarray
    status: np.ndarray
    bracket_low: np.ndarray
    bracket_high: np.ndarray
    iterations: int


def _log_binom_coef(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Σ log C(n, k) over the last axis (turns the fitted kernel into the binomial log-likelihood)."""
    return (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)).sum(axis=-1)

