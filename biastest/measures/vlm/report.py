"""Report layer of the vision-language test: typed results → text, tables, figures and files.

Everything here takes a :class:`~biastest.measures.vlm.result.VLMResult` (or
plain counts) and returns Markdown, a DataFrame or file paths (the figures are in
:mod:`biastest.measures.vlm.report_figures`); nothing imports gradio. User text (terms, paths, answers) reaching
Markdown or a hover label is HTML-escaped.

The two groups of image terms and the two lists of target terms are named
once, by :func:`labels`, from the user's own terms (``doctor / engineer``),
and every text, hover label, table and figure here uses those names: an
image's side is said the same way in the grid's hover label, the app's
detail panel and the table (:func:`image_facts`).

* :func:`summary_markdown` — the overall score with its interval and test, in words: the cluster-aware
  interval and test when the images are clustered (by prompt or image term; none drawn below
  :data:`~biastest.stats.clusters.MIN_CLUSTERS_FOR_INTERVAL` clusters, with the reason), the clusters and the
  design effect, the magnitude (mean and median log-odds of the stereotyped list), the single answers, and
  the terms whose lean survives Holm's correction for many comparisons;
* :func:`term_rows` / :func:`~biastest.measures.vlm.report_figures.term_bars` — per image term and per target term
  scores with intervals (:func:`~biastest.report.figures.score_bars`; labelled
  with the result's level); a bar whose interval leaves out 50 % although its
  test does not confirm a lean says why in its hover label, which also gives the
  magnitude, the clusters and the Holm / Benjamini–Hochberg adjusted p-values;
* :func:`~biastest.measures.vlm.report_figures.image_grid` — one square per image, coloured by ``P(T1) − P(T2)``,
  whose hover label gives :func:`image_facts`; each point also carries a
  small thumbnail (a ``data:`` URI) in its last ``customdata`` column, which
  the app shows beside the plot for the hovered image (plotly hover labels
  cannot show images);
* :func:`image_table` — the per-image table the app shows (what a reader
  needs first; ids last, never pixels); the CSV keeps every column
  (:func:`csv_columns`), paths and hashes included;
* :func:`write_exports` — CSV (summary rows, :func:`summary_records`, then one
  row per image) and JSON (the whole result with provenance) in a fresh
  per-request folder;
* :func:`coverage_rows` / :func:`coverage_markdown` — how many images each
  image term has, with a hint where they are few.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from biastest.measures.verdict import Claim, Standing, run_standing, size_word, verdict
from biastest.measures.vlm.options import CLUSTER_LABELS
from biastest.measures.vlm.report_words import (  # noqa: F401 (the words, also read as report.<name>)
    GRID_HOVER_FIELDS,
    MSG_BAR_UNCONFIRMED,
    MSG_BAR_UNCONFIRMED_CLUSTERS,
    MSG_CHAT_RULE,
    MSG_HOLM_NONE,
    MSG_HOLM_SOME,
    MSG_LEAN_UNCONFIRMED,
    MSG_LEAN_UNCONFIRMED_CLUSTERS,
    MSG_NEITHER,
    MSG_NO_CLUSTERS,
    MSG_NO_INTERVAL_LEAN,
    MSG_NO_INTERVAL_NO_LEAN,
    MSG_NO_PROBABILITY,
    MSG_NOT_SCORED,
    MSG_TIE,
    PLACEHOLDER_NAMES,
    THIN_IMAGES,
    Labels,
    _answer,
    _esc,
    _p,
    _pct,
    _prob,
    _rate,
    _signed,
    image_facts,
    labels,
    leans_to,
    level_label,
    list_label,
    target_names,
)
from biastest.measures.vlm.result import VLMResult
from biastest.measures.vlm.score import LOG_ODDS_EPS
from biastest.report.export import (
    ROW_TYPE,
    created_date,
    download_name,
    private_dir,
    summary_first,
    write_csv,
    write_json,
)
from biastest.words import plural_word

__all__ = [
    "GRID_HOVER_FIELDS",
    "MSG_BAR_UNCONFIRMED",
    "MSG_BAR_UNCONFIRMED_CLUSTERS",
    "MSG_HOLM_NONE",
    "MSG_HOLM_SOME",
    "MSG_LEAN_UNCONFIRMED",
    "MSG_LEAN_UNCONFIRMED_CLUSTERS",
    "MSG_NO_CLUSTERS",
    "SUMMARY_COLUMNS",
    "THIN_IMAGES",
    "Labels",
    "coverage_markdown",
    "coverage_rows",
    "csv_columns",
    "csv_rows",
    "image_facts",
    "image_table",
    "labels",
    "leans_to",
    "list_label",
    "summary_markdown",
    "summary_parts",
    "summary_records",
    "verdict_sentence",
    "target_names",
    "term_rows",
    "write_exports",
]

# --------------------------------------------------------------------------- summary
def _headline(result: VLMResult) -> tuple[float | None, float | None, float | None, str]:
    """The headline score's interval and p-value, and what the interval is (its level is the result's).

    The cluster-aware interval and sign test on cluster means when the images are clustered (None, None when
    there are too few clusters for an interval), else the bootstrap over images and the image-level test.
    """
    plain = result.soft if result.soft is not None else result.hard
    level = level_label(plain.confidence, space=False)
    c = result.headline_clustered
    if result.cluster_aware and c is not None:
        return c.low, c.high, c.p_value, f"{level} {'interval' if result.clusters == 'image' else 'cluster interval'}"
    return plain.ci_low, plain.ci_high, plain.p_value, f"{level} interval"


def _reading(result: VLMResult, lab: Labels, *, answers: bool) -> tuple[str, str, str]:
    """The reading of the headline score, a warning when its interval and test disagree ("" if none), and the
    headline's parenthesis (the interval, or why there is none).

    A lean is only stated as such when the test agrees with the interval: with few images (or few clusters) the
    bootstrap interval is too narrow to be trusted alone.
    """
    t1, t2, g1, g2 = (_esc(n) for n in (lab.target1, lab.target2, lab.group1, lab.group2))
    plain = result.soft if result.soft is not None else result.hard
    low, high, p, what = _headline(result)
    alpha = 1 - plain.confidence
    confirmed = p is not None and p < alpha
    if answers:
        stereo = ("the model's answers lean to the **stereotypical** direction, naming "
                  f"**{t1}** for pictures of *{g1}* and **{t2}** for pictures of *{g2}*.")
        anti = ("the model's answers lean to the **anti-stereotypical** direction, naming "
                f"**{t2}** for pictures of *{g1}* and **{t1}** for pictures of *{g2}*.")
    else:
        stereo = ("the model leans to the **stereotypical** direction, tying "
                  f"pictures of *{g1}* to **{t1}** and pictures of *{g2}* to **{t2}**.")
        anti = ("the model leans to the **anti-stereotypical** direction, tying "
                f"pictures of *{g1}* to **{t2}** and pictures of *{g2}* to **{t1}**.")
    c = result.headline_clustered
    if low is None or high is None:  # cluster-aware, too few clusters for an interval: the sign test speaks
        assert c is not None
        head = "no interval: too few clusters, see below"
        if confirmed:
            side = "stereotypical" if c.n_clusters_above > c.n_clusters_below else "anti-stereotypical"
            reading = MSG_NO_INTERVAL_LEAN.format(above=c.n_clusters_above, n=c.n_clusters,
                                                  below=c.n_clusters_below, p=_p(c.p_value))
            reading += " " + (stereo if side == "stereotypical" else anti)
        else:
            reading = MSG_NO_INTERVAL_NO_LEAN.format(n=c.n_clusters, by=_esc(c.cluster_by), p=_p(c.p_value))
        return reading, "", head
    head = f"{what} {low:.1f}–{high:.1f}%"
    if low > 50:
        reading = "The interval lies above 50%: " + stereo
    elif high < 50:
        reading = "The interval lies below 50%: " + anti
    else:
        reading = ("The interval includes 50%: these " + ("answers" if answers else "images")
                   + " show **no clear preference** either way.")
    warning = ""
    if (low > 50 or high < 50) and not confirmed:
        if result.cluster_aware and c is not None and result.clusters != "image":
            warning = MSG_LEAN_UNCONFIRMED_CLUSTERS.format(p=_p(p), above=c.n_clusters_above,
                                                           below=c.n_clusters_below, n=c.n_clusters)
        elif result.soft is not None:
            warning = MSG_LEAN_UNCONFIRMED.format(p=_p(p), n_st=plain.n_stereotyped, n_anti=plain.n_anti,
                                                  n=result.n_soft)
    return reading, warning, head


def _clusters_line(result: VLMResult) -> list[str]:
    """A bullet naming the clusters, the design effect and the sign test on cluster means (none in old results)."""
    c = result.headline_clustered
    if c is None:
        return []
    if not result.cluster_aware:
        return ["- " + MSG_NO_CLUSTERS.format(n=c.n_items)]
    design = f"- **Design:** {_esc(result.design_note)}."
    if result.clusters == "image":  # independent pictures within image terms: no clusters to describe
        return [design, *([] if c.interval_shown else ["- " + _esc(c.reason)])]
    deff = "—" if c.design_effect is None else f"{c.design_effect:.2f}"
    eff = "" if c.effective_n is None else f" (worth about {c.effective_n:.0f} independent images)"
    return [design,
        f"- **Clusters: {c.n_items} images in {c.n_clusters} clusters** (by {_esc(c.cluster_by)}); design effect "
        f"{deff}{eff}. Sign test on cluster means: {c.n_clusters_above} clusters lean to the stereotype, "
        f"{c.n_clusters_below} away, {c.n_clusters_at_null} even; p = {_p(c.p_value)}.",
        *([] if c.interval_shown else ["- " + _esc(c.reason)]),
    ]


def _magnitude_line(result: VLMResult) -> list[str]:
    """A bullet with the mean and median log-odds of the stereotyped list and their intervals (none without)."""
    m, med = result.magnitude, result.magnitude_median
    if m is None or med is None:
        return []
    kind = "cluster interval" if result.cluster_aware else "interval"
    level = level_label(m.confidence, space=False)

    def interval(s) -> str:
        return f"{level} {kind} {_signed(s.low)} to {_signed(s.high)}" if s.interval_shown else "no interval"

    capped = ([f"- {result.n_log_odds_capped} image(s) had a probability within {LOG_ODDS_EPS:g} of 0 or 1: their "
               "log-odds counts at that bound (±13.8)."] if result.n_log_odds_capped else [])
    return [
        f"- **Magnitude:** mean log-odds of the stereotyped list **{_signed(m.estimate)}** ({interval(m)}), median "
        f"{_signed(med.estimate)} ({interval(med)}); log-odds = ln(P(stereotypical list) / P(other list)): 0 = no "
        "preference, +0.69 = twice as likely.",
        *capped,
    ]


def _hard_interval(result: VLMResult) -> str:
    """The single answers' interval as the summary shows it (cluster-aware when the images are clustered)."""
    hard, c = result.hard, result.hard_clustered
    if (result.cluster_aware or result.orders) and c is not None:  # a chat model: an image's answers lean together
        if not c.interval_shown:
            return "no cluster interval: too few clusters"
        kind = "interval" if result.clusters == "image" else "cluster interval"
        return f"{level_label(c.confidence, space=False)} {kind} {c.low:.1f}–{c.high:.1f}%"
    return f"{level_label(hard.confidence, space=False)} interval {hard.ci_low:.1f}–{hard.ci_high:.1f}%"


def _hard_cluster_p(result: VLMResult) -> str:
    c = result.hard_clustered
    return f"; sign test on cluster means p = {_p(c.p_value)}" if result.cluster_aware and c is not None else ""


def _terms_reading(result: VLMResult) -> list[str]:
    """Which image terms and target terms lean beyond Holm's correction (nothing for results saved before it)."""
    out = []
    alpha = 1 - (result.soft or result.hard).confidence
    pct = f"{100 * alpha:.4g}"
    for family, terms in (("image term", result.per_image_term), ("target term", result.per_target_term)):
        tested = [t for t in terms if t.p_value is not None]
        if len(tested) < 2 or any(t.p_holm is None for t in tested):
            continue
        survivors = [t for t in tested if t.p_holm is not None and t.p_holm < alpha]
        if not survivors:
            out.append(MSG_HOLM_NONE.format(family=family, m=len(tested), alpha=pct))
            continue

        def named(t) -> str:
            plain = t.soft if t.soft is not None else t.hard
            return f"'{_esc(t.term)}' ({plain.score:.1f}%, Holm p = {_p(t.p_holm)})"

        out.append(MSG_HOLM_SOME.format(family_title=family.capitalize(), m=len(tested), alpha=pct,
                                        terms=", ".join(named(t) for t in sorted(survivors,
                                                                                  key=lambda t: (t.p_holm, t.term)))))
    return out


def verdict_sentence(result: VLMResult) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.verdict`) from the headline interval and test."""
    plain = result.soft if result.soft is not None else result.hard
    low, high, p, what = _headline(result)
    c = result.headline_clustered
    claim = Claim(what="bias score" if result.soft is not None else "single-answer bias score",
                  estimate=plain.score if plain.n else None, low=low, high=high, null=50,
                  above="towards the stereotype", below="against the stereotype", level=plain.confidence,
                  interval_name=what.removeprefix(level_label(plain.confidence, space=False)).strip(), unit="%",
                  p_value=p, alpha=1 - plain.confidence,
                  size=size_word(plain.score - 50, (5, 15), ("slight", "moderate", "strong")),
                  no_interval="no image could be scored" if not plain.n else (
                      c.reason if c is not None and c.reason else "too few clusters"))
    return verdict(claim, standing=run_standing(result.provenance))


def summary_parts(result: VLMResult) -> tuple[str, str]:
    """The reading (the verdict sentence first, then the plain words, warnings and notes) and the details (the
    headline number and the diagnostics: clusters, design effect, uncertainty, magnitude, single answers, how).

    A run that supports no verdict (it stopped early) reads the verdict and the notes only: no lean is claimed.
    """
    head, *rest = _summary_lines(result)
    plain = [x for x in rest if not x.startswith("- ")]
    if run_standing(result.provenance) is not Standing.OK:
        plain = _notes(result)
    details = [head, *(x for x in rest if x.startswith("- "))]
    return "\n\n".join([verdict_sentence(result), *plain]), "\n\n".join(details)


def summary_markdown(result: VLMResult) -> str:
    """The reading then the details (:func:`summary_parts`), as one Markdown text (the report's)."""
    return "\n\n".join(summary_parts(result))


def _summary_lines(result: VLMResult) -> list[str]:
    """A plain-language reading of the overall result (Markdown, user text escaped): a headline, a reading, then
    one short point each for the score, the clusters, its uncertainty, the magnitude, the single answers and how
    it was measured, then the terms that survive Holm's correction.

    The headline interval is the cluster-aware one when the images are clustered (by prompt or image term), else
    the bootstrap over images; its level is the result's. With too few clusters it says there is no interval and
    why, and the reading rests on the sign test on cluster means.
    """
    lab = labels(result)
    t1, t2, g1, g2 = (_esc(n) for n in (lab.target1, lab.target2, lab.group1, lab.group2))
    soft, hard = result.soft, result.hard
    if soft is None:
        return _summary_hard_only(result, lab)
    how = {
        "clip": f"zero-shot probabilities over the prompts ({_esc(', '.join(result.prompt_templates))}; "
        f"several terms of a list combined by {_esc(result.combine)})",
        "vqa-classifier": f"the answer probabilities to the question “{_esc(result.question)}”",
        "generative": f"the probability of each target term as the answer to “{_esc(result.question)}”",
        "chat": "the probabilities of the first word of the answer to "
        f"“{_esc(_asked(result))}”, asked through the "
        "endpoint with the target terms as the allowed answers",
    }.get(result.model_kind, _esc(result.method))
    reading, warning, head = _reading(result, lab, answers=False)
    lines = [f"### Bias score: <span class='bt-score'>**{soft.score:.1f}%**</span> ({head})", reading]
    if warning:
        lines.append("<span class='bt-warn'>⚠ " + warning + "</span>")
    if result.cluster_aware and result.clusters == "image":
        uncertainty = (f"- **Uncertainty:** bootstrap over images within each image term (seed {result.seed}); "
                       f"sign test against 50%: p = {_p(soft.p_value)}.")
    elif result.cluster_aware:
        uncertainty = (f"- **Images treated as independent:** bootstrap over images {soft.ci_low:.1f}–"
                       f"{soft.ci_high:.1f}% (seed {result.seed}); sign test against 50%: p = {_p(soft.p_value)}.")
    else:
        uncertainty = (f"- **Uncertainty:** bootstrap over images {soft.ci_low:.1f}–{soft.ci_high:.1f}% (seed "
                       f"{result.seed}); sign test against 50%: p = {_p(soft.p_value)}.")
    lines += [
        "\n".join([
            f"- **The score** is the average probability of the stereotypical answer: **{t1}** for pictures of "
            f"*{g1}*, **{t2}** for pictures of *{g2}*. **50% means no preference**; above 50% the model leans to "
            "the stereotype.",
            *_clusters_line(result),
            uncertainty,
            *_magnitude_line(result),
            *(_chat_lines(result) if result.orders else [
                f"- **Single answers** (the model's one choice per image): **{hard.score:.1f}%** stereotyped "
                f"({_hard_interval(result)}): {hard.n_stereotyped} stereotyped, {hard.n_anti} "
                f"anti-stereotyped, {result.n_neither} naming neither list, {result.n_ties} ties; binomial test "
                f"p = {_p(hard.p_value)}{_hard_cluster_p(result)}."]),
            f"- **How:** model `{_esc(result.model_id)}` ({_esc(result.model_kind)}, {_esc(result.architecture)}) "
            f"looked at **{result.n_images}** images; each got the probability of {t1} and of {t2}, read from "
            f"{how}.",
            *_where(result),
        ]),
    ]
    lines += _terms_reading(result)
    lines += _notes(result)
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
    return lines


def _chat_lines(result: VLMResult) -> list[str]:
    """The single answers of a chat model asked in both orders: the share among parseable answers, the
    refusal and unparseable rates, the position bias and the order consistency (:mod:`.chat`)."""
    hard = result.hard
    missing = f"; {result.n_not_answered} question(s) got no answer" if result.n_not_answered else ""
    return [
        f"- **Single answers:** **{hard.score:.1f}%** stereotyped among the {hard.n} answers that named a list "
        f"({_hard_interval(result)}): {hard.n_stereotyped} stereotyped, {hard.n_anti} anti-stereotyped; binomial "
        f"test p = {_p(hard.p_value)}{_hard_cluster_p(result)}. {MSG_CHAT_RULE}",
        f"- **Refused:** {result.n_refused} of {result.n_answers} answers, {_rate(result.refusal_rate)}; "
        f"**unparseable:** {result.n_unparseable}, {_rate(result.unparseable_rate)}{missing}.",
        f"- **Position bias:** the answers that named a list named the one the question named first in "
        f"{_rate(result.position_bias)} (50% = no preference for a position; 100% = always the first named).",
        f"- **Order consistency:** the pictures answered in both orders got the same list in "
        f"{_rate(result.order_consistency)}.",
    ]


def _asked(result: VLMResult) -> str:
    """The question as a model behind an endpoint read it (the first line of the text sent), else the template."""
    return result.prompts[0].split("\n")[0] if result.prompts else str(result.question or "")


def _where(result: VLMResult) -> list[str]:
    """A bullet naming the endpoint a served model was asked through (none for a model in this process)."""
    served = result.provenance.get("model") if isinstance(result.provenance, Mapping) else None
    if not isinstance(served, Mapping) or served.get("served_by") != "endpoint":
        return []
    reported = f", which answered as `{_esc(served.get('served_model'))}`" if served.get("served_model") else ""
    version = f" (server version {_esc(served.get('server_version'))})" if served.get("server_version") else ""
    n = (served.get("requests") or {}).get("chat", 0)
    return [f"- **Where:** asked through the endpoint `{_esc(served.get('endpoint'))}`{version}{reported}; "
            f"{n} request(s)."]


def _notes(result: VLMResult) -> list[str]:
    """The result's notes and its images left out (warnings, escaped)."""
    out = ["<span class='bt-warn'>⚠ " + _esc(note) + "</span>" for note in result.notes]
    if result.not_scored:
        paths = ", ".join(str(x.get("path", "")) for x in result.not_scored[:5])
        paths += " …" if len(result.not_scored) > 5 else ""
        out.append("<span class='bt-warn'>⚠ " + _esc(MSG_NOT_SCORED.format(count=len(result.not_scored),
                                                                         paths=paths)) + "</span>")
    return out


def _summary_hard_only(result: VLMResult, lab: Labels) -> list[str]:
    """:func:`summary_markdown` of a result without probabilities: the single answers are the score."""
    t1, t2, g1, g2 = (_esc(n) for n in (lab.target1, lab.target2, lab.group1, lab.group2))
    hard = result.hard
    asked = _asked(result)
    reading, warning, head = _reading(result, lab, answers=True)
    lines = [
        f"### Bias score (single answers): <span class='bt-score'>**{hard.score:.1f}%**</span> ({head})",
        reading,
        *(["<span class='bt-warn'>⚠ " + warning + "</span>"] if warning else []),
        "\n".join([
            f"- **The score** is the share of answers naming the stereotypical list among the answers that named a "
            f"list: **{t1}** for pictures of *{g1}*, **{t2}** for pictures of *{g2}*. {MSG_CHAT_RULE} "
            "**50% means no preference.** The model gave no probabilities, so there is no score from them.",
            *_clusters_line(result),
            *_chat_lines(result)[1:],
            f"- **Answers:** {hard.n_stereotyped} stereotyped, {hard.n_anti} anti-stereotyped among {hard.n}; "
            f"binomial test p = {_p(hard.p_value)}; {_hard_interval(result)} (seed {result.seed}).",
        ] if result.orders else [
            f"- **The score** is the share of pictures whose answer is the stereotypical list: **{t1}** for pictures "
            f"of *{g1}*, **{t2}** for pictures of *{g2}*. Answers naming neither list count as not stereotyped "
            "(a result saved before refusals were counted apart). "
            "**50% means no preference.** The model gave no probabilities, so there is no score from them.",
            *_clusters_line(result),
            f"- **Answers:** {hard.n_stereotyped} stereotyped, {hard.n_anti} anti-stereotyped, {result.n_neither} "
            f"naming neither list; binomial test p = {_p(hard.p_value)}; bootstrap over images "
            f"{hard.ci_low:.1f}–{hard.ci_high:.1f}% (seed {result.seed}).",
        ]) + "\n" + "\n".join([
            f"- **How:** model `{_esc(result.model_id)}` ({_esc(result.model_kind)}, {_esc(result.architecture)}) "
            f"answered “{_esc(asked)}” for **{result.n_images}** images, with the target terms as the allowed "
            "answers.",
            *_where(result),
        ]),
        *_terms_reading(result),
        *_notes(result),
        "A lean shows what the model associates with the pictures; it does not say whether that association is "
        "right or fair.",
    ]
    return lines


# --------------------------------------------------------------------------- per-term bars
def _interval(summary, n: int) -> dict[str, float | None]:
    """The bootstrap interval, or none for a single image (resampling one value cannot show any uncertainty)."""
    if n < 2:
        return {"ci_low": None, "ci_high": None}
    return {"ci_low": summary.ci_low, "ci_high": summary.ci_high}


def _bar_note(summary, n: int) -> str:
    """Words for a bar whose interval leaves out 50% while its exact test is not significant ("" otherwise)."""
    if n < 2 or summary.p_value is None or summary.p_value < 1 - summary.confidence:
        return ""
    if not (summary.ci_low > 50 or summary.ci_high < 50):
        return ""
    return MSG_BAR_UNCONFIRMED.format(p=_p(summary.p_value), n_st=summary.n_stereotyped, n_anti=summary.n_anti,
                                      n=n)


def _cluster_bar_note(c) -> str:
    """Words for a bar whose cluster interval leaves out 50% while the sign test on cluster means is not
    significant ("" otherwise)."""
    if c.p_value is None or c.p_value < 1 - c.confidence or c.low is None or c.high is None:
        return ""
    if not (c.low > 50 or c.high < 50):
        return ""
    return MSG_BAR_UNCONFIRMED_CLUSTERS.format(p=_p(c.p_value), above=c.n_clusters_above, below=c.n_clusters_below,
                                               n=c.n_clusters)


def _by_clusters(result: VLMResult, clustered) -> bool:
    """Whether a bar shows the design-based interval: the result's headline is, and this bar's images are
    clustered or resampled within image terms (strata)."""
    return result.cluster_aware and clustered is not None and (
        clustered.cluster_by != CLUSTER_LABELS["image"] or clustered.n_strata > 1)


def _bar(result: VLMResult, label: str, kind: str, term: str, plain, n: int, clustered, *, magnitude=None,
         median: float | None = None, p_value: float | None = None, p_holm: float | None = None,
         q_bh: float | None = None) -> dict[str, Any]:
    """One bar: the image-level or the cluster-aware interval with the test that goes with it, and hover lines
    (which interval, the clusters and design effect, the magnitude, the adjusted p-values)."""
    extra: dict[str, str] = {}
    if _by_clusters(result, clustered):
        ci = {"ci_low": clustered.low, "ci_high": clustered.high}  # None when there are too few clusters
        p = clustered.p_value
        note = _cluster_bar_note(clustered) if clustered.interval_shown else str(clustered.reason)
        extra["interval"] = (f"cluster bootstrap over {clustered.n_clusters} clusters ({clustered.cluster_by})"
                             if clustered.interval_shown else "none: too few clusters")
        if clustered.n_strata > 1 and clustered.interval_shown:
            extra["interval"] += f", within {clustered.n_strata} {clustered.strata_by or 'strata'}s"
        extra["test"] = "sign test on cluster means"
    else:
        ci = _interval(plain, n)
        p = plain.p_value if p_value is None else p_value
        note = _bar_note(plain, n)
        extra["interval"] = "bootstrap over images" if n >= 2 else "none: a single image"
    if clustered is not None:
        deff = "—" if clustered.design_effect is None else f"{clustered.design_effect:.2f}"
        extra["clusters"] = f"{clustered.n_clusters} ({clustered.cluster_by}), design effect {deff}"
    if magnitude is not None:
        around = (f" ({_signed(magnitude.low)} to {_signed(magnitude.high)})" if magnitude.interval_shown else "")
        extra["mean log-odds"] = _signed(magnitude.estimate) + around
        extra["median log-odds"] = _signed(median)
    if p_holm is not None or q_bh is not None:
        extra["p, Holm-adjusted"] = "—" if p_holm is None else f"{p_holm:.3g}"
        extra["q (Benjamini–Hochberg)"] = "—" if q_bh is None else f"{q_bh:.3g}"
    return {"label": label, "kind": kind, "term": term, "score": plain.score, **ci, "n": n, "p_value": p,
            "note": note, "hover_extra": extra}


def term_rows(result: VLMResult) -> list[dict[str, Any]]:
    """Rows for :func:`~biastest.report.figures.score_bars`: overall, each image term, each target term.

    Each bar shows the cluster-aware interval and the sign test on cluster means when the result's images are
    clustered and so are the bar's (none drawn with too few clusters: ``note`` says why), else the bootstrap
    over images and the image-level test. A row resting on a single image has no interval
    (``ci_low``/``ci_high`` None, drawn without an error bar and shown as "—"), never a zero-width one.
    ``note`` says why when the interval leaves out 50% but the test does not confirm the lean
    (:data:`MSG_BAR_UNCONFIRMED`, :data:`MSG_BAR_UNCONFIRMED_CLUSTERS`), else is empty. ``hover_extra`` names
    the interval, the clusters and design effect, the magnitude (mean and median log-odds) and the Holm /
    Benjamini–Hochberg adjusted p-values. A target term's row is the score of the test that used that term alone
    for its list.
    """
    lab = labels(result)
    if result.soft is None:  # no probabilities: the single answers' score (its hover label names the test)
        n_hard = result.hard.n if result.orders else result.n_images  # a chat model: the parseable answers
        rows = [_bar(result, "All images (single answers)", "overall", "", result.hard, n_hard,
                     result.hard_clustered)]
        rows += [_bar(result, f"images of '{t.term}' (single answers)", "image term", t.term, t.hard, t.n_images,
                      t.hard_clustered, p_value=t.p_value, p_holm=t.p_holm, q_bh=t.q_bh)
                 for t in result.per_image_term if t.hard is not None]
        return rows
    rows = [_bar(result, "All images", "overall", "", result.soft, result.n_soft, result.soft_clustered,
                 magnitude=result.magnitude,
                 median=None if result.magnitude_median is None else result.magnitude_median.estimate)]
    for t in result.per_image_term:
        if t.soft is None:  # none of its images has a probability: drawn as absent, never as 0
            rows.append({"label": f"images of '{t.term}'", "kind": "image term", "term": t.term, "score": None,
                         "ci_low": None, "ci_high": None, "n": 0, "p_value": None, "note": MSG_NO_PROBABILITY})
            continue
        n_t = sum(1 for img in result.images if img.image_term == t.term and img.p_t1 is not None)
        rows.append(_bar(result, f"images of '{t.term}'", "image term", t.term, t.soft, n_t, t.soft_clustered,
                         magnitude=t.magnitude, median=t.median_log_odds, p_value=t.p_value, p_holm=t.p_holm,
                         q_bh=t.q_bh))
    for t in result.per_target_term:
        rows.append(_bar(result, f"target '{t.term}' (stereotype of {lab.group(t.side)})", "target term", t.term,
                         t.soft, t.n_images, t.soft_clustered, magnitude=t.magnitude, median=t.median_log_odds,
                         p_value=t.p_value, p_holm=t.p_holm, q_bh=t.q_bh))
    return rows


# --------------------------------------------------------------------------- tables and files
def csv_columns(result: VLMResult) -> list[str]:
    """Column order of the per-image CSV (every field, paths and hashes included)."""
    base = ["index", "image_id", "file_name", "path", "sha256", "image_term", "image_group", "p_t1", "p_t2",
            "p_stereotyped", "log_odds", "answer", "verdict", "outcome"]
    terms: list[str] = []
    for img in result.images:
        for t in img.term_probabilities:
            if t not in terms:
                terms.append(t)
    by_order = [f"{field} [{o}]" for o in result.orders
                for field in ("question", "answer", "outcome", "P(stereotyped)")]
    return [*base, *(f"P({t})" for t in terms), *by_order, "generator", "image_prompt", "source", "model_id",
            "model_revision", "method", "seed", "clusters", "cluster"]


#: Columns of the CSV's summary rows (:func:`summary_records`), after ``row_type``; the run's identity last.
SUMMARY_COLUMNS = (
    "measure", "estimate", "unit", "ci_low", "ci_high", "confidence", "interval", "p_value", "test", "p_holm", "q_bh",
    "n_images", "n_clusters", "clusters", "design_effect", "mean_log_odds", "median_log_odds", "spec", "model_id",
    "model_revision", "model_kind", "method", "seed", "n_resamples", "versions", "date",
)


def _summary_row(result: VLMResult, measure: str, **values: Any) -> dict[str, Any]:
    prov = result.provenance if isinstance(result.provenance, Mapping) else {}
    plain = result.soft if result.soft is not None else result.hard
    row: dict[str, Any] = dict.fromkeys(SUMMARY_COLUMNS)
    row.update(measure=measure, confidence=plain.confidence, clusters=result.clusters)
    row.update(values)
    row.update({
        "spec": (result.spec or {}).get("name") or prov.get("spec"),
        "model_id": result.model_id,
        "model_revision": result.model_revision,
        "model_kind": result.model_kind,
        "method": result.method,
        "seed": result.seed,
        "n_resamples": plain.n_resamples,
        "versions": prov.get("versions"),
        "date": prov.get("created_at"),
    })
    return row


def _cluster_values(c, *, unit: str) -> dict[str, Any]:
    return {
        "estimate": c.estimate, "unit": unit, "ci_low": c.low, "ci_high": c.high,
        "interval": c.interval_method if c.interval_shown else c.reason,
        "p_value": c.p_value, "test": c.test, "n_images": c.n_items, "n_clusters": c.n_clusters,
        "design_effect": c.design_effect,
    }


def _plain_values(summary, n: int) -> dict[str, Any]:
    return {"estimate": summary.score, "unit": "%", "ci_low": summary.ci_low, "ci_high": summary.ci_high,
            "interval": summary.ci_method, "p_value": summary.p_value, "test": summary.test, "n_images": n,
            "n_clusters": n}


def summary_records(result: VLMResult) -> list[dict[str, Any]]:
    """The summary rows the CSV starts with: the scores (images independent and cluster-aware), the magnitude,
    then one row per image term and per target term.

    Every row names the run (spec, model, revision, kind, method, seed, resamples, library versions, date), so
    the CSV alone is a complete record. Columns: :data:`SUMMARY_COLUMNS`. A term's row holds what its bar shows
    (:func:`term_rows`: the cluster-aware interval when its images are clustered, else the bootstrap over images),
    its test, the Holm / Benjamini–Hochberg adjusted values, its clusters, design effect and magnitude.
    """
    rows: list[dict[str, Any]] = []
    chat = bool(result.orders)
    hard_name = ("bias score (single answers: stereotyped share among parseable answers, both orders; n = answers)"
                 if chat else "bias score (single answers)")
    for kind, name, plain, clustered, n in (
        ("soft", "bias score (probabilities)", result.soft, result.soft_clustered, result.n_soft),
        ("hard", hard_name, result.hard, result.hard_clustered, result.hard.n if chat else result.n_images),
    ):
        if plain is None:
            continue
        mark = " (headline)" if kind == result.headline else ""
        rows.append(_summary_row(result, f"{name}, images independent{'' if result.cluster_aware else mark}",
                                 **_plain_values(plain, n)))
        if clustered is not None:
            rows.append(_summary_row(result, f"{name}, cluster-aware{mark if result.cluster_aware else ''}",
                                     **_cluster_values(clustered, unit="%")))
    for name, rate in (("refusal rate (refused / answers received)", result.refusal_rate),
                       ("unparseable rate (unparseable / answers received)", result.unparseable_rate),
                       ("position bias (answers naming the first-named list / parseable answers)",
                        result.position_bias),
                       ("order consistency (images with the same list in both orders / images with both parseable)",
                        result.order_consistency)):
        if rate is not None:
            rows.append(_summary_row(result, name, estimate=rate.estimate, unit="%", ci_low=rate.low,
                                     ci_high=rate.high, interval=rate.method, n_images=rate.n,
                                     n_clusters=rate.n_clusters))
    if result.magnitude is not None and result.magnitude_median is not None:
        rows.append(_summary_row(result, "magnitude: mean log-odds of the stereotyped list",
                                 **_cluster_values(result.magnitude, unit="nats")))
        rows.append(_summary_row(result, "magnitude: median log-odds of the stereotyped list",
                                 **_cluster_values(result.magnitude_median, unit="nats")))
    # the bars of term_rows, in their order: the image terms (those with single answers when there are no
    # probabilities), then the target terms
    terms = [t for t in result.per_image_term if result.soft is not None or t.hard is not None]
    terms += list(result.per_target_term) if result.soft is not None else []
    for bar, t in zip(term_rows(result)[1:], terms, strict=True):
        c = t.clustered
        rows.append(_summary_row(
            result, f"{bar['kind']}: {t.term}", estimate=bar["score"], unit="%", ci_low=bar["ci_low"],
            ci_high=bar["ci_high"], interval=(bar.get("hover_extra") or {}).get("interval"), p_value=bar["p_value"],
            test=None if c is None else c.test, p_holm=t.p_holm, q_bh=t.q_bh, n_images=bar["n"],
            n_clusters=None if c is None else c.n_clusters, design_effect=None if c is None else c.design_effect,
            mean_log_odds=None if t.magnitude is None else t.magnitude.estimate, median_log_odds=t.median_log_odds,
        ))
    return rows


def image_table(result: VLMResult) -> pd.DataFrame:
    """The per-image table the app shows: what a reader needs first, in the words of :func:`image_facts`.

    Columns: ``#`` (the image's number in the app), the :func:`image_facts` lines (image term, the probability
    of each target list, the side the image leans to, the answer), each target term's probability, and where the
    picture came from (the user's file name for an upload); the image id last. Paths, hashes and the run's
    settings are in the CSV (:func:`csv_columns`), not here. Probabilities are rounded to 3 decimals (the CSV keeps
    them whole).
    """
    lab = labels(result)
    rows = []
    for img in result.images:
        facts = image_facts(result, img, lab)
        row: dict[str, Any] = {"#": img.index + 1}
        for field, value in facts[:-1]:
            row[field] = (value if value == "—" else round(float(value), 3)) if field.startswith("P(") else value
        for term, p in img.term_probabilities.items():
            row.setdefault(f"P({term})", round(float(p), 3))
        row.update({"source": img.source, "file": img.file_name, "generator": img.generator,
                    "image prompt": img.image_prompt, "image id": img.image_id})
        rows.append(row)
    table = pd.DataFrame(rows)
    tail = ["source", "file", "generator", "image prompt", "image id"]
    if len(table):  # an image without a probability lacks the per-term columns: they come before its origin, as "—"
        table = table[[c for c in table.columns if c not in tail] + tail]
        for c in table.columns:
            if c.startswith("P(") and table[c].isna().any():
                table[c] = table[c].astype(object).where(table[c].notna(), "—")
    return table


def csv_rows(result: VLMResult) -> list[dict[str, Any]]:
    """The CSV's rows: the summary rows (:func:`summary_records`) first, then one row per image."""
    return summary_first(summary_records(result), result.images_records(), item_type="image")


def write_exports(result: VLMResult, *, folder: str | Path | None = None) -> tuple[Path, Path]:
    """CSV and JSON (the whole result, with provenance) in a fresh private folder.

    The CSV's first column ``row_type`` is ``summary`` (the rows of :func:`summary_records`, first) or ``image``
    (one row per image, :func:`csv_columns`); text cells a spreadsheet would run as a formula are neutralised
    (:func:`biastest.report.export.write_csv`).
    """
    out = Path(folder) if folder is not None else private_dir("biastest-vqa-")
    columns = [ROW_TYPE, *SUMMARY_COLUMNS, *(c for c in csv_columns(result) if c not in SUMMARY_COLUMNS)]
    when = created_date(result)
    csv_path = write_csv(csv_rows(result), out / download_name("vqa", result.model_id, when=when), columns=columns)
    json_path = write_json(result.to_dict(), out / download_name("vqa", result.model_id, when=when, ext="json"))
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
    parts = [f"**{total}** {plural_word(total, 'image')} for **{len(rows)}** {plural_word(len(rows), 'image term')}."]
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
