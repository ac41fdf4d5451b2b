"""Psychometric fits with a symmetric guess/lapse rate, for subjects with a position habit.

A model that answers a two-alternative question picks, with probability ``q``,
the option shown first whatever the stimulus, and otherwise answers by content
with the psychometric function ``Ψ(α) = F((α − μ)/s)``. When every stimulus is
asked equally often in both orders, cue 2 is the first-shown option half the
time, so the observed share of "cue 2" answers is

    ψ_obs(α) = q/2 + (1 − q)·Ψ(α; μ, s)

— the psychometric function with guess rate γ = q/2 and lapse rate λ = q/2
(Wichmann & Hill 2001, eq. 1, with γ = λ). ``F`` is the standard cumulative
normal (``sigmoid="norm"``) or the logistic ``1/(1 + e^(−z))``
(``sigmoid="logistic"``); ``q ∈ [0, 1)`` is fitted in ``[0, max_guess_lapse]``
or fixed by the caller (e.g. at the position share measured beside the curve).

A fit without the q terms is biased: on 11 levels α = 0, 0.1, …, 1 with q = 0.2
and a logistic of rate 1/s = 12, the plain logistic fit to the expected shares
converges to rate ≈ 5.8, and its PSE moves from 0.35 to 0.367 (from 0.65 to
0.633), toward the middle of the range (tests/test_psychometric_guess_lapse.py).

Read-outs (all of the content curve Ψ, not of ψ_obs):

* **PSE** = μ: Ψ(μ) = 1/2, and ψ_obs(μ) = 1/2 too, whatever q.
* **JND** = the standard deviation of the distribution whose cumulative
  distribution function is Ψ: ``s`` (norm) or ``π·s/√3`` (logistic), in α
  units. This is the definition the 2AFC measure on embeddings uses (JND = the
  standard deviation of the PSE across replicate models, ``jnd_sd``; Liang &
  Acuna 2020): pooled answers of replicates that each answer by a step at their
  own PSE follow Ψ = the CDF of those PSEs, whose standard deviation is this
  JND; and for a cumulative normal it is the σ of the Thurstonian mode's
  ``curve_sd``. (It is not the 50→75 % distance some labs call the JND:
  that is ``0.674·s`` (norm) or ``1.099·s`` (logistic).)
* **slope** = dΨ/dα at the PSE, ``f(0)/s`` (f(0) = 1/√(2π) or 1/4), the
  definition of :class:`~biastest.stats.psychometric.PsychometricFit`;
  **rate** = 1/s, the logistic's coefficient (what "slope 12" means in
  ``expit(12·(α − μ))``).

Fits maximise the binomial log-likelihood
``Σ_i k_i log ψ_obs(x_i) + (n_i − k_i) log(1 − ψ_obs(x_i))`` over
``(μ, log s, q)`` by projected Fisher scoring with step halving, from several
starts (all bootstrap data sets at once; it agrees with a Nelder–Mead maximiser
of a naive likelihood in the tests). A best fit that is a limit s → 0 (a step
between two levels, or a rise at one level) is recognised by comparing with
the likelihood of that limit. Levels with no
parseable answer (n = 0) carry no information and are left out. Data the model
cannot identify are reported with a status and a message, never with an
invented value: all answers one way (:data:`MSG_GL_NO_VARIATION`), answers
perfectly separated along α (:data:`MSG_GL_SEPARATED`), a best fit that is a
step with q explaining the exceptions (:data:`MSG_GL_STEP`), no dependence on
α (:data:`MSG_GL_FLAT`); fewer than three stimulus levels is refused
(:data:`MSG_GL_TOO_FEW_LEVELS`).

Intervals: seeded percentile bootstrap, ``"parametric"`` (``k* ~ Binomial(n,
ψ̂_obs(x))``), ``"nonparametric"`` (``k* ~ Binomial(n, k/n)``: the answers
resampled within each level) or ``"levels"`` (the stimuli resampled with
replacement, each with its counts: the cluster bootstrap when each level is one
stimulus, e.g. one first name, whose own reading varies around the curve).
Only a full fit (status ``"ok"``) is bootstrapped. Bootstrap data sets whose
best fit is a step keep their PSE (their scale is the fit's lower bound,
counted in ``n_bootstrap_step``); those with no PSE (all answers one way) are
left out and counted (``n_bootstrap_valid``). The PSE shift between two contexts
(:func:`~biastest.stats.psychometric.shift.pse_shift`) is the percentile interval of the differences of the two
contexts' bootstrap PSEs (:mod:`~biastest.stats.psychometric.shift`).

References
----------
Liang & Acuna (2020), Artificial mental phenomena: psychophysics as a framework
to detect perception biases in AI models. FAT* '20, §2.2 (PSE and JND).
Wichmann & Hill (2001), The psychometric function: I. Fitting, sampling, and
goodness of fit. Perception & Psychophysics 63(8), 1293–1313 (guess and lapse rates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from biastest.errors import DataError, MethodError
from biastest.provenance import provenance
from biastest.stats.psychometric.batch import fit_psychometric_batch
from biastest.stats.psychometric.fit import percentile_interval
from biastest.stats.psychometric.model import (
    _EPS,
    _F0,
    MSG_BAD_DATA_SHAPE,
    MSG_SEED_REQUIRED,
    _as_data,
    _cdf,
    _check_sigmoid,
    _log_binom_coef,
    _pdf,
    psychometric_function,
    separation_status,
)

__all__ = [
    "GuessLapseFit",
    "fit_guess_lapse",
    "guess_lapse_function",
    "guess_lapse_from_position_share",
    "jnd_from_scale",
    "GL_BOOTSTRAPS",
    "MIN_LEVELS",
    "MSG_GL_BAD_BOOTSTRAP",
    "MSG_GL_BAD_Q",
    "MSG_GL_BAD_SHARE",
    "MSG_GL_TOO_FEW_LEVELS",
    "MSG_GL_NO_VARIATION",
    "MSG_GL_SEPARATED",
    "MSG_GL_STEP",
    "MSG_GL_FLAT",
    "MSG_GL_FAILED",
    "MSG_GL_NO_INTERVAL",
]

#: The bootstrap kinds of :func:`fit_guess_lapse`.
GL_BOOTSTRAPS = ("parametric", "nonparametric", "levels")
#: Fewest distinct stimulus levels a fit takes (three parameters).
MIN_LEVELS = 3

MSG_GL_BAD_BOOTSTRAP = "The bootstrap kind '{value}' is not known; choose one of: parametric, nonparametric, levels."
MSG_GL_BAD_Q = (
    "The guess/lapse rate q (the share of answers given by position, not content) must be a number in [0, 1), "
    "and its largest fitted value below 1; got {value}."
)
MSG_GL_BAD_SHARE = "The share of answers naming the first-shown option must be in [0, 1]; got {value}."
MSG_GL_TOO_FEW_LEVELS = (
    "A psychometric curve with a guess/lapse rate needs answers at {need} or more different stimulus levels (α); "
    "these data have {count}. Add stimuli along the continuum."
)
MSG_GL_NO_VARIATION = (
    "Every parseable answer named the same cue, so no curve can be fitted: the PSE lies outside the stimuli "
    "asked (all answers were cue {side}). Add stimuli further toward the other end of the continuum."
)
MSG_GL_SEPARATED = (
    "The answers switch from all cue 1 to all cue 2 between α = {low:g} and α = {high:g} with no exception, so "
    "the steepness of the curve has no finite estimate: the PSE lies in that range. Add stimuli between these "
    "levels or ask more samples."
)
MSG_GL_STEP = (
    "The best fit is a step between α = {low:g} and α = {high:g} with the exceptions put down to the guess/lapse "
    "rate (q = {q:.3g}): the PSE lies in that range but the steepness (JND, slope) has no finite estimate. Add "
    "stimuli between these levels, or fix q (e.g. at the measured position share)."
)
MSG_GL_FLAT = (
    "The answers do not depend on α within the stimuli asked (the fitted curve is flat or almost all answers are "
    "put down to position, q = {q:.3g}): there is no PSE to report."
)
MSG_GL_FAILED = "The psychometric fit did not converge; there is no estimate for these data."
MSG_GL_NO_INTERVAL = (
    "Too few bootstrap data sets had a fit ({valid} of {total}); the interval is not reported."
)

_LOG_S_LOW = np.log(1e-4)  # scale bounds, as multiples of the stimulus span
_LOG_S_HIGH = np.log(1e2)
_BOUND_TOL = 1e-3
_STEP_TOL = 1e-7  # a step this close to the best likelihood is the best fit
_JND_FACTOR = {"norm": 1.0, "logistic": float(np.pi / np.sqrt(3.0))}


def guess_lapse_function(
    x: np.ndarray | float, *, pse: float, scale: float, guess_lapse: float, sigmoid: str = "logistic"
) -> np.ndarray:
    """ψ_obs(x) = q/2 + (1 − q)·F((x − μ)/s), the share of cue-2 answers under a balanced design.

    Parameters
    ----------
    x : array-like
        Stimulus levels α.
    pse, scale : float
        μ and s of the content curve Ψ.
    guess_lapse : float
        q, the share of answers given by position.
    sigmoid : {"norm", "logistic"}

    Examples
    --------
    >>> float(guess_lapse_function(10.0, pse=0.5, scale=0.1, guess_lapse=0.2))
    0.9
    """
    half = float(guess_lapse) / 2.0
    return psychometric_function(x, pse=pse, scale=scale, sigmoid=sigmoid, guess_rate=half, lapse_rate=half)


def guess_lapse_from_position_share(first_share: float) -> float:
    """q implied by the share of answers naming the first-shown option, under a balanced design.

    By content the first-shown option is named half the time (each cue is
    first in half the questions), so a habit of naming the first option with
    probability q gives ``P(first) = q + (1 − q)/2 = 1/2 + q/2``; a habit of
    naming the *last* option gives ``1/2 − q/2`` and the same symmetric
    ψ_obs. Hence ``q = |2·P(first) − 1|`` — an estimate to fix q with
    (``fit_guess_lapse(..., guess_lapse=q)``) when it is measured on the same answers.

    Examples
    --------
    >>> guess_lapse_from_position_share(0.6), guess_lapse_from_position_share(0.35)
    (0.2, 0.3)
    """
    share = float(first_share)
    if not 0.0 <= share <= 1.0:
        raise MethodError(MSG_GL_BAD_SHARE.format(value=share), value=share)
    return round(abs(2.0 * share - 1.0), 12)


def jnd_from_scale(scale: float | np.ndarray, sigmoid: str) -> float | np.ndarray:
    """The JND: the standard deviation of the distribution whose CDF is F((α − μ)/s).

    ``s`` for the cumulative normal, ``π·s/√3`` for the logistic (see the module docstring).

    Examples
    --------
    >>> round(jnd_from_scale(1.0, "logistic"), 4)
    1.8138
    """
    _check_sigmoid(sigmoid)
    return _JND_FACTOR[sigmoid] * scale


@dataclass(frozen=True)
class GuessLapseFit:
    """A psychometric fit with a symmetric guess/lapse rate (:func:`fit_guess_lapse`).

    Attributes
    ----------
    sigmoid : str
    status : str
        ``"ok"``; ``"no_variation"``, ``"separated"``, ``"step"``, ``"flat"``
        or ``"failed"`` (see ``message``). ``"separated"`` and ``"step"`` keep
        the PSE's bracket, the others have no parameters.
    message : str or None
        Why there is no full fit (one of the ``MSG_GL_*`` texts), None when ok.
    pse, scale, rate, slope, jnd : float or None
        μ; s; 1/s; dΨ/dα at μ = f(0)/s; the JND (module docstring).
    guess_lapse : float or None
        q (fitted, or as given when ``guess_lapse_fixed``).
    guess_lapse_fixed : bool
    log_likelihood : float or None
        Binomial log-likelihood at the fit (with binomial coefficients).
    pse_bracket : (float, float) or None
        For ``"separated"``/``"step"``: the levels the crossing lies between.
    pse_ci, jnd_ci, slope_ci, rate_ci, guess_lapse_ci : (float, float) or None
        Percentile bootstrap intervals at ``ci_level`` (``guess_lapse_ci`` None when q is fixed).
    n_bootstrap, n_bootstrap_valid, n_bootstrap_step : int
        Bootstrap data sets drawn, with a PSE, and whose fit was a step.
    bootstrap : str or None
    seed : int or None
    x, k, n : tuple
        The data fitted (levels with n = 0 left out).
    """

    sigmoid: str
    status: str
    message: str | None
    pse: float | None
    scale: float | None
    rate: float | None
    slope: float | None
    jnd: float | None
    guess_lapse: float | None
    guess_lapse_fixed: bool
    log_likelihood: float | None
    pse_bracket: tuple[float, float] | None
    pse_ci: tuple[float, float] | None
    jnd_ci: tuple[float, float] | None
    slope_ci: tuple[float, float] | None
    rate_ci: tuple[float, float] | None
    guess_lapse_ci: tuple[float, float] | None
    ci_level: float
    n_bootstrap: int
    n_bootstrap_valid: int
    n_bootstrap_step: int
    bootstrap: str | None
    seed: int | None
    x: tuple[float, ...]
    k: tuple[int, ...]
    n: tuple[int, ...]
    provenance: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def predict(self, x: np.ndarray | float, *, observed: bool = True) -> np.ndarray:
        """ψ_obs(x) (``observed=True``) or the content curve Ψ(x) under the fit (needs ``status == "ok"``)."""
        if not self.ok:
            raise MethodError(f"This psychometric fit has no finite parameters (status: {self.status}).")
        q = self.guess_lapse if observed else 0.0
        return guess_lapse_function(x, pse=self.pse, scale=self.scale, guess_lapse=q, sigmoid=self.sigmoid)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class _Point:
    status: str
    pse: float | None = None
    scale: float | None = None
    q: float | None = None
    nll: float | None = None
    bracket: tuple[float, float] | None = None


def _batch_nll(theta: np.ndarray, x: np.ndarray, k: np.ndarray, n: np.ndarray, sigmoid: str) -> np.ndarray:
    """Negative log-likelihood kernel per row at ``theta`` [B, 3] = (μ, log s, q)."""
    z = (x - theta[:, :1]) / np.exp(theta[:, 1:2])
    psi = np.clip(theta[:, 2:3] / 2 + (1 - theta[:, 2:3]) * _cdf(z, sigmoid), _EPS, 1 - _EPS)
    return -(k * np.log(psi) + (n - k) * np.log1p(-psi)).sum(axis=1)


def _batch_fit(x: np.ndarray, k: np.ndarray, n: np.ndarray, theta: np.ndarray, *, sigmoid: str,
               q_fixed: float | None, max_q: float, max_iter: int = 500,
               tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood fits of many data sets (rows) at once: (θ [B, 3], nll kernel [B]; NaN: no convergence).

    Projected Fisher scoring with step halving over θ = (μ, log s, q) in a box:
    μ within ten spans of the levels, s within [1e-4, 1e2] spans, q in
    [0, max_q] (or fixed). A coordinate at its bound whose gradient points out
    is held there for the step. Each accepted step raises the likelihood; a
    row still moving after ``max_iter`` steps gets a NaN likelihood (status "failed").
    """
    span = np.ptp(x, axis=1)
    span = np.where(span > 0, span, 1.0)
    lo = np.stack([x.min(axis=1) - 10 * span, np.log(span) + _LOG_S_LOW, np.zeros_like(span)], axis=1)
    hi = np.stack([x.max(axis=1) + 10 * span, np.log(span) + _LOG_S_HIGH, np.full_like(span, max_q)], axis=1)
    if q_fixed is not None:
        lo[:, 2] = hi[:, 2] = q_fixed
    theta = np.clip(np.array(theta, dtype=np.float64), lo, hi)
    nll = _batch_nll(theta, x, k, n, sigmoid)
    active = np.isfinite(nll)
    for _ in range(max_iter):
        rows = np.flatnonzero(active)
        if not rows.size:
            break
        th, xx, kk, nn = theta[rows], x[rows], k[rows], n[rows]
        s = np.exp(th[:, 1:2])
        z = (xx - th[:, :1]) / s
        cdf, pdf = _cdf(z, sigmoid), _pdf(z, sigmoid)
        q = th[:, 2:3]
        psi = np.clip(q / 2 + (1 - q) * cdf, _EPS, 1 - _EPS)
        d = np.stack([-(1 - q) * pdf / s, -(1 - q) * pdf * z, 0.5 - cdf], axis=2)  # dψ/dθ [b, L, 3]
        w = 1.0 / (psi * (1 - psi))
        grad = np.einsum("bl,blj->bj", (kk - nn * psi) * w, d)
        info = np.einsum("bl,blj,blm->bjm", nn * w, d, d)
        held = ((th <= lo[rows] + 1e-12) & (grad < 0)) | ((th >= hi[rows] - 1e-12) & (grad > 0))
        held[:, 2] |= q_fixed is not None
        grad = np.where(held, 0.0, grad)
        info = np.where(held[:, :, None] | held[:, None, :], 0.0, info)
        info[:, [0, 1, 2], [0, 1, 2]] += held + 1e-12 * (1 + np.abs(info[:, [0, 1, 2], [0, 1, 2]]))
        step = np.einsum("bjm,bm->bj", np.linalg.pinv(info), grad)
        t = np.ones(rows.size)
        accepted = np.zeros(rows.size, dtype=bool)
        new_th = th.copy()
        new_nll = nll[rows].copy()
        for _ in range(40):
            todo = np.flatnonzero(~accepted)
            if not todo.size:
                break
            cand = np.clip(th[todo] + t[todo, None] * step[todo], lo[rows[todo]], hi[rows[todo]])
            c_nll = _batch_nll(cand, xx[todo], kk[todo], nn[todo], sigmoid)
            ok = c_nll <= nll[rows[todo]] + 1e-12 * (1 + np.abs(nll[rows[todo]]))
            new_th[todo[ok]], new_nll[todo[ok]] = cand[ok], c_nll[ok]
            accepted[todo[ok]] = True
            t[todo[~ok]] /= 2
        moved = np.abs(new_th - th).max(axis=1)
        theta[rows], nll[rows] = new_th, new_nll
        active[rows[~accepted | (moved < tol * (1 + np.abs(th).max(axis=1)))]] = False
    nll[active] = np.nan
    return theta, nll


def _binomial_nll(k: np.ndarray, n: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, _EPS, 1 - _EPS)
    return -float((k * np.log(p) + (n - k) * np.log1p(-p)).sum())


def _best_step(x: np.ndarray, k: np.ndarray, n: np.ndarray, *, q_fixed: float | None,
               max_q: float) -> tuple[float, float, float, float, float]:
    """The best limit of the curve as s → 0: (nll kernel, bracket low, bracket high, q, PSE).

    Two kinds of limit: a step between two adjacent levels (ψ_obs = q/2 below,
    1 − q/2 above), and a rise *at* one level (μ → that level, so its ψ_obs is
    free in [q/2, 1 − q/2] and takes its observed share; the bracket is then
    its two neighbours). q is 2·(answers against the step)/(answers at the
    other levels), capped at ``max_q`` (or fixed).
    """
    levels = np.unique(x)
    m = levels.size
    # every candidate at once (rows): the m − 1 steps between adjacent levels, then the m rises at a level
    at = np.concatenate([np.full(m - 1, np.nan), levels])
    low = np.concatenate([levels[:-1], levels[np.maximum(np.arange(m) - 1, 0)]])
    high = np.concatenate([levels[1:], levels[np.minimum(np.arange(m) + 1, m - 1)]])
    is_rise = np.isfinite(at)[:, None]
    rise = is_rise & (x[None, :] == at[:, None])
    above = np.where(is_rise, x[None, :] > at[:, None], x[None, :] > low[:, None]) & ~rise
    rest = ~rise
    exceptions = (k * (rest & ~above)).sum(axis=1) + ((n - k) * (rest & above)).sum(axis=1)
    total = (n * rest).sum(axis=1)
    if q_fixed is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(total > 0, np.minimum(max_q, 2 * exceptions / np.where(total > 0, total, 1)), 0.0)
    else:
        q = np.full(at.size, float(q_fixed))
    half = (q / 2)[:, None]
    p = np.where(above, 1 - half, half)
    p = np.where(rise, np.clip(np.broadcast_to(k / n, p.shape), half, 1 - half), p)
    p = np.clip(p, _EPS, 1 - _EPS)
    nll = -(k * np.log(p) + (n - k) * np.log1p(-p)).sum(axis=1)
    if not np.isfinite(nll).any():
        return (np.inf, float(levels[0]), float(levels[-1]), 0.0, float(levels.mean()))
    j = int(np.argmin(np.where(np.isfinite(nll), nll, np.inf)))
    pse = 0.5 * float(low[j] + high[j]) if not np.isfinite(at[j]) else float(at[j])
    return float(nll[j]), float(low[j]), float(high[j]), float(q[j]), pse


def _classify(x: np.ndarray, k: np.ndarray, n: np.ndarray, mu: float, s: float, q: float, nll: float, *,
              q_fixed: float | None, max_q: float) -> _Point:
    """The status of an optimiser result: ok, a step (no finite scale is better than a step), flat, or failed."""
    span = float(np.ptp(x)) or 1.0
    if not np.isfinite(nll):
        return _Point("failed")
    log_rel = np.log(s / span)
    if log_rel >= _LOG_S_HIGH - _BOUND_TOL or (q_fixed is None and q >= max_q - _BOUND_TOL * max_q):
        return _Point("flat", q=q)
    step_nll, low, high, step_q, step_pse = _best_step(x, k, n, q_fixed=q_fixed, max_q=max_q)
    if log_rel <= _LOG_S_LOW + _BOUND_TOL or step_nll <= nll + _STEP_TOL * (1 + abs(nll)):
        return _Point("step", pse=step_pse, scale=span * np.exp(_LOG_S_LOW), q=step_q, nll=step_nll,
                      bracket=(low, high))
    return _Point("ok", pse=mu, scale=s, q=q, nll=nll)


def _starts(x: np.ndarray, k: np.ndarray, n: np.ndarray, *, sigmoid: str) -> list[tuple[float, float, float]]:
    """Starting points (μ, s, q) of a point fit: around the plain fit (q = 0) and from the middle of the range."""
    bf = fit_psychometric_batch(x, k, n, sigmoid=sigmoid)
    span = float(np.ptp(x)) or 1.0
    mu0 = float(bf.pse[0]) if bf.status[0] == "ok" else float(np.average(x, weights=n))
    s0 = float(bf.scale[0]) if bf.status[0] == "ok" and bf.scale[0] > 0 else span / 4
    mu0 = float(np.clip(mu0, x.min(), x.max()))
    return [(mu0, s0, 0.02), (mu0, s0 / 2, 0.2), (mu0, s0 / 4, 0.5), (float(x.min()) + span / 2, span / 10, 0.1)]


def _point_fit(x: np.ndarray, k: np.ndarray, n: np.ndarray, *, sigmoid: str, q_fixed: float | None, max_q: float,
               start: tuple[float, float, float] | None = None) -> _Point:
    """The maximum-likelihood fit of one data set (with the statuses of the module docstring)."""
    status, low, high = separation_status(x, k[None], n[None])
    st = str(status[0])
    if st == "no_variation":
        return _Point("no_variation")
    if st == "separated":  # a step with every answer on its side: q = 0 and s → 0 (or s → 0 at any fixed q)
        span = float(np.ptp(x)) or 1.0
        bracket = (float(low[0]), float(high[0]))
        return _Point("separated", pse=0.5 * (bracket[0] + bracket[1]), scale=span * np.exp(_LOG_S_LOW),
                      q=0.0 if q_fixed is None else q_fixed, bracket=bracket)
    if start is not None:
        starts = [start, (start[0], start[1], min(max_q, 0.5 * (start[2] + 0.3)))]
    else:
        starts = _starts(x, k, n, sigmoid=sigmoid)
    th0 = np.array([(m, np.log(max(sc, 1e-300)), q if q_fixed is None else q_fixed) for m, sc, q in starts])
    rows = len(starts)
    th, nll = _batch_fit(np.tile(x, (rows, 1)), np.tile(k, (rows, 1)), np.tile(n, (rows, 1)), th0, sigmoid=sigmoid,
                         q_fixed=q_fixed, max_q=max_q)
    best = int(np.nanargmin(np.where(np.isfinite(nll), nll, np.inf)))
    mu, s, q = float(th[best, 0]), float(np.exp(th[best, 1])), float(th[best, 2])
    nll_best = float(nll[best])
    return _classify(x, k, n, mu, s, q, nll_best, q_fixed=q_fixed, max_q=max_q)


def _message(point: _Point, k: np.ndarray) -> str | None:
    if point.status == "no_variation":
        return MSG_GL_NO_VARIATION.format(side=2 if k.sum() > 0 else 1)
    if point.status == "separated":
        return MSG_GL_SEPARATED.format(low=point.bracket[0], high=point.bracket[1])
    if point.status == "step":
        return MSG_GL_STEP.format(low=point.bracket[0], high=point.bracket[1], q=point.q)
    if point.status == "flat":
        return MSG_GL_FLAT.format(q=point.q if point.q is not None else float("nan"))
    if point.status == "failed":
        return MSG_GL_FAILED
    return None


def _prepare(x: Any, k: Any, n: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The data as float arrays, checked, levels with n = 0 left out, at least :data:`MIN_LEVELS` levels."""
    xa = np.asarray(x, dtype=np.float64).ravel()
    ka = np.asarray(k, dtype=np.float64).ravel()
    na = np.asarray(n, dtype=np.float64)
    na = np.full(ka.shape, float(na)) if na.ndim == 0 else na.ravel()
    if not (xa.shape == ka.shape == na.shape):
        raise DataError(MSG_BAD_DATA_SHAPE.format(nx=xa.shape, nk=ka.shape, nn=na.shape))
    keep = ~((na == 0) & (ka == 0))
    xa, ka, na = _as_data(xa[keep], ka[keep], na[keep])
    count = int(np.unique(xa).size)
    if count < MIN_LEVELS:
        raise DataError(MSG_GL_TOO_FEW_LEVELS.format(need=MIN_LEVELS, count=count), count=count)
    return xa, ka, na


def _check_options(sigmoid: str, bootstrap: str, guess_lapse: float | None, max_guess_lapse: float,
                   n_bootstrap: int, seed: int | None) -> None:
    _check_sigmoid(sigmoid)
    if bootstrap not in GL_BOOTSTRAPS:
        raise MethodError(MSG_GL_BAD_BOOTSTRAP.format(value=bootstrap), value=bootstrap)
    for value in (max_guess_lapse, guess_lapse):
        if value is not None and not (isinstance(value, (int, float)) and 0 <= value < 1):
            raise MethodError(MSG_GL_BAD_Q.format(value=value), value=value)
    if n_bootstrap and seed is None:
        raise MethodError(MSG_SEED_REQUIRED)


def _bootstrap(x: np.ndarray, k: np.ndarray, n: np.ndarray, point: _Point, *, sigmoid: str, q_fixed: float | None,
               max_q: float, n_bootstrap: int, kind: str, rng: np.random.Generator,
               index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Bootstrap refits: arrays [B] of PSE, scale and q (NaN where no PSE), and the number of steps.

    ``index`` [B, L] gives the levels each ``"levels"`` resample takes (drawn here when None).
    """
    if kind == "levels":
        if index is None:
            index = rng.integers(0, x.size, size=(n_bootstrap, x.size))
        xs, ns = x[index], n[index]
        ks = k[index]
    else:
        p = (guess_lapse_function(x, pse=point.pse, scale=point.scale, guess_lapse=point.q, sigmoid=sigmoid)
             if kind == "parametric" else k / n)
        ks = rng.binomial(n.astype(np.int64), np.broadcast_to(p, (n_bootstrap, x.size))).astype(np.float64)
        xs, ns = np.broadcast_to(x, ks.shape), np.broadcast_to(n, ks.shape)
    xs, ks, ns = (np.ascontiguousarray(np.broadcast_to(v, ks.shape)) for v in (xs, ks, ns))
    pse = np.full(n_bootstrap, np.nan)
    scale = np.full(n_bootstrap, np.nan)
    q = np.full(n_bootstrap, np.nan)
    status, low, high = separation_status(xs, ks, ns)
    enough = np.array([np.unique(row).size >= MIN_LEVELS for row in xs])
    sep = (status == "separated") & enough
    span = np.where(np.ptp(xs, axis=1) > 0, np.ptp(xs, axis=1), 1.0)
    pse[sep] = 0.5 * (low[sep] + high[sep])
    scale[sep] = span[sep] * np.exp(_LOG_S_LOW)
    q[sep] = 0.0 if q_fixed is None else q_fixed
    rows = np.flatnonzero((status == "ok") & enough)
    q0 = point.q if q_fixed is None else q_fixed
    starts = np.array([[point.pse, np.log(point.scale), q0],
                       [point.pse, np.log(point.scale), min(max_q, 0.5 * (q0 + 0.3)) if q_fixed is None else q0]])
    both = np.concatenate([rows, rows])
    th, nll = _batch_fit(xs[both], ks[both], ns[both], np.repeat(starts, rows.size, axis=0), sigmoid=sigmoid,
                         q_fixed=q_fixed, max_q=max_q)
    one, two = nll[: rows.size], nll[rows.size:]
    second = np.where(np.isfinite(two) & (~np.isfinite(one) | (two < one)), 1, 0)
    pick = np.arange(rows.size) + second * rows.size
    steps = int(sep.sum())
    for j, r in enumerate(rows):
        t = th[pick[j]]
        c = _classify(xs[r], ks[r], ns[r], float(t[0]), float(np.exp(t[1])), float(t[2]), float(nll[pick[j]]),
                      q_fixed=q_fixed, max_q=max_q)
        if c.status in ("ok", "step"):
            pse[r], scale[r], q[r] = c.pse, c.scale, c.q
            steps += c.status == "step"
    return pse, scale, q, steps


def fit_guess_lapse(
    x: Any,
    k: Any,
    n: Any,
    *,
    sigmoid: Literal["norm", "logistic"] = "logistic",
    guess_lapse: float | None = None,
    max_guess_lapse: float = 0.9,
    n_bootstrap: int = 0,
    bootstrap: Literal["parametric", "nonparametric", "levels"] = "parametric",
    ci_level: float = 0.95,
    seed: int | None = None,
) -> GuessLapseFit:
    """Fit ψ_obs(α) = q/2 + (1 − q)·F((α − μ)/s) to counts of cue-2 answers (module docstring).

    Parameters
    ----------
    x, k, n : array-like [L]
        Stimulus levels α; cue-2 answers; parseable answers (refusals and
        unparseable answers are not in ``n``). Levels with ``n = 0`` are left out.
    sigmoid : {"logistic", "norm"}
    guess_lapse : float, optional
        Fix q (e.g. at the measured position share); None fits it in ``[0, max_guess_lapse]``.
    max_guess_lapse : float
        Upper bound of the fitted q (below 1).
    n_bootstrap : int
        Bootstrap data sets for percentile intervals (0: none).
    bootstrap : {"parametric", "nonparametric", "levels"}
    ci_level : float
    seed : int
        Required when ``n_bootstrap > 0``.

    Returns
    -------
    GuessLapseFit

    Raises
    ------
    DataError
        :data:`MSG_GL_TOO_FEW_LEVELS`, or counts that are not counts.
    MethodError
        An unknown sigmoid or bootstrap kind, a q outside [0, 1), no seed for a bootstrap.

    Examples
    --------
    >>> x = np.linspace(0, 1, 11)
    >>> k = np.round(1e6 * guess_lapse_function(x, pse=0.4, scale=1 / 12, guess_lapse=0.2))
    >>> f = fit_guess_lapse(x, k, 1e6)
    >>> round(f.pse, 3), round(f.rate, 1), round(f.guess_lapse, 2)
    (0.4, 12.0, 0.2)
    """
    _check_options(sigmoid, bootstrap, guess_lapse, max_guess_lapse, n_bootstrap, seed)
    xa, ka, na = _prepare(x, k, n)
    q_fixed = None if guess_lapse is None else float(guess_lapse)
    point = _point_fit(xa, ka, na, sigmoid=sigmoid, q_fixed=q_fixed, max_q=max_guess_lapse)
    has_pse = point.status in ("ok", "step", "separated")
    full = point.status == "ok"
    cis: dict[str, tuple[float, float] | None] = dict.fromkeys(("pse", "jnd", "slope", "rate", "q"))
    n_valid = n_steps = 0
    if n_bootstrap and full:
        rng = np.random.default_rng(seed)
        b_pse, b_scale, b_q, n_steps = _bootstrap(xa, ka, na, point, sigmoid=sigmoid, q_fixed=q_fixed,
                                                  max_q=max_guess_lapse, n_bootstrap=n_bootstrap, kind=bootstrap,
                                                  rng=rng)
        n_valid = int(np.isfinite(b_pse).sum())
        cis = _intervals(b_pse, b_scale, b_q, sigmoid=sigmoid, ci_level=ci_level, fitted_q=q_fixed is None)
    return GuessLapseFit(
        sigmoid=sigmoid,
        status=point.status,
        message=_message(point, ka),
        pse=point.pse if has_pse else None,
        scale=point.scale if full else None,
        rate=1.0 / point.scale if full else None,
        slope=_F0[sigmoid] / point.scale if full else None,
        jnd=float(jnd_from_scale(point.scale, sigmoid)) if full else None,
        guess_lapse=point.q if (full or q_fixed is not None or point.status == "step") else None,
        guess_lapse_fixed=q_fixed is not None,
        log_likelihood=-point.nll + float(_log_binom_coef(ka, na)) if full else None,
        pse_bracket=point.bracket,
        pse_ci=cis["pse"],
        jnd_ci=cis["jnd"] if full else None,
        slope_ci=cis["slope"] if full else None,
        rate_ci=cis["rate"] if full else None,
        guess_lapse_ci=cis["q"] if full else None,
        ci_level=float(ci_level),
        n_bootstrap=int(n_bootstrap),
        n_bootstrap_valid=n_valid,
        n_bootstrap_step=int(n_steps),
        bootstrap=bootstrap if n_bootstrap else None,
        seed=seed,
        x=tuple(float(v) for v in xa),
        k=tuple(int(v) for v in ka),
        n=tuple(int(v) for v in na),
        provenance=provenance(
            method=f"psychometric fit with a symmetric guess/lapse rate ({sigmoid}, binomial maximum likelihood, "
                   + ("q fixed" if q_fixed is not None else "q fitted") + ")",
            seed=seed,
        ),
    )


def _intervals(b_pse: np.ndarray, b_scale: np.ndarray, b_q: np.ndarray, *, sigmoid: str, ci_level: float,
               fitted_q: bool) -> dict[str, tuple[float, float] | None]:
    """Percentile intervals of the bootstrap read-outs (None with fewer than two valid draws)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = {"pse": b_pse, "jnd": jnd_from_scale(b_scale, sigmoid), "slope": _F0[sigmoid] / b_scale,
                 "rate": 1.0 / b_scale, "q": b_q}
    out = {name: percentile_interval(d, ci_level=ci_level) for name, d in draws.items()}
    if not fitted_q:
        out["q"] = None
    return out
