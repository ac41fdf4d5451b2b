"""Run an audit: every cell of a grid, in this process or on Ray, resumable, each cell written once.

The audit folder (``--out DIR``)::

    DIR/audit.json               the plan: models, specifications, every cell (key, options, items), what was left
                                 out and why, the library versions
    DIR/grid.yaml                the grid file as given
    DIR/items/*.json             the frozen test data (see biastest.audit.plan)
    DIR/cells/<key>.json         one finished cell: its result's to_dict() with provenance (written once, never
                                 replaced)
    DIR/cells/<key>.error.json   one failed cell: the error's message (replaced when the cell fails again, removed
                                 when it succeeds)
    DIR/cells.log                one line per cell file written (key, status, time): a journal to audit the runs
    DIR/workers.log              on Ray: one line per worker started (model, host, pid, time)
    DIR/results.parquet, DIR/results.csv   the tidy table: one row per cell of the plan (biastest.audit.cells.row_of)

A finished cell is written by the driver — this process — as a temporary file
hard-linked to its final name: the link fails if the name exists, so a cell
is never written twice nor half, even if two runs of the same grid overlap. A
rerun reads the plan again, skips the finished cells and runs the others
(the failed ones included).

:func:`run_audit` is what ``python -m biastest audit`` calls. Without ``ray``
it runs the cells here, one after another, grouped by model so each model
loads once (the process-wide model cache), with a progress bar on stderr.
With ``ray`` (an address, or ``"local"``) it hands the cells to
:mod:`biastest.audit.ray_runner`, which is the only module that imports ray.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biastest.audit.cells import COLUMNS, row_of, run_cell
from biastest.audit.grid import MSG_NO_CELLS, Grid, GridError, load_grid
from biastest.audit.plan import Cell, Plan, make_plan
from biastest.audit.progress import progress_bar
from biastest.errors import BiastestError
from biastest.provenance import utc_now
from biastest.report.export import _jsonable, write_csv, write_json
from biastest.words import plural

__all__ = [
    "AuditSummary",
    "CellStore",
    "MSG_CANNOT_WRITE",
    "MSG_CELL_DAMAGED",
    "MSG_OUT_NOT_FOLDER",
    "MSG_SUMMARY",
    "read_table",
    "run_audit",
    "write_table",
]

MSG_OUT_NOT_FOLDER = "--out '{path}' is a file; give a folder for the audit (it is created if it does not exist)."
MSG_CANNOT_WRITE = "The audit folder '{path}' cannot be written ({problem})."
MSG_SUMMARY = (
    "Audit '{name}': {cells} ({reused} already done, {computed} computed, {failed} failed); {skipped} "
    "left out (see audit.json)."
)
MSG_FAILED_CELL = "Failed: {model} × {spec} × {method} × seed {seed}: {error}"
MSG_RERUN = "Run the same command again to retry the failed cells; finished cells are kept."
MSG_CELL_DAMAGED = (
    "The cell file '{path}' cannot be used ({problem}); it was moved to '{aside}' and the cell is computed again."
)
MSG_TABLE_IN_THE_WAY = "The results table '{path}' cannot be rebuilt: something that is not a file is in its place."
PROBLEM_LINK = "it is a symbolic link, which is not followed"
PROBLEM_NOT_JSON = "it is not readable JSON"
PROBLEM_NOT_CELL = "it is not the document of this cell"
PROBLEM_INCOMPLETE = "its result is incomplete or of the wrong type"

Report = Callable[[str], None]


class CellStore:
    """The cell files of one audit folder (see the module docstring)."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.cells = self.out / "cells"
        self.journal = self.out / "cells.log"

    def done_path(self, key: str) -> Path:
        return self.cells / f"{key}.json"

    def error_path(self, key: str) -> Path:
        return self.cells / f"{key}.error.json"

    def is_done(self, key: str) -> bool:
        """The cell has a finished document that reads (:meth:`problem` checks it whole)."""
        return self.done_path(key).is_file() and self.problem(key, strict=False) is None

    def _read(self, path: Path, key: str, strict: bool) -> tuple[dict[str, Any] | None, str | None]:
        """(the document, None) when ``path`` holds a document of cell ``key``, else (None, the problem).

        ``strict``: the document must also give its table row (:func:`~biastest.audit.cells.row_of`).
        """
        if path.is_symlink():
            return None, PROBLEM_LINK
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None, PROBLEM_NOT_JSON
        if not isinstance(doc, dict) or doc.get("key") != key or doc.get("status") not in ("done", "failed"):
            return None, PROBLEM_NOT_CELL
        if not strict:
            return doc, None
        try:
            row_of(doc)
        except Exception:  # any part of the document the table needs is missing or of the wrong type
            return None, PROBLEM_INCOMPLETE
        if doc["status"] == "done" and not isinstance(doc.get("result"), dict):
            return None, PROBLEM_INCOMPLETE
        return doc, None

    def problem(self, key: str, *, strict: bool = True) -> str | None:
        """Why the finished document of ``key`` cannot be used (None when it can, or when there is none)."""
        path = self.done_path(key)
        if not path.is_file() and not path.is_symlink():
            return None
        return self._read(path, key, strict)[1]

    def set_aside(self, key: str) -> Path:
        """Move a damaged finished document (or the link in its place) out of the way; return where it went."""
        stamp = "".join(c for c in utc_now() if c.isalnum())
        aside = self.cells / f".{key}.damaged-{stamp}-{os.getpid()}"
        os.replace(self.done_path(key), aside)
        return aside

    def load(self, key: str, *, strict: bool = False) -> dict[str, Any] | None:
        """The cell's document: the finished one, else the last failure, else None (damaged files count as none).

        ``strict``: only a document that gives its table row (:meth:`_read`).
        """
        for path in (self.done_path(key), self.error_path(key)):
            if path.is_file() or path.is_symlink():
                doc, _ = self._read(path, key, strict)
                if doc is not None:
                    return doc
        return None

    def save(self, doc: dict[str, Any]) -> bool:
        """Write a cell's document; returns False when a finished cell of that key was there already.

        A finished cell goes to ``<key>.json`` by a hard link from a complete temporary file (never
        replaced, never half-written); a failure to ``<key>.error.json`` (replaced atomically), unless the
        cell has finished meanwhile.
        """
        self.cells.mkdir(parents=True, exist_ok=True)
        key = doc["key"]
        text = json.dumps(_jsonable(doc), indent=1, ensure_ascii=False) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.cells)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            if doc["status"] == "done":
                try:
                    os.link(tmp, self.done_path(key))
                except FileExistsError:
                    return False
                self.error_path(key).unlink(missing_ok=True)
            else:
                if self.is_done(key):
                    return False
                os.replace(tmp, self.error_path(key))
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        self._log(key, doc["status"])
        return True

    def log_worker(self, model: str, where: dict[str, Any]) -> None:
        """Append to ``workers.log`` that a Ray worker started for ``model`` (host, pid)."""
        self._append(self.out / "workers.log", {"model": model, **where, "at": utc_now()})

    def _log(self, key: str, status: str) -> None:
        self._append(self.journal, {"key": key, "status": status, "at": utc_now(), "pid": os.getpid()})

    @staticmethod
    def _append(path: Path, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))  # one write of a short line: appends never interleave
        finally:
            os.close(fd)


@dataclass(frozen=True)
class AuditSummary:
    """What one run of an audit did."""

    name: str
    out: Path
    cells: int
    reused: int
    computed: int
    failed: int
    skipped: int
    table: Path

    def message(self) -> str:
        return MSG_SUMMARY.format(name=self.name, cells=plural(self.cells, "cell"), reused=self.reused,
                                  computed=self.computed, failed=self.failed,
                                  skipped=plural(self.skipped, "combination"))


def write_table(plan: Plan, store: CellStore) -> Path:
    """Write ``results.parquet`` and ``results.csv`` (one row per cell of the plan that has a document)."""
    rows = []
    for cell in plan.cells:
        doc = store.load(cell.key, strict=True)
        if doc is not None:
            rows.append(row_of(doc))
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in ("seed", "n", "n_scored", "n_excluded", "n_clusters"):
        frame[col] = frame[col].astype("Int64")
    for col in ("score", "ci_low", "ci_high", "exact_ci_low", "exact_ci_high", "confidence", "p_value", "design_effect",
                "seconds"):
        frame[col] = frame[col].astype("Float64")
    parquet = plan.out / "results.parquet"
    for target in (parquet, plan.out / "results.csv"):  # a tampered table is rebuilt; a folder in its place is not
        if target.is_dir() and not target.is_symlink():
            raise BiastestError(MSG_TABLE_IN_THE_WAY.format(path=target))
    _atomic(parquet, lambda p: frame.to_parquet(p, index=False))
    _atomic(plan.out / "results.csv", lambda p: write_csv(rows, p, columns=list(COLUMNS), for_people=False))
    return parquet


def read_table(out: str | Path):
    """The results table of an audit folder as a pandas DataFrame (from ``results.parquet``)."""
    return pd.read_parquet(Path(out) / "results.parquet")


def _atomic(target: Path, write: Callable[[Path], Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _prepare_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise GridError(MSG_OUT_NOT_FOLDER.format(path=out))
    try:
        (out / "cells").mkdir(parents=True, exist_ok=True)
        (out / "items").mkdir(exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise BiastestError(MSG_CANNOT_WRITE.format(path=out, problem=exc.strerror or type(exc).__name__)) from None


def run_in_process(cells: list[Cell], items: dict[str, dict[str, Any] | None], save: Callable[[dict], None],
                   *, progress: bool = True) -> None:
    """Run ``cells`` here, one after another (in the plan's order: a model's cells together)."""
    bar = progress_bar(len(cells), progress)
    try:
        for cell in cells:
            bar.set_postfix_str(f"{cell.model.name} × {cell.spec.name[:30]} × {cell.method}", refresh=False)
            save(run_cell(cell.task(), items.get(cell.items.sha256)))
            bar.update(1)
    finally:
        bar.close()


def run_audit(
    grid: str | Path | Grid,
    out: str | Path,
    *,
    ray: str | None = None,
    ray_cpus: int | None = None,
    progress: bool = True,
    report: Report | None = None,
) -> AuditSummary:
    """Run every cell of a grid that is not finished yet, then write the results table.

    Parameters
    ----------
    grid : path or Grid
        The grid file (checked by :func:`biastest.audit.grid.load_grid` before anything loads) or a parsed grid.
    out : path
        The audit folder (created if missing; reused by reruns).
    ray : str, optional
        ``"local"`` (start Ray on this machine) or the address of a running cluster (``host:port``); None runs
        the cells in this process.
    ray_cpus : int, optional
        CPUs of a local Ray instance (default: this machine's).
    progress : bool
        Show a progress bar on stderr.
    report : callable, optional
        Receives one line per failed cell.

    Returns
    -------
    AuditSummary

    Raises
    ------
    GridError, SpecError, OptionError, PolicyError
        The grid is wrong (nothing ran).
    """
    parsed = grid if isinstance(grid, Grid) else load_grid(grid)
    out = Path(out).expanduser()
    _prepare_out(out)
    plan = make_plan(parsed, out)
    if not plan.cells:
        reasons = "; ".join(s["reason"] for s in plan.skipped[:3]) or "no model and specification"
        raise GridError(MSG_NO_CELLS.format(skipped=reasons))
    _atomic(out / "audit.json", lambda p: write_json(plan.to_dict(), p))
    if parsed.path is not None:
        _atomic(out / "grid.yaml", lambda p: shutil.copyfile(parsed.path, p))
    store = CellStore(out)
    for c in plan.cells:  # a damaged finished cell is never counted as done: set it aside and compute it again
        problem = store.problem(c.key)
        if problem is not None:
            aside = store.set_aside(c.key)
            if report is not None:
                report(MSG_CELL_DAMAGED.format(path=store.done_path(c.key), problem=problem, aside=aside.name))
    pending = [c for c in plan.cells if not store.is_done(c.key)]
    items = {i.sha256: i.content for i in plan.items}
    failed: list[dict[str, Any]] = []

    def save(doc: dict[str, Any]) -> None:
        store.save(doc)
        if doc["status"] != "done":
            failed.append(doc)
            if report is not None:
                c = doc["cell"]
                report(MSG_FAILED_CELL.format(model=c["model"]["name"], spec=c["spec_name"], method=c["method"],
                                              seed=c["seed"], error=doc["error"]))

    if ray is None:
        run_in_process(pending, items, save, progress=progress)
    else:
        from biastest.audit.ray_runner import run_on_ray  # late: it imports ray (optional, heavy), only for --ray

        run_on_ray(pending, items, save, address=ray, num_cpus=ray_cpus, progress=progress,
                   on_worker=store.log_worker)
    table = write_table(plan, store)
    return AuditSummary(name=parsed.name, out=out, cells=len(plan.cells), reused=len(plan.cells) - len(pending),
                        computed=len(pending) - len(failed), failed=len(failed), skipped=len(plan.skipped),
                        table=table)
