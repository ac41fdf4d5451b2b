"""Run one audit cell with its measure, as the apps and the command line run it, and read its table row.

:func:`run_cell` takes a cell as plain values (:meth:`biastest.audit.plan.Cell.task`)
and the frozen items, finds the cell's measure in :data:`biastest.measures.MEASURES`,
validates the cell's options and its model, seed and method with the measure's
``Options``, builds the measure's items (:mod:`biastest.audit.uses`), calls
``measure.run(options, items, progress=…)`` (WEAT's cell adds MAC, as the CLI), and
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
import sys
import time
from typing import Any

from biastest import __version__, settings
from biastest.audit.grid_options import default_measure, measure_of
from biastest.audit.plan import canonical_json
from biastest.audit.uses import STATISTICS, items_for_kind, use_of
from biastest.errors import BiastestError, DataError
from biastest.measures import MEASURES, Measure
from biastest.provenance import utc_now
from biastest.remote import mask_secret
from biastest.spec import BiasSpec, TwoAFCSpec

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
    return {"format": CELL_FORMAT, "version": 1, "key": task["key"], "cell": _cell_view(task),
            "biastest_version": __version__, "worker": {"host": socket.gethostname(), "pid": os.getpid()},
            "started_at": at, "seconds": round(time.monotonic() - started, 3)}


def failed_document(task: dict[str, Any], message: str, error_type: str, *, worker: dict | None = None) -> dict:
    """The document of a cell that failed with ``message`` (the runner's, or why its worker was lost)."""
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
    started, at = time.monotonic(), utc_now()
    api_key = None
    try:
        if task.get("items_error"):
            raise DataError(MSG_NO_ITEMS.format(problem=task["items_error"]))
        if task.get("endpoint_address") and task["model"].get("api_key_env"):
            api_key = settings.secret_from(task["model"]["api_key_env"])
        body = _run(task, items, api_key, progress)
    except BiastestError as exc:
        doc = _document(task, started, at)
        doc.update({"status": "failed", "error": exc.message, "error_type": type(exc).__name__})
        return doc
    except Exception as exc:  # a bug or an unforeseen library error: recorded, and the other cells go on
        detail = " ".join(str(exc).split())[:300]
        if api_key:
            detail = detail.replace(api_key, mask_secret(api_key))
        doc = _document(task, started, at)
        doc.update({"status": "failed", "error": MSG_CELL_UNEXPECTED.format(type_name=type(exc).__name__,
                                                                            detail=detail),
                    "error_type": type(exc).__name__})
        return doc
    doc = _document(task, started, at)
    doc.update({"status": "done", **body})
    return doc


# --------------------------------------------------------------------------- running through the registry
def _spec(task: dict[str, Any]):
    if task["spec_type"] == "none":  # a benchmark with its own items
        return None
    return (TwoAFCSpec if task["spec_type"] == "twoafc" else BiasSpec).from_dict(task["spec"])


def _runner(measure: Measure):
    """The measure's ``run``, looked up in its module when the cell runs (so a patched ``module.run`` is the one)."""
    return getattr(sys.modules.get(measure.run.__module__), measure.run.__name__, measure.run)


def _run(task: dict[str, Any], items: dict[str, Any] | None, api_key: str | None, progress) -> dict[str, Any]:
    """Run the cell's measure: its options checked with the cell's model, seed and method, its items, its result."""
    measure = MEASURES.get_measure(task["measure"])
    use = use_of(measure)
    model = task["model"]
    identity = {"model_id": model["ref"], "source": model["ref"], "revision": model["revision"],
                "endpoint": task.get("endpoint_address"), "tokenizer": model.get("tokenizer"), "seed": task["seed"],
                "method": task["method"]}
    identity = {k: v for k, v in identity.items() if k in measure.Options.model_fields}
    if use.prepare is not None:
        identity = use.prepare(identity)
    options = measure.Options.parse({**task["options"], **identity})
    cell_items = use.items(items_for_kind(measure.kind, _spec(task), items))
    more = {"api_key": api_key} if api_key else {}
    result = _runner(measure)(options, cell_items, progress=progress, **more)
    return {"result": result.to_dict(), **(use.more(measure, options, cell_items) if use.more else {})}


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
    use = use_of(_measure_of_cell(cell))
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update({
        "key": doc["key"], "status": doc["status"], "error": doc.get("error"), "model": cell["model"]["name"],
        "model_ref": cell["model"].get("endpoint") or cell["model"]["ref"], "kind": cell["model"]["kind"],
        "spec": cell["spec_name"], "method": cell["method"], "seed": cell["seed"], "statistic": use.statistic,
        "items_file": cell["items"]["file"], "items_sha256": cell["items"]["sha256"],
        "options": canonical_json(cell["options"]), "biastest_version": doc.get("biastest_version"),
        "started_at": doc.get("started_at"), "seconds": doc.get("seconds"),
        "worker": _worker_text(doc.get("worker")),
    })
    if doc["status"] == "done":
        use.row(doc["result"], row)
    return row


def _measure_of_cell(cell: dict[str, Any]) -> Measure:
    """The measure of a cell's document (one written before cells named their measure: read from its scope)."""
    if cell.get("measure"):
        return MEASURES.get_measure(cell["measure"])
    kind = cell["scope"].removesuffix("-endpoint")
    return default_measure(kind, "bias") if kind in ("lm", "vlm") else measure_of(cell["scope"])


def _worker_text(worker: dict[str, Any] | None) -> str | None:
    if not worker:
        return None
    return worker["host"] if worker.get("pid") is None else f"{worker['host']}:{worker['pid']}"
