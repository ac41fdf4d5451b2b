"""Report layer of the language-model test: tables, figures, text and exports.

Turns a :class:`~biastest.measures.stereotype.result.StereotypeResult` into
what the app shows (plotly figures with per-pair hover, a plain-language
reading) and the files it offers (CSV of every pair with provenance columns,
JSON of the whole result; the CSV starts with summary rows, :func:`summary_records`, so that it is a
complete record alone). Also converts between the editable pairs table
(headed in words, :data:`PAIR_HEADERS`) and :class:`~biastest.records.SentencePair`
records, checking every row as generated pairs are checked (:func:`row_problems`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.errors import DataError
from biastest.generate.counterfactual import (
    REWRITE_REJECT_KEPT_GROUP_TERM,
    REWRITE_REJECT_MISSING_ATTRIBUTE,
    REWRITE_REJECT_NOT_MINIMAL,
    check_pair,
)
from biastest.generate.minimal import format_differences, minimal_difference
from biastest.measures.stereotype.comparability import MSG_NOT_COMPARABLE, server_split_text
from biastest.measures.stereotype.result import StereotypeResult
from biastest.measures.verdict import Claim, Standing, run_standing, size_word, verdict
from biastest.records import SentencePair
from biastest.report.export import created_date, download_name, private_dir, summary_first, write_csv, write_json
from biastest.report.figures import item_grid, score_bars
from biastest.report.text import level_label, md_escape, plural
from biastest.spec import contains_term

__all__ = [
    "PAIR_COLUMNS",
    "PAIR_HEADERS",
    "MAX_PAIRS",
    "as_display_table",
    "MSG_MACRO_SINGLE_PAIR_TERMS",
    "NOT_MINIMAL",
    "not_minimal_count",
    "TERM_INTERVAL_LABEL",
    "attribute_figure",
    "export_files",
    "group_figure",
    "interpretation",
    "level_label",
    "pair_grid",
    "pairs_from_table",
    "pairs_to_table",
    "problems_message",
    "row_problems",
    "summary_markdown",
    "summary_records",
]

#: Fields of the editable pairs table, in order (the names of the CSV download's columns).
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
#: The header the table shows for each field (words a reader knows, none longer than the column is wide).
PAIR_HEADERS = {
    "keep": "Keep",
    "attribute_term": "Attribute term",
    "group_term_stereotyped": "Group term (stereotyped)",
    "stereotyped": "Stereotyped sentence",
    "group_term_anti": "Group term (anti-stereotyped)",
    "anti_stereotyped": "Anti-stereotyped sentence",
    "category": "Category",
    "source": "Source",
    "template": "Template",
}
_FIELD_OF_HEADER = {v: k for k, v in PAIR_HEADERS.items()}

#: The app's name in download names (:func:`biastest.report.export.download_name`).
DOWNLOAD_APP = "gpt"
#: Most pairs one test may score from the app (the CLI has no such limit).
MAX_PAIRS = 5000
#: Hover name of the per-term bars' interval (``{level}`` from the result's confidence, e.g. "95%").
TERM_INTERVAL_LABEL = "{level} exact (Clopper-Pearson) interval over pairs"
MSG_NO_CLUSTERS = (
    "Clusters: none, the {n} pairs are treated as independent. If pairs share templates or attribute terms, "
    "choose those clusters: pairs of one family lean together and the interval would be wider."
)
MSG_HOLM_NONE = (
    "No single {family} stands out once the {m} {family} tests are corrected for multiple comparisons "
    "(Holm, at {alpha} %); the raw p-values are in the hover and the downloads."
)
MSG_HOLM_SOME = (
    "{family_title}s whose preference survives the correction for {m} comparisons (Holm, at {alpha} %): {terms}."
)
MSG_MACRO_SINGLE_PAIR_TERMS = (
    "Terms with a single pair, whose verdict resampling cannot vary: {count} of {total}; so this interval "
    "understates the uncertainty; see the per-term exact intervals."
)

MSG_SUMMARY_ENDPOINT = (
    "- Scored through the endpoint {endpoint} (served model {served}{version}; {prompts}): {requests}."
)
MSG_SUMMARY_PARTIAL = "- ⚠️ **Partial result.** {message}"
MSG_SUMMARY_NOT_SCORED = (
    "- **{n} of {pairs} could not be scored** and are excluded ({reasons}); they are listed in the downloads with "
    "their reasons."
)
#: The exclusion code of a pair the minimal-pair rule left out (:data:`biastest.measures.stereotype.score.REASONS`).
NOT_MINIMAL = "not-minimal"
MSG_PROMPTS = {"token-ids": "token ids from the model's tokenizer", "text": "text split into tokens by the server"}
MSG_PAIR_LABEL = "#{number} of '{term}'"
MSG_TABLE_EMPTY = "The table of test sentences is empty. Find, import or generate sentence pairs first."
MSG_NOTHING_KEPT = "Every row is unticked in the 'Keep' column, so there is nothing to test."
MSG_ROW_EMPTY_SENTENCE = "Row {row}: both sentences are needed (one is empty). Fill it in or untick 'Keep'."
MSG_ROW_SAME_SENTENCE = (
    "Row {row}: the two sentences are identical, so they cannot show a preference. Edit or untick it."
)
MSG_ROW_GROUP_MISSING = (
    "Row {row}: the sentence '{sentence}' does not contain its group term '{term}'. Fix the sentence or the term."
)
MSG_ROW_ATTRIBUTE_MISSING = (
    "Row {row}: the sentence '{sentence}' does not contain the attribute term '{term}'. Fix the sentence or the "
    "term, or untick 'Keep'."
)
MSG_ROW_KEPT_GROUP_TERM = (
    "Row {row}: the sentence '{sentence}' still contains '{term}', the group term of the other sentence; the two "
    "sentences must differ only in the group term. Fix it or untick 'Keep'."
)
MSG_ROW_NOT_MINIMAL = (
    "Row {row}: the two sentences differ in more than the group term and the words that agree with it "
    "(stereotyped → anti-stereotyped: {differences}). The test leaves this pair out unless pairs that are not "
    "minimal are kept; make the sentences differ only in the group term, or untick 'Keep'."
)
#: The summary's line for pairs the minimal-pair rule flagged: left out, or kept by choice.
MSG_SUMMARY_NOT_MINIMAL = (
    "- **{pairs} left out: not minimal** (the two sentences differ in more than the group term and the words "
    "that agree with it); they are listed in the downloads with the words that differ."
)
MSG_SUMMARY_KEPT_NON_MINIMAL = (
    "- ⚠️ {pairs} not minimal (the two sentences differ in more than the group term and the words that agree "
    "with it) kept anyway, as chosen (keep pairs that are not minimal: for reproducing published results); "
    "the score measures those other differences too."
)
MSG_ROWS_PROBLEMS = "{count} rows cannot be tested as they are; fix them or untick 'Keep':"
MSG_ROWS_MORE = "… and {count} more."
#: Most row problems one message lists.
MAX_LISTED = 10
MSG_TOO_MANY_PAIRS = (
    "The table has {n} pairs; the app tests at most {limit} at a time. Untick some rows or use the command line."
)
MSG_MISSING_COLUMNS = "The table is missing the columns {columns}; start a new bias test to reset it."


def pairs_to_table(pairs: Sequence[SentencePair]) -> pd.DataFrame:
    """The editable table for a list of pairs (all kept), headed by :data:`PAIR_HEADERS`."""
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
    return pd.DataFrame(rows, columns=PAIR_COLUMNS).rename(columns=PAIR_HEADERS)


def as_display_table(table: pd.DataFrame | None) -> pd.DataFrame:
    """The table headed by :data:`PAIR_HEADERS` (it may come headed by the fields, or be missing)."""
    if table is None or len(table.columns) == 0:
        return pairs_to_table([])
    return table.rename(columns=lambda c: PAIR_HEADERS.get(str(c), c))


def _fields(table: pd.DataFrame) -> pd.DataFrame:
    """The table with field names for columns (it may come headed by :data:`PAIR_HEADERS` or by the fields)."""
    return table.rename(columns=lambda c: _FIELD_OF_HEADER.get(str(c), c))


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


def _row_problem(row_number: int, row: dict[str, Any], *, not_minimal: bool = True) -> str | None:
    """What keeps one table row from being tested as it is (``MSG_ROW_*``), or None.

    Besides the two sentences being present and different, a row that names two different group terms is checked
    as a generated pair is (:func:`biastest.generate.counterfactual.check_pair`): each sentence contains its group
    term (and the attribute term, when given), and the other does not keep it. Every row is then held to the
    minimal-pair rule (:func:`biastest.generate.minimal.minimal_difference`: the two differ only in the group term
    and the words that agree with it; a row without two group terms, CrowS-Pairs or StereoSet, in one passage):
    :data:`MSG_ROW_NOT_MINIMAL` names the differing words (``not_minimal=False`` leaves that check out: such a
    pair is not refused but left out of the test, or kept by choice, by the run).
    """
    s, a = _text(row.get("stereotyped")), _text(row.get("anti_stereotyped"))
    if not s or not a:
        return MSG_ROW_EMPTY_SENTENCE.format(row=row_number)
    if s == a:
        return MSG_ROW_SAME_SENTENCE.format(row=row_number)
    gs, ga = _text(row.get("group_term_stereotyped")), _text(row.get("group_term_anti"))
    for sentence, term in ((s, gs), (a, ga)):
        if term and not contains_term(sentence, term):
            return MSG_ROW_GROUP_MISSING.format(row=row_number, sentence=sentence, term=term)
    problem = None
    if gs and ga and gs.casefold() != ga.casefold():
        problem = check_pair(s, a, group_term=gs, counterpart=ga, attribute_term=_text(row.get("attribute_term")))
    if problem is None or problem.reason == REWRITE_REJECT_NOT_MINIMAL:
        check = minimal_difference(s, a, gs, ga)
        if not_minimal and not check.minimal:
            return MSG_ROW_NOT_MINIMAL.format(row=row_number, differences=format_differences(check.differences))
        return None
    sentence = s if problem.sentence == "first" else a
    if problem.reason == REWRITE_REJECT_MISSING_ATTRIBUTE:
        return MSG_ROW_ATTRIBUTE_MISSING.format(row=row_number, sentence=sentence, term=problem.term)
    if problem.reason == REWRITE_REJECT_KEPT_GROUP_TERM:
        return MSG_ROW_KEPT_GROUP_TERM.format(row=row_number, sentence=sentence, term=problem.term)
    # PAIR_REJECT_MISSING_GROUP_TERM or REWRITE_REJECT_MISSING_COUNTERPART: a sentence lacks its group term
    return MSG_ROW_GROUP_MISSING.format(row=row_number, sentence=sentence, term=problem.term)


def row_problems(table: pd.DataFrame | None, rows: Sequence[int] | None = None, *,
                 not_minimal: bool = True) -> dict[int, str]:
    """Problems of table rows (0-based positions → ``MSG_ROW_*`` message naming the 1-based row), kept or not.

    ``rows`` limits the check to those positions (default: every row). ``not_minimal`` (default) includes rows
    that break the minimal-pair rule (:data:`MSG_ROW_NOT_MINIMAL`, naming the differing words); False gives only
    the problems that keep a row from being tested at all (what :func:`pairs_from_table` refuses).
    """
    if table is None or len(table) == 0:
        return {}
    records = _fields(table).to_dict("records")
    positions = range(len(records)) if rows is None else rows
    out = {}
    for i in positions:
        problem = _row_problem(i + 1, records[i], not_minimal=not_minimal)
        if problem is not None:
            out[i] = problem
    return out


def problems_message(problems: Sequence[str]) -> str:
    """One message for several row problems: :data:`MSG_ROWS_PROBLEMS`, then one ``- `` line per row (at most
    :data:`MAX_LISTED`, then :data:`MSG_ROWS_MORE`); a single problem is its own message."""
    if len(problems) == 1:
        return problems[0]
    lines = [MSG_ROWS_PROBLEMS.format(count=len(problems))]
    lines += [f"- {p}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        lines.append(MSG_ROWS_MORE.format(count=len(problems) - MAX_LISTED))
    return "\n".join(lines)


def pairs_from_table(table: pd.DataFrame | None, *, spec_name: str = "") -> list[SentencePair]:
    """Validate the edited table and turn the kept rows into pairs.

    Every kept row is checked (:func:`row_problems` without the minimal-pair rule); nothing is returned while
    one fails. A row that is not a minimal pair is returned: the run leaves it out of the test and counts it
    (or keeps it, ``keep_non_minimal``), naming its differing words.

    Raises
    ------
    DataError
        With the row numbers (1-based, as shown) and what to fix (``details["problems"]``: one message per row).
    """
    if table is None or len(table) == 0:
        raise DataError(MSG_TABLE_EMPTY)
    table = _fields(table)
    missing = [c for c in ("stereotyped", "anti_stereotyped") if c not in table.columns]
    if missing:
        raise DataError(MSG_MISSING_COLUMNS.format(columns=", ".join(PAIR_HEADERS[c] for c in missing)))
    records = table.to_dict("records")
    kept = [i for i, row in enumerate(records) if _kept(row.get("keep", True))]
    if not kept:
        raise DataError(MSG_NOTHING_KEPT)
    if len(kept) > MAX_PAIRS:
        raise DataError(MSG_TOO_MANY_PAIRS.format(n=len(kept), limit=MAX_PAIRS))
    problems = list(row_problems(table, kept, not_minimal=False).values())
    if problems:
        raise DataError(problems_message(problems), problems=tuple(problems))
    return [
        SentencePair(
            stereotyped=_text(row.get("stereotyped")),
            anti_stereotyped=_text(row.get("anti_stereotyped")),
            attribute_term=_text(row.get("attribute_term")),
            group_term_stereotyped=_text(row.get("group_term_stereotyped")),
            group_term_anti=_text(row.get("group_term_anti")),
            template=_text(row.get("template")),
            category=_text(row.get("category")),
            source=_text(row.get("source")) or "user",
            spec_name=spec_name,
        )
        for row in (records[i] for i in kept)
    ]


def _fmt(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _signed(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:+.{digits}f}"


def _interval(low: float | None, high: float | None, *, percent: bool = True, signed: bool = False) -> str:
    if low is None or high is None:
        return "—"
    if signed:
        return f"{_signed(low)} to {_signed(high)}"
    return f"{_fmt(low)}–{_fmt(high)}{' %' if percent else ''}"


def _headline(result: StereotypeResult) -> tuple[float | None, float | None, float | None, str]:
    """The interval and p-value the reading rests on, and what the interval is."""
    o = result.overall
    level = level_label(o.confidence)
    if result.cluster_aware:
        c = result.overall_clustered
        assert c is not None
        return c.low, c.high, c.p_value, f"{level} {'interval' if result.clusters == 'pair' else 'cluster interval'}"
    return o.ci_low, o.ci_high, o.p_value, f"{level} interval"


def _clusters_line(result: StereotypeResult) -> str | None:
    c = result.overall_clustered
    if c is None:
        return None
    if not result.cluster_aware:
        return MSG_NO_CLUSTERS.format(n=c.n_items)
    design = f"**Design:** {md_escape(result.design_note)}."
    if result.clusters == "pair":  # independent pairs within attribute terms: no clusters to describe
        return design + ("" if c.interval_shown else f" {c.reason}")
    deff = "—" if c.design_effect is None else f"{c.design_effect:.2f}"
    eff = "" if c.effective_n is None else f" (worth about {c.effective_n:.0f} independent pairs)"
    return (
        f"{design} **{c.n_items} scored pairs in {c.n_clusters} clusters** (by {md_escape(c.cluster_by)}); "
        f"design effect {deff}{eff}. Sign test on cluster means: {c.n_clusters_above} clusters lean to the stereotype, "
        f"{c.n_clusters_below} away, {c.n_clusters_at_null} even; p = {_p(c.p_value)}."
        + ("" if c.interval_shown else f" {c.reason}")  # our words and a fixed cluster label
    )


def _magnitude_line(result: StereotypeResult) -> str | None:
    m, med = result.magnitude, result.magnitude_median
    if m is None or med is None:
        return None
    kind = "cluster interval" if result.cluster_aware else "interval"
    level = level_label(m.confidence)

    def interval(s) -> str:
        return f"{level} {kind} {_interval(s.low, s.high, signed=True)}" if s.interval_shown else "no interval"

    return (
        f"Magnitude: mean Δ log-probability (stereotyped − anti-stereotyped, natural log of the method's score) "
        f"**{_signed(m.estimate)}** ({interval(m)}), median {_signed(med.estimate)} ({interval(med)}); "
        "0 = no preference, positive = the stereotyped sentence is more likely."
    )


def summary_markdown(result: StereotypeResult) -> str:
    """The headline numbers, each named, as Markdown (user text escaped).

    The headline interval is the cluster-aware one when the pairs are clustered (templates, attribute terms),
    else the bootstrap over pairs; its level is the result's. With too few clusters the headline says there is
    no interval and why.
    """
    o = result.overall
    ma = result.macro_attribute
    level = level_label(o.confidence)
    low, high, _, what = _headline(result)
    if result.cluster_aware and low is None:
        head = f"### Stereotype score: **{_fmt(o.score)} %** (no interval: too few clusters, see below)"
    else:
        head = f"### Stereotype score: **{_fmt(o.score)} %** ({what} {_fmt(low)}–{_fmt(high)} %)"
    lines = [MSG_NOT_COMPARABLE, ""] if server_split_text(result) else []
    lines += [
        head,
        "",
        f"- Model **{md_escape(result.model_id)}** ({result.model_kind}), method **{result.method}**, "
        f"seed {result.seed}.",
    ]
    clusters = _clusters_line(result)
    if clusters:
        lines.append(f"- {clusters}")
    pairs_as = "Pairs treated as independent" if result.cluster_aware else "Micro average"
    lines.append(
        f"- {pairs_as} (over all {o.n} scored pairs): {o.n_stereotyped} stereotyped, {o.n_anti} anti-stereotyped, "
        f"{o.n_ties} ties; exact sign test against 50 %: p = {_p(o.p_value)}; exact (Clopper–Pearson) {level} "
        f"interval {_fmt(o.exact_ci_low)}–{_fmt(o.exact_ci_high)} %"
        + (f"; bootstrap over pairs {_fmt(o.ci_low)}–{_fmt(o.ci_high)} %." if result.cluster_aware else ".")
    )
    magnitude = _magnitude_line(result)
    if magnitude:
        lines.append(f"- {magnitude}")
    lines.append(
        f"- Macro average over attribute terms (mean of {ma.n_groups} per-term scores): {_fmt(ma.score)} % "
        f"({_fmt(ma.ci_low)}–{_fmt(ma.ci_high)} %)."
    )
    single = sum(1 for t in result.per_attribute if t.summary.n == 1)
    if single:
        lines[-1] += " " + MSG_MACRO_SINGLE_PAIR_TERMS.format(count=single, total=ma.n_groups)
    lines += _not_minimal_lines(result)
    other = {k: v for k, v in result.excluded_reasons.items() if k != NOT_MINIMAL}
    if other:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(other.items()))
        lines.append(MSG_SUMMARY_NOT_SCORED.format(n=sum(other.values()), pairs=plural(result.n_pairs, "pair"),
                                                   reasons=reasons))
    lines += endpoint_lines(result)
    return "\n".join(lines)


def not_minimal_count(result: StereotypeResult) -> tuple[int, bool]:
    """How many pairs the minimal-pair rule flagged, and whether they were kept (from the result's provenance)."""
    info = (result.provenance or {}).get("minimal_pairs") or {}
    return int(info.get("n_not_minimal") or 0), bool(info.get("keep_non_minimal"))


def _not_minimal_lines(result: StereotypeResult) -> list[str]:
    n, kept = not_minimal_count(result)
    if not n:
        return []
    return [(MSG_SUMMARY_KEPT_NON_MINIMAL if kept else MSG_SUMMARY_NOT_MINIMAL).format(pairs=plural(n, "pair"))]


def _code(text: str) -> str:
    """``text`` as a Markdown code span (shown as typed; a backquote in it cannot close the span)."""
    return "`" + text.replace("`", "%60") + "`"


def endpoint_lines(result: StereotypeResult) -> list[str]:
    """For a model behind an endpoint: where it was scored, and whether the run stopped early (escaped Markdown)."""
    info = result.provenance.get("model") if isinstance(result.provenance, dict) else None
    if not isinstance(info, dict) or info.get("served_by") != "endpoint":
        return []
    version = info.get("server_version")
    lines = [MSG_SUMMARY_ENDPOINT.format(
        endpoint=_code(str(info.get("endpoint") or "")),  # an address in text would be linked, its escapes shown
        served=md_escape(str(info.get("served_model") or info.get("model_id") or "")),
        version=f", server version {md_escape(str(version))}" if version else "",
        prompts=MSG_PROMPTS.get(str(info.get("prompts")), md_escape(str(info.get("prompts")))),
        requests=plural(int((info.get("requests") or {}).get("completions", 0)), "request"),
    )]
    if info.get("complete") is False:
        lines.append(MSG_SUMMARY_PARTIAL.format(message=md_escape(str(info.get("stop_message") or ""))))
    return lines


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _overall_reading(result: StereotypeResult) -> str:
    o = result.overall
    low, high, p, what = _headline(result)
    alpha = 1 - o.confidence
    if result.cluster_aware and low is None:
        c = result.overall_clustered
        assert c is not None
        lean = (
            f"{c.n_clusters_above} of its {c.n_clusters} clusters ({md_escape(c.cluster_by)}) lean to the stereotype "
            f"and {c.n_clusters_below} away (sign test on cluster means: p = {_p(c.p_value)})"
        )
        if c.p_value is not None and c.p_value < alpha:
            return (
                f"The model preferred the stereotyped sentence in {_fmt(o.score)} % of the pairs; {lean}. With so "
                "few independent clusters there is no interval to draw, but the clusters agree more than chance "
                "would make them. More templates would give an interval."
            )
        return (
            f"The model preferred the stereotyped sentence in {_fmt(o.score)} % of the {o.n} pairs, but {lean}: "
            "with so few independent clusters we cannot tell this model's preference apart from no preference, "
            "however many pairs each cluster has. More templates or attribute terms would settle it."
        )
    if low <= 50 <= high:
        more = "More templates would" if result.cluster_aware else "More pairs would"
        return (
            f"The model preferred the stereotyped sentence in {_fmt(o.score)} % of the pairs, but the {what} "
            f"({_fmt(low)}–{_fmt(high)} %) includes 50 %: with these {o.n} pairs we cannot tell this "
            f"model's preference apart from no preference. {more} narrow the interval."
        )
    if p is None or p >= alpha:
        if result.cluster_aware:
            return (
                f"The model preferred the stereotyped sentence in {_fmt(o.score)} % of the {o.n} pairs. The {what} "
                f"({_fmt(low)}–{_fmt(high)} %) excludes 50 %, but the sign test on cluster means does not confirm "
                f"it (p = {_p(p)}), so we cannot tell this model's preference apart from no preference."
            )
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
        f"preference). The {what} ({_fmt(low)}–{_fmt(high)} %) excludes 50 %, so this is "
        f"evidence of a {strength} preference for {side} on these sentences. It describes these test sentences "
        "and this model only; check the per-attribute bars for where it comes from."
    )


def _terms_reading(result: StereotypeResult) -> str | None:
    """Which attribute terms survive the Holm correction (None for results saved before it existed)."""
    terms = [t for t in result.per_attribute if t.p_value is not None]
    if len(terms) < 2 or any(t.p_holm is None for t in terms):
        return None
    alpha = 1 - result.overall.confidence
    pct = f"{100 * alpha:.4g}"
    survivors = [t for t in terms if t.p_holm is not None and t.p_holm < alpha]
    if not survivors:
        return MSG_HOLM_NONE.format(family="attribute term", m=len(terms), alpha=pct)
    named = ", ".join(
        f"'{md_escape(t.term or '(none)')}' ({_fmt(t.summary.score)} % stereotyped, Holm p = {_p(t.p_holm)})"
        for t in sorted(survivors, key=lambda t: (t.p_holm, t.term))
    )
    return MSG_HOLM_SOME.format(family_title="Attribute term", m=len(terms), alpha=pct, terms=named)


def standing(result: StereotypeResult) -> Standing:
    """Whether the run supports a verdict: not when the server split the text, nor when an endpoint run stopped."""
    return Standing.NOT_COMPARABLE if server_split_text(result) else run_standing(result.provenance)


def verdict_sentence(result: StereotypeResult) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.verdict`) from the headline interval and test."""
    o = result.overall
    low, high, p, what = _headline(result)
    c = result.overall_clustered
    claim = Claim(what="stereotype score", estimate=o.score if o.n else None, low=low, high=high, null=50,
                  above="towards the stereotype", below="against the stereotype", level=o.confidence,
                  interval_name=what.removeprefix(level_label(o.confidence)).strip(), unit="%", p_value=p,
                  alpha=1 - o.confidence, size=size_word(o.score - 50, (5, 15), ("slight", "moderate", "strong")),
                  no_interval="no pair could be scored" if not o.n else (c.reason if c is not None and c.reason
                                                                          else "too few clusters"))
    return verdict(claim, standing=standing(result))


def interpretation(result: StereotypeResult) -> str:
    """The verdict sentence, then a short plain-language reading of the overall score and the attribute terms that
    survive Holm correction.

    The overall reading rests on the headline interval and test (cluster-aware when the pairs are clustered);
    only terms whose Holm-adjusted p-value is below 1 − confidence are named. A run that supports no verdict (not
    comparable, partial) gets the verdict and the reason only: no lean, no surviving term is claimed.
    """
    head = verdict_sentence(result)
    if result.overall.n == 0:
        return f"{head}\n\nNo pair could be scored, so there is nothing to interpret."
    if standing(result) is not Standing.OK:
        return f"{head}\n\n{MSG_NOT_COMPARABLE}" if server_split_text(result) else head
    terms = _terms_reading(result)
    overall = f"{head}\n\n{_overall_reading(result)}"
    return overall if terms is None else f"{overall}\n\n{terms}"


def _term_extra(t) -> dict[str, str]:
    """Hover lines beyond the bar's own: the magnitude, clusters and the adjusted p-values (when recorded)."""
    extra: dict[str, str] = {}
    if t.magnitude is not None:
        m = t.magnitude
        interval = (f" ({level_label(m.confidence, space=False)} interval {_interval(m.low, m.high, signed=True)})"
                    if m.interval_shown else "")
        extra["mean Δ log-prob"] = _signed(m.estimate) + interval
        extra["median Δ log-prob"] = _signed(t.median_difference)
    if t.clustered is not None:
        extra["clusters"] = f"{t.clustered.n_clusters} ({t.clustered.cluster_by})"
    if t.p_holm is not None or t.q_bh is not None:
        extra["p, Holm-adjusted"] = "—" if t.p_holm is None else f"{t.p_holm:.3g}"
        extra["q (Benjamini–Hochberg)"] = "—" if t.q_bh is None else f"{t.q_bh:.3g}"
    return extra


def _term_rows(terms) -> list[dict[str, Any]]:
    """Per-term rows with the exact interval: a term has few pairs, where a bootstrap interval is too narrow.

    ``p_value`` is the term's test (the sign test on cluster means within the term; with single-pair clusters
    the pair sign test), the hover adds the magnitude and the Holm / Benjamini–Hochberg adjusted values.
    """
    return [
        {
            "label": t.term or "(none)",
            "score": t.summary.score if t.summary.n else None,
            "ci_low": t.summary.exact_ci_low if t.summary.n else None,
            "ci_high": t.summary.exact_ci_high if t.summary.n else None,
            "n": t.summary.n,
            "p_value": t.p_value,
            "hover_extra": _term_extra(t),
        }
        for t in terms
    ]


def _hover_by_row(fig: go.Figure) -> go.Figure:
    """Hover a bar from anywhere on its row: a bar at 0 % (or one with no score) has no area to point at."""
    return fig.update_layout(hovermode="y")


def _term_interval_label(result: StereotypeResult) -> str:
    return TERM_INTERVAL_LABEL.format(level=level_label(result.overall.confidence, space=False))


def attribute_figure(result: StereotypeResult) -> go.Figure:
    """Per-attribute-term stereotype scores with exact (Clopper–Pearson) intervals at the result's level."""
    return _hover_by_row(score_bars(_term_rows(result.per_attribute), title="Stereotype score per attribute term",
                                    interval_label=_term_interval_label(result)))


def group_figure(result: StereotypeResult) -> go.Figure:
    """Per-group-term stereotype scores with exact (Clopper–Pearson) intervals at the result's level."""
    return _hover_by_row(score_bars(_term_rows(result.per_group),
                                    title="Stereotype score per group term (stereotyped sentence)",
                                    interval_label=_term_interval_label(result)))


def pair_grid(result: StereotypeResult) -> go.Figure:
    """One square per pair: column = attribute term, row = the pair's number within it, colour = Δ log-prob.

    The hover names the pair as the axis does (``#2 of 'math'``: the second pair of the attribute term math).
    """
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
                "Pair": MSG_PAIR_LABEL.format(number=counters[key], term=key),
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
        y_title="pair, per term",
        color_title="Δ log-prob",
    )


def _summary_row(result: StereotypeResult, measure: str, **values: Any) -> dict[str, Any]:
    prov = result.provenance or {}
    row = {
        "measure": measure,
        "estimate": None, "unit": None, "ci_low": None, "ci_high": None, "confidence": result.overall.confidence,
        "interval": None, "p_value": None, "test": None, "p_holm": None, "q_bh": None,
        "n_pairs": None, "n_clusters": None, "clusters": result.clusters, "design_effect": None,
    }
    row.update(values)
    row.update({
        "spec": (result.spec or {}).get("name") or prov.get("spec"),
        "model_id": result.model_id,
        "model_revision": result.model_revision,
        "method": result.method,
        "seed": result.seed,
        "n_resamples": result.overall.n_resamples,
        "versions": prov.get("versions"),
        "date": prov.get("created_at"),
    })
    return row


def _cluster_row_values(c, *, unit: str) -> dict[str, Any]:
    return {
        "estimate": c.estimate, "unit": unit, "ci_low": c.low, "ci_high": c.high,
        "interval": c.interval_method if c.interval_shown else c.reason,
        "p_value": c.p_value, "test": c.test, "n_pairs": c.n_items, "n_clusters": c.n_clusters,
        "design_effect": c.design_effect,
    }


def summary_records(result: StereotypeResult) -> list[dict[str, Any]]:
    """The summary rows the CSV starts with: overall score (pairs and clusters), magnitude, macro, per term.

    Every row names the run (spec, model, revision, method, seed, resamples, library versions, date), so the
    CSV alone is a complete record. Columns: ``measure, estimate, unit, ci_low, ci_high, confidence,
    interval, p_value, test, p_holm, q_bh, n_pairs, n_clusters, clusters, design_effect`` and the run's
    identity. Per-term rows carry the term's test and its Holm / Benjamini–Hochberg adjusted values.
    """
    o = result.overall
    rows = [
        _summary_row(result, "stereotype score, pairs independent", estimate=o.score, unit="%", ci_low=o.ci_low,
                     ci_high=o.ci_high, interval=o.ci_method, p_value=o.p_value, test=o.test, n_pairs=o.n,
                     n_clusters=o.n),
        _summary_row(result, "stereotype score, exact interval", estimate=o.score, unit="%",
                     ci_low=o.exact_ci_low, ci_high=o.exact_ci_high, interval="Clopper-Pearson exact",
                     p_value=o.p_value, test=o.test, n_pairs=o.n),
    ]
    if result.overall_clustered is not None:
        rows.append(_summary_row(result, "stereotype score, cluster-aware"
                                 + (" (headline)" if result.cluster_aware else ""),
                                 **_cluster_row_values(result.overall_clustered, unit="%")))
    if result.magnitude is not None and result.magnitude_median is not None:
        rows.append(_summary_row(result, "magnitude: mean Δ log-prob (stereotyped − anti)",
                                 **_cluster_row_values(result.magnitude, unit="nats")))
        rows.append(_summary_row(result, "magnitude: median Δ log-prob (stereotyped − anti)",
                                 **_cluster_row_values(result.magnitude_median, unit="nats")))
    n_flagged, kept = not_minimal_count(result)
    if n_flagged:
        rows.append(_summary_row(result, "pairs kept though not minimal" if kept else "pairs left out: not minimal",
                                 n_pairs=n_flagged))
    ma = result.macro_attribute
    rows.append(_summary_row(result, "stereotype score, macro over attribute terms", estimate=ma.score, unit="%",
                             ci_low=ma.ci_low, ci_high=ma.ci_high, interval=ma.ci_method, n_pairs=ma.n))
    for family, terms in (("attribute term", result.per_attribute), ("group term", result.per_group)):
        for t in terms:
            c = t.clustered
            rows.append(_summary_row(
                result, f"{family}: {t.term or '(none)'}", estimate=t.summary.score, unit="%",
                ci_low=t.summary.exact_ci_low, ci_high=t.summary.exact_ci_high,
                interval="Clopper-Pearson exact over pairs", p_value=t.p_value,
                test=c.test if c is not None else t.summary.test, p_holm=t.p_holm, q_bh=t.q_bh,
                n_pairs=t.summary.n, n_clusters=None if c is None else c.n_clusters,
                design_effect=None if c is None else c.design_effect,
                mean_difference=None if t.magnitude is None else t.magnitude.estimate,
                mean_difference_low=None if t.magnitude is None else t.magnitude.low,
                mean_difference_high=None if t.magnitude is None else t.magnitude.high,
                median_difference=t.median_difference,
            ))
    return rows


def export_files(result: StereotypeResult, *, directory: Path | None = None) -> tuple[Path, Path]:
    """Write the CSV (summary rows, :func:`summary_records`, then one row per pair) and the full JSON.

    The CSV's first column ``row_type`` is ``summary`` or ``pair``; text cells that a spreadsheet would run as a
    formula are neutralised (:func:`biastest.report.export.write_csv`). The names are
    ``biastest-gpt-<model>-<date>.csv`` / ``.json`` (:func:`biastest.report.export.download_name`).
    """
    directory = directory or private_dir()
    rows = summary_first(summary_records(result), result.pairs_records(), item_type="pair")
    when = created_date(result)
    csv_path = write_csv(rows, directory / download_name(DOWNLOAD_APP, result.model_id, when=when))
    json_path = write_json(result.to_dict(), directory / download_name(DOWNLOAD_APP, result.model_id, when=when,
                                                                         ext="json"))
    return csv_path, json_path
