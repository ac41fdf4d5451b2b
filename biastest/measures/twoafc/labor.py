"""The 2AFC PSEs against labour statistics: the share of women in each occupation.

Pearson r and Spearman ρ (``scipy.stats``) between each occupation's PSE and
its % women (U.S. Bureau of Labor Statistics 2015, as collected by Rudinger et
al. 2018), the validation of Liang & Acuna (2020), §4.2.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from biastest.errors import DataError, MethodError
from biastest.measures.twoafc.jnd import JND_CURVE_DEFINITION, JND_REPLICATE_DEFINITION, binomial_sd
from biastest.measures.twoafc.result import JNDLaborCorrelation, LaborCorrelation, TwoAFCResult
from biastest.measures.twoafc.score import MSG_BAD_SATURATED_POLICY, MSG_TOO_FEW_OCCUPATIONS, saturation
from biastest.provenance import provenance as _prov

__all__ = ["MSG_TOO_FEW_JNDS", "jnd_labor_correlation", "labor_statistics_correlation", "load_occupations_bls"]

MSG_TOO_FEW_JNDS = (
    "Only {n} occupation(s) have both a JND and labour statistics; a correlation needs at least 3 (and JNDs that "
    "differ). Add occupations from the labour-statistics table."
)


def load_occupations_bls() -> list[dict[str, Any]]:
    """The shipped table ``biastest/data/occupations_bls.csv``.

    Rows: ``occupation``, ``pct_female`` (float, % of workers who are women),
    ``year`` (int), ``source``. U.S. Bureau of Labor Statistics 2015 figures
    as collected by Rudinger et al. (2018), Winogender schemas (MIT).
    """
    text = (Path(__file__).resolve().parents[2] / "data" / "occupations_bls.csv").read_text(encoding="utf-8")
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
    if saturated not in ("keep", "drop", "clip"):
        raise MethodError(MSG_BAD_SATURATED_POLICY.format(value=saturated), value=saturated)
    rows = list(table) if table is not None else load_occupations_bls()
    by_target = {t.target.lower(): t for t in result.targets}
    used: list[dict[str, Any]] = []
    dropped: dict[str, str] = {}
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


def jnd_labor_correlation(
    result: TwoAFCResult, *, table: Sequence[Mapping[str, Any]] | None = None
) -> JNDLaborCorrelation:
    """Correlate each occupation's JND with the binomial SD of its share of women (the paper's validation).

    ``binomial SD = sqrt(p(1 − p))``, ``p`` = % women / 100 (largest for an
    occupation half women, 0 for one all women or all men); the JND is the
    replicate JND (SD of the PSE across replicate models) when the result has
    replicates, else the curve JND (the fitted psychometric function's SD,
    :mod:`biastest.measures.twoafc.jnd`). Pearson r and Spearman ρ with
    two-sided p-values (``scipy.stats``). The paper reports |r| = 0.401,
    p = 0.031 on 32 bootstrapped GloVe models (it prints +0.401; its notebook
    computes −0.401). The SD is symmetric in p, so the order of the cues does
    not matter.

    Parameters
    ----------
    result : TwoAFCResult
    table : rows with ``occupation`` and ``pct_female``; default the shipped BLS table.

    Returns
    -------
    JNDLaborCorrelation

    Raises
    ------
    DataError
        :data:`MSG_TOO_FEW_JNDS` with fewer than 3 occupations that have a JND, or JNDs or SDs that do not vary.
    """
    rows = list(table) if table is not None else load_occupations_bls()
    by_target = {t.target.lower(): t for t in result.targets}
    kind = "replicate" if result.mode == "replicates" else "curve"
    used: list[dict[str, Any]] = []
    dropped: dict[str, str] = {}
    for r in rows:
        occ = str(r["occupation"])
        t = by_target.get(occ.lower())
        if t is None:
            dropped[occ] = result.dropped_targets.get(occ) or "not among the tested targets"
            continue
        jnd, ci, _ = t.jnd()
        if jnd is None:
            dropped[occ] = t.jnd_note or "no JND"
            continue
        pct = float(r["pct_female"])
        used.append({"occupation": occ, "jnd": float(jnd), "jnd_ci_low": ci[0] if ci else None,
                     "jnd_ci_high": ci[1] if ci else None, "pct_female": pct, "binomial_sd": binomial_sd(pct)})
    x = np.array([u["jnd"] for u in used])
    y = np.array([u["binomial_sd"] for u in used])
    if len(used) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        raise DataError(MSG_TOO_FEW_JNDS.format(n=len(used)), n=len(used))
    pr = stats.pearsonr(x, y)
    sr = stats.spearmanr(x, y)
    return JNDLaborCorrelation(
        pearson_r=float(pr.statistic),
        pearson_p=float(pr.pvalue),
        spearman_rho=float(sr.statistic),
        spearman_p=float(sr.pvalue),
        n=len(used),
        jnd_kind=kind,
        jnd_definition=JND_REPLICATE_DEFINITION if kind == "replicate" else JND_CURVE_DEFINITION,
        used=tuple(used),
        dropped=dropped,
        table_source="biastest/data/occupations_bls.csv" if table is None else "user table",
        provenance=_prov(
            method="Pearson and Spearman correlation of the JND with sqrt(p(1 - p)), p = share of women",
            twoafc_mode=result.mode,
            jnd_kind=kind,
            seed=result.seed,
        ),
    )
