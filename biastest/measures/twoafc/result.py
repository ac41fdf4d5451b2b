"""The 2AFC result: per target × cue pair and per target PSEs, plot data, and the labour-statistics correlation.

:class:`TwoAFCResult` and :class:`LaborCorrelation` are typed results
(:class:`~biastest.measures.base.ResultBase`): ``to_dict()`` gives the keys the
JSON files have always had, and files written by earlier versions load with
``load_json``. The psychometric fits inside are
:class:`~biastest.stats.psychometric.PsychometricFit` statistics records, kept
as they are and written with their own ``to_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, computed_field

from biastest.errors import DataError
from biastest.measures.base import ResultBase
from biastest.measures.twoafc.jnd import JND_CURVE_DEFINITION, JND_REPLICATE_DEFINITION
from biastest.measures.twoafc.score import MSG_UNKNOWN_TARGET, thurstonian_curve
from biastest.stats.psychometric import PsychometricFit

__all__ = [
    "JNDLaborCorrelation", "LaborCorrelation", "PairPSE", "PsychometricCurve", "Spectrum", "TargetPSE", "TwoAFCResult",
]

JND_DEFINITION = JND_REPLICATE_DEFINITION
PSE_VARIANCE_DEFINITION = "variance of the PSE across replicates (ddof=1), the psycho_ai definition"

_FIT_TUPLES = ("pse_bracket", "pse_ci", "slope_ci", "x", "k", "n")


def _fit_from(value: Any) -> PsychometricFit | None:
    """A fit as it is, or rebuilt from its ``to_dict()`` form (a saved result)."""
    if value is None or isinstance(value, PsychometricFit):
        return value
    data = dict(value)
    for key in _FIT_TUPLES:
        if data.get(key) is not None:
            data[key] = tuple(data[key])
    return PsychometricFit(**data)


FitField = Annotated[
    PsychometricFit | None,
    PlainValidator(_fit_from),
    PlainSerializer(lambda fit: None if fit is None else fit.to_dict()),
]
"""A psychometric fit inside a result: the statistics record, written and read with its own ``to_dict`` form."""


class _Record(BaseModel):
    """A frozen row of a result (per target × cue pair, per target)."""

    model_config = ConfigDict(frozen=True, extra="ignore", arbitrary_types_allowed=True)


class PairPSE(_Record):
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
    jnd_curve : float or None
        The curve JND of ``fit`` (:func:`biastest.measures.twoafc.jnd.curve_jnd`).
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
    fit: FitField
    jnd_curve: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cue_pair(self) -> str:
        return f"{self.cue1}/{self.cue2}"

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
            "jnd_curve": self.jnd_curve,
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


class TargetPSE(_Record):
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
    jnd_sd_ci : (float, float) or None
        BCa bootstrap interval of ``jnd_sd`` over the replicate models.
    jnd_curve : float or None
        The curve JND of ``fit``: the standard deviation of the fitted function's distribution
        (:mod:`biastest.measures.twoafc.jnd`).
    jnd_curve_ci : (float, float) or None
        Its interval, mapped from the fit's bootstrap slopes.
    jnd_note : str
        Why a JND interval is missing ("" when each JND present has one).
    """

    target: str
    pse: float
    saturated: str | None
    jnd_sd: float | None
    pse_variance: float | None
    pse_sd_over_pairs: float | None
    n_pairs: int
    n_saturated_pairs: int
    pair_pse: dict[str, float]
    fit: FitField
    pse_ci: tuple[float, float] | None = None
    pse_ci_note: str = ""
    curve_sd: float | None = None
    fit_note: str = ""
    jnd_sd_ci: tuple[float, float] | None = None
    jnd_curve: float | None = None
    jnd_curve_ci: tuple[float, float] | None = None
    jnd_note: str = ""

    def jnd(self) -> tuple[float | None, tuple[float, float] | None, str]:
        """The headline JND, its interval and its kind: the replicate JND when there is one, else the curve JND."""
        if self.jnd_sd is not None:
            return self.jnd_sd, self.jnd_sd_ci, "replicate"
        return self.jnd_curve, self.jnd_curve_ci, "curve"

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
            "jnd_sd_ci_low": self.jnd_sd_ci[0] if self.jnd_sd_ci else None,
            "jnd_sd_ci_high": self.jnd_sd_ci[1] if self.jnd_sd_ci else None,
            "jnd_curve": self.jnd_curve,
            "jnd_curve_ci_low": self.jnd_curve_ci[0] if self.jnd_curve_ci else None,
            "jnd_curve_ci_high": self.jnd_curve_ci[1] if self.jnd_curve_ci else None,
            "jnd_note": self.jnd_note,
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
    PSE (raw), its saturation flag, its replicate JND (``jnd_sd``, or None), its
    headline JND (``jnd``: the replicate JND, else the curve JND; ``jnd_kind``) and a position clipped
    to [0, 1] for drawing (``position``; saturated rows sit at the ends and
    must be drawn as such).
    """

    cue1_label: str
    cue2_label: str
    rows: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"cue1_label": self.cue1_label, "cue2_label": self.cue2_label, "rows": [dict(r) for r in self.rows]}


class TwoAFCResult(ResultBase):
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
    dropped_targets: dict[str, str]
    dropped_pairs: dict[str, str]
    lookup: dict[str, Any]
    seed: int
    provenance: dict[str, Any]
    ci_level: float = 0.95
    n_bootstrap: int = 0
    interval_units: str = "cue pairs"

    result_name: ClassVar[str] = "2AFC"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def jnd_definition(self) -> str:
        """What the headline JND is (recorded in the JSON): the replicate JND with replicates, else the curve JND."""
        return JND_REPLICATE_DEFINITION if self.mode == "replicates" else JND_CURVE_DEFINITION

    @computed_field  # type: ignore[prop-decorator]
    @property
    def jnd_curve_definition(self) -> str:
        """What ``jnd_curve`` is (recorded in the JSON)."""
        return JND_CURVE_DEFINITION

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pse_variance_definition(self) -> str:
        """What ``pse_variance`` is (recorded in the JSON)."""
        return PSE_VARIANCE_DEFINITION

    @computed_field  # type: ignore[prop-decorator]
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
                    "jnd": t.jnd()[0],
                    "jnd_kind": t.jnd()[2],
                    "pse_ci": t.pse_ci,
                    "pair_pse": dict(t.pair_pse),
                }
                for t in self.targets
            ),
            key=lambda r: r["pse"],
        )
        return Spectrum(self.cue1_label, self.cue2_label, tuple(rows))


class LaborCorrelation(ResultBase):
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

    result_name: ClassVar[str] = "labour-statistics correlation"

    pearson_r: float
    pearson_p: float
    spearman_rho: float
    spearman_p: float
    n: int
    used: tuple[dict[str, Any], ...]
    dropped: dict[str, str]
    saturated_policy: str
    table_source: str
    provenance: dict[str, Any]


class JNDLaborCorrelation(ResultBase):
    """The paper's validation of the JND: each occupation's JND against ``sqrt(p(1 − p))``, p = % women / 100.

    Attributes
    ----------
    pearson_r, pearson_p, spearman_rho, spearman_p : float
        Two-sided p-values (scipy.stats).
    n : int
        Occupations used.
    jnd_kind : str
        ``"replicate"`` (SD of the PSE across replicate models) or ``"curve"`` (the fitted curve's SD).
    jnd_definition : str
        That definition in words.
    used : tuple of dict
        ``occupation``, ``jnd``, ``jnd_ci_low``, ``jnd_ci_high``, ``pct_female``, ``binomial_sd`` per row.
    dropped : mapping occupation → reason
        Not tested, or without a JND (its fit failed).
    """

    result_name: ClassVar[str] = "JND labour-statistics validation"

    pearson_r: float
    pearson_p: float
    spearman_rho: float
    spearman_p: float
    n: int
    jnd_kind: str
    jnd_definition: str
    used: tuple[dict[str, Any], ...]
    dropped: dict[str, str]
    table_source: str
    provenance: dict[str, Any]
