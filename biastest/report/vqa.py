"""Report layer of the vision-language test: typed results → text, tables, figures and files.

Everything here takes a :class:`~biastest.metrics.vlm_score.VLMResult` (or
plain counts) and returns Markdown, a DataFrame, a plotly figure or file
paths; nothing imports gradio. User text (terms, paths, answers) reaching
Markdown or a hover label is HTML-escaped.

* :func:`summary_markdown` — the overall score with its interval and test, in words;
* :func:`term_rows` / :func:`term_bars` — per image term and per target term
  scores with intervals (:func:`~biastest.report.figures.score_bars`);
* :func:`image_grid` — one square per image, coloured by ``P(T1) − P(T2)``,
  whose hover label gives the image term, both probabilities and the verdict;
  each point also carries a small thumbnail (a ``data:`` URI) in its last
  ``customdata`` column, which the app shows beside the plot for the hovered
  image (plotly hover labels cannot show images);
* :func:`image_table` — the per-image table (ids and paths, never pixels);
* :func:`write_exports` — CSV (one row per image) and JSON (the whole result
  with provenance) in a fresh per-request folder;
* :func:`coverage_rows` / :func:`coverage_markdown` — how many images each
  image term has, with a hint where they are few.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.metrics.vlm_score import VLMResult
from biastest.report.export import private_dir, write_csv, write_json
from biastest.report.figures import FONT, hover_safe, score_bars

__all__ = [
    "GRID_HOVER_FIELDS",
    "MSG_LEAN_UNCONFIRMED",
    "THIN_IMAGES",
    "coverage_markdown",
    "coverage_rows",
    "csv_columns",
    "image_grid",
    "image_table",
    "summary_markdown",
    "target_names",
    "term_bars",
    "term_rows",
    "thumbnail_uri",
    "write_exports",
]

THIN_IMAGES = 5
MSG_LEAN_UNCONFIRMED = (
    "The sign test does not confirm this lean (p = {p}, {n_st} images leaning to the stereotype and {n_anti} "
    "away from it): with these {n} images we cannot tell it apart from no preference."
)
"""Fewer images than this for an image term earns a hint (its interval will be wide)."""

GRID_HOVER_FIELDS = ("image", "image term", "P(T1)", "P(T2)", "verdict", "answer")
"""Lines of the grid's hover label, in order ("image" is the image id; T1/T2 are written as the target names)."""

MSG_VERDICT = {
    "T1": "{t1}",
    "T2": "{t2}",
    "neither": "neither (the answer names no target term)",
    "tie": "tie (equal probabilities)",
}


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _pct(value: float | None) -> str:
    return "—" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.1f}%"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def _list_names(result: VLMResult, key: str, default: str) -> tuple[str, str]:
    lists = result.spec.get(key) if isinstance(result.spec, Mapping) else None
    names = [str(k) for k in list(lists)[:2]] if isinstance(lists, Mapping) else []
    while len(names) < 2:
        names.append(f"{default}{len(names) + 1}")
    return names[0], names[1]


def target_names(result: VLMResult) -> tuple[str, str]:
    """Names of the target concept groups T1 and T2: the term itself for a one-term list, else the list's name."""
    names = _list_names(result, "attributes", "T")
    lists = result.spec.get("attributes") if isinstance(result.spec, Mapping) else None
    if not isinstance(lists, Mapping):
        return names
    out = []
    for name, terms in zip(names, list(lists.values())[:2], strict=False):
        out.append(str(terms[0]) if isinstance(terms, (list, tuple)) and len(terms) == 1 else name)
    return (out + list(names[len(out):]))[0], (out + list(names[len(out):]))[1]


def group_names(result: VLMResult) -> tuple[str, str]:
    """Names of the two groups of image terms as the spec calls them."""
    return _list_names(result, "social_groups", "group ")


def _verdict_text(verdict: str, t1: str, t2: str) -> str:
    return MSG_VERDICT.get(verdict, verdict).format(t1=t1, t2=t2)


# --------------------------------------------------------------------------- summary
def summary_markdown(result: VLMResult) -> str:
    """A plain-language reading of the overall result (Markdown, user text escaped)."""
    t1, t2 = (_esc(n) for n in target_names(result))
    g1, g2 = (_esc(n) for n in group_names(result))
    soft, hard = result.soft, result.hard
    conf = round(100 * soft.confidence)
    how = {
        "clip": f"zero-shot probabilities over the prompts ({_esc(', '.join(result.prompt_templates))}; "
        f"several terms of a group combined by {_esc(result.combine)})",
        "vqa-classifier": f"the answer probabilities to the question “{_esc(result.question)}”",
        "generative": f"the probability of each target term as the answer to “{_esc(result.question)}”",
    }.get(result.model_kind, _esc(result.method))
    lean = "no preference"
    # A lean is only stated as such when the exact sign test agrees with the bootstrap interval: with few
    # images the bootstrap interval of the mean probability is too narrow to be trusted alone.
    confirmed = soft.p_value is not None and soft.p_value < 1 - soft.confidence
    if soft.ci_low > 50:
        lean = "the **stereotypical** direction"
    elif soft.ci_high < 50:
        lean = "the **anti-stereotypical** direction"
    lines = [
        f"### Bias score: <span class='bt-score'>**{soft.score:.1f}%**</span> "
        f"({conf}% interval {soft.ci_low:.1f}–{soft.ci_high:.1f}%)",
        f"Model `{_esc(result.model_id)}` ({_esc(result.model_kind)}, {_esc(result.architecture)}) looked at "
        f"**{result.n_images}** images. For each image it gave the probability of **{t1}** (the stereotype of "
        f"{g1}) and of **{t2}** (the stereotype of {g2}), read from {how}.",
        f"The score is the average probability of the stereotypical answer: {t1} for images of {g1}, {t2} for "
        f"images of {g2}. **50% means no preference**; above 50% the model leans towards the stereotype. "
        f"The interval leans to {lean} (bootstrap over images, seed {result.seed}); "
        f"sign test against 50%: p = {_p(soft.p_value)}."
        + (" " + MSG_LEAN_UNCONFIRMED.format(p=_p(soft.p_value), n_st=soft.n_stereotyped, n_anti=soft.n_anti,
                                             n=result.n_images) if lean != "no preference" and not confirmed else ""),
        f"With hard decisions (the model's single answer per image): **{hard.score:.1f}%** stereotyped "
        f"({hard.ci_low:.1f}–{hard.ci_high:.1f}%), {hard.n_stereotyped} stereotyped, {hard.n_anti} "
        f"anti-stereotyped, {result.n_neither} naming neither target group, {result.n_ties} ties; binomial test "
        f"p = {_p(hard.p_value)}.",
    ]
    thin = [t for t in result.per_image_term if t.n_images < THIN_IMAGES]
    if thin:
        lines.append(
            "<span class='bt-warn'>⚠ Few images for "
            + ", ".join(f"'{_esc(t.term)}' ({t.n_images})" for t in thin)
            + ": their scores rest on very little evidence and their intervals are wide.</span>"
        )
    lines.append(
        "A lean shows what the model associates with the pictures; it does not say whether that association is "
        "right or fair."
    )
    return "\n\n".join(lines)


# --------------------------------------------------------------------------- per-term bars
def _interval(summary, n: int) -> dict[str, float | None]:
    """The bootstrap interval, or none for a single image (resampling one value cannot show any uncertainty)."""
    if n < 2:
        return {"ci_low": None, "ci_high": None}
    return {"ci_low": summary.ci_low, "ci_high": summary.ci_high}


def term_rows(result: VLMResult) -> list[dict[str, Any]]:
    """Rows for :func:`~biastest.report.figures.score_bars`: overall, each image term, each target term.

    A row resting on a single image has no interval (``ci_low``/``ci_high``
    None, drawn without an error bar and shown as "—"), never a zero-width one.
    """
    t1, t2 = target_names(result)
    rows: list[dict[str, Any]] = [
        {"label": "All images", "kind": "overall", "term": "", "score": result.soft.score,
         **_interval(result.soft, result.n_images), "n": result.n_images, "p_value": result.soft.p_value}
    ]
    for t in result.per_image_term:
        rows.append({"label": f"images of '{t.term}'", "kind": "image term", "term": t.term, "score": t.soft.score,
                     **_interval(t.soft, t.n_images), "n": t.n_images, "p_value": t.soft.p_value})
    for t in result.per_target_term:
        group = t1 if t.side == 1 else t2
        rows.append({"label": f"target '{t.term}' ({group})", "kind": "target term", "term": t.term,
                     "score": t.soft.score, **_interval(t.soft, t.n_images), "n": t.n_images,
                     "p_value": t.soft.p_value})
    return rows


def term_bars(result: VLMResult) -> go.Figure:
    """Bias score with interval overall, per image term and per target term (50% = no preference)."""
    return score_bars(term_rows(result), title="Bias score per image term and per target term",
                      value_label="bias score (%)")


# --------------------------------------------------------------------------- per-image grid
def thumbnail_uri(path: str | Path, *, size: int = 96) -> str:
    """A small JPEG thumbnail of an image file as a ``data:`` URI ("" when it cannot be read)."""
    from biastest.errors import DataError
    from biastest.models.images import load_image

    try:
        img = load_image(path, max_side=max(16, size))
    except DataError:
        return ""
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def image_grid(
    result: VLMResult, *, thumbnails: Mapping[str, str] | None = None, per_row: int = 8
) -> go.Figure:
    """One square per image, grouped by image term, coloured by ``P(T1) − P(T2)``.

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
    :data:`GRID_HOVER_FIELDS` with T1/T2 written as the target group names.
    """
    t1, t2 = target_names(result)
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
    counts = {term: sum(1 for i in result.images if i.image_term == term) for term in order}
    width = max(1, min(per_row, max(counts.values(), default=1)))
    for img in result.images:
        k = order.index(img.image_term)
        j = seen[img.image_term]
        seen[img.image_term] = j + 1
        xs.append(k * (width + 1) + j % width)
        ys.append(j // width)
        colour.append(img.p_t1 - img.p_t2)
        custom.append([
            hover_safe(img.image_id),
            hover_safe(img.image_term),
            f"{img.p_t1:.3f}",
            f"{img.p_t2:.3f}",
            hover_safe(_verdict_text(img.verdict, t1, t2)),
            hover_safe(img.answer),
            img.image_id,
            thumbnails.get(img.image_id, ""),
        ])
    h1, h2 = hover_safe(t1), hover_safe(t2)
    template = (
        "<b>image</b>: %{customdata[0]}<br><b>image term</b>: %{customdata[1]}<br>"
        f"<b>P({h1})</b>: %{{customdata[2]}}<br><b>P({h2})</b>: %{{customdata[3]}}<br>"
        "<b>verdict</b>: %{customdata[4]}<br><b>answer</b>: %{customdata[5]}<extra></extra>"
    )
    n_rows = max((y for y in ys), default=0) + 1
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
                "colorbar": {"title": {"text": f"P({h1}) − P({h2})"}},
                "line": {"width": 1, "color": "#334155"},
            },
            customdata=custom,
            hovertemplate=template,
        )
    )
    ticks = [k * (width + 1) + (width - 1) / 2 for k in range(len(order))]
    fig.update_layout(
        title=f"Every image: red = {h1}, blue = {h2} (hover for details; the picture shows beside the plot)",
        font_family=FONT,
        height=max(300, 140 + 34 * n_rows),
        margin={"l": 10, "r": 10, "t": 50, "b": 60},
        hoverlabel={"align": "left"},
        hovermode="closest",
        plot_bgcolor="white",
        meta={"t1": t1, "t2": t2},
    )
    fig.update_xaxes(tickvals=ticks, ticktext=[hover_safe(t) for t in order], showgrid=False, zeroline=False,
                     range=[-1, max(1, len(order) * (width + 1) - 1)], title="image term")
    fig.update_yaxes(autorange="reversed", showticklabels=False, showgrid=False, zeroline=False,
                     range=[n_rows, -1])
    return fig


# --------------------------------------------------------------------------- tables and files
def csv_columns(result: VLMResult) -> list[str]:
    """Column order of the per-image CSV."""
    base = ["index", "image_id", "path", "sha256", "image_term", "image_group", "p_t1", "p_t2", "p_stereotyped",
            "answer", "verdict", "outcome"]
    terms: list[str] = []
    for img in result.images:
        for t in img.term_probabilities:
            if t not in terms:
                terms.append(t)
    return [*base, *(f"P({t})" for t in terms), "generator", "image_prompt", "source", "model_id",
            "model_revision", "method", "seed"]


def image_table(result: VLMResult) -> pd.DataFrame:
    """The per-image table (what the CSV holds): ids and paths, never pixels."""
    return pd.DataFrame(result.images_records(), columns=csv_columns(result))


def write_exports(result: VLMResult, *, folder: str | Path | None = None) -> tuple[Path, Path]:
    """CSV (one row per image) and JSON (the whole result, with provenance) in a fresh private folder."""
    out = Path(folder) if folder is not None else private_dir("biastest-vqa-")
    csv_path = write_csv(result.images_records(), out / "vqa_images.csv", columns=csv_columns(result))
    json_path = write_json(result.to_dict(), out / "vqa_result.json")
    return csv_path, json_path


# --------------------------------------------------------------------------- coverage
def coverage_rows(
    group1: Sequence[str],
    group2: Sequence[str],
    counts: Mapping[str, int],
    *,
    group_names: tuple[str, str] = ("group 1", "group 2"),
    store_counts: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """One row per image term: its group, images in this test and (optionally) in the shared store.

    Terms are matched case-insensitively; ``status`` is ``missing`` (0),
    ``few`` (fewer than :data:`THIN_IMAGES`) or ``ok``.
    """
    low = {str(k).casefold(): int(v) for k, v in counts.items()}
    store_low = {str(k).casefold(): int(v) for k, v in (store_counts or {}).items()}
    rows = []
    for name, terms in ((group_names[0], group1), (group_names[1], group2)):
        for term in terms:
            n = low.get(term.casefold(), 0)
            row: dict[str, Any] = {"image term": term, "group": name, "images in this test": n}
            if store_counts is not None:
                row["in the shared store"] = store_low.get(term.casefold(), 0)
            row["status"] = "missing" if n == 0 else ("few" if n < THIN_IMAGES else "ok")
            rows.append(row)
    return rows


def coverage_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """A one-paragraph reading of :func:`coverage_rows` (Markdown, escaped)."""
    if not rows:
        return ""
    total = sum(int(r["images in this test"]) for r in rows)
    missing = [r["image term"] for r in rows if r["status"] == "missing"]
    few = [r["image term"] for r in rows if r["status"] == "few"]
    parts = [f"**{total}** images for **{len(rows)}** image terms."]
    if missing:
        parts.append(
            "<span class='bt-warn'>⚠ No images yet for "
            + ", ".join(f"'{_esc(t)}'" for t in missing)
            + ": every image term needs at least one image (retrieve, generate or upload some).</span>"
        )
    if few:
        parts.append(
            "<span class='bt-warn'>Few images (fewer than "
            f"{THIN_IMAGES}) for " + ", ".join(f"'{_esc(t)}'" for t in few)
            + ": the test runs, but its intervals will be wide. Add more where you can.</span>"
        )
    if not missing and not few:
        parts.append("✅ Every image term has enough images to run the test.")
    return " ".join(parts)
