"""How an audit runs the 2AFC test of a chat model: its items are the cell's 2AFC specification; its table row."""

from __future__ import annotations

from typing import Any

from biastest.measures.base import AuditUse
from biastest.measures.chat_twoafc.run import TwoAFCChatItems

__all__ = ["AUDIT_USE", "STATISTIC", "audit_row"]

#: What the ``score`` column of a row holds.
STATISTIC = "Pearson r of P(female cue | occupation) with % women (BLS), bootstrap over targets"


def audit_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    """Pearson r with its bootstrap interval; P(cue 1), refusals and position bias go in the note."""
    counts = r["counts"]
    n_answers = sum(counts.values())
    n_parseable = counts.get("cue-1", 0) + counts.get("cue-2", 0)
    rates = {"P(cue 1)": r["p_cue1_rate"], "refusal rate": r["refusal_rate"],
             "unparseable rate": r["unparseable_rate"], "position bias": r["position_bias"]}
    note = "; ".join(f"{k} {v['estimate']:.1f}%" for k, v in rates.items() if v.get("estimate") is not None)
    note = "; ".join(x for x in (f"template {r['template']['name']}", note) if x)
    row.update({"n": n_answers, "n_scored": n_parseable, "n_excluded": n_answers - n_parseable,
                "model_kind": "chat", "note": note})
    lab = r.get("labour")
    if lab is None:
        row["note"] = "; ".join(("no target in the labour table", note))
        return
    row.update({"score": lab["pearson_r"], "ci_low": lab["pearson_low"], "ci_high": lab["pearson_high"],
                "ci_method": "percentile bootstrap over targets", "confidence": lab["confidence"],
                "p_value": lab["pearson_p"], "clusters": "target", "n_clusters": lab["n"]})
    if lab["reason"]:
        row["note"] = "; ".join((lab["reason"], note))


#: The measure's use in an audit (``MEASURE.extra["audit"]``); never a model's default (a chat model is listed).
AUDIT_USE = AuditUse(spec_type="twoafc", items=lambda r: TwoAFCChatItems(r["spec"]), row=audit_row,
                     statistic=STATISTIC, default=False)
