"""How an audit runs the forced-choice measure: its items from a cell's frozen pairs, and its table row."""

from __future__ import annotations

from typing import Any

from biastest.measures.base import AuditUse
from biastest.measures.forced_choice.run import ForcedChoiceItems

__all__ = ["AUDIT_USE", "STATISTIC", "audit_row"]

#: What the ``score`` column of a forced-choice row holds.
STATISTIC = "stereotyped-choice share (%, among parseable answers)"


def audit_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    """The headline share (cluster bootstrap); the refusal, unparseable and position figures go in the note."""
    s, counts = r.get("share"), r["counts"]
    n_answers = sum(counts.values())
    n_parseable = counts.get("stereotyped", 0) + counts.get("anti-stereotyped", 0)
    rates = {k: (r.get(k) or {}).get("estimate") for k in ("refusal_rate", "unparseable_rate", "position_bias")}
    note = "; ".join(f"{k.replace('_', ' ')} {v:.1f}%" for k, v in rates.items() if v is not None)
    note = "; ".join(x for x in (f"template {r['template']['name']}", note) if x)
    row.update({"n": n_answers, "n_scored": n_parseable,
                "n_excluded": n_answers - n_parseable, "model_kind": "chat", "note": note or None})
    if s is not None:
        row.update({"score": s["estimate"], "ci_low": s["low"], "ci_high": s["high"],
                    "ci_method": s["interval_method"], "confidence": s["confidence"], "p_value": s["p_value"],
                    "clusters": s["cluster_by"], "n_clusters": s["n_clusters"], "design_effect": s["design_effect"]})
        if not s["interval_shown"]:
            row["note"] = "; ".join(x for x in (s["reason"], note) if x)


#: The measure's use in an audit (``MEASURE.extra["audit"]``).
AUDIT_USE = AuditUse(spec_type="bias", items=lambda r: ForcedChoiceItems(r["pairs"], r["spec"]), row=audit_row,
                     statistic=STATISTIC)
