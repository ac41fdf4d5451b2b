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
from biastest.measures.twoafc.result import LaborCorrelation, TwoAFCResult
from biastest.measures.twoafc.score import MSG_BAD_SATURATED_POLICY, MSG_TOO_FEW_OCCUPATIONS, saturation
from biastest.provenance import provenance as _prov

__all__ = ["labor_statistics_correlation", "load_occupations_bls"]


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
