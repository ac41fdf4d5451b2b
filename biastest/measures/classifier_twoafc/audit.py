"""How an audit runs a classifier's 2AFC on occupations: its items are the cell's 2AFC specification; its table row
(the score is Pearson r of P(female cue | occupation) with % women, as the chat model's 2AFC)."""

from __future__ import annotations

from typing import Any

from biastest.measures.base import AuditUse
from biastest.measures.classifier_twoafc.run import TwoAFCClassifierItems

__all__ = ["AUDIT_USE", "STATISTIC", "audit_row"]

#: What the ``score`` column of a row holds.
STATISTIC = "Pearson r of P(female cue | occupation) with % women (labour table), bootstrap over targets"


def audit_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    """Pearson r with its bootstrap interval; P(cue 1) and the tie rate go in the note."""
    counts = r["counts"]
    n = sum(counts.values())
    decided = counts.get("cue-1", 0) + counts.get("cue-2", 0)
    rates = {"P(cue 1)": r["p_cue1_rate"], "tie rate": r["tie_rate"]}
    note = "; ".join(f"{k} {v['estimate']:.1f}%" for k, v in rates.items() if v.get("estimate") is not None)
    note = "; ".join(x for x in (f"label {r['label']}", note) if x)
    row.update({"n": n, "n_scored": decided, "n_excluded": n - decided, "model_kind": "classifier", "note": note})
    lab = r.get("labour")
    if lab is None:
        row["note"] = "; ".join(("no target in the labour table", note))
        return
    row.update({"score": lab["pearson_r"], "ci_low": lab["pearson_low"], "ci_high": lab["pearson_high"],
                "ci_method": "percentile bootstrap over targets", "confidence": lab["confidence"],
                "p_value": lab["pearson_p"], "clusters": "target", "n_clusters": lab["n"]})
    if lab["reason"]:
        row["note"] = "; ".join((lab["reason"], note))


#: The measure's use in an audit (``MEASURE.extra["audit"]``): a classifier listed in the grid runs it by default.
AUDIT_USE = AuditUse(spec_type="twoafc", items=lambda r: TwoAFCClassifierItems(r["spec"]), row=audit_row,
                     statistic=STATISTIC)
