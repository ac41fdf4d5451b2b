"""The statistics of the 2AFC task: PSEs over replicates and cue pairs, their intervals, psychometric fits.

:func:`twoafc` runs the decision rule of :mod:`biastest.measures.twoafc.score`
for every target × cue pair × α × replicate and summarises it into a
:class:`~biastest.measures.twoafc.result.TwoAFCResult`. Its steps are the
private functions below: similarities, PSEs, intervals from the data, fits,
and the result's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biastest.errors import DataError, MethodError
from biastest.measures.twoafc.jnd import (
    MSG_JND_NO_REPLICATE_INTERVAL,
    curve_jnd,
    curve_jnd_interval,
    replicate_sd_interval,
)
from biastest.measures.twoafc.result import PairPSE, TargetPSE, TwoAFCResult
from biastest.measures.twoafc.score import (
    DEFAULT_ALPHA_GRID,
    IDENTICAL_TOL,
    MIN_UNITS_FOR_INTERVAL,
    MSG_BAD_SIGMA,
    MSG_CI_NO_BOOTSTRAP,
    MSG_CI_TOO_FEW_UNITS,
    MSG_FIT_FAILED,
    MSG_FIT_NO_INTERVAL,
    MSG_FIT_NO_VARIATION,
    MSG_FIT_SEPARATED,
    MSG_IDENTICAL_CUES,
    MSG_LAPSE_REPLICATES_ONLY,
    MSG_MODES,
    SAT_TOL,
    cue_target_similarities,
    pse_closed_form,
    saturation,
    thurstonian_curve,
    twoafc_decide,
)
from biastest.models.embeddings import WordEmbeddings
from biastest.options import DEFAULT_CONFIDENCE, DEFAULT_TWOAFC_BOOTSTRAP
from biastest.stats.psychometric import (
    PsychometricFit,
    fit_psychometric_many,
    fit_psychometric_proportions,
    percentile_interval,
)

__all__ = ["twoafc"]


@dataclass(frozen=True)
class _PSEs:
    """The PSE arrays of one run (R replicates, T targets, P cue pairs)."""

    s1w: np.ndarray  # [R, T, P]
    s2w: np.ndarray  # [R, T, P]
    s12: np.ndarray  # [R, P]
    rtp: np.ndarray  # [R, T, P]
    tp: np.ndarray  # [T, P] mean over replicates
    rt: np.ndarray  # [R, T] mean over cue pairs
    sd_tp: np.ndarray | None
    sd_t: np.ndarray | None
    sd_over_pairs: np.ndarray | None


@dataclass(frozen=True)
class _Intervals:
    """What the PSE intervals resample, the resample weights [B, units], and each target's interval."""

    units: str
    n_units: int
    weights: np.ndarray | None
    note: str
    pse_ci: list[tuple[float, float] | None]


def _sd(values: np.ndarray, axis: int) -> np.ndarray | None:
    if values.shape[axis] < 2:
        return None
    return values.std(axis=axis, ddof=1)


def _pses(models: Sequence[WordEmbeddings], targets: Sequence[str], cue_pairs: Sequence[tuple[str, str]]) -> _PSEs:
    """Similarities in every model, refused where two cues have one direction, and the PSEs they give."""
    sims = [cue_target_similarities(m, targets, cue_pairs) for m in models]
    s1w_a, s2w_a, s12_a = (np.stack([s[i] for s in sims]) for i in range(3))
    bad = np.argwhere(s12_a >= 1.0 - IDENTICAL_TOL)
    if bad.size:
        r, p = bad[0]
        raise DataError(
            MSG_IDENTICAL_CUES.format(
                cue1=cue_pairs[p][0], cue2=cue_pairs[p][1], source=models[r].name, similarity=float(s12_a[r, p])
            ),
            cue_pair=list(cue_pairs[p]),
        )
    rtp = pse_closed_form(s1w_a, s2w_a, s12_a[:, None, :])  # [R, T, P]
    tp = rtp.mean(axis=0)
    rt = rtp.mean(axis=2)  # per target: mean over pairs, per replicate
    return _PSEs(s1w=s1w_a, s2w=s2w_a, s12=s12_a, rtp=rtp, tp=tp, rt=rt, sd_tp=_sd(rtp, 0), sd_t=_sd(rt, 0),
                 sd_over_pairs=_sd(tp, 1))


def _intervals(pses: _PSEs, *, mode: str, n_bootstrap: int, seed: int, ci_level: float) -> _Intervals:
    """Intervals of the PSE from the data: resample replicate models (mode "replicates") or cue pairs."""
    R, T, P = pses.rtp.shape
    units, n_units = ("replicate models", R) if mode == "replicates" else ("cue pairs", P)
    weights = None  # [B, units]: multiplicity of each unit in each resample, over the number of units
    ci_note = ""
    if not n_bootstrap:
        ci_note = MSG_CI_NO_BOOTSTRAP
    elif n_units < MIN_UNITS_FOR_INTERVAL:
        ci_note = MSG_CI_TOO_FEW_UNITS.format(n=n_units, units=units, minimum=MIN_UNITS_FOR_INTERVAL)
    else:
        draws = np.random.default_rng(seed).integers(0, n_units, size=(int(n_bootstrap), n_units))
        weights = np.zeros((int(n_bootstrap), n_units))
        np.add.at(weights, (np.arange(int(n_bootstrap))[:, None], draws), 1.0)
        weights /= n_units
    pse_ci: list[tuple[float, float] | None] = [None] * T
    if weights is not None:
        boot = weights @ (pses.rt if mode == "replicates" else pses.tp.T)  # [B, T]
        pse_ci = [percentile_interval(boot[:, t], ci_level=ci_level, n_units=n_units) for t in range(T)]
    return _Intervals(units=units, n_units=n_units, weights=weights, note=ci_note, pse_ci=pse_ci)


def _one_model_fits(pses: _PSEs, grid: np.ndarray, ci: _Intervals, *, noise_sigma: float | None, sigmoid: str,
                    ci_level: float, seed: int) -> list[PsychometricFit | None]:
    """One model: each cue pair's curve is a step (single) or Φ under the user's σ (thurstonian); fit per target."""
    P = pses.tp.shape[1]
    if noise_sigma is not None:
        curves = thurstonian_curve(grid[None, None, :], pse=pses.tp[..., None],
                                   sim_c1_c2=pses.s12[0][None, :, None], noise_sigma=float(noise_sigma))
    else:
        curves = (grid[None, None, :] > pses.tp[..., None]).astype(np.float64)
    return list(
        fit_psychometric_proportions(
            grid,
            curves.mean(axis=1),
            weight=float(P),
            sigmoid=sigmoid,
            resampled=None if ci.weights is None else np.einsum("bp,tpa->bta", ci.weights, curves),
            resampled_units=ci.units,
            n_units=ci.n_units,
            ci_level=ci_level,
            seed=seed,
        )
    )


def _replicate_fits(pses: _PSEs, grid: np.ndarray, *, fit_pairs: bool, sigmoid: str, lapse: bool, n_bootstrap: int,
                    ci_level: float, seed: int) -> tuple[list[PsychometricFit | None], list[PsychometricFit | None]]:
    """Replicates: the pooled responses of eq. 8 [R, T, P, A]; fits per target × pair and per target."""
    R, T, P = pses.rtp.shape
    pair_fits: list[PsychometricFit | None] = [None] * (T * P)
    choose_c2 = twoafc_decide(
        pses.s1w[..., None], pses.s2w[..., None], pses.s12[:, None, :, None], grid[None, None, None, :]
    )
    k_tpa = choose_c2.sum(axis=0)  # [T, P, A]
    if fit_pairs:
        # start each fit at the replicates' mean PSE and spread (a concave problem: only speeds it up)
        spread = np.maximum(pses.sd_tp if pses.sd_tp is not None else np.full((T, P), 0.1), 1e-3).reshape(-1)
        pair_fits = list(
            fit_psychometric_many(
                grid,
                k_tpa.reshape(T * P, -1),
                np.full((T * P, grid.size), R),
                sigmoid=sigmoid,
                start=(pses.tp.reshape(-1), spread),
            )
        )
    k_ta = k_tpa.sum(axis=1)  # [T, A]
    target_fits = list(
        fit_psychometric_many(
            grid,
            k_ta,
            np.full(k_ta.shape, R * P),
            sigmoid=sigmoid,
            lapse=lapse,
            n_bootstrap=n_bootstrap,
            ci_level=ci_level,
            seed=seed,
        )
    )
    return pair_fits, target_fits


def _pair_rows(pses: _PSEs, targets: Sequence[str], cue_pairs: Sequence[tuple[str, str]], *,
               noise_sigma: float | None, fits: Sequence[PsychometricFit | None]) -> list[PairPSE]:
    """One :class:`PairPSE` per target × cue pair."""
    P = len(cue_pairs)
    var_tp = None if pses.sd_tp is None else pses.sd_tp**2
    sat_count = ((pses.rtp < -SAT_TOL) | (pses.rtp > 1 + SAT_TOL)).sum(axis=0)
    m1w, m2w, m12 = pses.s1w.mean(axis=0), pses.s2w.mean(axis=0), pses.s12.mean(axis=0)
    pairs = []
    for t, w in enumerate(targets):
        for p, (c1, c2) in enumerate(cue_pairs):
            pv = float(pses.tp[t, p])
            pairs.append(
                PairPSE(
                    target=w,
                    cue1=c1,
                    cue2=c2,
                    pse=pv,
                    saturated=saturation(pv),
                    pse_replicates=tuple(pses.rtp[:, t, p].tolist()),
                    n_saturated_replicates=int(sat_count[t, p]),
                    jnd_sd=None if pses.sd_tp is None else float(pses.sd_tp[t, p]),
                    pse_variance=None if var_tp is None else float(var_tp[t, p]),
                    curve_sd=(float(noise_sigma / (2.0 * (1.0 - pses.s12[0, p]))) if noise_sigma is not None
                              else None),
                    sim_c1_w=float(m1w[t, p]),
                    sim_c2_w=float(m2w[t, p]),
                    sim_c1_c2=float(m12[p]),
                    fit=fits[t * P + p],
                    jnd_curve=curve_jnd(fits[t * P + p]),
                )
            )
    return pairs


def _jnds(pses: _PSEs, t: int, fit: PsychometricFit | None, *, n_bootstrap: int, seed: int,
          ci_level: float) -> dict:
    """A target's JNDs (:mod:`biastest.measures.twoafc.jnd`): the replicate JND's interval, the curve JND, and why
    an interval is missing."""
    notes = []
    sd_ci = None
    if pses.sd_t is not None:
        sd_ci = replicate_sd_interval(pses.rt[:, t], n_bootstrap=n_bootstrap, seed=seed, ci_level=ci_level)
        if sd_ci is None:
            notes.append(MSG_JND_NO_REPLICATE_INTERVAL.format(minimum=MIN_UNITS_FOR_INTERVAL))
    c_ci, c_note = curve_jnd_interval(fit)
    if c_note:
        notes.append(c_note)
    return {"jnd_sd_ci": sd_ci, "jnd_curve": curve_jnd(fit), "jnd_curve_ci": c_ci, "jnd_note": " ".join(notes)}


def _target_rows(pses: _PSEs, targets: Sequence[str], cue_pairs: Sequence[tuple[str, str]], ci: _Intervals, *,
                 noise_sigma: float | None, fits: Sequence[PsychometricFit | None],
                 lapse_ignored: bool, n_bootstrap: int, seed: int, ci_level: float) -> list[TargetPSE]:
    """One :class:`TargetPSE` per target."""
    P = len(cue_pairs)
    pse_t = pses.rt.mean(axis=0)
    sd_t, sd_over_pairs = pses.sd_t, pses.sd_over_pairs
    pse_tp_list = pses.tp.tolist()
    curve_sd_t = (float(noise_sigma) / (2.0 * (1.0 - pses.s12[0]))).mean() if noise_sigma is not None else None
    rows = []
    for t, w in enumerate(targets):
        pv = float(pse_t[t])
        rows.append(
            TargetPSE(
                target=w,
                pse=pv,
                saturated=saturation(pv),
                jnd_sd=None if sd_t is None else float(sd_t[t]),
                pse_variance=None if sd_t is None else float(sd_t[t] ** 2),
                pse_sd_over_pairs=None if sd_over_pairs is None else float(sd_over_pairs[t]),
                n_pairs=P,
                n_saturated_pairs=int(sum(saturation(v) is not None for v in pse_tp_list[t])),
                pair_pse={f"{c1}/{c2}": pse_tp_list[t][p] for p, (c1, c2) in enumerate(cue_pairs)},
                fit=fits[t],
                pse_ci=ci.pse_ci[t],
                pse_ci_note="" if ci.pse_ci[t] is not None else (ci.note or MSG_FIT_NO_INTERVAL),
                curve_sd=None if curve_sd_t is None else float(curve_sd_t),
                fit_note=_fit_note(fits[t], ci_note=ci.note, lapse_ignored=lapse_ignored),
                **_jnds(pses, t, fits[t], n_bootstrap=n_bootstrap, seed=seed, ci_level=ci_level),
            )
        )
    return rows


def twoafc(
    models: Sequence[WordEmbeddings],
    *,
    targets: Sequence[str],
    cue_pairs: Sequence[tuple[str, str]],
    seed: int,
    noise_sigma: float | None = None,
    alpha_grid: Sequence[float] | None = None,
    sigmoid: str = "norm",
    lapse: bool = False,
    n_bootstrap: int = DEFAULT_TWOAFC_BOOTSTRAP,
    ci_level: float = DEFAULT_CONFIDENCE,
    fit_pairs: bool = True,
    labels: tuple[str, str] = ("cue 1", "cue 2"),
) -> TwoAFCResult:
    """The 2AFC task of eq. 8 for every target × cue pair × α × replicate.

    ``score(c_i) = (1−α)·sim(c1,c_i) + α·sim(c2,c_i) + sim(w,c_i)``;
    ``PSE = 1/2 + (sim(c1,w) − sim(c2,w)) / (2(1 − sim(c1,c2)))``;
    ``JND = SD_r(PSE_r)`` (ddof=1) over replicate models (the replicate
    JND, with a BCa bootstrap interval over the models) and, in every mode,
    the curve JND of each fitted function (``s`` or ``π·s/√3``, with the
    interval of its bootstrap slopes): :mod:`biastest.measures.twoafc.jnd`.
    Reference: Liang & Acuna (2020), FAT* '20, eq. 8.

    Parameters
    ----------
    models : sequence of WordEmbeddings
        One model (mode "single", or "thurstonian" with ``noise_sigma``) or
        replicate models (mode "replicates"). Every term must have a vector in
        every model (the runner drops and reports the others first).
    targets, cue_pairs :
        Target words; (c1, c2) pairs.
    seed : int
        Seed of every bootstrap (recorded).
    noise_sigma : float, optional
        Thurstonian perceptual noise σ for a single model.
    alpha_grid : sequence of float
        Stimulus levels for the pooled responses (default 0, 0.01, …, 1).
    sigmoid, lapse, n_bootstrap :
        Psychometric fits. Mode "replicates": per target × pair (point fit,
        when ``fit_pairs``) and per target to the binomial responses pooled over
        replicates and pairs (parametric bootstrap, as psignifit). Modes
        "single" and "thurstonian": per target to the curve pooled over cue
        pairs (fractional likelihood; interval from resampling the cue pairs);
        the lapse rate is fitted to replicate answers only.
    ci_level : float
        Level of every interval.
    fit_pairs : bool
        Mode "replicates": also fit each target × cue pair.
    labels : (str, str)
        Names of the first and the second cue (for plots and readings).

    Notes
    -----
    **Intervals of the PSE from the data.** Each target's PSE gets a
    percentile bootstrap interval over the units that make its variability:
    the replicate models (mode "replicates": the resampled statistic is the
    mean PSE over the drawn replicates) or the cue pairs (other modes: the
    mean PSE over the drawn pairs), ``n_bootstrap`` resamples from
    ``numpy.random.default_rng(seed)``, expanded for few units
    (:func:`~biastest.stats.psychometric.percentile_interval`). With fewer
    than :data:`MIN_UNITS_FOR_INTERVAL` units there is none and the result
    says why. The Thurstonian σ is not data: its implied spread
    (``curve_sd``) is reported apart, as the assumption it is.

    Returns
    -------
    TwoAFCResult
        Without the run's record (dropped words, lookup, provenance): the runner adds it.

    Examples
    --------
    >>> float(pse_closed_form(0.5, 0.3, 0.6))
    0.75
    """
    if not models:
        raise MethodError("A 2AFC test needs at least one embedding model.")
    if noise_sigma is not None:
        if len(models) > 1:
            raise MethodError(MSG_MODES)
        if not isinstance(noise_sigma, (int, float)) or not np.isfinite(noise_sigma) or noise_sigma <= 0:
            raise MethodError(MSG_BAD_SIGMA.format(value=noise_sigma), value=noise_sigma)
    targets = list(targets)
    cue_pairs = [tuple(p) for p in cue_pairs]
    if not targets or not cue_pairs:
        raise DataError("A 2AFC test needs at least one target word and one cue pair.")
    mode = "replicates" if len(models) > 1 else ("thurstonian" if noise_sigma is not None else "single")
    grid = np.asarray(DEFAULT_ALPHA_GRID if alpha_grid is None else alpha_grid, dtype=np.float64)
    pses = _pses(models, targets, cue_pairs)
    R, T, P = pses.rtp.shape
    ci = _intervals(pses, mode=mode, n_bootstrap=n_bootstrap, seed=seed, ci_level=ci_level)
    if mode == "replicates":
        pair_fits, target_fits = _replicate_fits(pses, grid, fit_pairs=fit_pairs, sigmoid=sigmoid, lapse=lapse,
                                                 n_bootstrap=n_bootstrap, ci_level=ci_level, seed=seed)
    else:
        pair_fits = [None] * (T * P)
        target_fits = _one_model_fits(pses, grid, ci, noise_sigma=noise_sigma, sigmoid=sigmoid, ci_level=ci_level,
                                      seed=seed)
    return TwoAFCResult(
        mode=mode,
        noise_sigma=float(noise_sigma) if noise_sigma is not None else None,
        n_replicates=R,
        pairs=tuple(_pair_rows(pses, targets, cue_pairs, noise_sigma=noise_sigma, fits=pair_fits)),
        targets=tuple(_target_rows(pses, targets, cue_pairs, ci, noise_sigma=noise_sigma, fits=target_fits,
                                   lapse_ignored=lapse and mode != "replicates", n_bootstrap=n_bootstrap, seed=seed,
                                   ci_level=ci_level)),
        cue_pairs=tuple((a, b) for a, b in cue_pairs),
        cue1_label=labels[0],
        cue2_label=labels[1],
        alpha_grid=tuple(float(v) for v in grid),
        dropped_targets={},
        dropped_pairs={},
        lookup={},
        seed=int(seed),
        provenance={},
        ci_level=float(ci_level),
        n_bootstrap=int(n_bootstrap),
        interval_units=ci.units,
    )


def _fit_note(fit: PsychometricFit | None, *, ci_note: str, lapse_ignored: bool) -> str:
    """Why a target's fit or its interval is missing (or what was not fitted); "" when complete."""
    notes = []
    if fit is not None:
        if fit.status == "separated" and fit.pse_bracket:
            notes.append(MSG_FIT_SEPARATED.format(low=fit.pse_bracket[0], high=fit.pse_bracket[1]))
        elif fit.status == "no_variation":
            notes.append(MSG_FIT_NO_VARIATION)
        elif fit.status != "ok":
            notes.append(MSG_FIT_FAILED)
        elif fit.pse_ci is None:  # no resamples were fitted (ci_note says why), or too few of them fitted
            notes.append(ci_note if not fit.n_bootstrap and ci_note else MSG_FIT_NO_INTERVAL)
    if lapse_ignored:
        notes.append(MSG_LAPSE_REPLICATES_ONLY)
    return " ".join(notes)

