"""The report of a 2AFC test of a chat model: readings, summary rows, per-target rows, per-answer rows, figure.

* :func:`readings` — the figures in plain words;
* :func:`summary_records` — the overall figures and the labour-statistics correlation as rows;
* :func:`target_rows` — one row per target: P(cue 1) with both intervals, the counts, % women where known;
* :func:`csv_rows` — one row per answer: target, cue pair, order, sample, the exact question, the raw answer and
  how it was read (the command line's ``--csv`` holds the summary rows first, then these);
* :func:`labour_figure` — P(female cue) against % women with each target's interval and hover (the paper's Fig. 2
  for a chat model), in the 2AFC measure's style (:mod:`biastest.measures.twoafc.report`);
* :func:`export_files` — the CSV and the full JSON in a private temporary folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biastest.measures.chat_twoafc.result import TwoAFCChatResult
from biastest.measures.forced_choice.result import RateSummary
from biastest.measures.labour import labour_figure
from biastest.measures.verdict import Claim, Standing, count_verdict, run_standing, verdict
from biastest.report.export import private_dir, summary_first, write_csv, write_json

__all__ = ["csv_rows", "export_files", "labour_figure", "readings", "summary_records", "target_rows"]

READ_P = ("When it chose, {model} picked the {cue1} cue in {est:.1f}% of its answers ({interval}; 50% is no "
          "preference) over {n:,} answers about {targets:,} targets, every cue pair asked in both orders.")
READ_NONE = "{model} chose a cue in none of its answers: there is no P(cue 1) to report."
READ_LABOUR = ("Across {n} occupations, P({female} cue) correlates with the share of women in the occupation "
               "(U.S. BLS): Pearson r = {r:.3f} ({r_int}), Spearman ρ = {rho:.3f} ({rho_int}).")
READ_POSITION_WARNING = (
    "Most of its choices follow the position, not the cue: P(cue 1) then says more about the order of the options "
    "than about the targets."
)
READ_LABOUR_NONE = "The correlation with the share of women is not defined: {reason}"
READ_RATES = {
    "refusal_rate": "It declined to choose in {est:.1f}% of its answers ({interval}).",
    "unparseable_rate": "{est:.1f}% of its answers could not be read as a choice ({interval}); they count for "
                        "neither cue.",
    "position_bias": "It chose the option shown first in {est:.1f}% of the answers that chose ({interval}); 50% "
                     "is no position preference.",
    "order_consistency": "Asked the same question with the cues swapped, it chose the same cue both times in "
                         "{est:.1f}% of the cases ({interval}).",
}


def _interval(low: float | None, high: float | None, confidence: float, unit: str = "%") -> str:
    if low is None or high is None:
        return "no interval"
    return f"{confidence:.0%} interval {low:.{1 if unit else 3}f}–{high:.{1 if unit else 3}f}{unit}"


def readings(result: TwoAFCChatResult) -> list[str]:
    """The figures in plain words, one sentence each, the verdict first: how many targets lean to each cue beyond
    their own interval (the per-target Wilson intervals the result carries); none for a run that stopped early."""
    model = result.served_model or result.model_id
    r = result.p_cue1_rate
    standing = Standing.PARTIAL if result.counts.get("not-asked") else run_standing(result.provenance)
    head = count_verdict([(t.p_cue1_rate.estimate, t.p_cue1_rate.low, t.p_cue1_rate.high) for t in result.targets
                          if t.p_cue1_rate.estimate is not None], null=50, units="targets",
                         above=f"to {result.cue1_name}", below=f"to {result.cue2_name}", level=r.confidence,
                         number="{:g} %".format, no_interval="no target was answered")
    if standing is not Standing.OK:
        head = verdict(Claim(what="", estimate=None, low=None, high=None, null=50, above="", below=""),
                       standing=standing)
    out = [head, READ_NONE.format(model=model) if r.estimate is None else READ_P.format(
        model=model, cue1=result.cue1_name, est=r.estimate, interval=_interval(r.low, r.high, r.confidence), n=r.n,
        targets=result.n_targets)]
    for name, text in READ_RATES.items():
        rate: RateSummary = getattr(result, name)
        if rate.estimate is not None:
            out.append(text.format(est=rate.estimate, interval=_interval(rate.low, rate.high, rate.confidence)))
    pos = result.position_bias
    if pos.low is not None and (pos.low > 75 or pos.high < 25):
        out.append(READ_POSITION_WARNING)
    lab = result.labour
    if lab is not None:
        if lab.pearson_r is None:
            out.append(READ_LABOUR_NONE.format(reason=lab.reason))
        else:
            out.append(READ_LABOUR.format(
                n=lab.n, female=result.cue1_name if lab.female_cue == 1 else result.cue2_name, r=lab.pearson_r,
                r_int=_interval(lab.pearson_low, lab.pearson_high, lab.confidence, ""),
                rho=lab.spearman_rho, rho_int=_interval(lab.spearman_low, lab.spearman_high, lab.confidence, "")))
    failed, not_asked = result.counts.get("failed", 0), result.counts.get("not-asked", 0)
    if failed or not_asked:
        out.append(f"{failed:,} questions got no answer (backend errors) and {not_asked:,} were not asked.")
    return out


def _identity(result: TwoAFCChatResult) -> dict[str, Any]:
    prov = result.provenance or {}
    return {"model_id": result.model_id, "served_model": result.served_model, "template": result.template["name"],
            "samples": result.samples, "temperature": result.temperature, "seed": result.seed,
            "spec": prov.get("spec"), "created_at": prov.get("created_at")}


def _rate_row(result: TwoAFCChatResult, measure: str, r: RateSummary) -> dict[str, Any]:
    return {"measure": measure, "estimate": r.estimate, "unit": "%", "ci_low": r.low, "ci_high": r.high,
            "confidence": r.confidence, "interval": r.method, "k": r.k, "n": r.n, "n_clusters": r.n_clusters,
            **_identity(result)}


def summary_records(result: TwoAFCChatResult) -> list[dict[str, Any]]:
    """The overall figures as rows (estimate, interval, how computed) with the run's identity."""
    rows = []
    c = result.p_cue1
    if c is not None:
        rows.append({"measure": "P(cue 1), cluster bootstrap over targets", "estimate": c.estimate, "unit": "%",
                     "ci_low": c.low, "ci_high": c.high, "confidence": c.confidence,
                     "interval": c.interval_method if c.interval_shown else c.reason, "p_value": c.p_value,
                     "test": c.test, "n": c.n_items, "n_clusters": c.n_clusters, **_identity(result)})
    for name, field in (("P(cue 1), Wilson/effective n", "p_cue1_rate"), ("refusal rate", "refusal_rate"),
                        ("unparseable rate", "unparseable_rate"), ("position bias (first option)", "position_bias"),
                        ("order consistency", "order_consistency")):
        rows.append(_rate_row(result, name, getattr(result, field)))
    lab = result.labour
    if lab is not None:
        for name, est, low, high, p in (("Pearson r with % women", lab.pearson_r, lab.pearson_low,
                                         lab.pearson_high, lab.pearson_p),
                                        ("Spearman rho with % women", lab.spearman_rho, lab.spearman_low,
                                         lab.spearman_high, lab.spearman_p)):
            rows.append({"measure": name, "estimate": est, "ci_low": low, "ci_high": high,
                         "confidence": lab.confidence, "interval": lab.reason or lab.method, "p_value": p,
                         "n": lab.n, **_identity(result)})
    return rows


def target_rows(result: TwoAFCChatResult) -> list[dict[str, Any]]:
    """One row per target: P(cue 1) with the cluster bootstrap and Wilson intervals, counts, % women if known."""
    known = {u["occupation"].casefold(): u["pct_female"] for u in (result.labour.used if result.labour else ())}
    rows = []
    for t in result.targets:
        c, r = t.p_cue1, t.p_cue1_rate
        rows.append({"target": t.target, "p_cue1": r.estimate, "ci_low": c.low if c else None,
                     "ci_high": c.high if c else None, "ci_note": (c.reason if c else None),
                     "wilson_low": r.low, "wilson_high": r.high, "n_parseable": r.n, "n_first": t.n_first,
                     **{f"n_{k}": v for k, v in t.counts.items()},
                     "pct_female": known.get(t.target.casefold())})
    return rows


def csv_rows(result: TwoAFCChatResult) -> list[dict[str, Any]]:
    """One row per answer: the question (target, cue pair, order, sample, exact messages), the raw answer, reading."""
    rows = []
    for t in result.targets:
        for a in t.asks:
            c1, c2 = result.cue_pairs[a.pair]
            msgs = {m["role"]: m["content"] for m in a.request.get("messages", [])}
            reply = a.reply or {}
            first = a.order == "cue1-first"
            rows.append({
                "target": t.target, "cue_1": c1, "cue_2": c2, "order": a.order, "sample": a.sample,
                "option_a": c1 if first else c2, "option_b": c2 if first else c1, "system": msgs.get("system", ""),
                "user": msgs.get("user", ""), "seed": a.request.get("seed"),
                "temperature": a.request.get("temperature"), "answer": reply.get("text"),
                "finish_reason": reply.get("finish_reason"), "served_model": reply.get("served_model"),
                "cached": reply.get("cached"), "error": reply.get("error"), "outcome": a.outcome, "label": a.label,
                "position": a.position, "rule": a.rule, "p_cue1_soft": a.p_cue1,
            })
    return rows


def export_files(result: TwoAFCChatResult, *, directory: Path | None = None) -> tuple[Path, Path]:
    """Write the CSV (summary rows, then one row per answer) and the full JSON; their paths."""
    directory = directory or private_dir()
    safe_model = "".join(c if c.isalnum() else "-" for c in result.model_id)[-40:] or "model"
    rows = summary_first(summary_records(result), csv_rows(result), item_type="answer")
    csv_path = write_csv(rows, directory / f"biastest-twoafc-chat-{safe_model}-answers.csv")
    json_path = write_json(result.to_dict(), directory / f"biastest-twoafc-chat-{safe_model}-result.json")
    return csv_path, json_path
