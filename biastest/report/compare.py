"""Model comparisons for people: a forest plot, the pairwise table, a plain-language reading, and the downloads.

Everything here reads a :class:`~biastest.stats.compare.Comparison` (models compared on the same items) and
returns plotly figures, pandas frames, Markdown or files; it never computes a statistic itself. Text from data
(model names, labels) is escaped for the place it goes: HTML-escaped in hover labels (:func:`hover_safe`),
Markdown-escaped in readings (:func:`md_escape`); the CSV cells are neutralised against spreadsheet formulas by
:func:`biastest.report.export.write_csv`.

The reading of a pair says which model leans further, by how much, with the interval and the test, and whether
that is evidence of a difference (:func:`pair_verdict`): **a difference** when the (Holm-adjusted, for three or
more models) p-value is below ``1 − confidence`` and the interval excludes 0; **no evidence of a difference** when
neither holds; **unclear** when the test and the interval disagree (which happens near the boundary: they are
different procedures); with three models or more, a pair whose unadjusted interval and p-value would say
"difference" but whose adjusted p-value does not is "no evidence once the comparisons are taken into account".
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.report.export import created_date, download_name, private_dir, write_csv, write_json
from biastest.report.figures import FONT, hover_safe
from biastest.report.text import md_escape
from biastest.stats.compare import (
    KIND_STEREOTYPE,
    KIND_TWOAFC,
    KIND_VLM_HARD,
    KIND_VLM_SOFT,
    KIND_WEAT,
    TEST_BOOTSTRAP,
    TEST_CLUSTER_SIGN_PAIRED,
    TEST_MCNEMAR,
    TEST_SIGN_PAIRED,
    Comparison,
    PairedComparison,
)

__all__ = [
    "PAIR_COLUMNS",
    "VERDICT_DIFFERENCE",
    "VERDICT_NONE",
    "VERDICT_NOTHING",
    "VERDICT_NOT_AFTER_ADJUSTMENT",
    "VERDICT_UNCLEAR",
    "comparison_exports",
    "forest_figure",
    "forest_rows_figure",
    "level",
    "pair_reading",
    "pair_verdict",
    "pairwise_frame",
    "reading_markdown",
    "summary_markdown",
]

VERDICT_DIFFERENCE = "a difference"
VERDICT_NONE = "no evidence of a difference"
VERDICT_UNCLEAR = "unclear (the test and the interval disagree)"
VERDICT_NOTHING = "no difference to test"
VERDICT_NOT_AFTER_ADJUSTMENT = "no evidence of a difference once the {m} comparisons are taken into account"

#: How each kind of comparison says "A leans further than B" (A and B are filled in, escaped, by the caller).
LEANS = {
    KIND_STEREOTYPE: "{a} prefers the stereotyped sentence more often than {b}",
    KIND_VLM_SOFT: "{a} gives the stereotypical answer more probability than {b}",
    KIND_VLM_HARD: "{a}'s answers follow the stereotype more often than {b}'s",
    KIND_WEAT: "{a} has a larger WEAT effect size than {b}",
    KIND_TWOAFC: "{a}'s target words sit further from no preference (PSE 0.5) than {b}'s",
}
LEANS_SIGNED_2AFC = "{a}'s target words lean further towards the first cue than {b}'s"
SAME = {
    KIND_STEREOTYPE: "{a} and {b} gave the same verdict on every one of the {n} pairs: there is no difference to test.",
    KIND_VLM_HARD: "{a} and {b} gave the same verdict on every one of the {n} images: there is no difference to test.",
}
SAME_DEFAULT = "{a} and {b} give the same value on every one of the {n} items: there is no difference to test."
TEST_NAMES = {
    TEST_MCNEMAR: "McNemar p",
    TEST_SIGN_PAIRED: "sign test p",
    TEST_CLUSTER_SIGN_PAIRED: "cluster sign test p",
    TEST_BOOTSTRAP: "bootstrap p",
}
MSG_READING = "{leans} by {amount} ({interval}); {test} — {verdict}."
MSG_NO_INTERVAL = "no interval: too few clusters"
MSG_HOLM_NOTE = (
    "With {k} models there are {m} comparisons, so the p-values are Holm-adjusted (a p-value below {alpha} after "
    "adjustment is a difference); the raw ones are in the table."
)
MSG_SUMMARY = (
    "**{n_models} models compared on the same {n_items} {items}**{clusters}. Measure: {measure}. Intervals: "
    "{interval} ({resamples:,} resamples, seed {seed}). Test: {test}."
)
MSG_LEFT_OUT = "{label}: {excluded} not scored, {unmatched} not tested by every model — left out."
MSG_OWN_INTERVALS = (
    "Each model's interval is its own result's, exactly as its main result shows it ({labels}); the interval "
    "method named above is that of the differences."
)
ITEM_WORDS = {KIND_STEREOTYPE: "sentence pairs", KIND_VLM_SOFT: "images", KIND_VLM_HARD: "images",
              KIND_WEAT: "target words", KIND_TWOAFC: "target words",
              "twoafc-chat-p-cue1": "targets"}  # biastest.measures.chat_twoafc.compare.KIND_TWOAFC_CHAT

#: Columns of :func:`pairwise_frame` (the interval column's name depends on the level).
PAIR_COLUMNS = ("Model A", "Model B", "A", "B", "A − B", "interval", "discordant", "p", "p (Holm)", "reading")


def level(confidence: float) -> str:
    """``0.95`` → ``"95 %"``."""
    return f"{100 * confidence:g} %"


def _num(value: float | None, unit: str, *, signed: bool = False) -> str:
    if value is None:
        return "—"
    digits = 1 if unit == "%" else 3
    value = round(float(value), digits) + 0.0  # no "-0.0"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _amount(value: float, unit: str) -> str:
    if unit == "%":
        return f"{abs(value):.1f} points"
    if unit == "d":
        return f"{abs(value):.2f} (Cohen's d units)"
    return f"{abs(value):.3f} (in PSE units)"


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3g}"


def _p_is(p: float | None) -> str:
    """``= 0.0123`` or ``< 0.001``, to follow "p"."""
    text = _p(p)
    return text if text.startswith("<") else f"= {text}"


def _interval_text(low: float | None, high: float | None, unit: str, confidence: float) -> str:
    if low is None or high is None:
        return MSG_NO_INTERVAL
    return f"{level(confidence)} interval {_num(low, unit, signed=True)} to {_num(high, unit, signed=True)}"


def _p_used(cmp: Comparison, p: PairedComparison) -> float | None:
    return p.p_adjusted if len(cmp.models) > 2 else p.p_value


def pair_verdict(cmp: Comparison, p: PairedComparison) -> str:
    """What a pair's numbers say, in words.

    :data:`VERDICT_DIFFERENCE` when the p-value (Holm-adjusted with three models or more) is below
    ``1 − confidence`` and the interval excludes 0 (or there is no interval); :data:`VERDICT_NONE` when neither
    holds; :data:`VERDICT_UNCLEAR` when the test and the interval disagree. With three models or more the
    intervals are not adjusted, so a pair whose interval excludes 0 but whose adjusted p-value does not reach the
    level is :data:`VERDICT_NOT_AFTER_ADJUSTMENT`. :data:`VERDICT_NOTHING` when there is nothing to test.
    """
    used = _p_used(cmp, p)
    if used is None:
        return VERDICT_NOTHING
    alpha = 1.0 - cmp.confidence
    significant = used < alpha
    if p.ci_low is None or p.ci_high is None:
        return VERDICT_DIFFERENCE if significant else VERDICT_NONE
    excludes = p.ci_low > 0 or p.ci_high < 0
    if significant:
        return VERDICT_DIFFERENCE if excludes else VERDICT_UNCLEAR
    if not excludes:
        return VERDICT_NONE
    if len(cmp.models) > 2 and p.p_value is not None and p.p_value < alpha:
        return VERDICT_NOT_AFTER_ADJUSTMENT.format(m=len(cmp.pairs))
    return VERDICT_UNCLEAR


def _leans(cmp: Comparison) -> str:
    if cmp.kind == KIND_TWOAFC and cmp.statistic == "mean-deviation":
        return LEANS_SIGNED_2AFC
    return LEANS.get(cmp.kind, "{a} scores higher than {b}")


def pair_reading(cmp: Comparison, p: PairedComparison, *, escape=md_escape, bold: bool = True) -> str:
    """One sentence on one pair, the model that leans further named first (``escape`` applied to the labels).

    Example: "**gpt2** prefers the stereotyped sentence more often than **distilgpt2** by 6.2 points (95 % interval
    +1.1 to +11.0); McNemar p = 0.018 — a difference."
    """
    if p.difference < 0:
        p = p.flipped()
    a, b = escape(p.a), escape(p.b)
    if bold:
        a, b = f"**{a}**", f"**{b}**"
    if _p_used(cmp, p) is None and p.difference == 0:
        return SAME.get(cmp.kind, SAME_DEFAULT).format(a=a, b=b, n=p.n_items)
    test = TEST_NAMES.get(p.test, "p")
    if len(cmp.models) > 2:
        test = f"{test} {_p_is(p.p_value)}, Holm-adjusted {_p(p.p_adjusted)}"
    else:
        test = f"{test} {_p_is(p.p_value)}"
    return MSG_READING.format(
        leans=_leans(cmp).format(a=a, b=b),
        amount=_amount(p.difference, cmp.unit),
        interval=_interval_text(p.ci_low, p.ci_high, cmp.unit, cmp.confidence),
        test=test,
        verdict=pair_verdict(cmp, p),
    )


def summary_markdown(cmp: Comparison) -> str:
    """What was compared, on how many items, with which interval and test, and what was left out (Markdown)."""
    clusters = ""
    if cmp.n_clusters is not None:
        clusters = f" in {cmp.n_clusters} clusters ({md_escape(cmp.cluster_by or 'clusters')})"
    lines = [MSG_SUMMARY.format(
        n_models=len(cmp.models), n_items=cmp.n_items, items=ITEM_WORDS.get(cmp.kind, "items"), clusters=clusters,
        measure=md_escape(cmp.measure), interval=md_escape(cmp.interval_method), resamples=cmp.n_resamples,
        seed=cmp.seed, test=md_escape(cmp.test),
    )]
    for m in cmp.models:
        if m.n_excluded or m.n_unmatched:
            lines.append("- " + md_escape(MSG_LEFT_OUT.format(label=m.label, excluded=m.n_excluded,
                                                              unmatched=m.n_unmatched)))
    own = [m.label for m in cmp.models if getattr(m, "interval_from_result", False)]
    if own:
        lines.append("- " + md_escape(MSG_OWN_INTERVALS.format(labels=", ".join(own))))
    lines += [f"- {md_escape(note)}" for note in cmp.notes]
    return "\n".join(lines)


def reading_markdown(cmp: Comparison) -> str:
    """The plain-language reading: one line per pair, most different first, and the multiple-comparison note."""
    ordered = sorted(cmp.pairs, key=lambda p: (-abs(p.difference), p.a, p.b))
    lines = [f"- {pair_reading(cmp, p)}" for p in ordered]
    if len(cmp.models) > 2:
        lines.append("")
        lines.append(md_escape(MSG_HOLM_NOTE.format(k=len(cmp.models), m=len(cmp.pairs),
                                                    alpha=f"{1 - cmp.confidence:g}")))
    return "\n".join(lines)


def _value_label(cmp: Comparison) -> str:
    if cmp.kind == KIND_STEREOTYPE:
        return "stereotype score (%)"
    if cmp.kind == KIND_VLM_SOFT:
        return "soft bias score (%)"
    if cmp.kind == KIND_VLM_HARD:
        return "hard bias score (%)"
    if cmp.kind == KIND_WEAT:
        return "WEAT effect size d"
    if cmp.kind == KIND_TWOAFC:
        return "mean |PSE − 0.5|" if cmp.statistic != "mean-deviation" else "mean (PSE − 0.5)"
    if cmp.kind == "twoafc-chat-p-cue1":
        return "P(cue 1), mean over targets"
    return "estimate"


def forest_rows_figure(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    value_label: str,
    reference: float | None,
    interval_label: str,
    digits: int = 1,
) -> go.Figure:
    """A forest plot: one row per model, sorted by estimate (largest on top), point and interval, rich hover.

    Parameters
    ----------
    rows : sequence of mappings
        ``label``, ``estimate``, optional ``ci_low``/``ci_high`` (None: no interval drawn, the hover says why
        with ``no_interval``), and ``hover``: a mapping of more hover lines (name → value; escaped).
    title, value_label, interval_label : str
    reference : float, optional
        The no-bias value (a dashed line).
    digits : int
        Decimals shown in the hover.
    """
    rows = sorted((r for r in rows if r.get("estimate") is not None), key=lambda r: -float(r["estimate"]))
    labels = [hover_safe(r["label"], width=60) for r in rows]
    est = [float(r["estimate"]) for r in rows]
    plus = [(r["ci_high"] - r["estimate"]) if r.get("ci_high") is not None else 0 for r in rows]
    minus = [(r["estimate"] - r["ci_low"]) if r.get("ci_low") is not None else 0 for r in rows]
    custom = []
    for r in rows:
        interval = (f"{r['ci_low']:.{digits}f} – {r['ci_high']:.{digits}f}"
                    if r.get("ci_low") is not None and r.get("ci_high") is not None
                    else r.get("no_interval") or MSG_NO_INTERVAL)
        extra = "".join(f"<br>{hover_safe(k)}: {hover_safe(v)}" for k, v in (r.get("hover") or {}).items())
        custom.append([f"{float(r['estimate']):.{digits}f}", hover_safe(interval), extra])
    fig = go.Figure(
        go.Scatter(
            x=est,
            y=labels,
            mode="markers",
            marker={"size": 11, "color": "#4f46e5", "symbol": "diamond"},
            error_x={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 2,
                     "width": 6, "color": "#4f46e5"},
            customdata=custom,
            hovertemplate=("<b>%{y}</b><br>" + html.escape(value_label) + ": %{customdata[0]}<br>"
                           + html.escape(interval_label) + ": %{customdata[1]}%{customdata[2]}<extra></extra>"),
        )
    )
    if reference is not None:
        fig.add_vline(x=reference, line_dash="dash", line_color="#64748b", annotation_text="no bias",
                      annotation_position="top")
    fig.update_layout(
        title=html.escape(title),
        xaxis_title=html.escape(value_label),
        font_family=FONT,
        height=max(240, 90 + 36 * len(rows)),
        margin={"l": 10, "r": 20, "t": 60, "b": 40},
        yaxis={"autorange": "reversed"},
        hovermode="y",
        hoverlabel={"align": "left"},
        showlegend=False,
    )
    return fig


def forest_figure(cmp: Comparison, *, title: str | None = None) -> go.Figure:
    """The forest plot of a comparison: each model's estimate on the compared items with its interval — its own
    result's where the comparison has the same number (``interval_from_result``), else the paired resampling."""
    digits = 1 if cmp.unit == "%" else 3
    rows = []
    for m in cmp.models:
        hover = {"compared items": cmp.n_items}
        if cmp.n_clusters is not None:
            hover["clusters"] = cmp.n_clusters
        hover["model"] = m.model_id + (f" · {m.method}" if m.method else "")
        if m.own_estimate is not None and m.own_estimate != m.estimate:
            hover["own score on all its items"] = f"{m.own_estimate:.{digits}f}"
        if m.n_ties:
            hover["ties (count as not stereotyped)"] = m.n_ties
        if m.n_excluded or m.n_unmatched:
            hover["left out"] = f"{m.n_excluded} not scored, {m.n_unmatched} not tested by every model"
        own = getattr(m, "interval_from_result", False)
        hover["interval"] = ("the model's own result's, as its main result shows it" if own
                             else "paired resampling of the compared items")
        rows.append({"label": m.label, "estimate": m.estimate, "ci_low": m.ci_low, "ci_high": m.ci_high,
                     "hover": hover})
    return forest_rows_figure(
        rows,
        title=title or f"{len(cmp.models)} models on the same {cmp.n_items} {ITEM_WORDS.get(cmp.kind, 'items')}",
        value_label=_value_label(cmp),
        reference=cmp.reference,
        interval_label=f"{level(cmp.confidence)} interval",
        digits=digits,
    )


def pairwise_frame(cmp: Comparison) -> pd.DataFrame:
    """One row per pair of models: estimates, difference, interval, discordant items, p and Holm p, the verdict.

    Text is left as-is (a ``gr.Dataframe`` shows it as text); labels are the comparison's.
    """
    rows = []
    for p in sorted(cmp.pairs, key=lambda q: (-abs(q.difference), q.a, q.b)):
        if p.difference < 0:
            p = p.flipped()
        if p.discordant is None:
            disc = "—"
        elif "a_only" in p.discordant:
            disc = f"{p.discordant['a_only']} / {p.discordant['b_only']}"
        else:
            disc = f"{p.discordant['a_higher']} / {p.discordant['b_higher']}"
        interval = ("—" if p.ci_low is None or p.ci_high is None
                    else f"{_num(p.ci_low, cmp.unit, signed=True)} to {_num(p.ci_high, cmp.unit, signed=True)}")
        rows.append({
            "Model A": p.a,
            "Model B": p.b,
            "A": _num(p.estimate_a, cmp.unit),
            "B": _num(p.estimate_b, cmp.unit),
            "A − B": _num(p.difference, cmp.unit, signed=True),
            "interval": interval,
            "discordant": disc,
            "p": _p(p.p_value),
            "p (Holm)": _p(p.p_adjusted),
            "reading": pair_verdict(cmp, p),
        })
    frame = pd.DataFrame(rows, columns=list(PAIR_COLUMNS))
    names = {"interval": f"{level(cmp.confidence)} interval of A − B",
             "discordant": "A only / B only" if cmp.kind in (KIND_STEREOTYPE, KIND_VLM_HARD) else "A higher / B higher",
             "A − B": "A − B (points)" if cmp.unit == "%" else "A − B"}
    return frame.rename(columns=names)


def comparison_exports(
    cmp: Comparison,
    *,
    item_rows: Sequence[Mapping[str, Any]],
    results: Sequence[Mapping[str, Any]],
    directory: Path | None = None,
    app: str = "compare",
) -> tuple[Path, Path, Path]:
    """Write the downloads of a comparison: every model's items (CSV), everything (JSON), the comparison (CSV).

    Parameters
    ----------
    cmp : Comparison
    item_rows : sequence of mappings
        Every model's per-item rows, each with a ``model`` column naming its label.
    results : sequence of mappings
        Every model's full result (``to_dict()``), in the comparison's order.
    directory : Path, optional
        Default: a fresh private folder.
    app : str
        The app (``gpt``, ``vqa``, ``psychophysics``): the files are named as every download
        (:func:`~biastest.report.export.download_name`), ``biastest-<app>-compare-<model>-vs-<model>…-<date>``
        (the models' names keep their last 60 characters) with ``-items``/``-comparison`` after the date for the
        two CSVs; the date is the first result's.

    Returns
    -------
    items_csv, json, comparison_csv : Path
        The comparison CSV holds one row per model (``row: model``) and one per pair (``row: pair``).
    """
    directory = directory or private_dir()
    models, app = "-vs-".join(m.label for m in cmp.models), f"{app}-compare"
    when = created_date(results[0]) if results else None
    items_csv = write_csv(item_rows, directory / download_name(app, models, when=when, part="items"))
    document = {"comparison": cmp.to_dict(), "results": [dict(r) for r in results]}
    json_path = write_json(document, directory / download_name(app, models, when=when, ext="json"))
    rows = [{"row": "model", **r} for r in cmp.estimate_records()] + [{"row": "pair", **r}
                                                                       for r in cmp.pair_records()]
    cmp_csv = write_csv(rows, directory / download_name(app, models, when=when, part="comparison"))
    return items_csv, json_path, cmp_csv
