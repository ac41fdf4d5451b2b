"""Tables, figures, exports and plain-language readings of a 2AFC result.

Turns a :class:`~biastest.measures.twoafc.result.TwoAFCResult` and a
:class:`~biastest.measures.twoafc.result.LaborCorrelation` into pandas
DataFrames, plotly figures with per-item hover, CSV/JSON files in a private
per-request folder, and short readings for a social scientist.

Saturated PSEs (the psychometric curve never crosses 0.5 inside the stimulus
range) are drawn at their raw value with a distinct marker and named in the
hover and the tables — never shown as 0.5. Every user-typed word that reaches
a hover label is HTML-escaped (:func:`biastest.report.figures.hover_safe`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from biastest.measures.embedding_common import level_text, record_fields
from biastest.measures.twoafc.report_figures import figure_rows
from biastest.measures.verdict import count_verdict
from biastest.report.export import created_date, download_name, private_dir, summary_first, write_csv, write_json
from biastest.report.figures import C1_COLOR, C2_COLOR, FONT, NEUTRAL, SAT_COLOR, hover_safe
from biastest.report.text import esc as _esc
from biastest.report.text import fmt as _fmt
from biastest.report.text import fmt_p as _p

__all__ = [
    "SATURATED_LABEL",
    "curve_figure",
    "csv_rows",
    "first_curve_target",
    "labour_figure",
    "labour_markdown",
    "MSG_INTERVAL_COUNTS",
    "MSG_NO_JND",
    "MSG_NO_JND_SHORT",
    "MSG_NO_LEAN",
    "MSG_SIGMA_BAND",
    "pse_figure",
    "pse_interval_label",
    "sigma_band",
    "spectrum_figure",
    "spectrum_layout",
    "twoafc_csv_rows",
    "twoafc_exports",
    "twoafc_frame",
    "twoafc_interpretation",
    "twoafc_summary_records",
]

SATURATED_LABEL = {
    "above": "saturated above 1 (never answers the second cue inside the range)",
    "below": "saturated below 0 (always answers the second cue inside the range)",
}
def _sat_text(flag: str | None) -> str:
    return SATURATED_LABEL.get(flag or "", "")


MSG_NO_JND = (
    "The paper's JND (the spread of the PSE across replicate embedding models) needs several models, and this run "
    "has one. The JND shown is the curve JND: the standard deviation of the psychometric function fitted to the "
    "answers pooled over the cue pairs — how far apart the cue pairs put the PSE. Choose “Several embedding "
    "files” or “Train replicates” in step 2 for the paper's JND."
)
MSG_NO_JND_SHORT = "none (the psychometric fit failed)"
MSG_NO_LEAN = "none"
MSG_SIGMA_BAND = (
    "σ-implied spread ±{sd:.3f}: what your perceptual noise σ = {sigma:g} implies — an assumption about the "
    "observer, not data"
)
#: How the intervals the verdict counts were made (the counts themselves are in the verdict sentence).
MSG_INTERVAL_COUNTS = "The {level} intervals of the {n} words with one come from a bootstrap over the {units}."


def pse_interval_label(result) -> str:
    """What the PSE intervals are — their level from the result, the units resampled — or why there are none."""
    if any(t.pse_ci is not None for t in result.targets):
        return (f"{level_text(result.ci_level)} interval of the PSE from the data: bootstrap over the "
                f"{result.interval_units} ({result.n_bootstrap} resamples, seed {result.seed})")
    notes = [t.pse_ci_note for t in result.targets if t.pse_ci_note]
    return notes[0] if notes else "no interval"


def sigma_band(result) -> tuple[list[float | None], str] | None:
    """The spread the user's σ implies per target (mean over cue pairs) and its label; None without a σ.

    It is drawn apart from the intervals from the data and labelled as the assumption it is
    (:data:`MSG_SIGMA_BAND`).
    """
    if result.mode != "thurstonian":
        return None
    sds = [t.curve_sd for t in result.targets]
    known = [v for v in sds if v is not None]
    return sds, MSG_SIGMA_BAND.format(sd=float(np.mean(known)) if known else float("nan"), sigma=result.noise_sigma)


def _pair_lines(result, target: str) -> str:
    lines = []
    for p in result.pairs_of(target):
        flag = f" ({p.saturated})" if p.saturated else ""
        lines.append(f"{hover_safe(p.cue_pair)}: {p.pse:.3f}{flag}")
    return "<br>".join(lines)


def _interval_text(ci: tuple[float, float] | None) -> str:
    return "—" if ci is None else f"{ci[0]:.3f} – {ci[1]:.3f}"


def twoafc_frame(result) -> pd.DataFrame:
    """One display row per target: PSE with its interval, saturation, JND or σ band, fit, per-cue-pair PSEs.

    Column names carry the result's confidence level. The replicate JND (the paper's) exists only with
    replicates (else the reading says why, :data:`MSG_NO_JND`); the curve JND (the fitted function's SD,
    :mod:`biastest.measures.twoafc.jnd`) in every mode; the σ-implied spread only with a σ, named as an assumption.
    """
    level = level_text(result.ci_level)
    band = sigma_band(result)
    rows = []
    for i, t in enumerate(result.targets):
        row = {
            "target": t.target,
            "PSE": round(t.pse, 4),
            f"PSE {level} low": None if t.pse_ci is None else round(t.pse_ci[0], 4),
            f"PSE {level} high": None if t.pse_ci is None else round(t.pse_ci[1], 4),
            "saturated": _sat_text(t.saturated) or "no",
        }
        if result.mode == "replicates":
            row["JND (SD across replicates)"] = None if t.jnd_sd is None else round(t.jnd_sd, 4)
            row[f"JND {level} low"] = None if t.jnd_sd_ci is None else round(t.jnd_sd_ci[0], 4)
            row[f"JND {level} high"] = None if t.jnd_sd_ci is None else round(t.jnd_sd_ci[1], 4)
        row["curve JND (fitted SD)"] = None if t.jnd_curve is None else round(t.jnd_curve, 4)
        row[f"curve JND {level} low"] = None if t.jnd_curve_ci is None else round(t.jnd_curve_ci[0], 4)
        row[f"curve JND {level} high"] = None if t.jnd_curve_ci is None else round(t.jnd_curve_ci[1], 4)
        if band is not None:
            sd = band[0][i]
            row["σ-implied spread (assumption)"] = None if sd is None else round(sd, 4)
        row["cue pairs"] = t.n_pairs
        row["saturated cue pairs"] = t.n_saturated_pairs
        if t.fit is not None:
            f = t.fit
            row["fitted PSE"] = None if f.pse is None else round(f.pse, 4)
            row[f"fitted PSE {level} low"] = None if f.pse_ci is None else round(f.pse_ci[0], 4)
            row[f"fitted PSE {level} high"] = None if f.pse_ci is None else round(f.pse_ci[1], 4)
            row["fit status"] = f.status
        if any(x.fit_note or x.pse_ci_note or x.jnd_note for x in result.targets):
            row["note"] = " ".join(dict.fromkeys(v for v in (t.pse_ci_note, t.fit_note, t.jnd_note) if v))
        for k, v in t.pair_pse.items():
            row[f"PSE {k}"] = round(v, 4)
        rows.append(row)
    return pd.DataFrame(rows)


def twoafc_csv_rows(result, *, source: str) -> list[dict[str, Any]]:
    """CSV item rows: the result's per-target records plus the embedding, mode, level and seed."""
    out = []
    for rec in result.target_records():
        out.append({**rec, "embedding": source, "mode": result.mode, "noise_sigma": result.noise_sigma,
                    "n_replicates": result.n_replicates, "confidence": result.ci_level, "seed": result.seed})
    return out


def pse_figure(result) -> go.Figure:
    """PSE per target with intervals from the data and a dot per cue pair (the paper's Fig. 3a).

    Hover on a target shows every cue pair's PSE (the small open dots, which have no hover of their own).

    The error bars are the percentile bootstrap intervals of the PSE (over the cue pairs or the replicate
    models, at the result's level). With a perceptual noise σ the spread it implies is drawn as a separate,
    lighter band named as an assumption (:func:`sigma_band`), never as the error bar.
    """
    order = sorted(range(len(result.targets)), key=lambda i: result.targets[i].pse)
    targets = [result.targets[i] for i in order]
    band = sigma_band(result)
    band_sd = [band[0][i] for i in order] if band else [None] * len(targets)
    interval_label = pse_interval_label(result)
    level = level_text(result.ci_level)
    x = [hover_safe(t.target) for t in targets]

    def details(t, sd) -> str:
        lines = [f"{level} interval: {_interval_text(t.pse_ci)}" if t.pse_ci is not None
                 else f"no interval: {hover_safe(t.pse_ci_note)}"]
        if result.mode == "replicates":
            lines.append(f"JND (SD across replicates): {_fmt(t.jnd_sd)}")
        lines.append(f"curve JND (fitted SD): {_fmt(t.jnd_curve)}")
        if sd is not None:
            lines.append(f"σ-implied spread (assumption): ±{sd:.3f}")
        return "<br>".join(lines)

    custom = [
        [hover_safe(t.target), f"{t.pse:.3f}", _sat_text(t.saturated) or "no", details(t, sd),
         _pair_lines(result, t.target)]
        for t, sd in zip(targets, band_sd, strict=True)
    ]
    template = (
        "<b>%{customdata[0]}</b><br>PSE: %{customdata[1]}<br>saturated: %{customdata[2]}<br>"
        "%{customdata[3]}<br><b>PSE per cue pair</b><br>%{customdata[4]}<extra></extra>"
    )
    fig = go.Figure()
    for sat, name, color, symbol in (
        (False, "PSE", NEUTRAL, "circle"),
        (True, "saturated PSE (curve never crosses inside 0–1)", SAT_COLOR, "triangle-up"),
    ):
        idx = [i for i, t in enumerate(targets) if bool(t.saturated) == sat]
        if not idx and sat:
            continue
        cis = [targets[i].pse_ci for i in idx]
        fig.add_trace(
            go.Scatter(
                x=[x[i] for i in idx],
                y=[targets[i].pse for i in idx],
                mode="markers",
                name=name,
                marker={"color": color, "size": 9, "symbol": symbol},
                error_y={"type": "data", "symmetric": False, "visible": any(c is not None for c in cis),
                         "array": [0.0 if c is None else c[1] - targets[i].pse for c, i in zip(cis, idx, strict=True)],
                         "arrayminus": [0.0 if c is None else targets[i].pse - c[0]
                                        for c, i in zip(cis, idx, strict=True)],
                         "color": "#334155", "thickness": 1.5, "width": 3},
                customdata=[custom[i] for i in idx],
                hovertemplate=template,
            )
        )
    pairs = [(hover_safe(p.target), p) for t in targets for p in result.pairs_of(t.target)]
    fig.add_trace(
        go.Scatter(
            x=[name for name, _ in pairs],
            y=[p.pse for _, p in pairs],
            mode="markers",
            name="PSE of each cue pair (listed in the target's hover)",
            marker={"color": "rgba(100,116,139,0.55)", "size": 5, "symbol": "circle-open"},
            hoverinfo="skip",
        )
    )
    if band is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[t.pse for t in targets],
                mode="markers",
                name="σ-implied spread (your assumption, not data)",
                marker={"size": 1, "color": "rgba(234,88,12,0)"},
                error_y={"type": "data", "array": [0.0 if v is None else v for v in band_sd], "visible": True,
                         "color": "rgba(234,88,12,0.35)", "thickness": 7, "width": 0},
                hoverinfo="skip",
            )
        )
    fig.add_hline(y=0.5, line_dash="dash", line_color="#64748b", annotation_text="0.5 = no preference",
                  annotation_position="bottom right")
    lows = [t.pse_ci[0] for t in targets if t.pse_ci is not None]
    highs = [t.pse_ci[1] for t in targets if t.pse_ci is not None]
    lo = min([0.0, *(t.pse for t in targets), *lows, *(p.pse for _, p in pairs)])
    hi = max([1.0, *(t.pse for t in targets), *highs, *(p.pse for _, p in pairs)])
    if lo < 0:
        fig.add_hrect(y0=lo - 0.05, y1=0, fillcolor=SAT_COLOR, opacity=0.06, line_width=0)
    if hi > 1:
        fig.add_hrect(y0=1, y1=hi + 0.05, fillcolor=SAT_COLOR, opacity=0.06, line_width=0)
    subtitle = hover_safe(interval_label, width=110) + (f"<br>{hover_safe(band[1], width=110)}" if band else "")
    fig.update_layout(
        title=(
            f"PSE per target word: above 0.5 leans {hover_safe(result.cue1_label)}, below leans "
            f"{hover_safe(result.cue2_label)}<br><sup>{subtitle}</sup>"
        ),
        yaxis_title="PSE (point of subjective equality)",
        font_family=FONT,
        height=500,
        margin={"l": 10, "r": 10, "t": 100, "b": 110},
        xaxis={"tickangle": -60, "categoryorder": "array", "categoryarray": x},
        hovermode="x",
        hoverlabel={"align": "left"},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
        yaxis={"range": [lo - 0.05, hi + 0.05]},
    )
    return fig


MSG_CURVE_FIRST = (
    "Shown first: {target} (PSE {pse}), the target closest to no preference among those whose curve crosses 0.5 "
    "inside the range. Choose any other target here."
)
MSG_CURVE_FIRST_ALL_SATURATED = (
    "Shown first: {target} (PSE {pse}). Every target is saturated: no curve crosses 0.5 inside the range."
)


def first_curve_target(result) -> tuple[str | None, str]:
    """The target whose psychometric curve is shown first, and a line that says which and why.

    A saturated target's curve never crosses 0.5, so it teaches nothing about
    the PSE: the first curve is the unsaturated target whose PSE is closest to
    0.5 (the middle of the range), or, when every target is saturated, the one
    closest to the range.

    Returns
    -------
    target : str or None
        None when the result has no target.
    note : str
        :data:`MSG_CURVE_FIRST` or :data:`MSG_CURVE_FIRST_ALL_SATURATED` (the target HTML-escaped), or "".
    """
    targets = list(result.targets)
    if not targets:
        return None, ""
    unsaturated = [t for t in targets if not t.saturated]
    pool = unsaturated or targets
    best = min(pool, key=lambda t: (abs(t.pse - 0.5), t.target))
    msg = MSG_CURVE_FIRST if unsaturated else MSG_CURVE_FIRST_ALL_SATURATED
    return best.target, msg.format(target=_esc(best.target), pse=f"{best.pse:.3f}")


def curve_figure(curve) -> go.Figure:
    """Ψ(α) for one target (the paper's Fig. 2): pooled, per cue pair, fitted; the PSE marked."""
    fig = go.Figure()
    alpha = list(curve.alpha)
    for pair, values in curve.per_pair.items():
        fig.add_trace(
            go.Scatter(x=alpha, y=list(values), mode="lines", name=hover_safe(pair), line={"width": 1},
                       opacity=0.45, hovertemplate=f"{hover_safe(pair)}<br>α=%{{x:.2f}}<br>Ψ=%{{y:.2f}}<extra></extra>")
        )
    what = {
        "replicates": "share of replicate × cue-pair answers",
        "thurstonian": "Ψ implied by your noise σ (mean over cue pairs)",
        "single": "share of cue pairs answering the second cue",
    }.get(curve.mode, "proportion")
    fig.add_trace(
        go.Scatter(x=alpha, y=list(curve.proportion), mode="lines+markers", name=what,
                   line={"width": 3, "color": NEUTRAL}, marker={"size": 4},
                   hovertemplate="α=%{x:.2f}<br>Ψ=%{y:.3f}<extra></extra>")
    )
    if curve.fitted is not None:
        fig.add_trace(
            go.Scatter(x=alpha, y=list(curve.fitted), mode="lines", name="fitted psychometric function",
                       line={"width": 2, "dash": "dot", "color": "#0f172a"},
                       hovertemplate="fit: α=%{x:.2f}, Ψ=%{y:.3f}<extra></extra>")
        )
    if curve.saturated:
        note = f"PSE {curve.pse:.3f}: {_sat_text(curve.saturated)}"
    else:
        fig.add_vline(x=curve.pse, line_dash="dash", line_color=SAT_COLOR)
        note = f"PSE {curve.pse:.3f}"
    fig.add_hline(y=0.5, line_dash="dot", line_color="#94a3b8")
    fig.update_layout(
        title=f"Psychometric curve of '{hover_safe(curve.target)}' — {hover_safe(note)}",
        xaxis_title=(
            f"α: mix of the cue (0 = all {hover_safe(curve.cue1_label)}, 1 = all {hover_safe(curve.cue2_label)})"
        ),
        yaxis_title=f"P(answer = {hover_safe(curve.cue2_label)})",
        yaxis={"range": [-0.03, 1.03]},
        xaxis={"range": [0, 1]},
        font_family=FONT,
        height=420,
        margin={"l": 10, "r": 10, "t": 60, "b": 50},
        legend={"font": {"size": 10}},
    )
    return fig


#: The label layout of the spectrum assumes a plot area at least this wide (px); a wider one only adds room.
SPECTRUM_MIN_WIDTH_PX = 700
SPECTRUM_FONT_PX = 10
SPECTRUM_ROW_PX = 30  # one row of labels: the marker, the text above it (~13 px) and a gap
SPECTRUM_X_RANGE = (-0.05, 1.05)
_NARROW = frozenset("ijlI.,:;'|!()[]/ ")
_WIDE = frozenset("mwMW@%")


def _label_width_px(text: str, size: float = SPECTRUM_FONT_PX) -> float:
    """An upper bound of the drawn width of ``text`` in common sans-serif fonts (DejaVu Sans is among the widest)."""
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += 0.4
        elif ch in _WIDE:
            em += 0.95
        elif ch.isascii():
            em += 0.8 if ch.isupper() else 0.66
        else:
            em += 1.1  # accented letters, symbols such as ⚠, CJK
    return em * size + 4


def _short(word: str, limit: int = 30) -> str:
    """A label of at most ``limit`` characters (the hover shows the whole word)."""
    return word if len(word) <= limit else word[: limit - 1] + "…"


def spectrum_layout(positions: Sequence[float], labels: Sequence[str], *,
                    width_px: float = SPECTRUM_MIN_WIDTH_PX) -> tuple[list[int], list[str]]:
    """Rows and text positions that keep the spectrum's labels apart.

    Each label is centred above its marker (left- or right-aligned at the ends
    of the axis so it stays on the plot); labels go, in order of their left
    edge, into the lowest row where they clear the previous label by a gap
    (first fit, which uses as few rows as the overlaps require).

    Parameters
    ----------
    positions : sequence of float
        x of each marker, in axis units (the axis spans :data:`SPECTRUM_X_RANGE`).
    labels : sequence of str
        The text drawn above each marker.
    width_px : float
        The narrowest plot area the layout must hold in; wider ones only add room.

    Returns
    -------
    rows : list of int
        Row of each label (0 = lowest).
    textpositions : list of str
        Plotly ``textposition`` of each label.

    Examples
    --------
    >>> spectrum_layout([0.40, 0.41, 0.90], ["secretary", "practitioner", "nurse"])
    ([1, 0, 0], ['top center', 'top center', 'top center'])
    >>> spectrum_layout([0.0, 1.0], ["programmer", "dietitian ⚠"])[1]
    ['top right', 'top left']
    """
    lo, hi = SPECTRUM_X_RANGE
    per_px = (hi - lo) / width_px
    gap = 8 * per_px
    extents: list[tuple[float, float]] = []
    where: list[str] = []
    for x, text in zip(positions, labels, strict=True):
        w = _label_width_px(text) * per_px
        if x - w / 2 < lo:
            extents.append((x - 3 * per_px, x + w + 3 * per_px))
            where.append("top right")
        elif x + w / 2 > hi:
            extents.append((x - w - 3 * per_px, x + 3 * per_px))
            where.append("top left")
        else:
            extents.append((x - w / 2, x + w / 2))
            where.append("top center")
    rows = [0] * len(extents)
    row_ends: list[float] = []
    for i in sorted(range(len(extents)), key=lambda i: extents[i]):
        left, right = extents[i]
        row = next((r for r, end in enumerate(row_ends) if end + gap <= left), len(row_ends))
        if row == len(row_ends):
            row_ends.append(right)
        else:
            row_ends[row] = right
        rows[i] = row
    return rows, where


def spectrum_figure(spectrum) -> go.Figure:
    """Targets along one axis from the second cue to the first (the paper's Fig. 4 love–hate spectrum).

    The x position is the PSE clipped to [0, 1]; saturated targets sit at the
    ends with a distinct marker and their raw PSE in the hover. Words are
    stacked in rows only so that their labels never overlap
    (:func:`spectrum_layout`); the height means nothing.
    """
    rows = list(spectrum.rows)
    labels = [_short(r["target"]) + (" ⚠" if r["saturated"] else "") for r in rows]
    ys, where = spectrum_layout([r["position"] for r in rows], labels)
    n_rows = max(ys, default=0) + 1
    custom = [
        [hover_safe(r["target"]), f"{r['pse']:.3f}", _sat_text(r["saturated"]) or "no",
         MSG_NO_JND_SHORT if r.get("jnd") is None else f"{_fmt(r['jnd'])} ({r['jnd_kind']} JND)",
         "<br>".join(f"{hover_safe(k)}: {v:.3f}" for k, v in r.get("pair_pse", {}).items()),
         _interval_text(r.get("pse_ci"))]
        for r in rows
    ]
    fig = go.Figure()
    for sat in (False, True):
        idx = [i for i, r in enumerate(rows) if bool(r["saturated"]) == sat]
        if not idx:
            continue
        fig.add_trace(
            go.Scatter(
                x=[rows[i]["position"] for i in idx],
                y=[ys[i] for i in idx],
                mode="markers+text",
                text=[html.escape(labels[i], quote=False) for i in idx],
                textposition=[where[i] for i in idx],
                textfont={"size": SPECTRUM_FONT_PX},
                cliponaxis=False,
                name="saturated (drawn at the end of the axis)" if sat else "target",
                marker={"size": 9, "color": SAT_COLOR if sat else [rows[i]["position"] for i in idx],
                        "colorscale": [[0, C2_COLOR], [1, C1_COLOR]], "cmin": 0, "cmax": 1,
                        "symbol": "diamond" if sat else "circle"},
                customdata=[custom[i] for i in idx],
                hovertemplate=(
                    "<b>%{customdata[0]}</b><br>PSE: %{customdata[1]}<br>interval: %{customdata[5]}<br>"
                    "saturated: %{customdata[2]}<br>JND: %{customdata[3]}<br>%{customdata[4]}<extra></extra>"
                ),
            )
        )
    c1, c2 = hover_safe(spectrum.cue1_label), hover_safe(spectrum.cue2_label)
    fig.add_vline(x=0.5, line_dash="dash", line_color="#64748b")
    margin = {"l": 10, "r": 10, "t": 100, "b": 60}
    fig.update_layout(
        title=(f"Spectrum: ← leans {c2} · · · leans {c1} →<br><sup>words are stacked only so that their labels do "
               "not overlap; the height means nothing</sup>"),
        xaxis={"range": list(SPECTRUM_X_RANGE),
               "title": f"PSE (0 = fully {c2} side, 0.5 = no preference, 1 = fully {c1} side)"},
        yaxis={"visible": False, "range": [-0.6, n_rows - 0.2], "fixedrange": True},
        font_family=FONT,
        height=margin["t"] + margin["b"] + round((n_rows + 0.4) * SPECTRUM_ROW_PX),
        margin=margin,
        showlegend=any(r["saturated"] for r in rows),
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
    )
    return fig


def labour_figure(corr, *, cue1_label: str) -> go.Figure:
    """PSE vs % women in the occupation (labour statistics), with Pearson and Spearman r and p in the title."""
    used = list(corr.used)
    custom = [
        [hover_safe(u["occupation"]), f"{u['pse']:.3f}", f"{u['pct_female']:.1f}", _sat_text(u["saturated"]) or "no"]
        for u in used
    ]
    fig = go.Figure(
        go.Scatter(
            x=[u["pct_female"] for u in used],
            y=[u["pse"] for u in used],
            mode="markers",
            marker={"size": 9, "color": [SAT_COLOR if u["saturated"] else NEUTRAL for u in used],
                    "symbol": ["triangle-up" if u["saturated"] else "circle" for u in used]},
            customdata=custom,
            hovertemplate=(
                "<b>%{customdata[0]}</b><br>% women: %{customdata[2]}<br>PSE: %{customdata[1]}<br>"
                "saturated: %{customdata[3]}<extra></extra>"
            ),
            name="occupation",
        )
    )
    x = np.array([u["pct_female"] for u in used])
    y = np.array([u["pse"] for u in used])
    if len(used) >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        xs = np.array([x.min(), x.max()])
        fig.add_trace(go.Scatter(x=xs, y=slope * xs + intercept, mode="lines", name="least-squares line",
                                 line={"dash": "dash", "color": "#64748b"}, hoverinfo="skip"))
    fig.update_layout(
        title=(
            f"PSE vs % women (BLS): Pearson r = {corr.pearson_r:.3f} (p = {_p(corr.pearson_p)}), "
            f"Spearman ρ = {corr.spearman_rho:.3f} (p = {_p(corr.spearman_p)}), n = {corr.n}"
        ),
        xaxis_title="% of workers who are women (U.S. BLS)",
        yaxis_title=f"PSE (higher = leans {hover_safe(cue1_label)})",
        font_family=FONT,
        height=420,
        margin={"l": 10, "r": 10, "t": 60, "b": 50},
        showlegend=False,
    )
    return fig


def labour_markdown(corr) -> str:
    """What the labour-statistics correlation says, in words."""
    strength = abs(corr.pearson_r)
    word = "weak" if strength < 0.3 else ("moderate" if strength < 0.6 else "strong")
    sig = "statistically significant" if corr.pearson_p < 0.05 else "not statistically significant"
    sat = sum(1 for u in corr.used if u["saturated"])
    lines = [
        f"**Labour statistics:** across {corr.n} occupations in the shipped U.S. BLS table, the PSE and the share "
        f"of women in the occupation correlate with Pearson r = {corr.pearson_r:.3f} (p = {_p(corr.pearson_p)}) "
        f"and Spearman ρ = {corr.spearman_rho:.3f} (p = {_p(corr.spearman_p)}): a {word} association, {sig} at "
        "the 5% level. A positive r means occupations with more women sit closer to the female cue in the "
        "embedding. (The paper reports r = 0.368, p = 0.049 on its own embeddings.)"
    ]
    if sat:
        lines.append(f"{sat} saturated PSE(s) enter with their raw value (policy: {corr.saturated_policy}).")
    if corr.dropped:
        lines.append(f"Occupations in the table but not tested: {len(corr.dropped)}.")
    return " ".join(lines)


def _leaning(result) -> tuple[list, list, list]:
    """Targets leaning to the first cue (PSE > 0.5, strongest first), to the second (PSE < 0.5), and at 0.5."""
    first = sorted((t for t in result.targets if t.pse > 0.5), key=lambda t: (-t.pse, t.target))
    second = sorted((t for t in result.targets if t.pse < 0.5), key=lambda t: (t.pse, t.target))
    even = [t for t in result.targets if t.pse == 0.5]
    return first, second, even


def twoafc_interpretation(result, *, source: str) -> str:
    """A plain-language reading of a 2AFC result.

    It opens with the verdict (:func:`biastest.measures.verdict.count_verdict`): how many target words lean each
    way beyond their own interval. The words named as leaning most to a side are only words on that side (at most
    five each; "none" when no word leans that way), so a word is never named on both sides. Interval counts carry
    the result's level.
    """
    c1, c2 = _esc(result.cue1_label), _esc(result.cue2_label)
    n = len(result.targets)
    first, second, even = _leaning(result)

    def names(ts) -> str:
        return ", ".join(_esc(t.target) for t in ts[:5]) or MSG_NO_LEAN

    sat = [t for t in result.targets if t.saturated]
    if result.mode == "replicates":
        mode = (f"{result.n_replicates} replicate embedding models (the JND is the SD of the PSE across "
                "them)")
    elif result.mode == "thurstonian":
        mode = (f"one model with a perceptual noise σ = {result.noise_sigma:g} that you chose — an assumption "
                "about the observer, not a measurement; the spread it implies is drawn apart as a lighter band")
    else:
        mode = "one model without noise (each answer is deterministic)"
    at_half = f", and **{len(even)}** sit exactly at 0.5" if even else ""
    lines = [
        count_verdict([(t.pse, *(t.pse_ci or (None, None))) for t in result.targets], null=0.5,
                      units="target words", above=f"towards {c1}", below=f"towards {c2}", level=result.ci_level,
                      no_interval=pse_interval_label(result)),
        f"### What this shows\nIn the embedding `{_esc(source)}`, **{len(first)} of {n}** target words lean towards "
        f"**{c1}** (PSE above 0.5) and **{len(second)}** towards **{c2}** (PSE below 0.5){at_half}. "
        f"Leaning most to {c1}: {names(first)}. Leaning most to {c2}: {names(second)}.",
    ]
    with_ci = [t for t in result.targets if t.pse_ci is not None]
    if with_ci:
        lines.append(MSG_INTERVAL_COUNTS.format(level=level_text(result.ci_level), units=_esc(result.interval_units),
                                                n=len(with_ci)))
    else:
        lines.append(f"No intervals: {_esc(pse_interval_label(result))}")
    lines.append(
        f"The PSE is the mix of the two cues at which the embedding is equally likely to answer either; 0.5 means "
        f"no preference. Noise: {mode}."
    )
    if result.mode != "replicates":
        lines.append(MSG_NO_JND)
    if sat:
        lines.append(
            f"<span class='bt-warn'>⚠ {len(sat)} target(s) are **saturated**: the embedding picks the same side "
            f"across the whole range, so their PSE lies outside 0–1 ({', '.join(_esc(t.target) for t in sat)}). "
            "They are shown with their raw value and a red marker, never as 0.5.</span>"
        )
    if result.dropped_targets or result.dropped_pairs:
        dropped = [*result.dropped_targets, *result.dropped_pairs]
        lines.append(f"Left out because a word is missing from the embedding: {_esc(', '.join(dropped))}.")
    lines.append(
        "A lean is an association learned from text; it does not say whether the text was right or fair."
    )
    return "\n\n".join(lines)


def twoafc_summary_records(result, *, source: str, corr=None, spec: Mapping[str, Any] | None = None,
                           jnd_corr=None) -> list[dict[str, Any]]:
    """The summary rows the 2AFC CSV starts with: leaning counts, interval counts, JNDs or σ, labour statistics.

    Each row: ``measure``, ``estimate``, ``ci_low``/``ci_high`` with ``confidence``, ``interval`` (how it was
    made, or why there is none), ``p_value``, ``n``; then the record: embedding, mode, σ, replicates, cue
    pairs, resamples, seed, spec, method, versions, date.
    """
    first, second, _even = _leaning(result)
    n = len(result.targets)
    with_ci = [t for t in result.targets if t.pse_ci is not None]
    how = pse_interval_label(result)
    record = {
        "embedding": source, "mode": result.mode, "noise_sigma": result.noise_sigma,
        "n_replicates": result.n_replicates, "n_cue_pairs": len(result.cue_pairs),
        "n_resamples": result.n_bootstrap, "seed": result.seed,
        **record_fields(result.provenance, spec),
    }

    def row(measure: str, estimate: Any, **values: Any) -> dict[str, Any]:
        out = {"measure": measure, "estimate": estimate, "unit": None, "ci_low": None, "ci_high": None,
               "confidence": result.ci_level, "interval": None, "p_value": None, "n": n}
        out.update(values)
        out.update(record)
        return out

    rows = [
        row(f"targets leaning to {result.cue1_label} (PSE > 0.5)", len(first), unit="targets"),
        row(f"targets leaning to {result.cue2_label} (PSE < 0.5)", len(second), unit="targets"),
        row(f"targets whose interval is wholly above 0.5 ({result.cue1_label} side)",
            sum(1 for t in with_ci if t.pse_ci[0] > 0.5) if with_ci else None, unit="targets", interval=how),
        row(f"targets whose interval is wholly below 0.5 ({result.cue2_label} side)",
            sum(1 for t in with_ci if t.pse_ci[1] < 0.5) if with_ci else None, unit="targets", interval=how),
    ]
    if result.mode == "replicates":
        jnds = [t.jnd_sd for t in result.targets if t.jnd_sd is not None]
        rows.append(row("JND (SD of the PSE across replicate models), mean over targets",
                        float(np.mean(jnds)) if jnds else None, unit="α"))
    else:
        rows.append(row("JND", None, interval=MSG_NO_JND))
    curve = [t.jnd_curve for t in result.targets if t.jnd_curve is not None]
    rows.append(row("curve JND (SD of the fitted psychometric function), mean over targets",
                    float(np.mean(curve)) if curve else None, unit="α", n=len(curve)))
    band = sigma_band(result)
    if band is not None:
        sds = [v for v in band[0] if v is not None]
        rows.append(row("σ-implied spread (an assumption, not data), mean over targets",
                        float(np.mean(sds)) if sds else None, unit="α", interval=band[1]))
    if corr is not None:
        rows.append(row("Pearson r: PSE vs % women (U.S. BLS)", corr.pearson_r, p_value=corr.pearson_p, n=corr.n,
                        interval=f"saturated PSEs: {corr.saturated_policy}"))
        rows.append(row("Spearman ρ: PSE vs % women (U.S. BLS)", corr.spearman_rho, p_value=corr.spearman_p,
                        n=corr.n))
    if jnd_corr is not None:
        rows.append(row("Pearson r: JND vs sqrt(p(1 − p)), p = share of women (U.S. BLS)", jnd_corr.pearson_r,
                        p_value=jnd_corr.pearson_p, n=jnd_corr.n, interval=jnd_corr.jnd_definition))
        rows.append(row("Spearman ρ: JND vs sqrt(p(1 − p)), p = share of women (U.S. BLS)", jnd_corr.spearman_rho,
                        p_value=jnd_corr.spearman_p, n=jnd_corr.n, interval=jnd_corr.jnd_definition))
    return rows


def twoafc_exports(result, *, source: str, corr=None, spec: Mapping[str, Any] | None = None,
                   directory: Path | None = None, jnd_corr=None) -> tuple[Path, Path]:
    """CSV and JSON (everything, with provenance) in ``directory`` (default: a fresh folder).

    The CSV is a complete record on its own: summary rows first (:func:`twoafc_summary_records`,
    ``row_type`` ``summary``), then one row per target (``row_type`` ``target``, :func:`twoafc_csv_rows`), then
    the rows the figures show beyond them (``row_type`` ``pair`` and ``occupation``,
    :func:`biastest.measures.twoafc.report_figures.figure_rows`).
    """
    folder = Path(directory) if directory is not None else private_dir("biastest-2afc-")
    rows = summary_first(twoafc_summary_records(result, source=source, corr=corr, spec=spec, jnd_corr=jnd_corr),
                         twoafc_csv_rows(result, source=source), item_type="target")
    rows += figure_rows(result, source=source, corr=corr, jnd_corr=jnd_corr)
    csv_path = write_csv(rows, folder / download_name("psychophysics", source, when=created_date(result), part="2afc"))
    payload = {"test": "2afc", "embedding": source, "spec": dict(spec) if spec else None, "result": result.to_dict(),
               "labour_statistics": corr.to_dict() if corr is not None else None,
               "jnd_labour_statistics": jnd_corr.to_dict() if jnd_corr is not None else None}
    json_path = write_json(payload, folder / download_name("psychophysics", source, when=created_date(result),
                                                           ext="json", part="2afc"))
    return csv_path, json_path


def csv_rows(result, *, source: str = "") -> list[dict[str, Any]]:
    """The CSV rows of a result (the registry's report entry): summary rows first, then one per target."""
    return summary_first(twoafc_summary_records(result, source=source), twoafc_csv_rows(result, source=source),
                         item_type="target")
