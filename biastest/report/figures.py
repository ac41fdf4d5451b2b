"""Plotly figures shared by the apps: score bars with intervals and item grids.

All user text that reaches a hover label is HTML-escaped first (plotly
renders a subset of HTML in hover labels), so terms or sentences containing
``<script>`` show as text.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

__all__ = ["hover_safe", "item_grid", "score_bars"]

FONT = "Inter, system-ui, sans-serif"
#: Colours of the word-embedding figures: the first cue / group, the second, neutral marks, saturated PSEs.
C1_COLOR = "#c026d3"
C2_COLOR = "#0d9488"
NEUTRAL = "#6366f1"
SAT_COLOR = "#dc2626"


def hover_safe(value: Any, *, width: int = 70) -> str:
    """Escape a value for a plotly hover label and wrap long text with ``<br>``."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    text = html.escape(str(value), quote=False)
    if len(text) <= width:
        return text
    return "<br>".join(textwrap.wrap(text, width=width, break_long_words=True)) or text


def score_bars(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    reference: float | None = 50.0,
    value_label: str = "stereotype score (%)",
    range_: tuple[float, float] | None = (0.0, 100.0),
    interval_label: str = "95% interval",
) -> go.Figure:
    """Horizontal bars with confidence intervals, one per row.

    Parameters
    ----------
    rows : sequence of mappings
        Each with ``label``, ``score`` and optional ``ci_low``, ``ci_high``,
        ``n``, ``p_value`` and ``hover_extra`` (a mapping of more hover lines,
        name → value, e.g. an adjusted p-value; escaped). Rows whose score is
        None are drawn as absent (with ``n`` shown), never as 0.
    title : str
    reference : float, optional
        A dashed line at the no-bias value (50 % for a stereotype score).
    value_label : str
        Axis and hover name of the score.
    range_ : tuple of float, optional
        Fixed x-axis range.
    interval_label : str
        Hover name of the interval (say which kind it is).
    """
    labels = [hover_safe(r["label"]) for r in rows]
    scores = [r.get("score") for r in rows]
    lo = [r.get("ci_low") for r in rows]
    hi = [r.get("ci_high") for r in rows]
    err_plus = [(h - s) if (h is not None and s is not None) else 0 for s, h in zip(scores, hi, strict=True)]
    err_minus = [(s - low) if (low is not None and s is not None) else 0 for s, low in zip(scores, lo, strict=True)]
    custom = [
        [
            "—" if r.get("score") is None else f"{r['score']:.1f}",
            "—" if r.get("ci_low") is None else f"{r['ci_low']:.1f}",
            "—" if r.get("ci_high") is None else f"{r['ci_high']:.1f}",
            r.get("n", ""),
            "—" if r.get("p_value") is None else f"{r['p_value']:.3g}",
            "".join(f"<br>{hover_safe(k)}: {hover_safe(v)}" for k, v in (r.get("hover_extra") or {}).items()),
        ]
        for r in rows
    ]
    fig = go.Figure(
        go.Bar(
            x=scores,
            y=labels,
            orientation="h",
            error_x={"type": "data", "symmetric": False, "array": err_plus, "arrayminus": err_minus},
            customdata=custom,
            hovertemplate=(
                "<b>%{y}</b><br>" + value_label + ": %{customdata[0]}<br>"
                + hover_safe(interval_label) + ": %{customdata[1]} – %{customdata[2]}<br>n = %{customdata[3]}<br>"
                "p (vs no bias) = %{customdata[4]}%{customdata[5]}<extra></extra>"
            ),
            marker_color="#6366f1",
        )
    )
    if reference is not None:
        fig.add_vline(x=reference, line_dash="dash", line_color="#64748b")
    fig.update_layout(
        title=title,
        xaxis_title=value_label,
        font_family=FONT,
        height=max(260, 60 + 28 * len(rows)),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        yaxis={"autorange": "reversed"},
    )
    if range_ is not None:
        fig.update_xaxes(range=list(range_))
    return fig


def item_grid(
    *,
    x: Sequence[Any],
    y: Sequence[Any],
    color: Sequence[float | None],
    hover: Sequence[Mapping[str, Any]],
    title: str,
    x_title: str,
    y_title: str,
    color_title: str,
    midpoint: float | None = 0.0,
) -> go.Figure:
    """A grid of items (square markers) coloured by a value, with rich hover.

    ``hover`` holds one mapping per item; each key becomes a labelled line of
    the hover label (values escaped). Items without a value are drawn grey.
    """
    keys: list[str] = []
    for h in hover:
        for k in h:
            if k not in keys:
                keys.append(k)
    custom = [[hover_safe(h.get(k)) for k in keys] for h in hover]
    template = "<br>".join(f"<b>{html.escape(k)}</b>: %{{customdata[{i}]}}" for i, k in enumerate(keys))
    vals = [c if c is not None else float("nan") for c in color]
    finite = [v for v in vals if v == v]
    bound = max((abs(v) for v in finite), default=1.0) or 1.0
    marker: dict[str, Any] = {
        "symbol": "square",
        "size": 16,
        "color": vals,
        "colorscale": "RdBu_r",
        "colorbar": {"title": {"text": color_title}},
        "line": {"width": 1, "color": "#334155"},
    }
    if midpoint is not None:
        marker.update(cmin=midpoint - bound, cmax=midpoint + bound)
    fig = go.Figure(
        go.Scatter(
            x=[hover_safe(v) for v in x],
            y=[hover_safe(v) for v in y],
            mode="markers",
            marker=marker,
            customdata=custom,
            hovertemplate=template + "<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        xaxis_title=x_title,
        yaxis_title=y_title,
        font_family=FONT,
        height=max(320, 80 + 22 * len(set(map(str, y)))),
        margin={"l": 10, "r": 10, "t": 50, "b": 60},
        hoverlabel={"align": "left"},
    )
    return fig
