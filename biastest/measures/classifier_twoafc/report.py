"""The report of a classifier's 2AFC on occupations: the headline, the per-target rows, the per-comparison CSV rows,
the summary rows and the files of a download. The labour-statistics scatter is
:func:`biastest.measures.labour.labour_figure`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from biastest.measures.classifier_twoafc.result import TwoAFCClassifierResult
from biastest.measures.labour import labour_figure
from biastest.measures.verdict import count_verdict
from biastest.report.export import private_dir, summary_first, write_csv, write_json
from biastest.report.figures import FONT, NEUTRAL, hover_safe

__all__ = ["csv_rows", "export_files", "headline", "labour_figure", "summary_rows", "target_rows",
           "targets_figure"]


def _interval(low: float | None, high: float | None, confidence: float, digits: int = 1, unit: str = "%") -> str:
    if low is None or high is None:
        return "no interval"
    return f"{confidence:.0%} interval {low:.{digits}f}–{high:.{digits}f}{unit}"


def headline(result: TwoAFCClassifierResult) -> str:
    """One line for the terminal and the app."""
    lab, r = result.labour, result.p_cue1_rate
    if lab is None:
        corr = "no target in the labour table"
    elif lab.pearson_r is None:
        corr = f"correlation with % women not defined ({lab.reason})"
    else:
        corr = (f"Pearson r with % women ({lab.table or 'your table'}) {lab.pearson_r:.3f} "
                f"({_interval(lab.pearson_low, lab.pearson_high, lab.confidence, 3, '')}, n = {lab.n})")
    share = ("no comparison was decided" if r.estimate is None else
             f"P({result.cue1_name} cue's sentence scores higher) {r.estimate:.1f}% overall "
             f"({_interval(r.low, r.high, r.confidence)})")
    ties = result.tie_rate.estimate
    tie_text = "" if ties is None else f"; ties {ties:.1f}%"
    return (f"Classifier 2AFC on {result.n_targets} targets: {corr}; {share}{tie_text}; "
            f"{result.n_comparisons} comparisons ({len(result.cue_pairs)} cue pairs) scored by {result.model_id}, "
            f"label {result.label} (seed {result.seed}).")


def verdict_sentence(result: TwoAFCClassifierResult) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.count_verdict`): how many targets lean to
    each cue beyond their own Wilson interval, and how many would by chance alone."""
    rates = [(t.p_cue1_rate.estimate, t.p_cue1_rate.low, t.p_cue1_rate.high) for t in result.targets
             if t.p_cue1_rate.estimate is not None]
    return count_verdict(rates, null=50, units="targets", above=f"to {result.cue1_name}",
                         below=f"to {result.cue2_name}", level=result.p_cue1_rate.confidence,
                         number="{:g} %".format, no_interval="no comparison was decided")


def reading(result: TwoAFCClassifierResult) -> str:
    """What step 3 opens with: the verdict sentence, then the headline line."""
    return f"{verdict_sentence(result)}\n\n{headline(result)}"


def target_rows(result: TwoAFCClassifierResult) -> list[dict[str, Any]]:
    """One row per target: P(cue 1) with the cluster bootstrap and Wilson intervals, the mean difference, counts,
    % women when the table has the target."""
    known = {u["occupation"].casefold(): u["pct_female"] for u in (result.labour.used if result.labour else ())}
    rows = []
    for t in result.targets:
        c, r, d = t.p_cue1, t.p_cue1_rate, t.diff
        rows.append({"target": t.target, "p_cue1": r.estimate, "ci_low": c.low if c else None,
                     "ci_high": c.high if c else None, "ci_note": c.reason if c else None, "wilson_low": r.low,
                     "wilson_high": r.high, "n_decided": r.n, "mean_diff": d.estimate if d else None,
                     "diff_low": d.low if d else None, "diff_high": d.high if d else None,
                     **{f"n_{k.replace('-', '')}": v for k, v in t.counts.items()},
                     "pct_female": known.get(t.target.casefold())})
    return rows


def summary_rows(result: TwoAFCClassifierResult) -> list[dict[str, Any]]:
    """Overall, per cue pair and per template: P(cue 1) with its interval (clusters: the targets)."""
    rows = [{"by": "overall", "key": "all", "p_cue1": result.p_cue1_rate.estimate,
             "ci_low": result.p_cue1.low if result.p_cue1 else None,
             "ci_high": result.p_cue1.high if result.p_cue1 else None, "n_decided": result.p_cue1_rate.n,
             "n_ties": result.counts.get("tie", 0)}]
    for what, subset in (("cue pair", result.per_pair), ("template", result.per_template)):
        rows += [{"by": what, "key": s.key, "p_cue1": s.p_cue1_rate.estimate,
                  "ci_low": s.p_cue1.low if s.p_cue1 else None, "ci_high": s.p_cue1.high if s.p_cue1 else None,
                  "n_decided": s.n, "n_ties": s.n_ties} for s in subset]
    lab = result.labour
    if lab is not None:
        rows.append({"by": "labour statistics", "key": lab.table or "your table", "pearson_r": lab.pearson_r,
                     "pearson_low": lab.pearson_low, "pearson_high": lab.pearson_high, "pearson_p": lab.pearson_p,
                     "spearman_rho": lab.spearman_rho, "spearman_low": lab.spearman_low,
                     "spearman_high": lab.spearman_high, "n_targets": lab.n, "note": lab.reason})
    return rows


def csv_rows(result: TwoAFCClassifierResult) -> list[dict[str, Any]]:
    """One row per comparison: target, cues, template, the two sentences, their scores, the difference, outcome."""
    return [{"target": t.target, "cue_1": result.cue_pairs[c.pair][0], "cue_2": result.cue_pairs[c.pair][1],
             "template": c.template, "role": c.role, "sentence_1": c.sentence_1, "sentence_2": c.sentence_2,
             "score_1": c.score_1, "score_2": c.score_2, "diff": c.diff, "outcome": c.outcome}
            for t in result.targets for c in t.comparisons]


def export_files(result: TwoAFCClassifierResult, *, directory: Path | None = None) -> tuple[Path, Path]:
    """The CSV (summary rows, target rows, then one row per comparison) and the full JSON; their paths."""
    directory = directory or private_dir()
    safe_model = "".join(c if c.isalnum() else "-" for c in result.model_id)[-40:] or "model"
    rows = summary_first([*summary_rows(result), *({"by": "target", **r} for r in target_rows(result))],
                         csv_rows(result), item_type="comparison")
    return (write_csv(rows, directory / f"biastest-twoafc-classifier-{safe_model}-comparisons.csv"),
            write_json(result.to_dict(), directory / f"biastest-twoafc-classifier-{safe_model}-result.json"))


def targets_figure(result: TwoAFCClassifierResult) -> go.Figure:
    """P(cue 1) per target (% of its untied comparisons) with its Wilson interval (honest at 0 % and 100 %); hover
    gives the cluster-bootstrap interval, the counts and the mean score difference."""
    shown = sorted((t for t in result.targets if t.estimate is not None), key=lambda t: -t.estimate)
    x = [t.estimate for t in shown]
    plus = [t.p_cue1_rate.high - t.estimate for t in shown]
    minus = [t.estimate - t.p_cue1_rate.low for t in shown]
    def boot(t: Any) -> str:
        c = t.p_cue1
        return "no interval" if c is None or c.low is None else f"{c.low:.1f}–{c.high:.1f}%"

    custom = [[hover_safe(t.target), f"{t.estimate:.1f}", f"{t.p_cue1_rate.low:.1f}–{t.p_cue1_rate.high:.1f}%", boot(t),
               t.counts.get("cue-1", 0), t.counts.get("cue-2", 0), t.counts.get("tie", 0),
               "—" if t.diff is None else f"{t.diff.estimate:+.4f}"] for t in shown]
    cue1 = hover_safe(result.cue1_name)
    fig = go.Figure(go.Scatter(
        x=x, y=[hover_safe(t.target) for t in shown], mode="markers", marker={"size": 9, "color": NEUTRAL},
        customdata=custom, name="target",
        error_x={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1},
        hovertemplate=("<b>%{customdata[0]}</b><br>P(" + cue1 + " cue's sentence higher): %{customdata[1]}% "
                       "(Wilson %{customdata[2]}; cluster bootstrap %{customdata[3]})<br>won by cue 1: "
                       "%{customdata[4]} · by cue 2: %{customdata[5]} · ties: %{customdata[6]}<br>mean score "
                       "difference: %{customdata[7]}<extra></extra>")))
    fig.add_vline(x=50, line_dash="dot", line_color="#94a3b8")
    fig.update_layout(title=f"P({cue1} cue's sentence scores higher) per target (50% = no preference)",
                      xaxis_title=f"P({cue1} cue), % of untied comparisons", xaxis_range=[-2, 102],
                      yaxis={"autorange": "reversed"}, font_family=FONT, height=max(320, 22 * len(shown) + 120),
                      margin={"l": 10, "r": 10, "t": 60, "b": 50}, showlegend=False)
    return fig
