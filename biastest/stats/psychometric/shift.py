"""The PSE shift between two contexts, with a bootstrap interval of the difference (issue 25).

Each context's answers are fitted by
:func:`~biastest.stats.psychometric.guess_lapse.fit_guess_lapse` (ψ_obs = q/2 +
(1 − q)·Ψ) and bootstrapped; the shift ``PSE_b − PSE_a`` gets the percentile
interval of the differences of the bootstrap PSEs. A context that moves the
PSE is a bias in the sense of Liang & Acuna (2020).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from biastest.stats.psychometric.fit import percentile_interval
from biastest.stats.psychometric.guess_lapse import (
    MSG_GL_NO_INTERVAL,
    GuessLapseFit,
    _bootstrap,
    _check_options,
    _intervals,
    _point_fit,
    _prepare,
    fit_guess_lapse,
)

__all__ = ["JointPSEDraws", "MSG_SHIFT_NO_FIT", "PSEShift", "joint_pse_draws", "pse_shift"]

MSG_SHIFT_NO_FIT = "The PSE shift needs a full fit in both contexts; {which} has none ({status})."


@dataclass(frozen=True)
class PSEShift:
    """The PSE shift between two contexts, ``shift = PSE_b − PSE_a``, with its bootstrap interval.

    Attributes
    ----------
    fit_a, fit_b : GuessLapseFit
        The two contexts' fits (with their own intervals).
    shift : float or None
    shift_ci : (float, float) or None
        Percentile interval of the differences of bootstrap PSEs (draws where both have a PSE).
    n_bootstrap, n_bootstrap_valid : int
    paired : bool
        Whether the ``"levels"`` bootstrap resampled the same stimuli in both contexts.
    message : str or None
        Why there is no shift or no interval.
    """

    fit_a: GuessLapseFit
    fit_b: GuessLapseFit
    shift: float | None
    shift_ci: tuple[float, float] | None
    ci_level: float
    n_bootstrap: int
    n_bootstrap_valid: int
    bootstrap: str
    paired: bool
    seed: int | None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "fit_a": self.fit_a.to_dict(), "fit_b": self.fit_b.to_dict(), "shift": self.shift,
            "shift_ci": list(self.shift_ci) if self.shift_ci else None, "ci_level": self.ci_level,
            "n_bootstrap": self.n_bootstrap, "n_bootstrap_valid": self.n_bootstrap_valid,
            "bootstrap": self.bootstrap, "paired": self.paired, "seed": self.seed, "message": self.message,
        }


def pse_shift(
    a: tuple[Any, Any, Any],
    b: tuple[Any, Any, Any],
    *,
    sigmoid: Literal["norm", "logistic"] = "logistic",
    guess_lapse: float | None = None,
    max_guess_lapse: float = 0.9,
    n_bootstrap: int = 1000,
    bootstrap: Literal["parametric", "nonparametric", "levels"] = "parametric",
    ci_level: float = 0.95,
    seed: int | None = None,
) -> PSEShift:
    """The shift of the PSE from context ``a`` to context ``b``, with a bootstrap interval of the difference.

    Each context is fitted by :func:`fit_guess_lapse` (same options) and
    bootstrapped ``n_bootstrap`` times — with independent generators spawned
    from ``seed`` (the contexts' answers are independent draws), except that
    the ``"levels"`` bootstrap resamples the same stimuli in both contexts when
    both were asked the same levels in the same order (``paired``), since a
    stimulus's own reading is shared by the contexts. The interval is the
    percentile interval of ``PSE*_b − PSE*_a`` over draws where both have a PSE.

    Parameters
    ----------
    a, b : (x, k, n)
        Each context's levels, cue-2 answers and parseable answers.
    sigmoid, guess_lapse, max_guess_lapse, n_bootstrap, bootstrap, ci_level, seed
        As in :func:`fit_guess_lapse` (``seed`` required when ``n_bootstrap > 0``).

    Returns
    -------
    PSEShift
    """
    _check_options(sigmoid, bootstrap, guess_lapse, max_guess_lapse, n_bootstrap, seed)
    data = [_prepare(*a), _prepare(*b)]
    q_fixed = None if guess_lapse is None else float(guess_lapse)
    kwargs = dict(sigmoid=sigmoid, guess_lapse=guess_lapse, max_guess_lapse=max_guess_lapse, ci_level=ci_level)
    points = [_point_fit(*d, sigmoid=sigmoid, q_fixed=q_fixed, max_q=max_guess_lapse) for d in data]
    paired = bootstrap == "levels" and data[0][0].shape == data[1][0].shape and bool(
        np.array_equal(data[0][0], data[1][0]))
    fits = [fit_guess_lapse(*d, **kwargs) for d in data]  # point fits and messages (intervals below)
    for name, p in zip(("context a", "context b"), points, strict=True):
        if p.status != "ok":
            return PSEShift(fits[0], fits[1], None, None, float(ci_level), int(n_bootstrap), 0, bootstrap, paired,
                            seed, message=MSG_SHIFT_NO_FIT.format(which=name, status=p.status))
    shift = points[1].pse - points[0].pse
    if not n_bootstrap:
        return PSEShift(fits[0], fits[1], shift, None, float(ci_level), 0, 0, bootstrap, paired, seed)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)]
    index = rngs[0].integers(0, data[0][0].size, size=(n_bootstrap, data[0][0].size)) if paired else None
    draws = []
    for d, p, rng in zip(data, points, rngs, strict=True):
        pse, scale, q, steps = _bootstrap(*d, p, sigmoid=sigmoid, q_fixed=q_fixed, max_q=max_guess_lapse,
                                          n_bootstrap=n_bootstrap, kind=bootstrap, rng=rng, index=index)
        draws.append((pse, scale, q, steps))
    fits = [_with_intervals(f, dr, sigmoid=sigmoid, ci_level=ci_level, fitted_q=q_fixed is None,
                            n_bootstrap=n_bootstrap, bootstrap=bootstrap, seed=seed)
            for f, dr in zip(fits, draws, strict=True)]
    diff = draws[1][0] - draws[0][0]
    valid = int(np.isfinite(diff).sum())
    ci = percentile_interval(diff, ci_level=ci_level)
    message = None if ci is not None else MSG_GL_NO_INTERVAL.format(valid=valid, total=n_bootstrap)
    return PSEShift(fits[0], fits[1], float(shift), ci, float(ci_level), int(n_bootstrap), valid, bootstrap, paired,
                    seed, message=message)


def _with_intervals(fit: GuessLapseFit, draws: tuple[np.ndarray, np.ndarray, np.ndarray, int], *, sigmoid: str,
                    ci_level: float, fitted_q: bool, n_bootstrap: int, bootstrap: str,
                    seed: int | None) -> GuessLapseFit:
    """``fit`` with the intervals of the bootstrap draws that :func:`pse_shift` made for it."""
    pse, scale, q, steps = draws
    cis = _intervals(pse, scale, q, sigmoid=sigmoid, ci_level=ci_level, fitted_q=fitted_q)
    full = fit.ok
    return GuessLapseFit(**{
        **fit.__dict__,
        "pse_ci": cis["pse"],
        "jnd_ci": cis["jnd"] if full else None,
        "slope_ci": cis["slope"] if full else None,
        "rate_ci": cis["rate"] if full else None,
        "guess_lapse_ci": cis["q"] if full else None,
        "n_bootstrap": int(n_bootstrap),
        "n_bootstrap_valid": int(np.isfinite(pse).sum()),
        "n_bootstrap_step": int(steps),
        "bootstrap": bootstrap,
        "seed": seed,
    })


@dataclass(frozen=True)
class JointPSEDraws:
    """Point PSEs and bootstrap PSEs of several data sets, drawn together (:func:`joint_pse_draws`).

    Attributes
    ----------
    pse : ndarray [F]
        Each data set's maximum-likelihood PSE (NaN where its fit is not ``"ok"``).
    status : tuple of str
        Each fit's status.
    draws : ndarray [F, B]
        Bootstrap PSEs (NaN where a draw has none; every row NaN for a fit that is not ``"ok"``).
    paired : bool
        Whether the ``"levels"`` bootstrap resampled the same stimuli in every data set.
    """

    pse: np.ndarray
    status: tuple[str, ...]
    draws: np.ndarray
    paired: bool


def joint_pse_draws(
    datasets: list[tuple[Any, Any, Any]],
    *,
    guess_lapses: list[float | None],
    sigmoid: Literal["norm", "logistic"] = "logistic",
    max_guess_lapse: float = 0.9,
    n_bootstrap: int = 1000,
    bootstrap: Literal["parametric", "nonparametric", "levels"] = "levels",
    seed: int | None = None,
) -> JointPSEDraws:
    """Fit several data sets and bootstrap their PSEs together, for differences between any of them.

    :func:`pse_shift` for more than two data sets (e.g. two models × two contexts, for a difference of shifts),
    each with its own q (fitted where ``guess_lapses[i]`` is None, else fixed). Generators are spawned from
    ``seed``, one per data set; the ``"levels"`` bootstrap draws one index of stimuli (from the first) for every
    data set when all were asked the same levels in the same order (``paired``: a stimulus's own reading is
    shared), exactly as :func:`pse_shift` does for two.

    Parameters
    ----------
    datasets : list of (x, k, n)
    guess_lapses : list of float or None
        One per data set.
    sigmoid, max_guess_lapse, n_bootstrap, bootstrap, seed
        As in :func:`pse_shift` (``seed`` required when ``n_bootstrap > 0``).

    Returns
    -------
    JointPSEDraws
    """
    for q in guess_lapses:
        _check_options(sigmoid, bootstrap, q, max_guess_lapse, n_bootstrap, seed)
    data = [_prepare(*d) for d in datasets]
    qs = [None if q is None else float(q) for q in guess_lapses]
    points = [_point_fit(*d, sigmoid=sigmoid, q_fixed=q, max_q=max_guess_lapse) for d, q in zip(data, qs, strict=True)]
    first = data[0][0]
    paired = bootstrap == "levels" and all(d[0].shape == first.shape and np.array_equal(d[0], first) for d in data)
    pse = np.array([p.pse if p.status == "ok" else np.nan for p in points], dtype=float)
    draws = np.full((len(data), int(n_bootstrap)), np.nan)
    if n_bootstrap:
        rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(data))]
        index = rngs[0].integers(0, first.size, size=(n_bootstrap, first.size)) if paired else None
        for i, (d, p, q, rng) in enumerate(zip(data, points, qs, rngs, strict=True)):
            if p.status == "ok":
                draws[i] = _bootstrap(*d, p, sigmoid=sigmoid, q_fixed=q, max_q=max_guess_lapse,
                                      n_bootstrap=n_bootstrap, kind=bootstrap, rng=rng, index=index)[0]
    return JointPSEDraws(pse=pse, status=tuple(p.status for p in points), draws=draws, paired=paired)
