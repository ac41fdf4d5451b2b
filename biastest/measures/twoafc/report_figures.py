"""The JND figures and rows of a 2AFC result: the paper's Fig. 3b and its validation against labour statistics.

* :func:`jnd_figure` — the JND of each target with its interval, and a dot per
  cue pair where the cue pairs have a JND of their own (replicates); the
  paper's Fig. 3b.
* :func:`jnd_labour_figure` / :func:`jnd_labour_markdown` — the JND against the
  binomial SD of the share of women, ``sqrt(p(1 − p))``, with the least-squares
  line, Pearson r and Spearman ρ (the paper: |r| = 0.401, p = 0.031).
* :func:`figure_rows` — the rows these figures and the PSE figures show that
  the per-target rows do not hold: one per target × cue pair (the dots of
  Fig. 3a and 3b), one per occupation (the scatters), for the CSV.

The JND definitions are those of :mod:`biastest.measures.twoafc.jnd`. Every
word that reaches a hover label is HTML-escaped
(:func:`biastest.report.figures.hover_safe`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from biastest.measures.embedding_common import level_text
from biastest.report.figures import FONT, NEUTRAL, hover_safe
from biastest.report.text import fmt as _fmt
from biastest.report.text import fmt_p as _p

__all__ = [
    "JND_KIND_LABEL",
    "MSG_NO_JND_AT_ALL",
    "PAPER_JND_R",
    "figure_rows",
    "jnd_figure",
    "jnd_labour_figure",
    "jnd_labour_markdown",
]

PAPER_JND_R = (0.401, 0.031)
"""|r| and p of the paper's JND validation (32 bootstrapped GloVe models)."""

JND_KIND_LABEL = {
    "replicate": "JND = SD of the PSE across replicate models (the paper's)",
    "curve": "JND = SD of the fitted psychometric function (π·s/√3 logistic, s normal)",
}

MSG_NO_JND_AT_ALL = "No target has a JND: every psychometric fit failed (see the table's notes)."


def _ci_text(ci: tuple[float, float] | None) -> str:
    return "no interval" if ci is None else f"{ci[0]:.3f} – {ci[1]:.3f}"


def _pair_jnds(result, target: str) -> str:
    """Hover lines of each cue pair's replicate JND ("" without replicates)."""
    lines = [f"{hover_safe(p.cue_pair)}: {p.jnd_sd:.3f}" for p in result.pairs_of(target) if p.jnd_sd is not None]
    return "<br><b>JND per cue pair</b><br>" + "<br>".join(lines) if lines else ""


def jnd_figure(result) -> go.Figure:
    """The JND per target with its interval (the paper's Fig. 3b), lowest first; a dot per cue pair with replicates.

    The headline JND is the replicate JND when the result has replicate models
    (interval: BCa bootstrap over the models), else the curve JND (interval:
    the fit's bootstrap over the cue pairs). With replicates each cue pair's
    own replicate JND is drawn as a small dot, as in the paper, and listed in the target's hover. The axis
    stops at 2.5 × the largest JND; an interval reaching beyond runs off the chart (its ends are in the hover).
    """
    rows = [(t, *t.jnd()) for t in result.targets]
    shown = sorted((r for r in rows if r[1] is not None), key=lambda r: (r[1], r[0].target))
    kind = "replicate" if result.mode == "replicates" else "curve"
    x = [hover_safe(t.target) for t, *_ in shown]
    level = level_text(result.ci_level)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=x,
        y=[j for _, j, _, _ in shown],
        mode="markers",
        name=JND_KIND_LABEL[kind],
        marker={"color": NEUTRAL, "size": 9},
        error_y={"type": "data", "symmetric": False, "visible": any(ci is not None for _, _, ci, _ in shown),
                 "array": [0.0 if ci is None else ci[1] - j for _, j, ci, _ in shown],
                 "arrayminus": [0.0 if ci is None else j - ci[0] for _, j, ci, _ in shown],
                 "color": "#334155", "thickness": 1.5, "width": 3},
        customdata=[[hover_safe(t.target), f"{j:.3f}", _ci_text(ci), f"{t.pse:.3f}",
                     hover_safe(t.jnd_note or "—", width=60), _fmt(t.jnd_curve), _pair_jnds(result, t.target)]
                    for t, j, ci, _ in shown],
        hovertemplate=(f"<b>%{{customdata[0]}}</b><br>JND: %{{customdata[1]}}<br>{level} interval: "
                       "%{customdata[2]}<br>PSE: %{customdata[3]}<br>curve JND: %{customdata[5]}<br>"
                       "note: %{customdata[4]}%{customdata[6]}<extra></extra>"),
    ))
    if kind == "replicate":
        pairs = [(hover_safe(p.target), p) for t, *_ in shown for p in result.pairs_of(t.target)
                 if p.jnd_sd is not None]
        fig.add_trace(go.Scatter(
            x=[name for name, _ in pairs],
            y=[p.jnd_sd for _, p in pairs],
            mode="markers",
            name="JND of each cue pair, SD across replicates (listed in the target's hover)",
            marker={"color": "rgba(100,116,139,0.55)", "size": 5, "symbol": "circle-open"},
            hoverinfo="skip",
        ))
    # a few intervals reach far up (a resample with an almost flat curve): the axis stops at 2.5 × the largest JND,
    # so that the others stay readable; a bar that runs off the chart keeps its numbers in the hover
    highs = [ci[1] for _, _, ci, _ in shown if ci is not None] + [j for _, j, _, _ in shown]
    top = min(max(highs, default=1.0), 2.5 * max((j for _, j, _, _ in shown), default=1.0)) * 1.05
    how = ("BCa bootstrap over the replicate models" if kind == "replicate"
           else f"bootstrap over the {result.interval_units} of the fitted slope")
    fig.update_layout(
        title=(f"JND per target word (lower = a sharper, more certain lean)<br><sup>{hover_safe(JND_KIND_LABEL[kind])}"
               f"; {level} interval: {hover_safe(how)}, {result.n_bootstrap} resamples, seed {result.seed}</sup>"),
        yaxis_title="JND (α units: share of the second cue)",
        font_family=FONT,
        height=480,
        margin={"l": 10, "r": 10, "t": 100, "b": 110},
        xaxis={"tickangle": -60, "categoryorder": "array", "categoryarray": x},
        hovermode="x",
        hoverlabel={"align": "left"},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
        yaxis={"range": [0, top]},
    )
    return fig


def jnd_labour_figure(validation) -> go.Figure:
    """JND against the binomial SD of the share of women, ``sqrt(p(1 − p))``, with the least-squares line."""
    used = list(validation.used)
    fig = go.Figure(go.Scatter(
        x=[u["binomial_sd"] for u in used],
        y=[u["jnd"] for u in used],
        mode="markers",
        name="occupation",
        marker={"size": 9, "color": NEUTRAL},
        customdata=[[hover_safe(u["occupation"]), f"{u['pct_female']:.1f}", f"{u['binomial_sd']:.3f}",
                     f"{u['jnd']:.3f}",
                     _ci_text(None if u["jnd_ci_low"] is None else (u["jnd_ci_low"], u["jnd_ci_high"]))]
                    for u in used],
        hovertemplate=("<b>%{customdata[0]}</b><br>% women: %{customdata[1]}<br>sqrt(p(1−p)): %{customdata[2]}<br>"
                       "JND: %{customdata[3]} (interval %{customdata[4]})<extra></extra>"),
    ))
    x = np.array([u["binomial_sd"] for u in used])
    y = np.array([u["jnd"] for u in used])
    slope, intercept = np.polyfit(x, y, 1)
    xs = np.array([x.min(), x.max()])
    fig.add_trace(go.Scatter(x=xs, y=slope * xs + intercept, mode="lines", name="least-squares line",
                             line={"dash": "dash", "color": "#64748b"}, hoverinfo="skip"))
    fig.update_layout(
        title=(f"JND vs binomial SD of % women (BLS): Pearson r = {validation.pearson_r:.3f} "
               f"(p = {_p(validation.pearson_p)}), Spearman ρ = {validation.spearman_rho:.3f}, n = {validation.n}"
               f"<br><sup>{hover_safe(JND_KIND_LABEL[validation.jnd_kind])}; the paper: |r| = {PAPER_JND_R[0]}, "
               f"p = {PAPER_JND_R[1]} on 32 bootstrapped GloVe models</sup>"),
        xaxis_title="sqrt(p(1 − p)), p = share of women in the occupation (U.S. BLS)",
        yaxis_title="JND (α units)",
        font_family=FONT,
        height=440,
        margin={"l": 10, "r": 10, "t": 80, "b": 50},
        showlegend=False,
    )
    return fig


def jnd_labour_markdown(validation) -> str:
    """What the JND validation says, in words."""
    sig = "statistically significant" if validation.pearson_p < 0.05 else "not statistically significant"
    return (
        f"**JND against labour statistics:** across {validation.n} occupations, the JND and the binomial standard "
        f"deviation of the share of women, sqrt(p(1 − p)), correlate with Pearson r = {validation.pearson_r:.3f} "
        f"(p = {_p(validation.pearson_p)}) and Spearman ρ = {validation.spearman_rho:.3f} "
        f"(p = {_p(validation.spearman_p)}), {sig} at the 5% level. The SD is largest for an occupation half women; "
        f"a link would mean the embedding is less sure of the gender of mixed occupations. "
        f"({JND_KIND_LABEL[validation.jnd_kind]}. The paper reports |r| = {PAPER_JND_R[0]}, p = {PAPER_JND_R[1]} "
        "on 32 bootstrapped GloVe models.)"
    )


def figure_rows(result, *, source: str, corr=None, jnd_corr=None) -> list[dict[str, Any]]:
    """CSV rows the figures show beyond the per-target rows: each target × cue pair, then each occupation.

    ``row_type`` ``"pair"``: the PSE (Fig. 3a's dots) and the JND (Fig. 3b's dots, with replicates) of one cue
    pair; ``row_type`` ``"occupation"``: % women, the PSE (Fig. 2's scatter) and the JND with sqrt(p(1 − p))
    (the JND validation scatter), where computed.
    """
    rows = [{"row_type": "pair", **p.record(), "embedding": source, "mode": result.mode, "seed": result.seed}
            for p in result.pairs]
    occ: dict[str, dict[str, Any]] = {}
    for u in (corr.used if corr is not None else ()):
        occ.setdefault(u["occupation"], {"occupation": u["occupation"], "pct_female": u["pct_female"]})
        occ[u["occupation"]]["pse_for_labour"] = u["pse"]
    for u in (jnd_corr.used if jnd_corr is not None else ()):
        row = occ.setdefault(u["occupation"], {"occupation": u["occupation"], "pct_female": u["pct_female"]})
        row.update({"binomial_sd": u["binomial_sd"], "jnd": u["jnd"], "jnd_kind": jnd_corr.jnd_kind,
                    "jnd_ci_low": u["jnd_ci_low"], "jnd_ci_high": u["jnd_ci_high"]})
    rows += [{"row_type": "occupation", **r, "embedding": source, "seed": result.seed} for r in occ.values()]
    return rows
