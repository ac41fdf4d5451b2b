"""Safe CSV and JSON export of results.

Cells that a spreadsheet would run as a formula (starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) are neutralised by prefixing a single
quote (OWASP "CSV injection"); numbers stay numbers. HTML in text is left as
text (CSV and JSON are not rendered as HTML). Files are written to a fresh
per-request directory under the process's working folder
(:mod:`biastest.workdir`), never to a shared fixed path; the apps put it in
the user's session folder, so it goes when the session ends.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from biastest import workdir

__all__ = ["FORMULA_PREFIXES", "ROW_TYPE", "neutralise_cell", "private_dir", "summary_first", "write_csv", "write_json"]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
#: First column of a CSV that holds summary rows before its item rows (:func:`summary_first`).
ROW_TYPE = "row_type"


def neutralise_cell(value: Any) -> Any:
    """Return ``value`` safe for a spreadsheet cell.

    Strings starting with a formula prefix get a leading ``'``; numbers,
    booleans and None are returned unchanged (negative numbers stay numbers).
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def private_dir(prefix: str = "biastest-", *, session_id: str | None = None) -> Path:
    """A fresh directory for one user's download, under the process's working folder.

    Parameters
    ----------
    prefix : str
        Start of the folder's name.
    session_id : str, optional
        Put it in this session's folder (removed with the session); default:
        the process's loose ``exports`` folder (removed by age or at exit).
    """
    return workdir.new_export_dir(session_id, prefix=prefix)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _jsonable(value.item())
    return value


def write_csv(
    rows: Iterable[Mapping[str, Any]],
    path: str | Path,
    *,
    columns: Sequence[str] | None = None,
    header_comment: Mapping[str, Any] | None = None,
) -> Path:
    """Write rows to a CSV file with every text cell neutralised.

    Parameters
    ----------
    rows : iterable of mappings
    path : path
    columns : sequence of str, optional
        Column order (default: keys of the first row, then new keys in order).
    header_comment : mapping, optional
        Not written into the CSV (keeps it machine-readable); provenance
        belongs in the rows or in the JSON export.
    """
    rows = [dict(r) for r in rows]
    if columns is None:
        cols: list[str] = []
        for r in rows:
            for k in r:
                if k not in cols:
                    cols.append(k)
    else:
        cols = list(columns)
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            out = {}
            for k in cols:
                v = r.get(k)
                if isinstance(v, (dict, list, tuple)):
                    v = json.dumps(_jsonable(v), ensure_ascii=False)
                if isinstance(v, float) and not math.isfinite(v):
                    v = ""
                out[k] = neutralise_cell(v)
            writer.writerow(out)
    return path


def summary_first(
    summary: Iterable[Mapping[str, Any]], items: Iterable[Mapping[str, Any]], *, item_type: str
) -> list[dict[str, Any]]:
    """Summary rows, then item rows, in one table whose first column :data:`ROW_TYPE` says which is which.

    A CSV written from these rows (:func:`write_csv`) is a complete record on its own: the summary rows
    (``row_type`` ``"summary"``: score, intervals, p-values, counts, spec, model, method, seed, versions,
    date) come first, then one row per item (``row_type`` = ``item_type``, e.g. ``"pair"``). A column an
    item row does not have is empty, and the other way round.
    """
    out = [{ROW_TYPE: "summary", **dict(r)} for r in summary]
    out += [{ROW_TYPE: item_type, **dict(r)} for r in items]
    return out


def write_json(data: Any, path: str | Path) -> Path:
    """Write JSON (NaN/inf become null; numpy scalars become numbers)."""
    path = Path(path)
    path.write_text(json.dumps(_jsonable(data), indent=2, ensure_ascii=False), encoding="utf-8")
    return path
