"""Safe CSV and JSON export of results.

Cells that a spreadsheet would run as a formula (starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) are neutralised by prefixing a single
quote (OWASP "CSV injection"); numbers stay numbers. HTML in text is left as
text (CSV and JSON are not rendered as HTML). Files are written to a fresh
per-request directory under the process's working folder
(:mod:`biastest.workdir`), never to a shared fixed path; the apps put it in
the user's session folder, so it goes when the session ends.

A CSV for people (:func:`write_csv`'s default) starts with a UTF-8 byte-order mark, so that Excel reads Δ, −
and √ as written, and its numbers are rounded to what they mean (:func:`round_cell`, by column kind:
:data:`CSV_ROUNDING`); the JSON keeps full precision, and so does a CSV written for programs
(``for_people=False``, the audit's table). Download names are ``biastest-<app>-<model>-<date>.csv``
(:func:`download_name`, the model's name made safe for any file system).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from biastest import workdir

__all__ = [
    "CSV_ROUNDING",
    "FORMULA_PREFIXES",
    "ROW_TYPE",
    "column_kind",
    "created_date",
    "download_name",
    "neutralise_cell",
    "private_dir",
    "round_cell",
    "safe_name",
    "summary_first",
    "write_csv",
    "write_json",
]

#: How a CSV for people rounds a number, by the kind of its column (:func:`column_kind`). Whole numbers
#: (counts, seeds) and text are never changed; the JSON export keeps every digit.
CSV_ROUNDING = {
    "p-value": "two significant digits below 0.001, else three decimals (as the reports print p)",
    "percent": "two decimals (one pair in 5,000 is 0.02 %)",
    "number": "four significant digits, never fewer than the whole part (log-probabilities, effect sizes, "
              "design effects, cosines, levels)",
}
#: Columns that hold p-values (and adjusted p-values / q-values), besides any named ``…_p_value``; a probability
#: such as ``p_stereotyped`` is a number, not a p-value.
P_COLUMNS = frozenset({"p", "p_value", "p_holm", "q_bh", "p_adjusted", "p_bh", "q_value", "p_exact", "p_two_sided",
                       "p_one_sided", "p_less", "p_greater", "p_permutation", "p_welch"})
#: Columns that hold a percentage whatever the row (``estimate``/``ci_low``/``ci_high`` are percentages in a row
#: whose ``unit`` is ``%``).
PERCENT_SUFFIXES = ("_percent", "_pct", "percent")
_UNIT_COLUMNS = frozenset({"estimate", "ci_low", "ci_high", "exact_ci_low", "exact_ci_high"})

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


def column_kind(column: str, row: Mapping[str, Any] | None = None) -> str:
    """The kind of a CSV column, for :func:`round_cell`: ``"p-value"``, ``"percent"`` or ``"number"``.

    >>> column_kind("p_holm"), column_kind("estimate", {"unit": "%"}), column_kind("estimate", {"unit": "nats"})
    ('p-value', 'percent', 'number')
    """
    name = column.casefold()
    if name in P_COLUMNS or name.endswith(("_p_value", "_pvalue")):
        return "p-value"
    if name.endswith(PERCENT_SUFFIXES) or (name in _UNIT_COLUMNS and row is not None
                                           and str(row.get("unit") or "").strip() == "%"):
        return "percent"
    return "number"


def round_cell(column: str, value: Any, row: Mapping[str, Any] | None = None) -> Any:
    """``value`` rounded as a CSV for people shows it (:data:`CSV_ROUNDING`); anything but a finite float as is.

    >>> round_cell("p_value", 0.000123456), round_cell("p_value", 0.04261), round_cell("ci_low", 56.4321, {"unit": "%"})
    (0.00012, 0.043, 56.43)
    >>> round_cell("difference", -1.234567), round_cell("difference", 0.000123456), round_cell("n", 123456)
    (-1.235, 0.0001235, 123456)
    """
    if not isinstance(value, float) or isinstance(value, bool) or not math.isfinite(value):
        return value
    if value == 0:
        return 0.0
    kind = column_kind(column, row)
    if kind == "p-value":
        out = float(f"{value:.2g}") if abs(value) < 0.001 else round(value, 3)
    elif kind == "percent":
        out = round(value, 2)
    else:
        decimals = max(0, 3 - math.floor(math.log10(abs(value))))
        out = round(value, decimals)
    return out + 0.0  # no "-0.0"


def safe_name(text: Any, *, fallback: str = "model", limit: int = 60) -> str:
    """``text`` as a piece of a file name that every file system and browser accepts.

    Accents are dropped to ASCII; any run of characters other than letters, digits, ``.``, ``_`` and ``-``
    becomes one ``-``; leading and trailing dots and dashes go (no hidden file, no ``..``); at most ``limit``
    characters (the end is kept: it names the model, ``org/`` comes first); ``fallback`` when nothing is left.

    >>> safe_name("meta-llama/Llama-3.1-8B"), safe_name("../../etc/passwd"), safe_name(" "), safe_name("Café:v2")
    ('meta-llama-Llama-3.1-8B', 'etc-passwd', 'model', 'Cafe-v2')
    """
    ascii_text = unicodedata.normalize("NFKD", str(text or "")).encode("ascii", "ignore").decode("ascii")
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_text)
    cleaned = re.sub(r"-{2,}", "-", cleaned)
    cleaned = re.sub(r"\.{2,}", ".", cleaned).strip(".-")
    cleaned = cleaned[-limit:].strip(".-")
    return cleaned or fallback


def created_date(result: Any) -> str | None:
    """The date a result was made (its provenance's ``created_at``), or None."""
    prov = result.get("provenance") if isinstance(result, Mapping) else getattr(result, "provenance", None)
    return prov.get("created_at") if isinstance(prov, Mapping) else None


def download_name(app: str, model: Any, *, when: dt.date | dt.datetime | str | None = None, ext: str = "csv",
                  part: str = "") -> str:
    """The name of a download: ``biastest-<app>-<model>-<date>[-<part>].<ext>``.

    Parameters
    ----------
    app : str
        The app or tool (``gpt``, ``vqa``, ``psychophysics``, ``cli``).
    model : str
        The model's name as the user gave it (made safe by :func:`safe_name`).
    when : date, datetime or ISO text, optional
        The result's date (its provenance's ``created_at``); default: today (UTC). Only the date is used.
    ext : str
        ``csv`` or ``json``.
    part : str, optional
        Which of several files of one result (``items``, ``comparison``).

    >>> download_name("gpt", "openai-community/gpt2", when="2026-11-27T22:44:52+00:00")
    'biastest-gpt-openai-community-gpt2-2026-11-27.csv'
    """
    if isinstance(when, dt.datetime):
        day = when.date()
    elif isinstance(when, dt.date):
        day = when
    else:
        try:
            day = dt.date.fromisoformat(str(when)[:10]) if when else dt.datetime.now(dt.UTC).date()
        except ValueError:
            day = dt.datetime.now(dt.UTC).date()
    extra = f"-{safe_name(part, fallback='')}" if safe_name(part, fallback="") else ""
    return (f"biastest-{safe_name(app, fallback='app', limit=24)}-{safe_name(model)}-{day.isoformat()}{extra}."
            f"{safe_name(ext, fallback='csv', limit=8)}")


def write_csv(
    rows: Iterable[Mapping[str, Any]],
    path: str | Path,
    *,
    columns: Sequence[str] | None = None,
    header_comment: Mapping[str, Any] | None = None,
    for_people: bool = True,
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
    for_people : bool
        True (a download): a UTF-8 byte-order mark first (Excel then reads Δ, − and √) and numbers rounded by
        column kind (:func:`round_cell`). False (a table for programs, such as the audit's): plain UTF-8 and
        every digit.
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
    with path.open("w", newline="", encoding="utf-8-sig" if for_people else "utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            out = {}
            for k in cols:
                v = r.get(k)
                if getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
                    v = v.item()  # a numpy scalar is a number
                if isinstance(v, (dict, list, tuple)):
                    v = json.dumps(_jsonable(v), ensure_ascii=False)
                if isinstance(v, float) and not math.isfinite(v):
                    v = ""
                if for_people:
                    v = round_cell(k, v, r)
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
