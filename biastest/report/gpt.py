"""Report layer of the language-model test: tables, figures, text and exports.

Turns a :class:`~biastest.metrics.stereotype_score.StereotypeResult` into
what the app shows (plotly figures with per-pair hover, a plain-language
reading) and the files it offers (CSV of every pair with provenance columns,
JSON of the whole result). Also converts between the editable pairs table
and :class:`~biastest.records.SentencePair` records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.errors import DataError
from biastest.metrics.stereotype_score import StereotypeResult
from biastest.records import SentencePair
from biastest.report.export import private_dir, write_csv, write_json
from biastest.report.figures import item_grid, score_bars
from biastest.report.text import md_escape

__all__ = [
    "PAIR_COLUMNS",
    "MAX_PAIRS",
    "MSG_MACRO_SINGLE_PAIR_TERMS",
    "TERM_INTERVAL_LABEL",
    "attribute_figure",
    "export_files",
    "group_figure",
    "interpretation",
    "pair_grid",
    "pairs_from_table",
    "pairs_to_table",
    "summary_markdown",
]

#: Columns of the editable pairs table, in order.
PAIR_COLUMNS = [
    "keep",
    "attribute_term",
    "group_term_stereotyped",
    "stereotyped",
    "group_term_anti",
    "anti_stereotyped",
    "category",
    "source",
    "template",
]

#: Most pairs one test may score from the app (the CLI has no such limit).
MAX_PAIRS = 5000
TERM_INTERVAL_LABEL = "95% exact (Clopper-Pearson) interval"
MSG_MACRO_SINGLE_PAIR_TERMS = (
    "{count} of these {total} terms have a single pair, whose verdict resampling cannot vary, so this interval "
    "understates the uncertainty; see the per-term exact intervals."
)

MSG_TABLE_EMPTY = "The table of test sentences is empty. Find, import or generate sentence pairs first."
MSG_NOTHING_KEPT = "Every row is unticked in the 'keep' column, so there is nothing to test."
MSG_ROW_EMPTY_SENTENCE = "Row {row}: both sentences are needed (one is empty). Fill it in or untick 'keep'."
MSG_ROW_SAME_SENTENCE = (
    "Row {row}: the two sentences are identical, so they cannot show a preference. Edit or untick it."
)
MSG_ROW_GROUP_MISSING = (
    "Row {row}: the sentence '{sentence}' does not contain its group term '{term}'. Fix the sentence or the term."
)
MSG_TOO_MANY_PAIRS = (
    "The table has {n} pairs; the app tests at most {limit} at a time. Untick some rows or use the command line."
)
MSG_MISSING_COLUMNS = "The table is missing the columns {columns}; start a new bias test to reset it."


def pairs_to_table(pairs: Sequence[SentencePair]) -> pd.DataFrame:
    """The editable table for a list of pairs (all kept)."""
    rows = [
        {
            "keep": True,
            "attribute_term": p.attribute_term,
            "group_term_stereotyped": p.group_term_stereotyped,
            "stereotyped": p.stereotyped,
            "group_term_anti": p.group_term_anti,
            "anti_stereotyped": p.anti_stereotyped,
            "category": p.category,
            "source": p.source,
            "template": p.template,
        }
        for p in pairs
    ]
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    return str(value).strip()


def _kept(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "")
    if value is None or (isinstance(value, float) and value != value):
        return True
    return bool(value)


def pairs_from_table(table: pd.DataFrame | None, *, spec_name: str = "") -> list[SentencePair]:
    """Validate the edited table and turn the kept rows into pairs.

    Raises
    ------
    DataError
        With the row number (1-based, as shown) and what to fix.
    """
    from biastest.spec import contains_term

    if table is None or len(table) == 0:
        raise DataError(MSG_TABLE_EMPTY)
    missing = [c for c in ("stereotyped", "anti_stereotyped") if c not in table.columns]
    if missing:
        raise DataError(MSG_MISSING_COLUMNS.format(columns=", ".join(missing)))
    pairs: list[SentencePair] = []
    for i, row in enumerate(table.to_dict("records"), start=1):
        if not _kept(row.get("keep", True)):
            continue
        s, a = _text(row.get("stereotyped")), _text(row.get("anti_stereotyped"))
        if not s or not a:
            raise DataError(MSG_ROW_EMPTY_SENTENCE.format(row=i))
        if s == a:
            raise DataError(MSG_ROW_SAME_SENTENCE.format(row=i))
        gs, ga = _text(row.get("group_term_stereotyped")), _text(row.get("group_term_anti"))
        for sentence, term in ((s, gs), (a, ga)):
            if term and not contains_term(sentence, term):
                raise DataError(MSG_ROW_GROUP_MISSING.format(row=i, sentence=sentence, term=term))
        pairs.append(
            SentencePair(
                stereotyped=s,
                anti_stereotyped=a,
                attribute_term=_text(row.get("attribute_term")),
                group_term_stereotyped=gs,
                group_term_anti=ga,
                template=_text(row.get("template")),
                category=_text(row.get("category")),
                source=_text(row.get("source")) or "user",
                spec_name=spec_name,
            )
        )
    if not pairs:
        raise DataError(MSG_NOTHING_KEPT)
    if len(pairs) > MAX_PAIRS:
        raise DataError(MSG_TOO_MANY_PAIRS.format(n=len(pairs), limit=MAX_PAIRS))
    return pairs


def _fmt(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def summary_markdown(result: StereotypeResult) -> str:
    """The headline numbers, each named, as Markdown (user text escaped)."""
    o = result.overall
    ma = result.macro_attribute
    lines = [
        f"### Stereotype score: **{_fmt(o.score)} %** (95 % interval {_fmt(o.ci_low)}–{_fmt(o.ci_high)} %)",
        "",
        f"- Model **{md_escape(result.model_id)}** ({result.model_kind}), method **{result.method}**, "
        f"seed {result.seed}.",
        f"- Micro average (over all {o.n} scored pairs): {o.n_stereotyped} stereotyped, {o.n_anti} anti-stereotyped, "
        f"{o.n_ties} ties; exact sign test against 50 %: p = {_p(o.p_value)}; exact (Clopper–Pearson) 95 % "
        f"interval {_fmt(o.exact_ci_low)}–{_fmt(o.exact_ci_high)} %.",
        f"- Macro average over attribute terms (mean of {ma.n_groups} per-term scores): {_fmt(ma.score)} % "
        f"({_fmt(ma.ci_low)}–{_fmt(ma.ci_high)} %).",
    ]
    single = sum(1 for t in result.per_attribute if t.summary.n == 1)
    if single:
        lines[-1] += " " + MSG_MACRO_SINGLE_PAIR_TERMS.format(count=single, total=ma.n_groups)
    if result.n_excluded:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(result.excluded_reasons.items()))
        lines.append(
            f"- **{result.n_excluded} of {result.n_pairs} pairs could not be scored** and are excluded ({reasons}); "
            "they are listed in the downloads with their reasons."
        )
    return "\n".join(lines)


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def interpretation(result: StereotypeResult) -> str:
    """A short plain-language reading of the overall score."""
    o = result.overall
    if o.n == 0:
        return "No pair could be scored, so there is nothing to interpret."
    if o.ci_low <= 50 <= o.ci_high:
        return (
            f"The model preferred the stereotyped sentence in {_fmt(o.score)} % of the pairs, but the 95 % interval "
            f"({_fmt(o.ci_low)}–{_fmt(o.ci_high)} %) includes 50 %: with these {o.n} pairs we cannot tell this "
            "model's preference apart from no preference. More pairs would narrow the interval."
        )
    if o.p_value is None or o.p_value >= 1 - o.confidence:
        # The bootstrap excludes 50 % but the exact test does not: too few pairs for the bootstrap to be trusted.
        return (
            f"The model preferred the stereotyped sentence in {_fmt(o.score)} % of the {o.n} pairs. The bootstrap "
            f"interval ({_fmt(o.ci_low)}–{_fmt(o.ci_high)} %) excludes 50 %, but with so few pairs it cannot be "
            f"trusted: the exact sign test against 50 % gives p = {_p(o.p_value)} and the exact interval is "
            f"{_fmt(o.exact_ci_low)}–{_fmt(o.exact_ci_high)} %, so we cannot tell this model's preference apart "
            "from no preference. More pairs would settle it."
        )
    strength = "strong" if abs(o.score - 50) >= 15 else "moderate" if abs(o.score - 50) >= 5 else "slight"
    side = "stereotypes" if o.score > 50 else "anti-stereotypes"
    return (
        f"The model preferred the stereotyped sentence in {_fmt(o.score)} % of the pairs (50 % would be no "
        f"preference). The 95 % interval ({_fmt(o.ci_low)}–{_fmt(o.ci_high)} %) excludes 50 %, so this is "
        f"evidence of a {strength} preference for {side} on these sentences. It describes these test sentences "
        "and this model only; check the per-attribute bars for where it comes from."
    )


def _term_rows(terms) -> list[dict[str, Any]]:
    """Per-term rows with the exact interval: a term has few pairs, where a bootstrap interval is too narrow."""
    return [
        {
            "label": t.term or "(none)",
            "score": t.summary.score if t.summary.n else None,
            "ci_low": t.summary.exact_ci_low if t.summary.n else None,
            "ci_high": t.summary.exact_ci_high if t.summary.n else None,
            "n": t.summary.n,
            "p_value": t.summary.p_value,
        }
        for t in terms
    ]


def attribute_figure(result: StereotypeResult) -> go.Figure:
    """Per-attribute-term stereotype scores with exact (Clopper–Pearson) intervals."""
    return score_bars(_term_rows(result.per_attribute), title="Stereotype score per attribute term",
                      interval_label=TERM_INTERVAL_LABEL)


def group_figure(result: StereotypeResult) -> go.Figure:
    """Per-group-term stereotype scores with exact (Clopper–Pearson) intervals."""
    return score_bars(_term_rows(result.per_group), title="Stereotype score per group term (stereotyped sentence)",
                      interval_label=TERM_INTERVAL_LABEL)


def pair_grid(result: StereotypeResult) -> go.Figure:
    """One square per pair: column = attribute term, colour = log-probability difference."""
    counters: dict[str, int] = {}
    xs, ys, colors, hovers = [], [], [], []
    for p in result.pairs:
        key = p.attribute_term or "(none)"
        counters[key] = counters.get(key, 0) + 1
        xs.append(key)
        ys.append(f"#{counters[key]}")
        colors.append(p.difference)
        verdict = p.verdict or f"not scored: {p.excluded_reason}"
        preferred = (
            "stereotyped"
            if p.verdict == "stereotyped"
            else "anti-stereotyped"
            if p.verdict == "anti-stereotyped"
            else "neither (tie)"
            if p.verdict == "tie"
            else "—"
        )
        hovers.append(
            {
                "Pair": p.index + 1,
                "Stereotyped": p.stereotyped,
                "Anti-stereotyped": p.anti_stereotyped,
                "Model preferred": preferred,
                "Δ log-prob (stereo − anti)": "—" if p.difference is None else f"{p.difference:+.4f}",
                "Verdict": verdict,
            }
        )
    return item_grid(
        x=xs,
        y=ys,
        color=colors,
        hover=hovers,
        title="Every sentence pair (red: stereotyped sentence preferred, blue: anti-stereotyped)",
        x_title="attribute term",
        y_title="pair",
        color_title="Δ log-prob",
    )


def export_files(result: StereotypeResult, *, directory: Path | None = None) -> tuple[Path, Path]:
    """Write the per-pair CSV and the full JSON to a private directory."""
    directory = directory or private_dir()
    safe_model = "".join(c if c.isalnum() else "-" for c in result.model_id)[-40:] or "model"
    csv_path = write_csv(result.pairs_records(), directory / f"biastest-lm-{safe_model}-pairs.csv")
    json_path = write_json(result.to_dict(), directory / f"biastest-lm-{safe_model}-result.json")
    return csv_path, json_path
