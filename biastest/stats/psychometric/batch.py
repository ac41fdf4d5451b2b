"""Many psychometric fits at once (γ = λ = 0): vectorised Fisher scoring of the binomial GLM.

``Ψ = F(a + b·x)`` with the probit (``"norm"``) or logit (``"logistic"``)
link has a concave log-likelihood, so Fisher scoring with step halving
reaches its maximum; ``PSE = −a/b`` and ``scale = 1/b``. The stimulus
levels are centred and scaled per data set for conditioning.
"""

from __future__ import annotations

import numpy as np

from biastest.stats.psychometric.model import (
    _EPS,
    _F0,
    BatchFit,
    _as_data,
    _cdf,
    _check_sigmoid,
    _log_binom_coef,
    _pdf,
    separation_status,
)

__all__ = ["fit_psychometric_batch"]


def fit_psychometric_batch(
    x: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    sigmoid: str = "norm",
    start: tuple[np.ndarray, np.ndarray] | None = None,
    max_iter: int = 100,
    tol: float = 1e-9,
    fractional: bool = False,
) -> BatchFit:
    """Maximum-likelihood fits (γ = λ = 0) of many data sets at once.

    Vectorised Fisher scoring with step halving for the binomial GLM
    ``Ψ = F(a + b·x)`` (probit for ``"norm"``, logit for ``"logistic"``),
    whose log-likelihood is concave; ``PSE = −a/b`` and ``scale = 1/b``.
    Data sets without a finite MLE get NaN parameters and their status.

    Parameters
    ----------
    x : array [L] or [M, L]
        Stimulus levels (shared or per data set).
    k, n : arrays [M, L] (or [L] for one data set)
        Yes-counts and trial counts.
    sigmoid : {"norm", "logistic"}
    start : (pse, scale) arrays [M], optional
        Starting values (e.g. the original fit for bootstrap refits).
    fractional : bool
        Accept non-integer ``k`` (expected counts ``n·p`` of observed
        proportions ``p``): the same objective is then the fractional-response
        quasi-likelihood of Papke & Wooldridge (1996), still concave, whose
        maximum is the fit of F to the proportions. The log-likelihood it
        reports is then not a likelihood of any data.

    Returns
    -------
    BatchFit
    """
    _check_sigmoid(sigmoid)
    x, k, n = _as_data(x, k, n, fractional=fractional)
    k2 = np.atleast_2d(k)
    n2 = np.atleast_2d(n)
    x2 = np.broadcast_to(x, k2.shape).astype(np.float64)
    m = k2.shape[0]
    status, low, high = separation_status(x2, k2, n2)
    u, xm, xs, a, b = _standardise(x2, n2, start)
    rows = np.flatnonzero(status == "ok")
    aa, bb, ll, active, it = _fisher_scoring(k2[rows], n2[rows], u[rows], a[rows], b[rows], sigmoid=sigmoid,
                                             max_iter=max_iter, tol=tol)
    a[rows], b[rows] = aa, bb
    ll_all = np.full(m, np.nan)
    ll_all[rows] = ll
    failed = np.zeros(m, dtype=bool)
    failed[rows[active]] = True
    status = np.where(failed, "failed", status)
    good = (status == "ok") & (b != 0)
    status = np.where((status == "ok") & (b == 0), "failed", status)
    with np.errstate(divide="ignore", invalid="ignore"):
        bx = b / xs
        ax = a - b * xm / xs
        pse = np.where(good, -ax / bx, np.nan)
        scale = np.where(good, 1.0 / bx, np.nan)
    slope = np.where(good, _F0[sigmoid] / scale, np.nan)
    full_ll = np.where(good, ll_all + _log_binom_coef(k2, n2), np.nan)
    return BatchFit(sigmoid, pse, scale, slope, full_ll, status, low, high, iterations=it)


def _standardise(
    x2: np.ndarray, n2: np.ndarray, start: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Levels centred and scaled per data set (u, mean, sd) and the starting (a, b) in those units."""
    m = x2.shape[0]
    w = n2 / n2.sum(axis=1, keepdims=True)
    xm = (w * x2).sum(axis=1)
    xs = np.sqrt((w * (x2 - xm[:, None]) ** 2).sum(axis=1))
    xs[xs == 0] = 1.0
    u = (x2 - xm[:, None]) / xs[:, None]
    a = np.zeros(m)
    b = np.zeros(m)
    if start is not None:
        pse0 = np.broadcast_to(np.asarray(start[0], dtype=np.float64), (m,))
        sc0 = np.broadcast_to(np.asarray(start[1], dtype=np.float64), (m,))
        valid = np.isfinite(pse0) & np.isfinite(sc0) & (sc0 != 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(valid, (xm - pse0) / sc0, 0.0)
            b = np.where(valid, xs / sc0, 0.0)
    return u, xm, xs, a, b


def _fisher_scoring(
    kk: np.ndarray,
    nn: np.ndarray,
    uu: np.ndarray,
    aa: np.ndarray,
    bb: np.ndarray,
    *,
    sigmoid: str,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Fisher scoring of the rows that have a finite MLE: (a, b, log-likelihood kernel, still active, iterations).

    ``aa`` and ``bb`` are updated in place. A row stops when its step is below ``tol`` (relative) or no
    step, even halved, raises its log-likelihood; rows still active after ``max_iter`` steps have failed.
    """
    eta = aa[:, None] + bb[:, None] * uu
    p = np.clip(_cdf(eta, sigmoid), _EPS, 1 - _EPS)
    ll = (kk * np.log(p) + (nn - kk) * np.log1p(-p)).sum(axis=1)
    active = np.ones(aa.size, dtype=bool)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - reported
        act = np.flatnonzero(active)
        if not act.size:
            break
        e, pp, k_, n_, u_ = eta[act], p[act], kk[act], nn[act], uu[act]
        da, db = _scoring_direction(e, pp, k_, n_, u_, sigmoid)
        step = np.ones(act.size)
        c_eta = e + da[:, None] + db[:, None] * u_
        c_p = np.clip(_cdf(c_eta, sigmoid), _EPS, 1 - _EPS)
        c_ll = (k_ * np.log(c_p) + (n_ - k_) * np.log1p(-c_p)).sum(axis=1)
        slack = 1e-12 * (1 + np.abs(ll[act]))
        ok = c_ll >= ll[act] - slack
        bad = np.flatnonzero(~ok)
        for _ in range(30):  # step halving, rarely needed
            if not bad.size:
                break
            step[bad] /= 2
            ce = e[bad] + step[bad, None] * (da[bad, None] + db[bad, None] * u_[bad])
            cp = np.clip(_cdf(ce, sigmoid), _EPS, 1 - _EPS)
            cl = (k_[bad] * np.log(cp) + (n_[bad] - k_[bad]) * np.log1p(-cp)).sum(axis=1)
            good = cl >= ll[act[bad]] - slack[bad]
            gb = bad[good]
            c_eta[gb], c_p[gb], c_ll[gb] = ce[good], cp[good], cl[good]
            ok[gb] = True
            bad = bad[~good]
        step[~ok] = 0.0
        upd = act[ok]
        aa[upd] += step[ok] * da[ok]
        bb[upd] += step[ok] * db[ok]
        eta[upd], p[upd], ll[upd] = c_eta[ok], c_p[ok], c_ll[ok]
        small = (np.abs(step * da) < tol * (1 + np.abs(aa[act]))) & (np.abs(step * db) < tol * (1 + np.abs(bb[act])))
        active[act[~ok | small]] = False
    return aa, bb, ll, active, it


def _scoring_direction(
    e: np.ndarray, pp: np.ndarray, k_: np.ndarray, n_: np.ndarray, u_: np.ndarray, sigmoid: str
) -> tuple[np.ndarray, np.ndarray]:
    """The Fisher-scoring step (Δa, Δb): the expected information's inverse times the score (0 where singular)."""
    d = _pdf(e, sigmoid)
    pq = pp * (1 - pp)
    r = (k_ - n_ * pp) * d / pq
    g0, g1 = r.sum(1), (r * u_).sum(1)
    wgt = n_ * d * d / pq
    i00, i01, i11 = wgt.sum(1), (wgt * u_).sum(1), (wgt * u_ * u_).sum(1)
    det = i00 * i11 - i01 * i01
    with np.errstate(divide="ignore", invalid="ignore"):
        da = np.nan_to_num((i11 * g0 - i01 * g1) / det, nan=0.0, posinf=0.0, neginf=0.0)
        db = np.nan_to_num((i00 * g1 - i01 * g0) / det, nan=0.0, posinf=0.0, neginf=0.0)
    return da, db
