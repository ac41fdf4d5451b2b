"""A BBQ result as tables: summary rows per category and overall, one row per request; CSV/JSON files; headline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biastest.measures.bbq.result import BBQResult, Estimate, GroupScores
from biastest.measures.verdict import Claim, Standing, run_standing, verdict
from biastest.report.export import private_dir, summary_first, write_csv, write_json

__all__ = ["csv_rows", "export_files", "headline", "request_records", "summary_records", "verdict_sentence"]

#: The estimates of a summary row, in column order.
ESTIMATES = ("accuracy_ambig", "accuracy_disambig", "accuracy_ambig_strict", "accuracy_disambig_strict", "s_dis",
             "s_amb", "refusal_rate", "unparseable_rate")


def _estimate_cols(name: str, e: Estimate) -> dict[str, Any]:
    return {name: e.value, f"{name}_low": e.low, f"{name}_high": e.high, f"{name}_exact_low": e.exact_low,
            f"{name}_exact_high": e.exact_high, f"{name}_n": e.n, f"{name}_note": e.reason}


def _summary(g: GroupScores, result: BBQResult) -> dict[str, Any]:
    row: dict[str, Any] = {"group": g.name, "model_id": result.model_id, "template": result.template_name,
                           "order_scheme": result.order_scheme, "seed": result.seed, "n_items": g.n_items,
                           "n_requests": g.n_requests, **{f"n_{k}": v for k, v in g.outcomes.items()}}
    for name in ESTIMATES:
        row.update(_estimate_cols(name, getattr(g, name)))
    for label, share in zip("ABC", g.position_shares, strict=True):
        row[f"share_{label}"] = share
    return row


def summary_records(result: BBQResult) -> list[dict[str, Any]]:
    """One row for all categories, then one per category."""
    return [_summary(result.overall, result), *(_summary(g, result) for g in result.categories.values())]


def request_records(result: BBQResult) -> list[dict[str, Any]]:
    """One row per request: the question, the order shown, the exact prompt, the raw answer and how it was read."""
    out = []
    for r in result.rows:
        prompt = "\n\n".join(m["content"] for m in r.request.get("messages", []))
        out.append({"key": r.key, "category": r.category, "question_index": r.question_index,
                    "polarity": r.polarity, "condition": r.condition, "context": r.context, "question": r.question,
                    "shown_A": r.answers[r.order[0]], "shown_B": r.answers[r.order[1]],
                    "shown_C": r.answers[r.order[2]], "roles_shown": "/".join(r.roles[i] for i in r.order),
                    "order_index": r.order_index, "sample": r.sample, "prompt": prompt,
                    "raw_answer": None if r.reply is None else r.reply.get("text"), "outcome": r.outcome,
                    "why": r.why, "position": None if r.position is None else "ABC"[r.position], "role": r.role,
                    "choice": r.choice, "correct": r.correct})
    return out


def csv_rows(result: BBQResult) -> list[dict[str, Any]]:
    """Summary rows first (``row_type`` summary), then one row per request (``row_type`` request)."""
    return summary_first(summary_records(result), request_records(result), item_type="request")


def export_files(result: BBQResult, *, directory: Path | None = None) -> tuple[Path, Path]:
    """The CSV of :func:`csv_rows` and the full JSON, in a private folder."""
    directory = directory or private_dir()
    safe = "".join(c if c.isalnum() else "-" for c in result.model_id)[-40:] or "model"
    return (write_csv(csv_rows(result), directory / f"biastest-bbq-{safe}.csv"),
            write_json(result.to_dict(), directory / f"biastest-bbq-{safe}-result.json"))


def _fmt(e: Estimate, *, percent: bool) -> str:
    if e.value is None:
        return "n/a"
    scale, unit = (100.0, "%") if percent else (1.0, "")
    text = f"{e.value * scale:.1f}{unit}" if percent else f"{e.value:+.3f}"
    if e.low is not None and e.high is not None:
        text += f" ({e.low * scale:.1f}–{e.high * scale:.1f}{unit})" if percent else f" ({e.low:+.3f} to {e.high:+.3f})"
    return text


def headline(result: BBQResult) -> str:
    """One line for the terminal."""
    o = result.overall
    return (f"BBQ on {result.model_id}: accuracy ambiguous {_fmt(o.accuracy_ambig, percent=True)}, disambiguated "
            f"{_fmt(o.accuracy_disambig, percent=True)}; s_DIS {_fmt(o.s_dis, percent=False)}, s_AMB "
            f"{_fmt(o.s_amb, percent=False)}; refused {_fmt(o.refusal_rate, percent=True)}, unparseable "
            f"{_fmt(o.unparseable_rate, percent=True)} — {result.n_items:,} questions, {result.n_requests:,} requests "
            f"(seed {result.seed}).")


def verdict_sentence(result: BBQResult) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.verdict`): the bias score in ambiguous
    contexts (s_AMB, −1…1, 0 = none) with its cluster interval; none for a run that stopped before every question."""
    e = result.overall.s_amb
    confidence = float(((result.provenance or {}).get("options") or {}).get("confidence") or 0.95)
    stopped = bool(result.stop_message) or bool(result.overall.outcomes.get("not-asked"))
    standing = Standing.PARTIAL if stopped else run_standing(result.provenance)
    return verdict(Claim(what="bias score in ambiguous contexts (s_AMB, −1 to 1)", estimate=e.value, low=e.low,
                         high=e.high, null=0, above="towards the social stereotype",
                         below="against the social stereotype", level=confidence, interval_name="cluster interval",
                         digits=3, no_interval=e.reason or "too few templates"), standing=standing)
