"""How an audit uses a measure: which specifications it takes, its items, its defaults and its table row.

A measure of :data:`biastest.measures.MEASURES` runs in an audit when it has an
:class:`~biastest.measures.base.AuditUse` (a record of the measures' layer, so a measure's folder can hold its
own): the measure brings one in ``MEASURE.extra["audit"]`` (a new measure does, e.g. forced-choice and the toy
measure of ``tests/test_toy_measure.py``), or, for the measures that were audited before the registry existed, the
audit's own :data:`BUILTIN_USES` reads their results into the table as before. ``extra["audit"] = False``
keeps a measure out of audits (the Bayesian measures: no single score per cell); ``extra["audit_refusal"]``
then says why, with ``{where}`` for the place in the grid.

Everything else — the measure's name, aliases, kind of model, options with their defaults and checks,
``run`` — comes from the :class:`~biastest.measures.base.Measure` record itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from biastest.measures import MEASURES, Measure
from biastest.measures.base import AuditUse
from biastest.measures.stereotype.run import StereotypeItems
from biastest.measures.stereotype.score import methods_for_kind
from biastest.measures.twoafc import TwoAFCItems
from biastest.measures.vlm import VLMItems
from biastest.measures.weat import MACItems, WEATItems
from biastest.models.lm import detect_model_kind
from biastest.options import DEFAULT_NOISE_SIGMA
from biastest.records import SentencePair, TestImage

__all__ = [
    "BUILTIN_USES",
    "CELL_FIELDS",
    "KIND_WORDS",
    "AuditUse",
    "audit_measures",
    "grid_fields",
    "items_for_kind",
    "use_of",
]

#: Option fields a cell fills itself (from its model entry, its seed and its method): a grid's ``options`` do not
#: set them. A cell tests one model, so the fields that name models (replicates, a corpus to train them on) are the
#: model entry's business, not an option.
CELL_FIELDS = ("model_id", "source", "revision", "endpoint", "tokenizer", "seed", "method", "replicates", "corpus",
               "n_replicates", "train_options")

#: How messages name the models of each kind.
KIND_WORDS = {"lm": "the language models", "vlm": "the vision-language models", "embeddings": "the embeddings",
              "chat": "the chat models", "classifier": "the text classifiers"}

#: The ``statistic`` column of a row, per cell scope (lm-endpoint and vlm-endpoint read as lm and vlm).
STATISTICS = {
    "lm": "stereotype score (%)",
    "lm-endpoint": "stereotype score (%)",
    "vlm": "bias score (%, soft)",
    "vlm-endpoint": "bias score (%, soft)",
    "weat": "WEAT effect size d",
    "2afc": "PSE per target word (no single score: see the cell file)",
}
#: What ``score`` holds for a vision-language model behind an endpoint that gave no probabilities.
STATISTIC_VLM_HARD = "bias score (%, single answers)"


def items_for_kind(kind: str, spec: Any, content: Mapping[str, Any] | None) -> dict[str, Any]:
    """The frozen items of a cell as records, per kind of model: pairs, images (with their root), or nothing.

    The measure's own ``items`` function wraps them in its items type.
    """
    if content is None:  # a 2AFC specification: its words are the items, whatever the kind of model
        return {"spec": spec}
    if kind == "lm":
        return {"pairs": [SentencePair.from_row(r) for r in content["pairs"]], "spec": spec}
    if kind == "vlm":
        return {"images": [TestImage.from_row(r) for r in content["images"]], "image_root": content["image_root"],
                "spec": spec}
    return {"spec": spec}


# --------------------------------------------------------------------------- rows of the built-in measures
def _clustered(row: dict[str, Any], c: dict[str, Any] | None, headline: bool) -> None:
    """The cluster columns; when the result's headline is design-based, its interval and test too.

    ``headline``: clusters that are not single items; single items resampled within strata (``n_strata`` > 1,
    results since issue 28) count too — the interval is then the one the result's main summary shows.
    """
    if c is None:  # a result saved before clusters existed
        return
    row.update({"clusters": c["cluster_by"], "n_clusters": c["n_clusters"], "design_effect": c["design_effect"]})
    if headline or int(c.get("n_strata") or 1) > 1:  # the headline interval and test are the design-based ones
        row.update({"ci_low": c["low"], "ci_high": c["high"], "ci_method": c["interval_method"],
                    "p_value": c["p_value"], "note": c["reason"]})


def _stereotype_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    o = r["overall"]
    row.update({"method": r["method"], "score": o["score"], "ci_low": o["ci_low"], "ci_high": o["ci_high"],
                "ci_method": o.get("ci_method"), "exact_ci_low": o.get("exact_ci_low"),
                "exact_ci_high": o.get("exact_ci_high"), "confidence": o["confidence"], "p_value": o["p_value"],
                "n": r["n_pairs"], "n_scored": r["n_scored"], "n_excluded": r["n_excluded"],
                "model_revision": r["model_revision"], "model_kind": r["model_kind"]})
    _clustered(row, r.get("overall_clustered"), r.get("clusters", "pair") != "pair")


def _vlm_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    soft = r.get("soft") is not None
    s = r["soft"] if soft else r["hard"]
    if not soft:  # an endpoint that gave no probabilities: its single answers are the score
        row["statistic"] = STATISTIC_VLM_HARD
    row.update({"method": r["method"], "score": s["score"], "ci_low": s["ci_low"], "ci_high": s["ci_high"],
                "ci_method": s.get("ci_method"), "exact_ci_low": s.get("exact_ci_low"),
                "exact_ci_high": s.get("exact_ci_high"), "confidence": s["confidence"], "p_value": s["p_value"],
                "n": r["n_images"], "n_scored": s["n"], "n_excluded": r["n_images"] - s["n"],
                "model_revision": r["model_revision"], "model_kind": r["model_kind"]})
    _clustered(row, r.get("soft_clustered" if soft else "hard_clustered"), r.get("clusters", "image") != "image")


def _weat_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    n_missing = sum(len(v) for v in r["missing"].values())
    n_used = len(r["x"]) + len(r["y"]) + len(r["a"]) + len(r["b"])
    ci = r.get("effect_size_ci") or (None, None)
    row.update({"score": r["effect_size"], "ci_low": ci[0], "ci_high": ci[1], "confidence": r.get("ci_level"),
                "ci_method": r.get("interval_method"),
                "p_value": r["p_value"], "n": n_used + n_missing, "n_scored": n_used, "n_excluded": n_missing,
                "model_kind": "embeddings"})


def _twoafc_row(r: dict[str, Any], row: dict[str, Any]) -> None:
    n_targets, n_dropped = len(r["targets"]), len(r["dropped_targets"])
    row.update({"n": n_targets + n_dropped, "n_scored": n_targets, "n_excluded": n_dropped,
                "model_kind": "embeddings"})


def _stereotype_prepare(values: dict[str, Any]) -> dict[str, Any]:
    """A method planned as ``auto`` (the kind could not be read then) is read now, or the cell fails saying why."""
    if values.get("method") != "auto":
        return values
    kind = detect_model_kind(values["model_id"], revision=values.get("revision"))
    return {**values, "method": methods_for_kind(kind)[0]}


def _weat_more(measure: Measure, options: Any, items: Any) -> dict[str, Any]:
    """WEAT's cell also holds MAC on the same words (as the command line's ``--test weat``)."""
    mac = measure.extra["mac"]
    result = mac["run"](mac["Options"](source=options.source), MACItems(spec=items.spec))
    return {"mac": result.to_dict()}


#: The audit's reading of the measures it ran before the registry (their rows are today's table, column by column).
BUILTIN_USES: dict[str, AuditUse] = {
    "stereotype": AuditUse(spec_type="bias", items=lambda r: StereotypeItems(r["pairs"], r["spec"]),
                           row=_stereotype_row, statistic=STATISTICS["lm"], prepare=_stereotype_prepare),
    "vlm": AuditUse(spec_type="bias", items=lambda r: VLMItems(r["images"], r["image_root"], r["spec"]),
                    row=_vlm_row, statistic=STATISTICS["vlm"]),
    "weat": AuditUse(spec_type="bias", items=lambda r: WEATItems(spec=r["spec"]), row=_weat_row,
                     statistic=STATISTICS["weat"], more=_weat_more),
    "twoafc": AuditUse(label="2afc", spec_type="twoafc", items=lambda r: TwoAFCItems(spec=r["spec"]),
                       row=_twoafc_row, statistic=STATISTICS["2afc"],
                       defaults={"noise_sigma": DEFAULT_NOISE_SIGMA}),
}


# --------------------------------------------------------------------------- lookups
def use_of(measure: Measure) -> AuditUse | None:
    """The measure's :class:`AuditUse`, or None when it does not run in audits (``extra["audit"] = False``)."""
    given = measure.extra.get("audit")
    if given is False:
        return None
    if isinstance(given, AuditUse):
        return given
    return BUILTIN_USES.get(measure.name)


def label_of(measure: Measure) -> str:
    """The measure's name in a grid's ``methods`` and in the table (``2afc`` for twoafc)."""
    use = use_of(measure)
    return (use.label if use is not None else None) or measure.name


def audit_measures(kind: str | None = None) -> list[Measure]:
    """The measures an audit runs (of one kind of model), in registry order."""
    return [MEASURES[n] for n in MEASURES.names(kind) if use_of(MEASURES[n]) is not None]


def grid_fields(measure: Measure) -> list[str]:
    """The options a grid may set for a cell of ``measure``: its Options' fields less :data:`CELL_FIELDS`."""
    return [f for f in measure.Options.model_fields if f not in CELL_FIELDS]


def variants(measure: Measure) -> tuple[str, ...]:
    """The measure's named variants (the stereotype measure's scoring methods), each a ``method`` of its own."""
    return tuple(measure.extra.get("methods", ()))
