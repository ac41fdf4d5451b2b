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
    "MSG_WEAT_NO_INTERVAL",
    "mac_frame",
    "weat_exports",
    "weat_figure",
    "weat_frame",
    "weat_interpretation",
    "weat_interval_label",
    "weat_summary_records",
    "weat_verdict",
    "weat_words_frame",
]

MSG_WEAT_NO_INTERVAL = "No interval for d: no resamples of the words were asked for."
MSG_WEAT_INTERVAL_UNDEFINED = (
    "No interval for d: fewer than two resamples of the words had a defined d (their associations were all equal)."
)
MSG_WEAT_INTERVAL_HAS_ZERO = (
    "The interval of d includes 0: with other words of the same kinds, the difference could vanish or reverse. "
    "The permutation p-value holds these words fixed, so it can be small while this interval is wide."
)
MSG_WEAT_INTERVAL_READING = (
    "The interval of d excludes 0: resampling the target and attribute words keeps the direction of the effect."
)


def weat_interval_label(weat) -> str:
    """How the interval of d was made, with the result's level, or why there is none."""
    if weat.effect_size_ci is None:
        return MSG_WEAT_NO_INTERVAL if not weat.n_bootstrap else MSG_WEAT_INTERVAL_UNDEFINED
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
        ("MAC (mean cosine distance)", mac.mac,
         "Mean over target words and attribute lists of the mean cosine distance (0 = same direction, 1 = unrelated)."),
    ]
    for r in mac.per_class:
        rows.append((f"MAC for attribute list '{r['class']}'", r["mean_distance"],
                     "Mean cosine distance of all target words to this list."))
    return pd.DataFrame(
        [{"quantity": q, "value": None if v is None else round(float(v), 6), "what it means": m} for q, v, m in rows]
    )


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
    interval = (f" ({level_text(weat.ci_level)} interval {ci[0]:.2f} to {ci[1]:.2f}, resampling the words)"
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
    rows += [row(f"MAC for attribute list '{r['class']}'", r["mean_distance"], n=len(mac.words))
             for r in mac.per_class]
    return rows


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
