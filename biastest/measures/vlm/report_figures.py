"""Figures of the vision-language test: the per-term bars and the per-image grid (plotly).

* :func:`term_bars` (rows: :func:`~biastest.measures.vlm.report.term_rows`) — per image term and per target term
  scores with intervals (:func:`~biastest.report.figures.score_bars`; labelled with the result's level); a bar whose
  interval leaves out 50 % although its test does not confirm a lean says why in its hover label, which also gives
  the magnitude, the clusters and the Holm / Benjamini–Hochberg adjusted p-values;
* :func:`image_grid` — one square per image, coloured by ``P(T1) − P(T2)``, whose hover label gives
  :func:`~biastest.measures.vlm.report.image_facts`; each point also carries a small thumbnail (a ``data:``
  URI) in its last ``customdata`` column, which the app shows beside the plot for the hovered image (plotly
  hover labels cannot show images).

The words (labels, readings, messages) are those of :mod:`biastest.measures.vlm.report`.
"""

from __future__ import annotations

import base64
import html
import io
import textwrap
from collections.abc import Mapping
from pathlib import Path

import plotly.graph_objects as go

from biastest.errors import DataError
from biastest.measures.vlm.report import term_rows
from biastest.measures.vlm.report_words import GRID_HOVER_FIELDS, image_facts, labels, level_label
from biastest.measures.vlm.result import VLMResult
from biastest.models.images import load_image
from biastest.report.figures import FONT, hover_safe, score_bars

__all__ = ["BARS_BOTTOM", "BARS_LINE", "BARS_TOP", "GRID_TITLE_CHARS", "image_grid", "term_bars", "thumbnail_uri"]

BARS_TOP = 100
"""Top margin of a titled figure: the app's plot component forces at least 100 px when it shows a label."""
BARS_BOTTOM = 70
"""Room for the x axis, its tick labels and its title."""
BARS_LINE = 16
"""Height of one line of a bar's label (12 px text), and the room left between two bars' labels."""


def term_bars(result: VLMResult) -> go.Figure:
    """Bias score with interval overall, per image term and per target term (50% = no preference).

    Each bar's hover label carries its ``hover_extra`` lines and its ``note`` (:func:`term_rows`, the note in the
    last ``customdata`` column); the interval is labelled with the result's level. The figure is tall enough for
    every label (wrapped ones included) to keep clear of its neighbours.
    """
    rows = term_rows(result)
    interval = f"{level_label((result.soft or result.hard).confidence, space=False)} interval"
    if result.soft is None:
        fig = score_bars(rows, title="Share of stereotyped single answers per image term",
                         value_label="stereotyped answers (%)", interval_label=interval)
    else:
        fig = score_bars(rows, title="Bias score per image term and per target term", value_label="bias score (%)",
                         interval_label=interval)
    bar = fig.data[0]
    k = len(bar.customdata[0])
    bar.customdata = [[*c, f"<br><i>{hover_safe(r['note'])}</i>" if r["note"] else ""]
                      for c, r in zip(bar.customdata, rows, strict=True)]
    bar.hovertemplate = bar.hovertemplate.replace("<extra></extra>", f"%{{customdata[{k}]}}<extra></extra>")
    lines = max((str(y).count("<br>") + 1 for y in bar.y), default=1)
    fig.update_layout(height=BARS_TOP + BARS_BOTTOM + len(rows) * BARS_LINE * (lines + 1),
                      margin={"t": BARS_TOP, "b": BARS_BOTTOM}, hoverlabel={"align": "left"})
    return fig


# --------------------------------------------------------------------------- per-image grid
GRID_TITLE_CHARS = 60
"""The grid's title is wrapped at this many characters, so that it fits the plot (it is never cut off)."""


def thumbnail_uri(path: str | Path, *, size: int = 96) -> str:
    """A small JPEG thumbnail of an image file as a ``data:`` URI ("" when it cannot be read)."""
    try:
        img = load_image(path, max_side=max(16, size))
    except DataError:
        return ""
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _wrapped(text: str, width: int) -> str:
    """Escaped for plotly, wrapped at ``width`` characters with ``<br>``."""
    return "<br>".join(html.escape(line, quote=False) for line in textwrap.wrap(text, width=width)) or ""


def image_grid(
    result: VLMResult, *, thumbnails: Mapping[str, str] | None = None, per_row: int = 8
) -> go.Figure:
    """One square per image, grouped by image term, coloured by ``P(T1) − P(T2)``.

    An image without a probability (a model behind an endpoint that gave none) is coloured by its single
    answer: +1 for T1, −1 for T2, 0 for neither.

    Parameters
    ----------
    result : VLMResult
    thumbnails : mapping, optional
        ``image_id`` → ``data:`` URI; carried in the last ``customdata``
        column of each point (not shown in the hover label) so that the app
        can show the hovered image's thumbnail beside the plot.
    per_row : int
        Squares per row within an image term's block.

    Notes
    -----
    Image term ``k`` (in spec order: group 1 terms, then group 2 terms)
    occupies columns ``k·(per_row+1) … k·(per_row+1)+per_row−1``; its ``j``-th
    image sits at column ``j mod per_row``, row ``j div per_row``. Hover lines:
    :func:`image_facts` (the field names, plain, are in ``layout.meta.fields``);
    ``customdata`` holds those values (escaped), then the image id and the thumbnail.
    """
    lab = labels(result)
    thumbnails = thumbnails or {}
    order: list[str] = []
    for t in result.per_image_term:
        if t.term not in order:
            order.append(t.term)
    for img in result.images:
        if img.image_term not in order:
            order.append(img.image_term)
    seen: dict[str, int] = dict.fromkeys(order, 0)
    xs, ys, colour, custom = [], [], [], []
    fields: list[str] = []
    counts = {term: sum(1 for i in result.images if i.image_term == term) for term in order}
    width = max(1, min(per_row, max(counts.values(), default=1)))
    for img in result.images:
        k = order.index(img.image_term)
        j = seen[img.image_term]
        seen[img.image_term] = j + 1
        xs.append(k * (width + 1) + j % width)
        ys.append(j // width)
        # without a probability, the single answer: +1 for T1, −1 for T2, 0 for neither
        colour.append(img.p_t1 - img.p_t2 if img.p_t1 is not None else {"T1": 1.0, "T2": -1.0}.get(img.verdict, 0.0))
        facts = image_facts(result, img, lab)
        fields = [f for f, _ in facts]
        custom.append([*(hover_safe(v) for _, v in facts), img.image_id, thumbnails.get(img.image_id, "")])
    if not fields:
        fields = [f for f in GRID_HOVER_FIELDS]
    template = "<br>".join(f"<b>{hover_safe(f)}</b>: %{{customdata[{i}]}}" for i, f in enumerate(fields))
    n_rows = max((y for y in ys), default=0) + 1
    t1w, t2w = _wrapped(lab.target1, 18), _wrapped(lab.target2, 18)
    fig = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            marker={
                "symbol": "square",
                "size": 22,
                "color": colour,
                "colorscale": "RdBu_r",
                "cmin": -1.0,
                "cmax": 1.0,
                "colorbar": {"title": {"text": "leans to"}, "tickvals": [1.0, 0.0, -1.0],
                             "ticktext": [t1w, "neither", t2w]},
                "line": {"width": 1, "color": "#334155"},
            },
            customdata=custom,
            hovertemplate=template + "<extra></extra>",
        )
    )
    ticks = [k * (width + 1) + (width - 1) / 2 for k in range(len(order))]
    title = _wrapped(f"Every image: red leans to {lab.target1}, blue to {lab.target2}", GRID_TITLE_CHARS)
    fig.update_layout(
        title=title,
        font_family=FONT,
        height=max(300, 160 + 34 * n_rows),
        margin={"l": 10, "r": 10, "t": 100, "b": 60},
        hoverlabel={"align": "left"},
        hovermode="closest",
        plot_bgcolor="white",
        meta={"t1": lab.target1, "t2": lab.target2, "fields": fields},
    )
    fig.update_xaxes(tickvals=ticks, ticktext=[hover_safe(t) for t in order], showgrid=False, zeroline=False,
                     range=[-1, max(1, len(order) * (width + 1) - 1)], title="image term")
    fig.update_yaxes(autorange="reversed", showticklabels=False, showgrid=False, zeroline=False,
                     range=[n_rows, -1])
    return fig
