"""Run one audit cell with the runners the apps and the command line use, and read its table row.

:func:`run_cell` takes a cell as plain values (:meth:`biastest.audit.plan.Cell.task`)
and the frozen items, calls the runner of its kind —
:func:`biastest.measures.stereotype.run.run`,
:func:`biastest.measures.vlm.run.run`,
:func:`biastest.measures.weat.run` (with
:func:`~biastest.measures.weat.run_mac`, as the CLI) or
:func:`biastest.measures.twoafc.run` — with the cell's options, and
returns the cell's document: the result's ``to_dict()`` (with its provenance)
or, when the cell failed, the error's message. It never raises for a failed
cell (only ``KeyboardInterrupt`` and the like pass through), writes nothing,
and runs the same in this process and in a Ray worker.

:func:`row_of` turns a cell's document into its row of the results table.

The key of a model behind an endpoint is read here, on the machine that runs
the cell, from the environment variable the grid names; it is never part of a
cell, a document or a file.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from biastest import settings
from biastest.errors import BiastestError
from biastest.measures import twoafc as twoafc_measure
from biastest.measures import weat as weat_measure

__all__ = [
    "CELL_FORMAT",
    "COLUMNS",
    "MSG_CELL_UNEXPECTED",
    "STATISTICS",
    "failed_document",
    "row_of",
    "run_cell",
]

CELL_FORMAT = "biastest-audit-cell"

MSG_CELL_UNEXPECTED = "Unexpected error ({type_name}): {detail}"
MSG_NO_ITEMS = "The test data of this cell could not be drawn: {problem}"

#: What the ``score`` column holds, per runner.
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
#: The columns of the results table, in order.
COLUMNS = (
    "key", "status", "error", "model", "model_ref", "kind", "spec", "method", "seed", "statistic", "score",
    "ci_low", "ci_high", "ci_method", "exact_ci_low", "exact_ci_high", "confidence", "p_value", "n", "n_scored",
    "n_excluded", "clusters", "n_clusters", "design_effect", "note", "items_file", "items_sha256", "model_revision",
    "model_kind", "options", "biastest_version", "started_at", "seconds", "worker",
)
#: Columns that depend on when and where a cell ran, not on what it computed.
VOLATILE_COLUMNS = ("started_at", "seconds", "worker")


def _cell_view(task: dict[str, Any]) -> dict[str, Any]:
    """The cell as recorded in its document (without the specification body or any address detail)."""
    return {k: v for k, v in task.items() if k not in ("spec", "spec_type", "items_error", "endpoint_address")}


def _document(task: dict[str, Any], started: float, at: str) -> dict[str, Any]:
    from biastest import __version__

    return {"format": CELL_FORMAT, "version": 1, "key": task["key"], "cell": _cell_view(task),
            "biastest_version": __version__, "worker": {"host": socket.gethostname(), "pid": os.getpid()},
            "started_at": at, "seconds": round(time.monotonic() - started, 3)}


def failed_document(task: dict[str, Any], message: str, error_type: str, *, worker: dict | None = None) -> dict:
    """The document of a cell that failed with ``message`` (the runner's, or why its worker was lost)."""
    from biastest.provenance import utc_now

    doc = _document(task, time.monotonic(), utc_now())
    if worker is not None:
        doc["worker"] = worker
    doc.update({"status": "failed", "error": message, "error_type": error_type})
    return doc


def run_cell(task: dict[str, Any], items: dict[str, Any] | None, *, progress=None) -> dict[str, Any]:
    """Run one cell; return its document (status ``done`` with the result, or ``failed`` with the message).

    Parameters
    ----------
    task : dict
        :meth:`biastest.audit.plan.Cell.task`.
    items : dict or None
        The frozen items (:attr:`biastest.audit.plan.Items.content`); None for embeddings.
    progress : callable, optional
        Passed to the runner.
    """
    from biastest.provenance import utc_now

    started, at = time.monotonic(), utc_now()
    api_key = None
    try:
        if task.get("items_error"):
            from biastest.errors import DataError

            raise DataError(MSG_NO_ITEMS.format(problem=task["items_error"]))
        scope = task["scope"]
        if scope.endswith("-endpoint") and task["model"].get("api_key_env"):
            api_key = settings.secret_from(task["model"]["api_key_env"])
        if scope in ("lm", "lm-endpoint"):
            body = {"result": _run_lm(task, items, api_key, progress)}
        elif scope in ("vlm", "vlm-endpoint"):
            body = {"result": _run_vlm(task, items, api_key, progress)}
        elif scope == "weat":
            body = _run_weat(task, progress)
        else:
            body = {"result": _run_twoafc(task, progress)}
    except BiastestError as exc:
        doc = _document(task, started, at)
        doc.update({"status": "failed", "error": exc.message, "error_type": type(exc).__name__})
        return doc
    except Exception as exc:  # a bug or an unforeseen library error: recorded, and the other cells go on
        detail = " ".join(str(exc).split())[:300]
        if api_key:
            from biastest.remote import mask_secret

            detail = detail.replace(api_key, mask_secret(api_key))
        doc = _document(task, started, at)
        doc.update({"status": "failed", "error": MSG_CELL_UNEXPECTED.format(type_name=type(exc).__name__,
                                                                            detail=detail),
                    "error_type": type(exc).__name__})
        return doc
    doc = _document(task, started, at)
    doc.update({"status": "done", **body})
    return doc


# --------------------------------------------------------------------------- runners
def _spec(task: dict[str, Any]):
    from biastest.spec import BiasSpec, TwoAFCSpec

    return (TwoAFCSpec if task["spec_type"] == "twoafc" else BiasSpec).from_dict(task["spec"])


def _run_lm(task: dict[str, Any], items: dict[str, Any], api_key: str | None, progress) -> dict[str, Any]:
    from biastest.measures.stereotype import run as stereotype_run
    from biastest.measures.stereotype.options import StereotypeOptions
    from biastest.records import SentencePair

    model, o = task["model"], task["options"]
    method = task["method"]
    if method == "auto":  # the kind could not be read when the grid was planned: read it now (or fail saying why)
        from biastest.measures.stereotype.score import methods_for_kind
        from biastest.models.lm import detect_model_kind

        method = methods_for_kind(detect_model_kind(model["ref"], revision=model["revision"]))[0]
    options: dict[str, Any] = {
        "model_id": model["ref"], "method": method, "seed": task["seed"], "revision": model["revision"],
        "batch_size": o["batch_size"], "n_resamples": o["n_resamples"], "confidence": o["confidence"],
        "tie_tolerance": o["tie_tolerance"], "clusters": o["clusters"],
    }
    if task["scope"] == "lm-endpoint":
        options.update({"endpoint": task["endpoint_address"], "tokenizer": model["tokenizer"],
                        "concurrency": o["concurrency"], "max_requests": o["max_requests"],
                        "time_limit": o["time_limit"]})
    else:
        options.update({"device": o["device"], "dtype": o["dtype"]})
    items_ = stereotype_run.StereotypeItems([SentencePair.from_row(r) for r in items["pairs"]], _spec(task))
    return stereotype_run.run(StereotypeOptions.parse(options), items_, progress=progress, api_key=api_key).to_dict()


def _run_vlm(task: dict[str, Any], items: dict[str, Any], api_key: str | None, progress) -> dict[str, Any]:
    from biastest.measures import vlm
    from biastest.records import TestImage

    model, o = task["model"], task["options"]
    kwargs: dict[str, Any] = {
        "model_id": model["ref"], "question": o["question"], "seed": task["seed"],
        "n_resamples": o["n_resamples"], "confidence": o["confidence"], "max_new_tokens": o["max_new_tokens"],
        "clusters": o["clusters"],
    }
    if task["scope"] == "vlm-endpoint":
        kwargs.update({"endpoint": task["endpoint_address"], "concurrency": o["concurrency"],
                       "max_requests": o["max_requests"], "time_limit": o["time_limit"]})
    else:
        kwargs.update({"prompt_template": list(o["prompt_template"]), "combine": o["combine"],
                       "batch_size": o["batch_size"], "revision": model["revision"], "device": o["device"],
                       "dtype": o["dtype"]})
    cell_items = vlm.VLMItems([TestImage.from_row(r) for r in items["images"]], items["image_root"], _spec(task))
    return vlm.run(vlm.VLMOptions.parse(kwargs), cell_items, progress=progress, api_key=api_key).to_dict()


def _run_weat(task: dict[str, Any], progress) -> dict[str, Any]:
    spec, source = _spec(task), task["model"]["ref"]
    options = weat_measure.WEATOptions.parse(source=source, seed=task["seed"],
                                             n_permutations=task["options"]["n_permutations"],
                                             confidence=task["options"]["confidence"])
    weat = weat_measure.run(options, weat_measure.WEATItems(spec=spec), progress=progress)
    mac = weat_measure.run_mac(weat_measure.MACOptions(source=source), weat_measure.MACItems(spec=spec))
    return {"result": weat.to_dict(), "mac": mac.to_dict()}


def _run_twoafc(task: dict[str, Any], progress) -> dict[str, Any]:
    o = task["options"]
    options = twoafc_measure.TwoAFCOptions.parse(source=task["model"]["ref"], noise_sigma=o["noise_sigma"],
                                                 seed=task["seed"], sigmoid=o["sigmoid"], lapse=o["lapse"],
                                                 n_bootstrap=o["n_bootstrap"], confidence=o["confidence"])
    result = twoafc_measure.run(options, twoafc_measure.TwoAFCItems(spec=_spec(task)), progress=progress)
    return result.to_dict()


# --------------------------------------------------------------------------- the table row
def row_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The results-table row of a cell's document (:data:`COLUMNS`).

    ``score``, ``ci_low``/``ci_high`` (bootstrap), ``exact_ci_low``/``exact_ci_high``
    (Clopper–Pearson), ``p_value`` and the counts are those of the runner's
    headline: the overall stereotype score of a language model (pairs), the
    soft bias score of a vision-language model (images; the score of its single answers when a model behind an
    endpoint gave no probabilities), WEAT's effect size d with its word-resampling bootstrap interval and its
    permutation p-value (words); a 2AFC cell has
    one PSE per target word, so its row gives the counts and the file the PSEs.
    Empty where the statistic has no such value, or the cell failed.
    """
    cell = doc["cell"]
    scope = cell["scope"]
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update({
        "key": doc["key"], "status": doc["status"], "error": doc.get("error"), "model": cell["model"]["name"],
        "model_ref": cell["model"].get("endpoint") or cell["model"]["ref"], "kind": cell["model"]["kind"],
        "spec": cell["spec_name"], "method": cell["method"], "seed": cell["seed"], "statistic": STATISTICS[scope],
        "items_file": cell["items"]["file"], "items_sha256": cell["items"]["sha256"],
        "options": _options_text(cell["options"]), "biastest_version": doc.get("biastest_version"),
        "started_at": doc.get("started_at"), "seconds": doc.get("seconds"),
        "worker": _worker_text(doc.get("worker")),
    })
    if doc["status"] != "done":
        return row
    r = doc["result"]
    if scope in ("lm", "lm-endpoint"):
        o = r["overall"]
        row.update({"method": r["method"], "score": o["score"], "ci_low": o["ci_low"], "ci_high": o["ci_high"],
                    "ci_method": o.get("ci_method"), "exact_ci_low": o.get("exact_ci_low"),
                    "exact_ci_high": o.get("exact_ci_high"), "confidence": o["confidence"], "p_value": o["p_value"],
                    "n": r["n_pairs"], "n_scored": r["n_scored"], "n_excluded": r["n_excluded"],
                    "model_revision": r["model_revision"], "model_kind": r["model_kind"]})
        _clustered(row, r.get("overall_clustered"), r.get("clusters", "pair") != "pair")
    elif scope in ("vlm", "vlm-endpoint"):
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
    elif scope == "weat":
        n_missing = sum(len(v) for v in r["missing"].values())
        n_used = len(r["x"]) + len(r["y"]) + len(r["a"]) + len(r["b"])
        ci = r.get("effect_size_ci") or (None, None)
        row.update({"score": r["effect_size"], "ci_low": ci[0], "ci_high": ci[1], "confidence": r.get("ci_level"),
                    "p_value": r["p_value"], "n": n_used + n_missing, "n_scored": n_used, "n_excluded": n_missing,
                    "model_kind": "embeddings"})
    else:
        n_targets, n_dropped = len(r["targets"]), len(r["dropped_targets"])
        row.update({"n": n_targets + n_dropped, "n_scored": n_targets, "n_excluded": n_dropped,
                    "model_kind": "embeddings"})
    return row


def _clustered(row: dict[str, Any], c: dict[str, Any] | None, headline: bool) -> None:
    """The cluster columns; when the result's headline is cluster-aware, its interval and test too."""
    if c is None:  # a result saved before clusters existed
        return
    row.update({"clusters": c["cluster_by"], "n_clusters": c["n_clusters"], "design_effect": c["design_effect"]})
    if headline:  # clusters that are not single items: the headline interval and test are the cluster-aware ones
        row.update({"ci_low": c["low"], "ci_high": c["high"], "ci_method": c["interval_method"],
                    "p_value": c["p_value"], "note": c["reason"]})


def _worker_text(worker: dict[str, Any] | None) -> str | None:
    if not worker:
        return None
    return worker["host"] if worker.get("pid") is None else f"{worker['host']}:{worker['pid']}"


def _options_text(options: dict[str, Any]) -> str:
    from biastest.audit.plan import canonical_json

    return canonical_json(options)
