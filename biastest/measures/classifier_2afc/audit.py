"""How an audit runs the classifier 2AFC: its items are the cell's bias specification (the sentences come from the
measure's templates); its table row (the share of pairs group 1's sentence wins, with its cluster interval)."""

from __future__ import annotations

from typing import Any

from biastest.measures.base import AuditUse
from biastest.measures.classifier_2afc.run import Classifier2AFCItems

__all__ = ["AUDIT_USE", "STATISTIC", "audit_row"]

#: What the ``score`` column of a row holds.
STATISTIC = "share of pairs in which group 1's sentence scores higher (%), cluster bootstrap"


def audit_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    """The share (ties apart) with its cluster interval and sign test; the mean difference and the sign-flip p in
    the note."""
    share, diff = r.get("share"), r.get("diff")
    notes = [f"label {r['positive_label']}"]
    if diff is not None:
        notes.append(f"mean difference {diff['estimate']:+.4f}")
    if r.get("permutation_p") is not None:
        notes.append(f"sign-flip p {r['permutation_p']:.3g}")
    if r["n_ties"]:
        notes.append(f"{r['n_ties']} ties")
    row.update({"n": r["n_pairs"], "n_scored": r["n_scored"] - r["n_ties"],
                "n_excluded": r["n_pairs"] - r["n_scored"] + r["n_ties"], "model_kind": "classifier"})
    if share is None:
        row["note"] = "; ".join(["no pair was decided (all tied or unscored)", *notes])
        return
    row.update({"score": share["estimate"], "ci_low": share["low"], "ci_high": share["high"],
                "ci_method": share["interval_method"], "confidence": share["confidence"],
                "p_value": share["p_value"], "clusters": share["cluster_by"], "n_clusters": share["n_clusters"],
                "design_effect": share["design_effect"], "note": "; ".join([*([share["reason"]] if share["reason"]
                                                                              else []), *notes])})


#: The measure's use in an audit: a text classifier runs it on every bias specification of the grid.
AUDIT_USE = AuditUse(spec_type="bias", items=lambda r: Classifier2AFCItems(r["spec"]), row=audit_row,
                     statistic=STATISTIC)
