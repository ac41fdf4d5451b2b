"""Psychophysics on embeddings: the two-alternative forced choice (2AFC) task.

A target word ``w`` (e.g. an occupation) is judged against a cue pair
``(c1, c2)`` (e.g. woman/man). The stimulus is the mixture ``α ∈ [0, 1]``
(0 = all c1) and each answer gets the score of eq. 8 of Liang & Acuna (2020):

    score(c_i) = (1 − α)·sim(c1, c_i) + α·sim(c2, c_i) + sim(w, c_i)

with cosine ``sim``; the answer is the higher score (c2 on a tie is never
reached in practice; ties go to c1). The psychometric curve is
``Ψ(α) = P(answer = c2)``. Since ``score(c2) − score(c1) =
(2α − 1)(1 − sim(c1,c2)) + sim(c2,w) − sim(c1,w)`` the crossing has a closed
form (no bisection):

    PSE = 1/2 + (sim(c1, w) − sim(c2, w)) / (2·(1 − sim(c1, c2)))

PSE > 0.5: ``w`` sits closer to c1 (it takes more than half c2 to answer c2).
A PSE outside [0, 1] means the curve never crosses inside the stimulus range:
it is **flagged saturated** (``"below"``/``"above"``) and its raw value kept —
never reported as 0.5 (the original bisection's trap).

Noise, three modes (named in every result):

* ``"single"``: one model; a deterministic step; PSE only.
* ``"replicates"``: a set of embedding models (given, or trained on
  Poisson(1) stream-bootstrap resamples of a corpus). PSE = mean over
  replicates; **JND = standard deviation of the PSE across replicates**
  (ddof=1, ``jnd_sd``, the paper's definition); ``pse_variance`` is the
  variance, the definition of the later ``psycho_ai`` package, offered only
  under that label. Psychometric functions are fitted to the pooled responses.
* ``"thurstonian"``: one model with explicit, user-set perceptual noise σ:
  the answer is c2 when ``score(c2) − score(c1) + ε > 0``, ``ε ~ N(0, σ²)``, so
  ``Ψ(α) = Φ(2(1 − sim(c1,c2))(α − PSE) / σ)`` exactly (no simulated data);
  its spread in α units is ``curve_sd = σ / (2(1 − sim(c1,c2)))``.

Reference: Liang & Acuna (2020), Artificial mental phenomena: psychophysics
as a framework to detect perception biases in AI models. FAT* '20, §3.1, §4.2.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special, stats

from biastest.errors import DataError, EmbeddingError, MethodError
from biastest.models.embeddings import WordEmbeddings, train_bootstrap_replicates
from biastest.options import DEFAULT_CONFIDENCE, DEFAULT_TWOAFC_BOOTSTRAP
from biastest.stats.psychometric import (
    PsychometricFit,
    fit_psychometric_many,
    fit_psychometric_proportions,
    percentile_interval,
)

__all__ = [
    "PAPER_CUE_PAIRS",
    "DEFAULT_ALPHA_GRID",
    "twoafc_scores",
    "twoafc_decide",
    "pse_closed_form",
    "saturation",
    "thurstonian_curve",
    "cue_target_similarities",
    "twoafc",
    "PairPSE",
    "TargetPSE",
    "TwoAFCResult",
    "PsychometricCurve",
    "Spectrum",
    "LaborCorrelation",
    "load_occupations_bls",
    "labor_statistics_correlation",
    "train_bootstrap_replicates",
    "MSG_IDENTICAL_CUES",
    "MSG_MODES",
    "MSG_BAD_SIGMA",
    "MSG_UNKNOWN_TARGET",
    "MSG_NO_PAIRS",
    "MSG_TOO_FEW_OCCUPATIONS",
    "MSG_BAD_SATURATED_POLICY",
    "MSG_CI_NO_BOOTSTRAP",
    "MSG_CI_TOO_FEW_UNITS",
    "MSG_FIT_SEPARATED",
    "MSG_FIT_NO_VARIATION",
    "MSG_FIT_FAILED",
    "MSG_FIT_NO_INTERVAL",
    "MSG_LAPSE_REPLICATES_ONLY",
    "MIN_UNITS_FOR_INTERVAL",
]

PAPER_CUE_PAIRS: tuple[tuple[str, str], ...] = (
    ("woman", "man"),
    ("female", "male"),
    ("she", "he"),
    ("her", "him"),
    ("hers", "his"),
    ("daughter", "son"),
    ("girl", "boy"),
    ("sister", "brother"),
)
"""The eight female/male cue pairs of the paper (after Bolukbasi et al. 2016)."""

DEFAULT_ALPHA_GRID = np.linspace(0.0, 1.0, 101)

MSG_IDENTICAL_CUES = (
    "The cues '{cue1}' and '{cue2}' have the same direction in '{source}' (cosine similarity {similarity:.6f}), so "
    "no mixture of them can tell them apart and the PSE is undefined. Choose two different cue words."
)
MSG_MODES = (
    "Choose one source of perceptual noise: a set of replicate models, or a noise level for one model, not both."
)
MSG_BAD_SIGMA = "The perceptual noise level must be a positive number; got {value!r}."
MSG_UNKNOWN_TARGET = "'{target}' is not a target of this result; choose one of: {choices}."
MSG_NO_PAIRS = (
    "No cue pair can be used: every pair has a cue missing from '{source}' ({missing}). Use cue words the "
    "embedding knows."
)
MSG_TOO_FEW_OCCUPATIONS = (
    "Only {n} occupation(s) have both a PSE and labour statistics; a correlation needs at least 3. "
    "Add occupations from the labour-statistics table."
)
MSG_BAD_SATURATED_POLICY = "The saturated-PSE handling '{value}' is not known; choose 'keep', 'drop' or 'clip'."
MSG_CI_NO_BOOTSTRAP = "No interval: the number of bootstrap samples is 0."
MSG_CI_TOO_FEW_UNITS = (
    "No interval: only {n} {units}, and an interval from resampling needs at least {minimum} (with fewer, the "
    "resamples cannot show how much the PSE would move)."
)
MSG_FIT_SEPARATED = (
    "No finite fit: the answers switch sides in one step between α = {low:.2f} and α = {high:.2f}, so the "
    "function's slope is unbounded; the crossing lies in that step."
)
MSG_FIT_NO_VARIATION = (
    "No fit: the answer is the same at every α from 0 to 1, so the curve never crosses inside the range "
    "(the PSE is saturated)."
)
MSG_FIT_FAILED = "No fit: the optimiser did not converge."
MSG_FIT_NO_INTERVAL = "No interval for the fit: fewer than two resampled curves could be fitted."
MSG_LAPSE_REPLICATES_ONLY = (
    "The lapse rate was not fitted: one model's curve has no lapses by construction; a lapse rate is fitted to "
    "the answers of replicate models only."
)

MIN_UNITS_FOR_INTERVAL = 5
"""Fewest resampled units (cue pairs or replicate models) for a bootstrap interval of the PSE.

With n units there are ``binom(2n − 1, n)`` distinct resamples (10 for n = 3,
126 for n = 5); on means of n normal values the expanded percentile interval
(:func:`biastest.stats.psychometric.percentile_interval`) of a nominal 95 %
covers about 75 % at n = 3, 92 % at n = 5 and 94 % at n = 8 (1,000 draws;
``tests/test_twoafc.py`` checks n = 8)."""

_SAT_TOL = 1e-12
_IDENTICAL_TOL = 1e-7


# --------------------------------------------------------------------------- the decision rule
def twoafc_scores(
    sim_c1_w: np.ndarray, sim_c2_w: np.ndarray, sim_c1_c2: np.ndarray, alpha: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the two answers, eq. 8 (broadcasting over all arguments).

    ``score(c1) = (1−α)·1 + α·sim(c2,c1) + sim(w,c1)``;
    ``score(c2) = (1−α)·sim(c1,c2) + α·1 + sim(w,c2)``.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    s12 = np.asarray(sim_c1_c2, dtype=np.float64)
    score1 = (1.0 - alpha) * 1.0 + alpha * s12 + np.asarray(sim_c1_w, dtype=np.float64)
    score2 = (1.0 - alpha) * s12 + alpha * 1.0 + np.asarray(sim_c2_w, dtype=np.float64)
    return score1, score2


def twoafc_decide(
    sim_c1_w: np.ndarray,
    sim_c2_w: np.ndarray,
    sim_c1_c2: np.ndarray,
    alpha: np.ndarray,
    *,
    noise_sigma: float | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The answer of eq. 8: True where c2 wins (broadcast over all arguments).

    With ``noise_sigma`` (Thurstonian), ``ε ~ N(0, σ²)`` is added to
    ``score(c2) − score(c1)`` before comparing; ``rng`` is then required.
    """
    s1, s2 = twoafc_scores(sim_c1_w, sim_c2_w, sim_c1_c2, alpha)
    diff = s2 - s1
    if noise_sigma is not None:
        if rng is None:
            raise MethodError("Noisy decisions need a random generator (rng) so that they can be repeated.")
        diff = diff + rng.normal(0.0, float(noise_sigma), size=diff.shape)
    return diff > 0


def pse_closed_form(sim_c1_w: np.ndarray, sim_c2_w: np.ndarray, sim_c1_c2: np.ndarray) -> np.ndarray:
    """PSE = 1/2 + (sim(c1,w) − sim(c2,w)) / (2(1 − sim(c1,c2))).

    Raises :class:`DataError` where ``sim(c1,c2)`` is 1 (identical cues).
    """
    s12 = np.asarray(sim_c1_c2, dtype=np.float64)
    if np.any(s12 >= 1.0 - _IDENTICAL_TOL):
        raise DataError(
            MSG_IDENTICAL_CUES.format(cue1="cue 1", cue2="cue 2", source="the embedding", similarity=float(s12.max()))
        )
    return 0.5 + (np.asarray(sim_c1_w, dtype=np.float64) - np.asarray(sim_c2_w, dtype=np.float64)) / (2.0 * (1.0 - s12))


def saturation(pse: float) -> str | None:
    """``"below"`` when PSE < 0, ``"above"`` when PSE > 1, else None."""
    if pse < -_SAT_TOL:
        return "below"
    if pse > 1.0 + _SAT_TOL:
        return "above"
    return None


def thurstonian_curve(alpha: np.ndarray, *, pse: np.ndarray, sim_c1_c2: np.ndarray, noise_sigma: float) -> np.ndarray:
    """Ψ(α) = Φ(2(1 − sim(c1,c2))(α − PSE) / σ) under Thurstonian noise σ."""
    return special.ndtr(2.0 * (1.0 - np.asarray(sim_c1_c2)) * (np.asarray(alpha) - np.asarray(pse)) / noise_sigma)


def cue_target_similarities(
    model: WordEmbeddings, targets: Sequence[str], cue_pairs: Sequence[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sim(c1,w), sim(c2,w) [T, P] and sim(c1,c2) [P] in one model.

    Every term must have a vector (check with ``lookup_report`` first).
    """
    cues = list(dict.fromkeys(c for p in cue_pairs for c in p))
    vecs, missing = model.vectors(list(targets) + cues)
    if missing:
        raise EmbeddingError(
            f"These words are not in '{model.name}': {', '.join(missing)}.", missing=list(missing), source=model.name
        )
    v = vecs.astype(np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise EmbeddingError("A word vector is all zeros, so its cosine similarity is undefined.")
    v /= norms
    t = v[: len(targets)]
    c = v[len(targets) :]
    pos = {w: i for i, w in enumerate(cues)}
    i1 = np.array([pos[a] for a, _ in cue_pairs])
    i2 = np.array([pos[b] for _, b in cue_pairs])
    tc = t @ c.T
    s12 = np.einsum("pd,pd->p", c[i1], c[i2])
    return tc[:, i1], tc[:, i2], s12


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class PairPSE:
    """PSE of one target against one cue pair.

    Attributes
    ----------
    pse : float
        The closed-form PSE (mode "single"/"thurstonian") or the mean of the
        replicate PSEs (mode "replicates"); raw, may lie outside [0, 1].
    saturated : str or None
        ``"below"`` (PSE < 0), ``"above"`` (PSE > 1) or None.
    pse_replicates : tuple of float
        Raw PSE per replicate (one value for a single model).
    n_saturated_replicates : int
    jnd_sd : float or None
        SD of the PSE across replicates (ddof=1); None with fewer than 2.
    pse_variance : float or None
        Variance of the PSE across replicates (ddof=1): the ``psycho_ai``
        definition of JND, offered under this label only.
    curve_sd : float or None
        Thurstonian mode: σ / (2(1 − sim(c1,c2))), the SD of Ψ in α units.
    sim_c1_w, sim_c2_w, sim_c1_c2 : float
        Cosine similarities (means over replicates).
    fit : PsychometricFit or None
        Mode "replicates": the fitted function to the pooled responses.
    """

    target: str
    cue1: str
    cue2: str
    pse: float
    saturated: str | None
    pse_replicates: tuple[float, ...]
    n_saturated_replicates: int
    jnd_sd: float | None
    pse_variance: float | None
    curve_sd: float | None
    sim_c1_w: float
    sim_c2_w: float
    sim_c1_c2: float
    fit: PsychometricFit | None

    @property
    def cue_pair(self) -> str:
        return f"{self.cue1}/{self.cue2}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "cue1": self.cue1,
            "cue2": self.cue2,
            "cue_pair": self.cue_pair,
            "pse": self.pse,
            "saturated": self.saturated,
            "pse_replicates": list(self.pse_replicates),
            "n_saturated_replicates": self.n_saturated_replicates,
            "jnd_sd": self.jnd_sd,
            "pse_variance": self.pse_variance,
            "curve_sd": self.curve_sd,
            "sim_c1_w": self.sim_c1_w,
            "sim_c2_w": self.sim_c2_w,
            "sim_c1_c2": self.sim_c1_c2,
            "fit": self.fit.to_dict() if self.fit is not None else None,
        }

    def record(self) -> dict[str, Any]:
        """Flat row for a table / CSV."""
        f = self.fit
        return {
            "target": self.target,
            "cue_pair": self.cue_pair,
            "cue1": self.cue1,
            "cue2": self.cue2,
            "pse": self.pse,
            "saturated": self.saturated or "",
            "jnd_sd": self.jnd_sd,
            "pse_variance_psycho_ai": self.pse_variance,
            "curve_sd": self.curve_sd,
            "n_replicates": len(self.pse_replicates),
            "n_saturated_replicates": self.n_saturated_replicates,
            "sim_c1_w": self.sim_c1_w,
            "sim_c2_w": self.sim_c2_w,
            "sim_c1_c2": self.sim_c1_c2,
            "fit_status": f.status if f else "",
            "fit_pse": f.pse if f else None,
            "fit_slope": f.slope if f else None,
        }


@dataclass(frozen=True)
class TargetPSE:
    """A target's PSE over all cue pairs.

    Attributes
    ----------
    pse : float
        Mean over cue pairs of the pair PSEs (raw).
    saturated : str or None
        Flag of the mean PSE.
    jnd_sd : float or None
        SD across replicates (ddof=1) of each replicate's mean-over-pairs PSE.
    pse_variance : float or None
        The same as a variance (``psycho_ai`` definition).
    pse_sd_over_pairs : float or None
        SD of the pair PSEs across cue pairs (ddof=1): agreement of the pairs.
    pair_pse : mapping cue pair → PSE
    n_saturated_pairs : int
    fit : PsychometricFit or None
        Fitted to the responses pooled over replicates and cue pairs (mode
        "replicates", binomial likelihood), or to the curve pooled over cue
        pairs (modes "single" and "thurstonian", fractional likelihood, interval
        from resampling the cue pairs).
    pse_ci : (float, float) or None
        Interval of ``pse`` from the data: the percentile bootstrap over the
        replicate models (mode "replicates") or over the cue pairs (other
        modes), expanded for few units; None with the reason in ``pse_ci_note``.
    pse_ci_note : str
        Why there is no ``pse_ci`` ("" when there is one).
    curve_sd : float or None
        Mode "thurstonian": mean over cue pairs of σ / (2(1 − sim(c1,c2))), the
        spread your σ implies — an assumption, not data.
    fit_note : str
        Why the fit or its interval is missing, or what was not fitted ("" when complete).
    """

    target: str
    pse: float
    saturated: str | None
    jnd_sd: float | None
    pse_variance: float | None
    pse_sd_over_pairs: float | None
    n_pairs: int
    n_saturated_pairs: int
    pair_pse: Mapping[str, float]
    fit: PsychometricFit | None
    pse_ci: tuple[float, float] | None = None
    pse_ci_note: str = ""
    curve_sd: float | None = None
    fit_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "pse": self.pse,
            "pse_ci": list(self.pse_ci) if self.pse_ci else None,
            "pse_ci_note": self.pse_ci_note,
            "curve_sd": self.curve_sd,
            "fit_note": self.fit_note,
            "saturated": self.saturated,
            "jnd_sd": self.jnd_sd,
            "pse_variance": self.pse_variance,
            "pse_sd_over_pairs": self.pse_sd_over_pairs,
            "n_pairs": self.n_pairs,
            "n_saturated_pairs": self.n_saturated_pairs,
            "pair_pse": dict(self.pair_pse),
            "fit": self.fit.to_dict() if self.fit is not None else None,
        }

    def record(self) -> dict[str, Any]:
        f = self.fit
        row = {
            "target": self.target,
            "pse": self.pse,
            "pse_ci_low": self.pse_ci[0] if self.pse_ci else None,
            "pse_ci_high": self.pse_ci[1] if self.pse_ci else None,
            "pse_ci_note": self.pse_ci_note,
            "saturated": self.saturated or "",
            "jnd_sd": self.jnd_sd,
            "pse_variance_psycho_ai": self.pse_variance,
            "pse_sd_over_pairs": self.pse_sd_over_pairs,
            "sigma_implied_sd_assumption": self.curve_sd,
            "n_pairs": self.n_pairs,
            "n_saturated_pairs": self.n_saturated_pairs,
            "fit_status": f.status if f else "",
            "fit_pse": f.pse if f else None,
            "fit_pse_ci_low": f.pse_ci[0] if f and f.pse_ci else None,
            "fit_pse_ci_high": f.pse_ci[1] if f and f.pse_ci else None,
            "fit_slope": f.slope if f else None,
            "fit_slope_ci_low": f.slope_ci[0] if f and f.slope_ci else None,
            "fit_slope_ci_high": f.slope_ci[1] if f and f.slope_ci else None,
            "fit_pse_bracket_low": f.pse_bracket[0] if f and f.pse_bracket else None,
            "fit_pse_bracket_high": f.pse_bracket[1] if f and f.pse_bracket else None,
            "fit_interval_from": (f.bootstrap or "") if f else "",
            "fit_note": self.fit_note,
        }
        for k, v in self.pair_pse.items():
            row[f"pse[{k}]"] = v
        return row


@dataclass(frozen=True)
class PsychometricCurve:
    """Data for the Fig. 2 plot of one target.

    ``proportion[i]`` is the share of (replicate, cue pair) answers that are
    c2 at ``alpha[i]`` (Thurstonian mode: the analytic Ψ averaged over cue
    pairs); ``per_pair`` gives each cue pair's curve; ``fitted`` the fitted
    function on the same grid when available.
    """

    target: str
    mode: str
    alpha: tuple[float, ...]
    proportion: tuple[float, ...]
    per_pair: Mapping[str, tuple[float, ...]]
    fitted: tuple[float, ...] | None
    pse: float
    saturated: str | None
    cue1_label: str
    cue2_label: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "mode": self.mode,
            "alpha": list(self.alpha),
            "proportion": list(self.proportion),
            "per_pair": {k: list(v) for k, v in self.per_pair.items()},
            "fitted": list(self.fitted) if self.fitted is not None else None,
            "pse": self.pse,
            "saturated": self.saturated,
            "cue1_label": self.cue1_label,
            "cue2_label": self.cue2_label,
        }


@dataclass(frozen=True)
class Spectrum:
    """Targets ordered along the cue1–cue2 stimulus axis (Fig. 4).

    α = 0 is "100 % cue 1", α = 1 "100 % cue 2"; each row holds the target's
    PSE (raw), its saturation flag, its JND (or None) and a position clipped
    to [0, 1] for drawing (``position``; saturated rows sit at the ends and
    must be drawn as such).
    """

    cue1_label: str
    cue2_label: str
    rows: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"cue1_label": self.cue1_label, "cue2_label": self.cue2_label, "rows": [dict(r) for r in self.rows]}


@dataclass(frozen=True)
class TwoAFCResult:
    """Outcome of a 2AFC run.

    Attributes
    ----------
    mode : str
        ``"single"``, ``"replicates"`` or ``"thurstonian"``.
    noise_sigma : float or None
        The user-set perceptual noise (Thurstonian mode).
    n_replicates : int
    pairs : tuple of PairPSE
        Target × cue pair.
    targets : tuple of TargetPSE
    cue_pairs : tuple of (str, str)
    alpha_grid : tuple of float
    dropped_targets, dropped_pairs : mapping → reason
    lookup : dict
        Per-term lookup reports (JSON form).
    seed : int
    provenance : dict
    ci_level : float
        Level of every interval of the result.
    n_bootstrap : int
        Resamples behind the intervals (0: none).
    interval_units : str
        What the PSE intervals resample: ``"replicate models"`` or ``"cue pairs"``.
    """

    mode: str
    noise_sigma: float | None
    n_replicates: int
    pairs: tuple[PairPSE, ...]
    targets: tuple[TargetPSE, ...]
    cue_pairs: tuple[tuple[str, str], ...]
    cue1_label: str
    cue2_label: str
    alpha_grid: tuple[float, ...]
    dropped_targets: Mapping[str, str]
    dropped_pairs: Mapping[str, str]
    lookup: Mapping[str, Any]
    seed: int
    provenance: Mapping[str, Any]
    ci_level: float = 0.95
    n_bootstrap: int = 0
    interval_units: str = "cue pairs"

    @property
    def interval_method(self) -> str:
        """How the PSE intervals were made, in words (recorded in the JSON and the CSV)."""
        return (
            f"percentile bootstrap over the {self.interval_units} ({self.n_bootstrap} resamples, seed {self.seed}), "
            "expanded for few units (Hesterberg 2015)"
        )

    # -- accessors -----------------------------------------------------------
    def target(self, name: str) -> TargetPSE:
        for t in self.targets:
            if t.target == name:
                return t
        raise DataError(
            MSG_UNKNOWN_TARGET.format(target=name, choices=", ".join(t.target for t in self.targets)), target=name
        )

    def pairs_of(self, name: str) -> tuple[PairPSE, ...]:
        self.target(name)
        return tuple(p for p in self.pairs if p.target == name)

    def pair_records(self) -> list[dict[str, Any]]:
        """One flat row per target × cue pair (DataFrame-able)."""
        return [p.record() for p in self.pairs]

    def target_records(self) -> list[dict[str, Any]]:
        """One flat row per target (DataFrame-able)."""
        return [t.record() for t in self.targets]

    records = target_records

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "noise_sigma": self.noise_sigma,
            "n_replicates": self.n_replicates,
            "jnd_definition": "standard deviation of the PSE across replicate models (ddof=1)",
            "ci_level": self.ci_level,
            "n_bootstrap": self.n_bootstrap,
            "interval_units": self.interval_units,
            "interval_method": self.interval_method,
            "pse_variance_definition": "variance of the PSE across replicates (ddof=1), the psycho_ai definition",
            "pairs": [p.to_dict() for p in self.pairs],
            "targets": [t.to_dict() for t in self.targets],
            "cue_pairs": [list(p) for p in self.cue_pairs],
            "cue1_label": self.cue1_label,
            "cue2_label": self.cue2_label,
            "alpha_grid": list(self.alpha_grid),
            "dropped_targets": dict(self.dropped_targets),
            "dropped_pairs": dict(self.dropped_pairs),
            "lookup": dict(self.lookup),
            "seed": self.seed,
            "provenance": dict(self.provenance),
        }

    # -- plot data -----------------------------------------------------------
    def psychometric_curve(self, target: str, alpha: Sequence[float] | None = None) -> PsychometricCurve:
        """Ψ(α) of one target pooled over replicates and cue pairs (Fig. 2)."""
        tp = self.target(target)
        grid = np.asarray(self.alpha_grid if alpha is None else alpha, dtype=np.float64)
        per_pair: dict[str, tuple[float, ...]] = {}
        curves = []
        for p in self.pairs_of(target):
            if self.mode == "thurstonian":
                assert self.noise_sigma is not None
                c = thurstonian_curve(grid, pse=p.pse, sim_c1_c2=p.sim_c1_c2, noise_sigma=self.noise_sigma)
            else:
                reps = np.asarray(p.pse_replicates)
                c = (grid[:, None] > reps[None, :]).mean(axis=1)
            curves.append(c)
            per_pair[p.cue_pair] = tuple(float(v) for v in c)
        prop = np.mean(curves, axis=0)
        fitted = tuple(float(v) for v in tp.fit.predict(grid)) if tp.fit is not None and tp.fit.ok else None
        return PsychometricCurve(
            target=target,
            mode=self.mode,
            alpha=tuple(float(v) for v in grid),
            proportion=tuple(float(v) for v in prop),
            per_pair=per_pair,
            fitted=fitted,
            pse=tp.pse,
            saturated=tp.saturated,
            cue1_label=self.cue1_label,
            cue2_label=self.cue2_label,
        )

    def spectrum(self) -> Spectrum:
        """Targets sorted by PSE along the cue1 → cue2 axis (Fig. 4)."""
        rows = sorted(
            (
                {
                    "target": t.target,
                    "pse": t.pse,
                    "saturated": t.saturated,
                    "position": float(min(1.0, max(0.0, t.pse))),
                    "jnd_sd": t.jnd_sd,
                    "pse_ci": t.pse_ci,
                    "pair_pse": dict(t.pair_pse),
                }
                for t in self.targets
            ),
            key=lambda r: r["pse"],
        )
        return Spectrum(self.cue1_label, self.cue2_label, tuple(rows))


# --------------------------------------------------------------------------- the computation
def _sd(values: np.ndarray, axis: int) -> np.ndarray | None:
    if values.shape[axis] < 2:
        return None
    return values.std(axis=axis, ddof=1)


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
    cue1_label: str = "cue 1",
    cue2_label: str = "cue 2",
    dropped_targets: Mapping[str, str] | None = None,
    dropped_pairs: Mapping[str, str] | None = None,
    lookup: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> TwoAFCResult:
    """The 2AFC task of eq. 8 for every target × cue pair × α × replicate.

    ``score(c_i) = (1−α)·sim(c1,c_i) + α·sim(c2,c_i) + sim(w,c_i)``;
    ``PSE = 1/2 + (sim(c1,w) − sim(c2,w)) / (2(1 − sim(c1,c2)))``;
    ``JND = SD_r(PSE_r)`` (ddof=1) over replicate models. Reference:
    Liang & Acuna (2020), FAT* '20, eq. 8.

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

    # similarities [R, T, P] and [R, P]
    s1w, s2w, s12 = [], [], []
    for m in models:
        a, b, c = cue_target_similarities(m, targets, cue_pairs)
        s1w.append(a)
        s2w.append(b)
        s12.append(c)
    s1w_a, s2w_a, s12_a = np.stack(s1w), np.stack(s2w), np.stack(s12)
    bad = np.argwhere(s12_a >= 1.0 - _IDENTICAL_TOL)
    if bad.size:
        r, p = bad[0]
        raise DataError(
            MSG_IDENTICAL_CUES.format(
                cue1=cue_pairs[p][0], cue2=cue_pairs[p][1], source=models[r].name, similarity=float(s12_a[r, p])
            ),
            cue_pair=list(cue_pairs[p]),
        )
    pse_rtp = pse_closed_form(s1w_a, s2w_a, s12_a[:, None, :])  # [R, T, P]
    R, T, P = pse_rtp.shape
    pse_tp = pse_rtp.mean(axis=0)
    sd_tp = _sd(pse_rtp, 0)
    var_tp = None if sd_tp is None else sd_tp**2
    sat_count = ((pse_rtp < -_SAT_TOL) | (pse_rtp > 1 + _SAT_TOL)).sum(axis=0)

    # per-target: mean over pairs, per replicate
    pse_rt = pse_rtp.mean(axis=2)  # [R, T]
    pse_t = pse_rt.mean(axis=0)
    sd_t = _sd(pse_rt, 0)
    sd_over_pairs = _sd(pse_tp, 1)

    # intervals of the PSE from the data: resample replicate models (mode "replicates") or cue pairs
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
        boot = weights @ (pse_rt if mode == "replicates" else pse_tp.T)  # [B, T]
        pse_ci = [percentile_interval(boot[:, t], ci_level=ci_level, n_units=n_units) for t in range(T)]

    # pooled responses on the α grid: the decision rule of eq. 8, vectorised [R, T, P, A]
    pair_fits: list[PsychometricFit | None] = [None] * (T * P)
    target_fits: list[PsychometricFit | None] = [None] * T
    if mode != "replicates":
        # one model: each cue pair's curve is a step (single) or Φ under the user's σ (thurstonian)
        if mode == "thurstonian":
            curves = thurstonian_curve(grid[None, None, :], pse=pse_tp[..., None],
                                       sim_c1_c2=s12_a[0][None, :, None], noise_sigma=float(noise_sigma))
        else:
            curves = (grid[None, None, :] > pse_tp[..., None]).astype(np.float64)
        target_fits = list(
            fit_psychometric_proportions(
                grid,
                curves.mean(axis=1),
                weight=float(P),
                sigmoid=sigmoid,
                resampled=None if weights is None else np.einsum("bp,tpa->bta", weights, curves),
                resampled_units=units,
                n_units=n_units,
                ci_level=ci_level,
                seed=seed,
            )
        )
    if mode == "replicates":
        choose_c2 = twoafc_decide(
            s1w_a[..., None], s2w_a[..., None], s12_a[:, None, :, None], grid[None, None, None, :]
        )
        k_tpa = choose_c2.sum(axis=0)  # [T, P, A]
        if fit_pairs:
            # start each fit at the replicates' mean PSE and spread (a concave problem: only speeds it up)
            spread = np.maximum(sd_tp if sd_tp is not None else np.full((T, P), 0.1), 1e-3).reshape(-1)
            pair_fits = list(
                fit_psychometric_many(
                    grid,
                    k_tpa.reshape(T * P, -1),
                    np.full((T * P, grid.size), R),
                    sigmoid=sigmoid,
                    start=(pse_tp.reshape(-1), spread),
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

    m1w, m2w, m12 = s1w_a.mean(axis=0), s2w_a.mean(axis=0), s12_a.mean(axis=0)
    pairs = []
    for t, w in enumerate(targets):
        for p, (c1, c2) in enumerate(cue_pairs):
            pv = float(pse_tp[t, p])
            pairs.append(
                PairPSE(
                    target=w,
                    cue1=c1,
                    cue2=c2,
                    pse=pv,
                    saturated=saturation(pv),
                    pse_replicates=tuple(pse_rtp[:, t, p].tolist()),
                    n_saturated_replicates=int(sat_count[t, p]),
                    jnd_sd=None if sd_tp is None else float(sd_tp[t, p]),
                    pse_variance=None if var_tp is None else float(var_tp[t, p]),
                    curve_sd=(float(noise_sigma / (2.0 * (1.0 - s12_a[0, p]))) if mode == "thurstonian" else None),
                    sim_c1_w=float(m1w[t, p]),
                    sim_c2_w=float(m2w[t, p]),
                    sim_c1_c2=float(m12[p]),
                    fit=pair_fits[t * P + p],
                )
            )
    target_rows = []
    pse_tp_list = pse_tp.tolist()
    curve_sd_t = (
        (float(noise_sigma) / (2.0 * (1.0 - s12_a[0]))).mean() if mode == "thurstonian" else None
    )
    for t, w in enumerate(targets):
        pv = float(pse_t[t])
        target_rows.append(
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
                fit=target_fits[t],
                pse_ci=pse_ci[t],
                pse_ci_note="" if pse_ci[t] is not None else (ci_note or MSG_FIT_NO_INTERVAL),
                curve_sd=None if curve_sd_t is None else float(curve_sd_t),
                fit_note=_fit_note(target_fits[t], ci_note=ci_note, lapse_ignored=lapse and mode != "replicates"),
            )
        )
    return TwoAFCResult(
        mode=mode,
        noise_sigma=float(noise_sigma) if noise_sigma is not None else None,
        n_replicates=R,
        pairs=tuple(pairs),
        targets=tuple(target_rows),
        cue_pairs=tuple((a, b) for a, b in cue_pairs),
        cue1_label=cue1_label,
        cue2_label=cue2_label,
        alpha_grid=tuple(float(v) for v in grid),
        dropped_targets=dict(dropped_targets or {}),
        dropped_pairs=dict(dropped_pairs or {}),
        lookup=dict(lookup or {}),
        seed=int(seed),
        provenance=dict(provenance or {}),
        ci_level=float(ci_level),
        n_bootstrap=int(n_bootstrap),
        interval_units=units,
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


# --------------------------------------------------------------------------- labour statistics
@dataclass(frozen=True)
class LaborCorrelation:
    """PSE vs % women in an occupation (labour statistics).

    Attributes
    ----------
    pearson_r, pearson_p, spearman_rho, spearman_p : float
        Two-sided p-values (scipy.stats).
    n : int
        Occupations used.
    used : tuple of dict
        ``occupation``, ``pse``, ``pct_female``, ``saturated`` per used row.
    dropped : mapping occupation → reason
        Not in the result (missing word, dropped by the runner) or saturated
        (when ``saturated="drop"``).
    saturated_policy : str
        ``"keep"`` (raw PSE), ``"drop"`` or ``"clip"`` (to [0, 1]).
    """

    pearson_r: float
    pearson_p: float
    spearman_rho: float
    spearman_p: float
    n: int
    used: tuple[dict[str, Any], ...]
    dropped: Mapping[str, str]
    saturated_policy: str
    table_source: str
    provenance: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pearson_r": self.pearson_r,
            "pearson_p": self.pearson_p,
            "spearman_rho": self.spearman_rho,
            "spearman_p": self.spearman_p,
            "n": self.n,
            "used": [dict(r) for r in self.used],
            "dropped": dict(self.dropped),
            "saturated_policy": self.saturated_policy,
            "table_source": self.table_source,
            "provenance": dict(self.provenance),
        }


def load_occupations_bls() -> list[dict[str, Any]]:
    """The shipped table ``biastest/data/occupations_bls.csv``.

    Rows: ``occupation``, ``pct_female`` (float, % of workers who are women),
    ``year`` (int), ``source``. U.S. Bureau of Labor Statistics 2015 figures
    as collected by Rudinger et al. (2018), Winogender schemas (MIT).
    """
    text = (Path(__file__).resolve().parents[1] / "data" / "occupations_bls.csv").read_text(encoding="utf-8")
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        rows.append(
            {
                "occupation": r["occupation"],
                "pct_female": float(r["pct_female"]),
                "year": int(r["year"]),
                "source": r["source"],
            }
        )
    return rows


def labor_statistics_correlation(
    result: TwoAFCResult,
    *,
    table: Sequence[Mapping[str, Any]] | None = None,
    saturated: str = "keep",
    female_cue: int = 1,
) -> LaborCorrelation:
    """Correlate the targets' PSE with % women in the occupation.

    Pearson r and Spearman ρ with two-sided p-values (``scipy.stats``). With
    the paper's cue order (woman/man …, female cue first) a PSE above 0.5
    means "closer to the female cue", so a positive correlation is expected;
    pass ``female_cue=2`` when the female cue is second (PSE is then mirrored
    as 1 − PSE).

    Parameters
    ----------
    result : TwoAFCResult
    table : rows with ``occupation`` and ``pct_female``; default the shipped BLS table.
    saturated : {"keep", "drop", "clip"}
        Saturated PSEs: keep their raw value (default), drop them, or clip to [0, 1].
    female_cue : {1, 2}

    Returns
    -------
    LaborCorrelation
    """
    from biastest.provenance import provenance as _prov

    if saturated not in ("keep", "drop", "clip"):
        raise MethodError(MSG_BAD_SATURATED_POLICY.format(value=saturated), value=saturated)
    rows = list(table) if table is not None else load_occupations_bls()
    by_target = {t.target.lower(): t for t in result.targets}
    used, dropped = [], {}
    for r in rows:
        occ = str(r["occupation"])
        t = by_target.get(occ.lower())
        if t is None:
            reason = result.dropped_targets.get(occ) or "not among the tested targets"
            dropped[occ] = reason
            continue
        pse = t.pse if female_cue == 1 else 1.0 - t.pse
        sat = saturation(pse)
        if sat is not None and saturated == "drop":
            dropped[occ] = f"saturated PSE ({sat}: {pse:.3f})"
            continue
        if saturated == "clip":
            pse = min(1.0, max(0.0, pse))
        used.append({"occupation": occ, "pse": float(pse), "pct_female": float(r["pct_female"]), "saturated": sat})
    if len(used) < 3:
        raise DataError(MSG_TOO_FEW_OCCUPATIONS.format(n=len(used)), n=len(used))
    x = np.array([u["pse"] for u in used])
    y = np.array([u["pct_female"] for u in used])
    pr = stats.pearsonr(x, y)
    sr = stats.spearmanr(x, y)
    return LaborCorrelation(
        pearson_r=float(pr.statistic),
        pearson_p=float(pr.pvalue),
        spearman_rho=float(sr.statistic),
        spearman_p=float(sr.pvalue),
        n=len(used),
        used=tuple(used),
        dropped=dropped,
        saturated_policy=saturated,
        table_source="biastest/data/occupations_bls.csv" if table is None else "user table",
        provenance=_prov(
            method="Pearson and Spearman correlation of PSE with % women (labour statistics)",
            twoafc_mode=result.mode,
            saturated_policy=saturated,
            seed=result.seed,
        ),
    )
