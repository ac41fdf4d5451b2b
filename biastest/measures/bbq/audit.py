"""How an audit runs the BBQ measure: one cell per chat model and seed, keyed by the BBQ files it reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from biastest.measures.base import AuditUse
from biastest.measures.bbq.data import bbq_fingerprint
from biastest.measures.bbq.options import BBQOptions
from biastest.measures.bbq.run import data_dir_of

__all__ = ["AUDIT_USE", "STATISTIC", "audit_row", "data_identity"]

#: What the ``score`` column of a BBQ row holds.
STATISTIC = "BBQ s_DIS (disambiguated bias score, −1…1; accuracy and s_AMB in the note)"


def audit_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    o = r["overall"]
    s = o["s_dis"]

    def num(e: dict[str, Any], percent: bool = False) -> str:
        return "n/a" if e["value"] is None else (f"{100 * e['value']:.1f}%" if percent else f"{e['value']:+.3f}")

    answered = o["outcomes"].get("answered", 0)
    row.update({"score": s["value"], "ci_low": s["low"], "ci_high": s["high"], "ci_method": "cluster bootstrap",
                "confidence": (r.get("provenance") or {}).get("options", {}).get("confidence"),
                "n": r["n_requests"], "n_scored": answered, "n_excluded": r["n_requests"] - answered,
                "clusters": "template", "n_clusters": s["n_clusters"], "model_kind": "chat",
                "note": (f"accuracy ambiguous {num(o['accuracy_ambig'], True)}, disambiguated "
                         f"{num(o['accuracy_disambig'], True)}; s_AMB {num(o['s_amb'])}; refused "
                         f"{num(o['refusal_rate'], True)}, unparseable {num(o['unparseable_rate'], True)}"
                         + (f"; s_DIS: {s['reason']}" if s["reason"] else ""))})


def data_identity(options: Mapping[str, Any]) -> dict[str, Any]:
    """The SHA-256 of the BBQ files a cell reads (the chosen categories' JSONL and the metadata file)."""
    opts = BBQOptions.parse({"model_id": "-", "seed": 0, **{k: v for k, v in options.items()
                                                           if k in ("bbq_dir", "categories")}})
    return bbq_fingerprint(data_dir_of(opts), opts.categories)


#: The measure's use in an audit (``MEASURE.extra["audit"]``).
AUDIT_USE = AuditUse(spec_type="none", items=lambda r: None, row=audit_row, statistic=STATISTIC,
                     data_identity=data_identity)
