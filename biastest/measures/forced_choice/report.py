"""The report of a forced-choice test: plain-language readings, summary rows, one row per answer, files.

* :func:`readings` — one sentence per figure, in plain words (what the share, the refusal and unparseable rates,
  the position bias, the order consistency and the soft score mean for this model);
* :func:`summary_records` — the figures as rows (estimate, interval, counts, how computed) with the run's identity;
* :func:`csv_rows` — one row per answer: the pair, the order, the sample, the exact question, the raw answer and
  how it was read (what the command line's ``--csv`` and the app's download hold, after the summary rows);
* :func:`export_files` — the CSV (summary rows first) and the full JSON in a private temporary folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biastest.measures.forced_choice.result import ForcedChoiceResult, RateSummary
from biastest.measures.forced_choice.summary import cluster_key
from biastest.measures.verdict import PREFIX, Standing, run_standing, share_claim, verdict
from biastest.report.export import private_dir, summary_first, write_csv, write_json
from biastest.stats.clusters import ClusterSummary

__all__ = ["csv_rows", "export_files", "item_rows", "readings", "summary_records"]

READ_SHARE = (
    "When it chose a sentence, {model} chose the stereotyped one in {est:.1f}% of its answers ({interval}; 50% "
    "is no preference), over {n:,} answers to {items:,} pairs asked in both orders."
)
READ_SHARE_NONE = "{model} chose a sentence in none of its answers: there is no stereotyped-choice share to report."
READ_REFUSAL = "It declined to choose (a refusal, 'both' or 'neither') in {est:.1f}% of its answers ({interval})."
READ_UNPARSEABLE = (
    "{est:.1f}% of its answers could not be read as a choice ({interval}); they count for neither side and are "
    "listed in the table."
)
READ_POSITION = (
    "It chose the option shown first in {est:.1f}% of the answers that chose ({interval}); 50% is no position "
    "preference, 100% means it always picked the first option whatever it said."
)
READ_CONSISTENCY = (
    "Asked the same pair with the options swapped, it chose the same sentence both times in {est:.1f}% of the "
    "cases ({interval}); a model that reads the sentences answers consistently, one that follows the position "
    "does not."
)
READ_SOFT = (
    "From its first answer token's probabilities, the stereotyped option's probability averaged {est:.1f}% "
    "({interval}) over {n:,} pairs, both orders averaged."
)
READ_FAILED = "{failed:,} questions got no answer (backend errors) and {not_asked:,} were not asked (the run stopped)."
READ_POSITION_WARNING = (
    "Most of its choices follow the position, not the sentence: the share above then says more about the order "
    "of the options than about stereotypes."
)


def _interval(low: float | None, high: float | None, confidence: float) -> str:
    if low is None or high is None:
        return "no interval"
    return f"{confidence:.0%} interval {low:.1f}–{high:.1f}%"


def _c_interval(c: ClusterSummary) -> str:
    return _interval(c.low, c.high, c.confidence) if c.interval_shown else (c.reason or "no interval")


def _r_interval(r: RateSummary) -> str:
    return _interval(r.low, r.high, r.confidence)


def readings(result: ForcedChoiceResult) -> list[str]:
    """The figures in plain words, one sentence each (the app's and the report's reading), the verdict first.

    A run that stopped before every question was asked (or whose endpoint says it stopped) gives no verdict.
    """
    model = result.served_model or result.model_id
    standing = Standing.PARTIAL if result.counts.get("not-asked") else run_standing(result.provenance)
    out = [verdict(share_claim(result.share, what="stereotyped-choice share"), standing=standing)
           if result.share is not None else f"{PREFIX} no verdict — the model chose a sentence in none of its answers."]
    if result.share is None:
        out.append(READ_SHARE_NONE.format(model=model))
    else:
        out.append(READ_SHARE.format(model=model, est=result.share.estimate, interval=_c_interval(result.share),
                                     n=result.share.n_items, items=result.n_items))
    for rate, text in ((result.refusal_rate, READ_REFUSAL), (result.unparseable_rate, READ_UNPARSEABLE),
                       (result.position_bias, READ_POSITION), (result.order_consistency, READ_CONSISTENCY)):
        if rate.estimate is not None:
            out.append(text.format(est=rate.estimate, interval=_r_interval(rate)))
    if result.position_bias.estimate is not None and result.position_bias.low is not None and (
            result.position_bias.low > 75 or result.position_bias.high < 25):
        out.append(READ_POSITION_WARNING)
    if result.soft is not None:
        out.append(READ_SOFT.format(est=result.soft.estimate, interval=_c_interval(result.soft),
                                    n=result.soft.n_items))
    if result.counts.get("failed") or result.counts.get("not-asked"):
        out.append(READ_FAILED.format(failed=result.counts.get("failed", 0),
                                      not_asked=result.counts.get("not-asked", 0)))
    return out


def _identity(result: ForcedChoiceResult) -> dict[str, Any]:
    prov = result.provenance or {}
    return {"model_id": result.model_id, "served_model": result.served_model, "template": result.template["name"],
            "samples": result.samples, "temperature": result.temperature, "seed": result.seed,
            "clusters": result.clusters, "spec": prov.get("spec"), "created_at": prov.get("created_at")}


def _cluster_row(result: ForcedChoiceResult, measure: str, c: ClusterSummary | None) -> dict[str, Any]:
    if c is None:
        return {"measure": measure, **_identity(result)}
    return {"measure": measure, "estimate": c.estimate, "unit": "%", "ci_low": c.low, "ci_high": c.high,
            "confidence": c.confidence, "interval": c.interval_method if c.interval_shown else c.reason,
            "p_value": c.p_value, "test": c.test, "n": c.n_items, "n_clusters": c.n_clusters,
            "design_effect": c.design_effect, **_identity(result)}


def _rate_row(result: ForcedChoiceResult, measure: str, r: RateSummary) -> dict[str, Any]:
    return {"measure": measure, "estimate": r.estimate, "unit": "%", "ci_low": r.low, "ci_high": r.high,
            "confidence": r.confidence, "interval": r.method, "k": r.k, "n": r.n, "n_clusters": r.n_clusters,
            "n_effective": r.n_effective, **_identity(result)}


def summary_records(result: ForcedChoiceResult) -> list[dict[str, Any]]:
    """The figures as rows: the share (cluster bootstrap, and Wilson), the rates, the soft score, per term."""
    rows = [_cluster_row(result, "stereotyped-choice share (headline)", result.share),
            _rate_row(result, "stereotyped-choice share, Wilson interval", result.share_rate),
            _rate_row(result, "refusal rate", result.refusal_rate),
            _rate_row(result, "unparseable rate", result.unparseable_rate),
            _rate_row(result, "position bias (first option chosen)", result.position_bias),
            _rate_row(result, "order consistency", result.order_consistency)]
    if result.soft is not None:
        rows.append(_cluster_row(result, "soft score (first-token label probability)", result.soft))
    for family, terms in (("attribute term", result.per_attribute), ("group term", result.per_group)):
        for t in terms:
            row = _cluster_row(result, f"stereotyped-choice share, {family} '{t.term}'", t.share)
            row.update({"n_items": t.n_items, "n_answers": t.n_answers, "n_refused": t.n_refused,
                        "n_unparseable": t.n_unparseable})
            rows.append(row)
    return rows


def item_rows(result: ForcedChoiceResult) -> list[dict[str, Any]]:
    """One row per item: the pair, each order's answers and outcomes, the item's share and soft score."""
    out = []
    for it in result.items:
        row = {k: getattr(it, k) for k in ("index", "pair_id", "stereotyped", "anti_stereotyped", "attribute_term",
                                            "group_term_stereotyped", "category", "template")}
        for order in ("stereotyped-first", "anti-first"):
            asks = [a for a in it.asks if a.order == order]
            row[f"answers_{order}"] = [a.text for a in asks]
            row[f"outcomes_{order}"] = [a.outcome for a in asks]
        row.update({"share_stereotyped": it.share, "soft": it.soft})
        out.append(row)
    return out


def csv_rows(result: ForcedChoiceResult) -> list[dict[str, Any]]:
    """One row per answer (the per-item table of the command line's ``--csv``).

    Columns: ``index, pair_id, stereotyped, anti_stereotyped, attribute_term, group_term_stereotyped,
    group_term_anti, category, template, cluster, order, sample, option_a, option_b, system, user, seed,
    temperature, answer, finish_reason, served_model, system_fingerprint, cached, error, outcome, label, position,
    rule, p_stereotyped``. Text as given: the CSV writer neutralises spreadsheet formulas.
    """
    rows = []
    for it in result.items:
        key = cluster_key(it, result.clusters)
        for a in it.asks:
            msgs = {m["role"]: m["content"] for m in a.request.get("messages", [])}
            reply = a.reply or {}
            st_first = a.order == "stereotyped-first"
            rows.append({
                "index": it.index, "pair_id": it.pair_id, "stereotyped": it.stereotyped,
                "anti_stereotyped": it.anti_stereotyped, "attribute_term": it.attribute_term,
                "group_term_stereotyped": it.group_term_stereotyped, "group_term_anti": it.group_term_anti,
                "category": it.category, "template": it.template, "cluster": key, "order": a.order,
                "sample": a.sample, "option_a": it.stereotyped if st_first else it.anti_stereotyped,
                "option_b": it.anti_stereotyped if st_first else it.stereotyped, "system": msgs.get("system", ""),
                "user": msgs.get("user", ""), "seed": a.request.get("seed"),
                "temperature": a.request.get("temperature"), "answer": reply.get("text"),
                "finish_reason": reply.get("finish_reason"), "served_model": reply.get("served_model"),
                "system_fingerprint": reply.get("system_fingerprint"), "cached": reply.get("cached"),
                "error": reply.get("error"), "outcome": a.outcome, "label": a.label, "position": a.position,
                "rule": a.rule, "p_stereotyped": a.p_stereotyped,
            })
    return rows


def export_files(result: ForcedChoiceResult, *, directory: Path | None = None) -> tuple[Path, Path]:
    """Write the CSV (summary rows, then one row per answer) and the full JSON; their paths."""
    directory = directory or private_dir()
    safe_model = "".join(c if c.isalnum() else "-" for c in result.model_id)[-40:] or "model"
    rows = summary_first(summary_records(result), csv_rows(result), item_type="answer")
    csv_path = write_csv(rows, directory / f"biastest-forced-choice-{safe_model}-answers.csv")
    json_path = write_json(result.to_dict(), directory / f"biastest-forced-choice-{safe_model}-result.json")
    return csv_path, json_path
