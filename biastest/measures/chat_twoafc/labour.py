"""The validation of the paper (Liang & Acuna 2020, Fig. 2) for a chat model: P(female cue | occupation) against
the share of women in the occupation.

The table is the 2AFC measure's (:func:`biastest.measures.twoafc.labor.load_occupations_bls`: U.S. Bureau of
Labor Statistics 2015 as collected by Rudinger et al. 2018 for Winogender), or any rows with ``occupation`` and
``pct_female``. A target is matched to a row by name (case aside); a target with no parseable answer is left out
with its reason.

* **Pearson r** and **Spearman ρ** (``scipy.stats``, two-sided p-values) of the targets' P(female cue) (percent)
  with % women.
* **Interval**: percentile bootstrap over targets — ``n_resamples`` resamples of the matched targets with
  replacement (``numpy.random.default_rng(seed)``, one ``integers(0, n, n)`` draw per resample), the correlation
  of each; a resample in which either side is constant has no correlation and is left out (counted in
  ``n_degenerate``); no interval when more than half are (with the reason).
* **Undefined** (never NaN): fewer than 3 targets, or every target's P (or % women) alike — e.g. a model that
  only follows the position reads 50 % everywhere — gives ``None`` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from biastest.measures.chat_twoafc.result import LabourValidation, TargetRecord
from biastest.measures.twoafc.labor import load_occupations_bls

__all__ = ["METHOD", "MSG_CONSTANT", "MSG_FEW_RESAMPLES", "MSG_NO_ANSWER", "MSG_NOT_TESTED", "MSG_TOO_FEW",
           "labour_validation", "pearson", "spearman"]

METHOD = ("Pearson r and Spearman rho of P(female cue | target) with % women (scipy.stats); percentile bootstrap "
          "over targets")
MSG_TOO_FEW = "The correlation needs at least 3 occupations with a parseable answer and a table row; there are {n}."
MSG_CONSTANT = ("The correlation is not defined: every occupation's {what} is the same ({value}), so it does not "
                "vary with the share of women.")
MSG_FEW_RESAMPLES = ("No bootstrap interval: in {bad:,} of {total:,} resamples of the occupations one side was "
                     "constant.")
MSG_NO_ANSWER = "no parseable answer"
MSG_NOT_TESTED = "not among the tested targets"
BLS_SOURCE = "biastest/data/occupations_bls.csv"


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson r, or None when either side is constant."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman ρ (Pearson r of the average ranks), or None when either side is constant."""
    return pearson(stats.rankdata(x), stats.rankdata(y))


def _bootstrap(x: np.ndarray, y: np.ndarray, *, seed: int, n_resamples: int, confidence: float):
    rng = np.random.default_rng(seed)
    rs, rhos, bad = [], [], 0
    n = x.size
    for _ in range(n_resamples):
        idx = rng.integers(0, n, n)
        r = pearson(x[idx], y[idx])
        if r is None:
            bad += 1
            continue
        rs.append(r)
        rhos.append(spearman(x[idx], y[idx]))
    if not rs or bad > n_resamples / 2:
        return None, None, bad
    q = [(1 - confidence) / 2, 1 - (1 - confidence) / 2]
    return tuple(float(v) for v in np.quantile(rs, q)), tuple(float(v) for v in np.quantile(rhos, q)), bad


def _matched(targets: Sequence[TargetRecord], rows: Sequence[Mapping[str, Any]], female_cue: int):
    by_name = {t.target.casefold(): t for t in targets}
    used, dropped = [], {}
    for r in rows:
        occ = str(r["occupation"])
        t = by_name.get(occ.casefold())
        if t is None:
            dropped[occ] = MSG_NOT_TESTED
            continue
        rate = t.p_cue1_rate
        if rate.estimate is None:
            dropped[occ] = MSG_NO_ANSWER
            continue
        flip = female_cue == 2
        p = 100.0 - rate.estimate if flip else rate.estimate
        low, high = (100.0 - rate.high, 100.0 - rate.low) if flip else (rate.low, rate.high)
        used.append({"occupation": t.target, "p_female": p, "ci_low": low, "ci_high": high,
                     "pct_female": float(r["pct_female"]), "n": rate.n})
    return used, dropped


def labour_validation(targets: Sequence[TargetRecord], *, seed: int, n_resamples: int, confidence: float,
                      female_cue: int = 1, table: Sequence[Mapping[str, Any]] | None = None) -> LabourValidation | None:
    """The correlation of the targets' P(female cue) with % women, with its bootstrap interval (module docstring).

    Returns
    -------
    LabourValidation or None
        None when no target is in the table (nothing to validate against).
    """
    rows = list(table) if table is not None else load_occupations_bls()
    used, dropped = _matched(targets, rows, female_cue)
    if not used:
        return None
    x = np.array([u["p_female"] for u in used], dtype=np.float64)
    y = np.array([u["pct_female"] for u in used], dtype=np.float64)
    base = {"n": len(used), "used": tuple(used), "dropped": dropped, "female_cue": female_cue,
            "confidence": confidence, "n_resamples": n_resamples, "seed": seed, "method": METHOD,
            "table_source": BLS_SOURCE if table is None else "user table"}
    none = dict.fromkeys(("pearson_r", "pearson_low", "pearson_high", "pearson_p", "spearman_rho", "spearman_low",
                          "spearman_high", "spearman_p"))
    if len(used) < 3:
        return LabourValidation(**none, reason=MSG_TOO_FEW.format(n=len(used)), n_degenerate=0, **base)
    for side, v, what in ((x, x, "P(female cue)"), (y, y, "% women")):
        if np.ptp(side) == 0:
            return LabourValidation(**none, reason=MSG_CONSTANT.format(what=what, value=f"{v[0]:.1f}%"),
                                    n_degenerate=0, **base)
    pr, sr = stats.pearsonr(x, y), stats.spearmanr(x, y)
    ci_r, ci_rho, bad = _bootstrap(x, y, seed=seed, n_resamples=n_resamples, confidence=confidence)
    reason = None if ci_r is not None else MSG_FEW_RESAMPLES.format(bad=bad, total=n_resamples)
    return LabourValidation(
        pearson_r=pearson(x, y), pearson_p=float(pr.pvalue), spearman_rho=spearman(x, y),
        spearman_p=float(sr.pvalue), pearson_low=ci_r[0] if ci_r else None, pearson_high=ci_r[1] if ci_r else None,
        spearman_low=ci_rho[0] if ci_rho else None, spearman_high=ci_rho[1] if ci_rho else None, reason=reason,
        n_degenerate=bad, **base)
