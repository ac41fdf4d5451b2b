"""Tables, figures, exports and plain-language readings of WEAT and MAC results."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.measures.embedding_common import level_text, record_fields
from biastest.measures.verdict import Claim, size_word, verdict
from biastest.report.export import created_date, download_name, private_dir, summary_first, write_csv, write_json
from biastest.report.figures import C1_COLOR, C2_COLOR, FONT, hover_safe
from biastest.report.text import esc as _esc
from biastest.report.text import fmt_p as _p

__all__ = [
    "MSG_WEAT_INTERVAL_HAS_ZERO",
    "MSG_WEAT_INTERVAL_READING",
    "MSG_WEAT_INTERVAL_UNDEFINED",
    "MSG_WEAT_JACKKNIFE_UNDEFINED",
    "MSG_WEAT_TWO_QUESTIONS",
    "MSG_WEAT_NO_INTERVAL",
    "MSG_MAC_GROUPS_READING",
    "MSG_WEAT_NULL_NONE",
    "mac_exports",
    "mac_frame",
    "mac_group_figure",
    "mac_groups_frame",
    "mac_interpretation",
    "mac_summary_records",
    "mac_words_frame",
    "weat_exports",
    "weat_figure",
    "weat_frame",
    "weat_interpretation",
    "weat_interval_label",
    "weat_null_figure",
    "weat_null_markdown",
    "weat_summary_records",
    "weat_verdict",
    "weat_words_frame",
]

MSG_WEAT_NO_INTERVAL = "No interval for d: no resamples of the words were asked for."
MSG_WEAT_INTERVAL_UNDEFINED = (
    "No interval for d: fewer than two resamples of the words had a defined d (their associations were all equal)."
)
MSG_WEAT_JACKKNIFE_UNDEFINED = (
    "No interval for d: a word list has fewer than two words (or d is undefined), so leaving one word out cannot "
    "say how much d depends on the words."
)
#: How the interval's question differs from the permutation test's (one sentence, said with every interval).
MSG_WEAT_TWO_QUESTIONS = (
    "The permutation p-value holds these words fixed and asks whether their split into the two target groups "
    "matters; the interval treats the words as a sample of their kinds and asks how far d would move with other "
    "such words."
)
MSG_WEAT_INTERVAL_HAS_ZERO = (
    "The interval of d includes 0: with other words of the same kinds, the difference could vanish or reverse. "
    + MSG_WEAT_TWO_QUESTIONS
)
MSG_WEAT_INTERVAL_READING = (
    "The interval of d excludes 0: with other target and attribute words of the same kinds the direction of the "
    "effect would likely hold. " + MSG_WEAT_TWO_QUESTIONS
)

MSG_WEAT_NULL_NONE = "No random word lists were drawn (the number of random word lists is 0)."


MSG_MAC_GROUPS_READING = (
    "MAC per group: for each group, the mean cosine distance of its words to its own stereotype list and to the "
    "other groups' lists; contrast = own − others (negative: the group's words sit closer to their own "
    "stereotypes). These are means of means without an interval; the Bayesian estimate below gives intervals and "
    "compares with neutral control words."
)


def weat_interval_label(weat) -> str:
    """How the interval of d was made, with the result's level, or why there is none."""
    jackknife = getattr(weat, "interval_kind", "percentile") == "jackknife"
    if weat.effect_size_ci is None:
        if not weat.n_bootstrap:
            return MSG_WEAT_NO_INTERVAL
        return MSG_WEAT_JACKKNIFE_UNDEFINED if jackknife else MSG_WEAT_INTERVAL_UNDEFINED
    if jackknife:
        return (f"{level_text(weat.ci_level)} interval, jackknife over the words: d recomputed with each word of "
                "X, Y, A and B left out in turn; d ± z·SE")
    return (f"{level_text(weat.ci_level)} interval, bootstrap over the words: X, Y, A and B each resampled with "
            f"replacement ({weat.n_bootstrap:,} resamples, seed {weat.seed})")


def weat_frame(weat, mac) -> pd.DataFrame:
    """The headline numbers, each named (the test statistic and the effect size are different things).

    The effect size's row carries its interval over the words (level from the result).
    """
    perm = weat.permutation
    how = (f"exact: all {perm.n_partitions:,} partitions" if perm.exact
           else f"sampled: {perm.n_evaluated:,} of {perm.n_partitions:,} partitions, seed {perm.seed}")
    ci = weat.effect_size_ci
    rows = [
        ("WEAT effect size d", weat.effect_size,
         "Difference of the mean associations of X and Y, in standard deviations (0 = none; |d| ≥ 0.8 is large)."),
        (f"d, {level_text(weat.ci_level)} interval low", None if ci is None else ci[0], weat_interval_label(weat)),
        (f"d, {level_text(weat.ci_level)} interval high", None if ci is None else ci[1],
         "With other words of the same kinds, d would likely fall in this interval."),
        ("WEAT test statistic s(X, Y, A, B)", weat.test_statistic,
         "Sum over X minus sum over Y of each word's association; not the effect size."),
        ("p-value, one-sided (X more associated with A)", weat.p_one_sided, f"Permutation test ({how})."),
        ("p-value, two-sided", weat.p_two_sided, f"Permutation test ({how})."),
    ]
    null = weat.null_simulation
    if null is not None:
        rows.append((f"share of {null.n_valid:,} random word lists with |d| ≥ |d|", null.share_at_least,
                     f"Word lists of the same sizes from {null.pool}: how often chance gives a d this large."))
    rows += [
        ("MAC (mean cosine distance)", mac.mac,
         "Mean over target words and attribute lists of the mean cosine distance (0 = same direction, 1 = unrelated)."),
    ]
    for r in mac.per_class:
        rows.append((f"MAC for attribute list '{r['class']}'", r["mean_distance"],
                     "Mean cosine distance of all target words to this list."))
    rows += _group_contrast_rows(mac)
    return pd.DataFrame(
        [{"quantity": q, "value": None if v is None else round(float(v), 6), "what it means": m} for q, v, m in rows]
    )


def _group_contrast_rows(mac) -> list[tuple[str, float | None, str]]:
    """(quantity, value, meaning) of MAC per group: the contrast own − others of each group."""
    return [(f"MAC contrast of '{c['group']}': own − other groups' stereotypes", c["contrast"],
             f"Distance of its words to '{c['own_class']}' ({c['own_distance']:.3f}) minus the mean distance to "
             f"{', '.join(repr(o) for o in c['other_classes'])} ({c['others_distance']:.3f}); negative = closer to "
             "its own stereotype.")
            for c in getattr(mac, "group_contrasts", ()) if c["contrast"] is not None]


def mac_groups_frame(mac) -> pd.DataFrame:
    """MAC with several groups: overall MAC, per attribute list, and per group its contrast own − others."""
    rows = [("MAC (mean cosine distance)", mac.mac,
             "Mean over target words and attribute lists of the mean cosine distance (Manzini et al. 2019).")]
    rows += [(f"MAC of group '{c['group']}'", c["group_mac"], "Mean over its words and every attribute list.")
             for c in getattr(mac, "group_contrasts", ())]
    rows += _group_contrast_rows(mac)
    rows += [(f"MAC of '{r['group']}' to '{r['class']}' ({r['connection']})", r["mean_distance"],
              "Mean over the group's words of the mean cosine distance to this list.") for r in mac.per_group]
    return pd.DataFrame(
        [{"quantity": q, "value": None if v is None else round(float(v), 6), "what it means": m} for q, v, m in rows]
    )


def mac_words_frame(mac) -> pd.DataFrame:
    """Per target word: its group, mean distance to its own stereotype list and to the others', and the contrast."""
    def r6(v: Any) -> float | None:
        return None if v is None else round(float(v), 6)

    return pd.DataFrame([{"word": w["word"], "group": w.get("group"), "own stereotypes": r6(w.get("own_distance")),
                          "other groups' stereotypes": r6(w.get("others_distance")),
                          "own − others": r6(w.get("contrast")), "mean over all lists": r6(w["mean_distance"])}
                         for w in mac.per_word])


def mac_group_figure(mac) -> go.Figure:
    """Per group, its mean cosine distance to each attribute list (own stereotype marked); hover shows the contrast."""
    fig = go.Figure()
    groups = list(mac.groups)
    palette = [C1_COLOR, C2_COLOR, "#16a34a", "#9333ea", "#ea580c", "#0891b2"]
    classes = list(dict.fromkeys(r["class"] for r in mac.per_group))
    for k, c in enumerate(classes):
        sel = [r for r in mac.per_group if r["class"] == c]
        fig.add_trace(go.Bar(
            x=[hover_safe(r["group"]) for r in sel], y=[r["mean_distance"] for r in sel], name=hover_safe(c),
            marker_color=palette[k % len(palette)],
            marker_line_width=[3 if r["connection"] == "associated" else 0 for r in sel], marker_line_color="#111827",
            customdata=[[hover_safe(r["group"]), hover_safe(c), r["connection"], r["n_words"]] for r in sel],
            hovertemplate=("<b>%{customdata[0]}</b> → %{customdata[1]} (%{customdata[2]})<br>mean cosine distance "
                           "%{y:.4f} over %{customdata[3]} words<extra></extra>"),
        ))
    fig.update_layout(
        barmode="group", font_family=FONT, height=380, margin={"l": 10, "r": 10, "t": 60, "b": 40},
        title="MAC per group: mean cosine distance to each attribute list (outlined: the group's own stereotype)",
        yaxis_title="mean cosine distance (lower = closer)", xaxis_title="group" if len(groups) else None,
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def mac_interpretation(mac, *, source: str, note: str = "") -> str:
    """A plain-language reading of MAC per group (several groups; WEAT compares only two)."""
    lines = [f"### What this shows\nIn the embedding `{_esc(source)}`, MAC = {mac.mac:.3f} over "
             f"{len(mac.words)} target words and {len(mac.classes)} attribute lists (lower = closer).",
             MSG_MAC_GROUPS_READING]
    if note:
        lines.insert(1, _esc(note))
    for c in mac.group_contrasts:
        if c["contrast"] is None:
            continue
        side, than = ("closer to", "to") if c["contrast"] < 0 else ("farther from", "from")
        lines.append(f"- **{_esc(c['group'])}**: {side} its own stereotypes ('{_esc(c['own_class'])}') than "
                     f"{than} the other groups' (contrast {c['contrast']:+.3f}).")
    missing = {k: v for k, v in mac.missing.items() if v}
    if missing:
        lines.append("Left out (not in the embedding): " + "; ".join(
            f"{_esc(k)}: {_esc(', '.join(v))}" for k, v in missing.items()))
    return "\n\n".join(lines)


def weat_words_frame(weat) -> pd.DataFrame:
    """Per target word: its association s(w, A, B) and mean similarities to A and B."""
    names = weat.names
    rows = [
        {
            "word": r["word"],
            "list": f"{r['set']} ({names.get(r['set'], r['set'])})",
            "s(w, A, B)": round(float(r["s"]), 6),
            "mean cos to A": round(float(r["mean_cos_A"]), 6),
            "mean cos to B": round(float(r["mean_cos_B"]), 6),
        }
        for r in weat.word_scores
    ]
    return pd.DataFrame(rows)


def mac_frame(mac) -> pd.DataFrame:
    """Per target word × attribute list: mean and SD of the cosine distance."""
    return pd.DataFrame(
        [
            {
                "word": r["word"],
                "attribute list": r["class"],
                "mean cosine distance": round(float(r["mean_distance"]), 6),
                "SD": None if r.get("sd_distance") is None else round(float(r["sd_distance"]), 6),
                "attribute words": r["n_attributes"],
            }
            for r in mac.per_word_class
        ]
    )


def weat_figure(weat) -> go.Figure:
    """Each target word's association s(w, A, B), coloured by its list; hover shows its similarities."""
    names = weat.names
    rows = sorted(weat.word_scores, key=lambda r: r["s"])
    fig = go.Figure()
    for key, color in (("X", C1_COLOR), ("Y", C2_COLOR)):
        sel = [r for r in rows if r["set"] == key]
        label = hover_safe(f"{key}: {names.get(key, key)}")
        fig.add_trace(
            go.Bar(
                x=[r["s"] for r in sel],
                y=[hover_safe(r["word"]) for r in sel],
                orientation="h",
                name=label,
                marker_color=color,
                customdata=[[hover_safe(r["word"]), label, f"{r['s']:.4f}", f"{r['mean_cos_A']:.4f}",
                             f"{r['mean_cos_B']:.4f}"] for r in sel],
                hovertemplate=(
                    "<b>%{customdata[0]}</b> (%{customdata[1]})<br>s(w, A, B): %{customdata[2]}<br>"
                    "mean cos to A: %{customdata[3]}<br>mean cos to B: %{customdata[4]}<extra></extra>"
                ),
            )
        )
    fig.add_vline(x=0, line_color="#64748b")
    a, b = hover_safe(names.get("A", "A")), hover_safe(names.get("B", "B"))
    fig.update_layout(
        title=f"Association of each target word: right = closer to {a}, left = closer to {b}",
        xaxis_title="s(w, A, B) = mean cos to A − mean cos to B",
        font_family=FONT,
        height=max(320, 60 + 16 * len(rows)),
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        yaxis={"categoryorder": "array", "categoryarray": [hover_safe(r["word"]) for r in rows]},
        barmode="overlay",
    )
    return fig


def weat_null_figure(weat) -> go.Figure | None:
    """Histogram of d over the random word lists, the observed d (and −d) marked; None without a simulation."""
    null = weat.null_simulation
    if null is None:
        return None
    fig = go.Figure(go.Histogram(
        x=list(null.draws), nbinsx=40, marker_color="#94a3b8", name="random word lists",
        hovertemplate="d from %{x}<br>%{y} random word lists<extra></extra>"))
    d = null.observed
    fig.add_vline(x=d, line_color=C1_COLOR, line_width=3,
                  annotation_text=f"your d = {d:.2f}", annotation_position="top")
    fig.add_vline(x=-d, line_color=C1_COLOR, line_dash="dot",
                  annotation_text=f"−{abs(d):.2f}", annotation_position="bottom")
    fig.update_layout(
        title=(f"How much can d vary by chance? {null.n_valid:,} random word lists of the same sizes: "
               f"{100 * null.share_at_least:.1f} % with |d| ≥ {abs(d):.2f}"),
        xaxis_title="WEAT effect size d of random word lists", yaxis_title="random word lists",
        font_family=FONT, height=360, margin={"l": 10, "r": 10, "t": 60, "b": 40}, showlegend=False,
    )
    return fig


def weat_null_markdown(weat) -> str:
    """What the simulation shows, in words (or why there is none)."""
    null = weat.null_simulation
    if null is None:
        return f"### How much can d vary by chance?\n{_esc(weat.null_note or MSG_WEAT_NULL_NONE)}"
    q = null.quantiles
    return (
        "### How much can d vary by chance?\n"
        f"{null.n_valid:,} random word lists with the sizes of yours (X {null.sizes['X']}, Y {null.sizes['Y']}, "
        f"A {null.sizes['A']}, B {null.sizes['B']}) were drawn from {_esc(null.pool)} (seed {null.seed}). "
        f"Their d ran from {q['q2.5']:.2f} to {q['q97.5']:.2f} (95 % of the draws); {100 * null.share_large:.1f} % "
        f"reached |d| ≥ 0.8, a \"large\" effect, and the largest was {null.max_abs:.2f}. "
        f"**{null.n_at_least:,} of {null.n_valid:,} ({100 * null.share_at_least:.1f} %) had |d| ≥ |your d| = "
        f"{abs(null.observed):.2f}.**\n\n"
        "Words picked with no bias in mind can give a sizeable d: the Bayesian paper (seed 002) gets d = 1.82 "
        "from simulated similarities with no difference at all. Read your d against this spread, not against 0."
    )


def weat_verdict(weat) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.verdict`): d, its interval over the words and
    the two-sided permutation test, with the list names HTML-escaped."""
    x, y, a, b = (_esc(weat.names.get(k, k)) for k in ("X", "Y", "A", "B"))
    ci = weat.effect_size_ci
    d = weat.effect_size
    return verdict(Claim(
        what="WEAT effect size d", estimate=d, low=ci[0] if ci else None, high=ci[1] if ci else None, null=0,
        above=f"{x} closer to {a} (and {y} to {b})", below=f"{x} closer to {b} (and {y} to {a})",
        level=weat.ci_level, unit="", digits=2, p_value=weat.p_two_sided, alpha=1 - weat.ci_level,
        size=size_word(d, (0.5, 0.8), ("small", "medium", "large")) if d is not None else "",
        no_interval=weat_interval_label(weat).removeprefix("No interval for d: ").rstrip(".")))


def weat_interpretation(weat, mac, *, source: str) -> str:
    """A plain-language reading of WEAT and MAC, opening with the verdict sentence (:func:`weat_verdict`)."""
    n = weat.names
    x, y, a, b = (_esc(n.get(k, k)) for k in ("X", "Y", "A", "B"))
    d = weat.effect_size
    size = "small" if abs(d) < 0.5 else ("medium" if abs(d) < 0.8 else "large")
    direction = f"{x} is closer to {a} (and {y} to {b})" if d > 0 else f"{x} is closer to {b} (and {y} to {a})"
    sig = "unlikely to be chance" if weat.p_one_sided < 0.05 else "could well be chance"
    ci = weat.effect_size_ci
    how = "over the words" if getattr(weat, "interval_kind", "") == "jackknife" else "resampling the words"
    interval = (f" ({level_text(weat.ci_level)} interval {ci[0]:.2f} to {ci[1]:.2f}, {how})"
                if ci is not None else "")
    lines = [
        weat_verdict(weat),
        f"### What this shows\nIn the embedding `{_esc(source)}`, **{direction}**: WEAT effect size d = {d:.2f}"
        f"{interval} ({size}; 0 = no difference, ±2 is the maximum). The one-sided permutation p-value is "
        f"{_p(weat.p_one_sided)}, so the pattern is {sig} given these word lists.",
        (MSG_WEAT_INTERVAL_HAS_ZERO if ci[0] <= 0 <= ci[1] else MSG_WEAT_INTERVAL_READING)
        if ci is not None else weat_interval_label(weat),
        f"MAC, the mean cosine distance of the target words to the attribute words, is {mac.mac:.3f} "
        "(lower = closer). Unlike WEAT it does not compare the two groups; see the per-word table.",
        "Both are averages of averages: they hide how much single words vary. The Bayesian estimate below uses "
        "every word pair and neutral control words.",
    ]
    missing = {k: v for k, v in weat.missing.items() if v}
    if missing:
        lines.append("Left out (not in the embedding): " + "; ".join(
            f"{_esc(n.get(k, k))}: {_esc(', '.join(v))}" for k, v in missing.items()))
    return "\n\n".join(lines)


def weat_summary_records(weat, mac, *, source: str, spec: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The summary rows the WEAT/MAC CSV starts with: d with its interval, the test statistic, p-values, MAC.

    Each row: ``measure``, ``estimate``, ``ci_low``/``ci_high`` with ``confidence``, ``interval`` (how it was
    made), ``p_value``, ``n`` (target words); then the record: embedding, seed, permutations, resamples,
    spec, method, versions, date.
    """
    perm = weat.permutation
    record = {
        "embedding": source, "seed": weat.seed, "n_permutations": perm.n_evaluated,
        "permutations_exact": perm.exact, "n_resamples": weat.n_bootstrap, **record_fields(weat.provenance, spec),
    }
    n = len(weat.x) + len(weat.y)
    ci = weat.effect_size_ci

    def row(measure: str, estimate: Any, **values: Any) -> dict[str, Any]:
        out = {"measure": measure, "estimate": estimate, "ci_low": None, "ci_high": None,
               "confidence": weat.ci_level, "interval": None, "p_value": None, "n": n}
        out.update(values)
        out.update(record)
        return out

    rows = [
        row("WEAT effect size d", weat.effect_size, ci_low=None if ci is None else ci[0],
            ci_high=None if ci is None else ci[1], interval=weat_interval_label(weat)),
        row("WEAT test statistic s(X, Y, A, B)", weat.test_statistic),
        row("p-value, one-sided (X more associated with A), permutation", weat.p_one_sided,
            p_value=weat.p_one_sided),
        row("p-value, two-sided, permutation", weat.p_two_sided, p_value=weat.p_two_sided),
        row("MAC (mean cosine distance)", mac.mac, n=len(mac.words)),
    ]
    null = weat.null_simulation
    if null is not None:
        how = f"{null.n_valid:,} random word lists of the same sizes from {null.pool}; seed {null.seed}"
        rows += [
            row("share of random word lists with |d| >= |observed d|", null.share_at_least, n=null.n_valid,
                interval=how),
            row("d of random word lists, median (2.5 % and 97.5 % quantiles)", null.quantiles["q50"],
                ci_low=null.quantiles["q2.5"], ci_high=null.quantiles["q97.5"], confidence=0.95, n=null.n_valid,
                interval=how),
        ]
    elif weat.null_note:
        rows.append(row("share of random word lists with |d| >= |observed d|", None, n=0, interval=weat.null_note))
    rows += [row(f"MAC for attribute list '{r['class']}'", r["mean_distance"], n=len(mac.words))
             for r in mac.per_class]
    rows += [row(f"MAC contrast of '{c['group']}': own − other groups' stereotypes", c["contrast"], n=c["n_words"])
             for c in getattr(mac, "group_contrasts", ())]
    return rows


def mac_summary_records(mac, *, source: str, spec: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The summary rows of a MAC-only CSV (several groups): MAC, per list, per group, and each group's contrast."""
    record = {"embedding": source, **record_fields(mac.provenance, spec)}

    def row(measure: str, estimate: Any, n: int) -> dict[str, Any]:
        return {"measure": measure, "estimate": estimate, "n": n, **record}

    rows = [row("MAC (mean cosine distance)", mac.mac, len(mac.words))]
    rows += [row(f"MAC for attribute list '{r['class']}'", r["mean_distance"], len(mac.words)) for r in mac.per_class]
    rows += [row(f"MAC of group '{r['group']}' to '{r['class']}' ({r['connection']})", r["mean_distance"],
                 r["n_words"]) for r in mac.per_group]
    rows += [row(f"MAC contrast of '{c['group']}': own − other groups' stereotypes", c["contrast"], c["n_words"])
             for c in getattr(mac, "group_contrasts", ())]
    return rows


def mac_exports(mac, *, source: str, spec: Mapping[str, Any] | None = None,
                directory: Path | None = None) -> tuple[Path, Path]:
    """CSV and JSON of a MAC run with several groups (no WEAT): summary rows, then one row per target word."""
    folder = Path(directory) if directory is not None else private_dir("biastest-mac-")
    by_word: dict[str, dict[str, float]] = {}
    for r in mac.per_word_class:
        by_word.setdefault(r["word"], {})[f"mac_distance[{r['class']}]"] = r["mean_distance"]
    rows = [{"word": w["word"], "group": w.get("group"), "own_minus_others": w.get("contrast"),
             "mean_distance": w["mean_distance"], **by_word.get(w["word"], {}), "mac": mac.mac, "embedding": source}
            for w in mac.per_word]
    rows = summary_first(mac_summary_records(mac, source=source, spec=spec), rows, item_type="word")
    csv_path = write_csv(rows, folder / download_name("psychophysics", source, when=created_date(mac), part="mac"))
    json_path = write_json({"test": "mac", "embedding": source, "spec": dict(spec) if spec else None,
                            "mac": mac.to_dict()},
                           folder / download_name("psychophysics", source, when=created_date(mac), ext="json",
                                                  part="mac"))
    return csv_path, json_path


def weat_exports(weat, mac, *, source: str, spec: Mapping[str, Any] | None = None,
                 directory: Path | None = None) -> tuple[Path, Path]:
    """CSV and JSON in ``directory`` (default: a fresh folder).

    The CSV starts with the summary rows (:func:`weat_summary_records`, ``row_type`` ``summary``), then one row
    per target word (``row_type`` ``word``: its WEAT association and MAC distances), so it is a complete record.
    """
    folder = Path(directory) if directory is not None else private_dir("biastest-weat-")
    mac_by_word: dict[str, dict[str, float]] = {}
    for r in mac.per_word_class:
        mac_by_word.setdefault(r["word"], {})[f"mac_distance[{r['class']}]"] = r["mean_distance"]
    rows = []
    for r in weat.word_scores:
        rows.append({"word": r["word"], "list": r["set"], "list_name": weat.names.get(r["set"], r["set"]),
                     "s_wAB": r["s"], "mean_cos_A": r["mean_cos_A"], "mean_cos_B": r["mean_cos_B"],
                     **mac_by_word.get(r["word"], {}), "weat_effect_size_d": weat.effect_size,
                     "weat_test_statistic": weat.test_statistic, "p_one_sided": weat.p_one_sided,
                     "p_two_sided": weat.p_two_sided, "mac": mac.mac, "embedding": source, "seed": weat.seed})
    rows = summary_first(weat_summary_records(weat, mac, source=source, spec=spec), rows, item_type="word")
    csv_path = write_csv(rows, folder / download_name("psychophysics", source, when=created_date(weat), part="weat"))
    json_path = write_json({"test": "weat_mac", "embedding": source, "spec": dict(spec) if spec else None,
                            "weat": weat.to_dict(), "mac": mac.to_dict()},
                           folder / download_name("psychophysics", source, when=created_date(weat), ext="json",
                                                  part="weat"))
    return csv_path, json_path
