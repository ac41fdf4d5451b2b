"""Validation against labour statistics, shared by the 2AFC measures of models that answer (a chat model,
``twoafc-chat``; a text classifier, ``twoafc-classifier``): the targets' P(female cue | occupation) against the share
of women in the occupation (Liang & Acuna 2020, Fig. 2).

**Tables** (:data:`LABOUR_TABLES`, the one registry the command line's ``--labour-table``, the audit and the apps
name): ``bls`` — U.S. Bureau of Labor Statistics 2015 as collected by Rudinger et al. 2018 for Winogender (60
occupations, the default); ``bergsma`` — the same 60 occupations' % female from text statistics (Bergsma & Lin 2006,
the Winogender table's other column); ``zhao`` — U.S. BLS as collected by Zhao et al. 2018 for WinoBias (40
occupations, names as they spell them). Or any rows with ``occupation`` and ``pct_female``. A target is matched to a
row by name (case aside); a target with no reading is left out with its reason.

* **Pearson r** and **Spearman ρ** (``scipy.stats``, two-sided p-values) of the targets' P(female cue) (percent)
  with % women.
* **Interval**: percentile bootstrap over targets — ``n_resamples`` resamples of the matched targets with
  replacement (``numpy.random.default_rng(seed)``, one ``integers(0, n, n)`` draw per resample), the correlation
  of each; a resample in which either side is constant has no correlation and is left out (counted in
  ``n_degenerate``); no interval when more than half are (with the reason).
* **Undefined** (never NaN): fewer than 3 targets, or every target's P (or % women) alike — e.g. a model that
  only follows the position reads 50 % everywhere — gives ``None`` with the reason.

A target is anything with ``target`` (its name) and ``p_cue1_rate`` (a
:class:`~biastest.measures.forced_choice.result.RateSummary`: ``estimate``, ``low``, ``high``, ``n`` in percent).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import plotly.graph_objects as go
from pydantic import BaseModel, ConfigDict
from scipy import stats

from biastest.errors import OptionError
from biastest.report.figures import FONT, NEUTRAL, hover_safe
from biastest.report.text import fmt_p

__all__ = [
    "DEFAULT_TABLE", "LABOUR_TABLES", "METHOD", "MSG_BAD_FEMALE_CUE", "MSG_CONSTANT", "MSG_FEW_RESAMPLES",
    "MSG_NOT_TESTED", "MSG_NO_ANSWER", "MSG_NO_DECIDED", "MSG_TOO_FEW", "MSG_UNKNOWN_TABLE", "LabourTable",
    "LabourValidation", "check_female_cue", "check_table", "labour_figure", "labour_validation", "load_labour_table",
    "pearson", "spearman",
]

METHOD = ("Pearson r and Spearman rho of P(female cue | target) with % women (scipy.stats); percentile bootstrap "
          "over targets")
MSG_TOO_FEW = "The correlation needs at least 3 occupations with a reading and a table row; there are {n}."
MSG_CONSTANT = ("The correlation is not defined: every occupation's {what} is the same ({value}), so it does not "
                "vary with the share of women.")
MSG_FEW_RESAMPLES = ("No bootstrap interval: in {bad:,} of {total:,} resamples of the occupations one side was "
                     "constant.")
MSG_NO_ANSWER = "no parseable answer"
MSG_NO_DECIDED = "every comparison tied or was not scored"
MSG_NOT_TESTED = "not among the tested targets"
MSG_UNKNOWN_TABLE = "Unknown labour table '{value}'. Choose one of: {choices}."
MSG_BAD_FEMALE_CUE = "The female cue must be 1 or 2 (which cue of each pair is the female one), got {value!r}."
BLS_SOURCE = "biastest/data/occupations_bls.csv"


@dataclass(frozen=True)
class LabourTable:
    """One shipped table of % women per occupation: its file under ``biastest/data`` and what it is."""

    name: str
    file: str
    label: str
    axis: str


#: The shipped tables, by the name the command line, the audit and the apps use (``docs/measures/twoafc-chat.md``).
LABOUR_TABLES: dict[str, LabourTable] = {
    "bls": LabourTable("bls", "occupations_bls.csv", "U.S. BLS 2015 via Winogender (Rudinger et al. 2018), "
                       "60 occupations", "% of workers who are women (U.S. BLS 2015)"),
    "bergsma": LabourTable("bergsma", "occupations_bergsma.csv", "text statistics (Bergsma & Lin 2006) via "
                           "Winogender, 60 occupations", "% female in text (Bergsma & Lin 2006)"),
    "zhao": LabourTable("zhao", "occupations_zhao2018.csv", "U.S. BLS via WinoBias (Zhao et al. 2018), "
                        "40 occupations", "% of workers who are women (U.S. BLS, Zhao et al. 2018)"),
}
DEFAULT_TABLE = "bls"


def check_table(value: Any) -> str:
    """The table's name (case and spaces aside), or :class:`OptionError` with :data:`MSG_UNKNOWN_TABLE`."""
    name = str(value).strip().lower()
    if name not in LABOUR_TABLES:
        raise OptionError(MSG_UNKNOWN_TABLE.format(value=value, choices=", ".join(LABOUR_TABLES)),
                          option="labour_table", value=value)
    return name


def check_female_cue(value: Any) -> int:
    """1 or 2 (which cue of each pair is the female one), or :class:`OptionError` with :data:`MSG_BAD_FEMALE_CUE`."""
    if isinstance(value, bool) or value not in (1, 2, "1", "2"):
        raise OptionError(MSG_BAD_FEMALE_CUE.format(value=value), option="female_cue", value=value)
    return int(value)


def load_labour_table(name: str = DEFAULT_TABLE) -> list[dict[str, Any]]:
    """The rows (``occupation``, ``pct_female`` float, ``source``) of the shipped table ``name``.

    >>> len(load_labour_table("zhao")), load_labour_table("bls")[0]["occupation"]
    (40, 'technician')
    """
    table = LABOUR_TABLES[check_table(name)]
    text = resources.files("biastest").joinpath(f"data/{table.file}").read_text(encoding="utf-8")
    return [{"occupation": r["occupation"], "pct_female": float(r["pct_female"]), "source": r["source"]}
            for r in csv.DictReader(io.StringIO(text))]


class LabourValidation(BaseModel):
    """The targets' P(cue 1) against labour statistics (% women in the occupation), with bootstrap intervals.

    Attributes
    ----------
    pearson_r, spearman_rho : float or None
        Over the matched targets; None (with ``reason``) when not defined (fewer than 3 targets, or every value
        alike on one side).
    pearson_low, pearson_high, spearman_low, spearman_high : float or None
        Percentile bootstrap interval over targets (targets resampled with replacement, seeded); resamples in
        which one side is constant have no correlation and are left out (``n_degenerate``).
    pearson_p, spearman_p : float or None
        Two-sided p-values (``scipy.stats``).
    n : int
        Targets matched with a row of the table and with a parseable answer.
    used : tuple of dict
        ``occupation``, ``p_female`` (percent of the target's readings — parseable answers, or untied
        comparisons — that chose the female cue), ``ci_low``, ``ci_high`` (the target's interval of that percent),
        ``pct_female`` (the table's), ``n``.
    dropped : dict
        Table row or target → why it is not used.
    reason : str or None
        Why there is no correlation (or no interval).
    table : str or None
        The shipped table's name (:data:`LABOUR_TABLES`), None for the user's rows (files saved before the
        registry: None, the BLS table).
    unit : str
        What a target's reading counts, in words (``parseable answers``, ``untied comparisons``).
    """

    model_config = ConfigDict(frozen=True)

    pearson_r: float | None
    pearson_low: float | None
    pearson_high: float | None
    pearson_p: float | None
    spearman_rho: float | None
    spearman_low: float | None
    spearman_high: float | None
    spearman_p: float | None
    n: int
    used: tuple[dict[str, Any], ...]
    dropped: dict[str, str]
    reason: str | None
    female_cue: int
    confidence: float
    n_resamples: int
    n_degenerate: int
    seed: int
    table_source: str
    method: str
    table: str | None = None
    unit: str = "parseable answers"


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


def _matched(targets: Sequence[Any], rows: Sequence[Mapping[str, Any]], female_cue: int, empty: str):
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
            dropped[occ] = empty
            continue
        flip = female_cue == 2
        p = 100.0 - rate.estimate if flip else rate.estimate
        low, high = (100.0 - rate.high, 100.0 - rate.low) if flip else (rate.low, rate.high)
        used.append({"occupation": t.target, "p_female": p, "ci_low": low, "ci_high": high,
                     "pct_female": float(r["pct_female"]), "n": rate.n})
    return used, dropped


def labour_validation(targets: Sequence[Any], *, seed: int, n_resamples: int, confidence: float,
                      female_cue: int = 1, table: str | Sequence[Mapping[str, Any]] | None = None,
                      unit: str = "parseable answers") -> LabourValidation | None:
    """The correlation of the targets' P(female cue) with % women, with its bootstrap interval (module docstring).

    Parameters
    ----------
    targets : sequence
        Each with ``target`` and ``p_cue1_rate`` (module docstring).
    table : str or sequence of mapping, optional
        A name of :data:`LABOUR_TABLES`, or rows with ``occupation`` and ``pct_female``; None: :data:`DEFAULT_TABLE`.

    Returns
    -------
    LabourValidation or None
        None when no target is in the table (nothing to validate against).
    """
    name = check_table(DEFAULT_TABLE if table is None else table) if table is None or isinstance(table, str) \
        else None
    rows = load_labour_table(name) if name is not None else list(table or ())
    empty = MSG_NO_ANSWER if unit == "parseable answers" else MSG_NO_DECIDED
    used, dropped = _matched(targets, rows, female_cue, empty)
    if not used:
        return None
    x = np.array([u["p_female"] for u in used], dtype=np.float64)
    y = np.array([u["pct_female"] for u in used], dtype=np.float64)
    base = {"n": len(used), "used": tuple(used), "dropped": dropped, "female_cue": female_cue,
            "confidence": confidence, "n_resamples": n_resamples, "seed": seed, "method": METHOD,
            "table_source": f"biastest/data/{LABOUR_TABLES[name].file}" if name else "user table", "table": name,
            "unit": unit}
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


def _interval(low: float | None, high: float | None, confidence: float) -> str:
    return "no interval" if low is None or high is None else f"{confidence:.0%} interval {low:.3f}–{high:.3f}"


def labour_figure(labour: LabourValidation, *, female_label: str = "female") -> go.Figure:
    """P(female cue) per occupation against % women, with each target's interval and a least-squares line;
    Pearson and Spearman with their bootstrap intervals in the title (the paper's Fig. 2)."""
    used = list(labour.used)
    table = LABOUR_TABLES.get(labour.table or DEFAULT_TABLE) if labour.table_source != "user table" else None
    axis = table.axis if table is not None else "% women (your table)"
    x = np.array([u["pct_female"] for u in used], dtype=float)
    y = np.array([u["p_female"] for u in used], dtype=float)
    plus = [(u["ci_high"] - u["p_female"]) if u["ci_high"] is not None else 0 for u in used]
    minus = [(u["p_female"] - u["ci_low"]) if u["ci_low"] is not None else 0 for u in used]
    custom = [[hover_safe(u["occupation"]), f"{u['p_female']:.1f}", f"{u['pct_female']:.1f}",
               "—" if u["ci_low"] is None else f"{u['ci_low']:.1f}–{u['ci_high']:.1f}", u["n"]] for u in used]
    female = hover_safe(female_label)
    fig = go.Figure(go.Scatter(
        x=x, y=y, mode="markers", marker={"size": 9, "color": NEUTRAL},
        error_y={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1},
        customdata=custom, name="occupation",
        hovertemplate=("<b>%{customdata[0]}</b><br>% women: %{customdata[2]}<br>P(" + female
                       + " cue): %{customdata[1]}% (%{customdata[3]})<br>" + hover_safe(labour.unit)
                       + ": %{customdata[4]}<extra></extra>")))
    if len(used) >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        xs = np.array([x.min(), x.max()])
        fig.add_trace(go.Scatter(x=xs, y=slope * xs + intercept, mode="lines", name="least-squares line",
                                 line={"dash": "dash", "color": "#64748b"}, hoverinfo="skip"))
    short = (labour.table or DEFAULT_TABLE).upper() if table is not None else "your table"
    if labour.pearson_r is None:
        title = f"P({female} cue) vs % women: correlation not defined ({hover_safe(labour.reason)})"
    else:
        title = (f"P({female} cue) vs % women ({short}): Pearson r = {labour.pearson_r:.3f} "
                 f"({_interval(labour.pearson_low, labour.pearson_high, labour.confidence)}, "
                 f"p = {fmt_p(labour.pearson_p)}), Spearman ρ = {labour.spearman_rho:.3f}, n = {labour.n}")
    fig.update_layout(title=title, xaxis_title=axis, yaxis_title=f"P({female} cue), % of {hover_safe(labour.unit)}",
                      yaxis_range=[-2, 102], font_family=FONT, height=440,
                      margin={"l": 10, "r": 10, "t": 60, "b": 50}, showlegend=False)
    return fig
