"""The store's Parquet schemas (one per table, with the schema version) and the rows ↔ records conversion.

Every shard of a table has the columns of :data:`SCHEMAS` (:func:`conform` casts an older shard to them);
rows of the record tables read back as :class:`~biastest.records.TestSentence`,
:class:`~biastest.records.SentencePair` and :class:`~biastest.records.TestImage`
(:func:`records_from_columns`); ids become a compact array for deduplication (:func:`ids_array`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import pyarrow as pa

from biastest.records import SentencePair, TestImage, TestSentence

__all__ = [
    "RECORD_TYPES",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_COLUMN",
    "conform",
    "ids_array",
    "records_from_columns",
]


def _arrow_type(annotation: Any) -> pa.DataType:
    text = str(annotation)
    if text in ("int", "int | None", "Optional[int]"):
        return pa.int64()
    return pa.string()


def _record_schema(cls: type) -> pa.Schema:
    return pa.schema([pa.field(f.name, _arrow_type(f.type)) for f in fields(cls)])


_SPEC_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("source", pa.string()),
        ("spec_json", pa.string()),
        ("created_at", pa.string()),
        ("provenance", pa.string()),
    ]
)
_RESULT_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("spec_name", pa.string()),
        ("model", pa.string()),
        ("method", pa.string()),
        ("result_json", pa.string()),
        ("created_at", pa.string()),
        ("provenance", pa.string()),
    ]
)
#: Version of the shard layout this code writes (a column of every row; shards written before versioning have
#: nulls there and read as version 1). A reader refuses shards of a newer version instead of misreading them.
SCHEMA_VERSION = 1
SCHEMA_VERSION_COLUMN = "schema_version"


def _versioned(schema: pa.Schema) -> pa.Schema:
    return schema.append(pa.field(SCHEMA_VERSION_COLUMN, pa.int64()))


SCHEMAS: dict[str, pa.Schema] = {
    "sentences": _versioned(_record_schema(TestSentence)),
    "pairs": _versioned(_record_schema(SentencePair)),
    "images": _versioned(_record_schema(TestImage)),
    "specs": _versioned(_SPEC_SCHEMA),
    "results": _versioned(_RESULT_SCHEMA),
}
RECORD_TYPES: dict[str, type] = {"sentences": TestSentence, "pairs": SentencePair, "images": TestImage}


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast a shard to the current schema (missing columns become nulls, extra ones are dropped)."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                col = col.cast(f.type, safe=False)
        else:
            col = pa.nulls(table.num_rows, type=f.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _provenance(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) and value else {}


def records_from_columns(cls: type, names: Sequence[str], columns: Sequence[list[Any]]) -> list[Any]:
    """``[cls.from_row(row) ...]`` for rows read from shards, given column-wise (same records, several times faster).

    Shard rows always have every column of the schema, nulls as None and
    ``provenance`` as a JSON string, so the general checks of ``from_row``
    are not needed. A row that carries its ``id`` (every row the store wrote:
    the id is the content hash the record computed, and the one the store
    deduplicates on) is not hashed again; a row without one goes through the
    constructor, which computes it.
    """
    wanted = _FIELD_NAMES.get(cls)
    if wanted is None:
        wanted = _FIELD_NAMES[cls] = frozenset(f.name for f in fields(cls))
    keep = [i for i, n in enumerate(names) if n in wanted]
    names = [names[i] for i in keep]
    columns = [columns[i] for i in keep]
    if "provenance" in names:
        i = names.index("provenance")
        columns[i] = [_provenance(v) for v in columns[i]]
    complete = len(names) == len(wanted)
    ids = columns[names.index("id")] if "id" in names else [None] * (len(columns[0]) if columns else 0)
    out = []
    new = object.__new__
    for values, rid in zip(zip(*columns, strict=True), ids, strict=True):
        data = dict(zip(names, values, strict=True))
        if not complete or not rid:
            out.append(cls(**data))
            continue
        record = new(cls)
        record.__dict__.update(data)  # what the frozen dataclass's __init__ would set, minus the hash
        out.append(record)
    return out


def ids_array(ids: pa.ChunkedArray) -> np.ndarray:
    """Record ids as uint64 numbers (16-digit hex ids, the store's own) or, failing that, as strings."""
    values = ids.to_pylist()
    if all(isinstance(v, str) and len(v) == 16 for v in values):
        try:
            return np.frombuffer(bytes.fromhex("".join(values)), dtype=">u8").astype(np.uint64)
        except ValueError:
            pass
    return np.asarray([v or "" for v in values], dtype=object)
