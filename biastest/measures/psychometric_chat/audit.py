"""How an audit runs the psychometric test of a chat model: one cell per model, specification and seed, its score
the **PSE shift** of the first context after the reference (the continuum and the contexts come from the grid's
options; the specification only files the cell).

Why one shift and not one cell per context: a cell is one run of the measure (its answers, fits and shifts belong
together, the fits share one guess/lapse rate), and the question a grid asks is whether the context moves the model's
category boundary. Order the contexts so that the one you compare with the reference comes right after it; every
context's PSE and shift are in the row's note and the cell's file.
"""

from __future__ import annotations

from typing import Any

from biastest.measures.base import AuditUse
from biastest.measures.psychometric_chat.result import PARSEABLE
from biastest.measures.psychometric_chat.run import PsychometricItems

__all__ = ["AUDIT_USE", "STATISTIC", "audit_row"]

#: What the ``score`` column of a row holds.
STATISTIC = "PSE shift (α) of the first non-reference context from the reference context, bootstrap interval"


def _pse(fit: dict[str, Any]) -> str:
    return "not fitted" if fit.get("pse") is None else f"{fit['pse']:.3f}"


def audit_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    """The first non-reference context's PSE shift with its interval; every context's PSE and shift in the note."""
    summaries = r["summaries"]
    n = len(r["asks"])
    n_parseable = sum(a["outcome"] in PARSEABLE for a in r["asks"])
    parts = []
    for s in summaries:
        shift = s.get("shift") or {}
        tail = "" if s["reference"] else (f", shift {shift['shift']:+.3f}" if shift.get("shift") is not None
                                          else ", no shift")
        parts.append(f"{s['context']}: PSE {_pse(s['fit'])}{' (reference)' if s['reference'] else ''}{tail}")
    row.update({"n": n, "n_scored": n_parseable, "n_excluded": n - n_parseable, "model_kind": "chat",
                "note": "; ".join(parts)})
    first = next((s for s in summaries if not s["reference"]), None)
    shift = (first or {}).get("shift") or {}
    if shift.get("shift") is None:
        row["note"] = "; ".join(x for x in (shift.get("message") or "no PSE shift", row["note"]) if x)
        return
    ci = shift.get("shift_ci") or (None, None)
    row.update({"score": shift["shift"], "ci_low": ci[0], "ci_high": ci[1], "ci_method": f"{shift['bootstrap']} "
                "bootstrap", "confidence": shift["ci_level"]})


#: The measure's use in an audit; a chat model runs it only when the grid lists it.
AUDIT_USE = AuditUse(spec_type="twoafc", items=lambda r: PsychometricItems(None, r.get("spec")), row=audit_row,
                     statistic=STATISTIC, default=False)
