"""The local dataset store: append-only Parquet shards on disk, indexed.

The store is the embedded default of the suite: every sentence, sentence
pair, image (file plus metadata row), bias specification and result lives in
one directory laid out exactly like the Hugging Face dataset that
:mod:`biastest.store.hub` syncs with::

    <root>/
      README.md                         dataset card (written by the hub sync)
      data/sentences/<shard>.parquet    TestSentence rows
      data/pairs/<shard>.parquet        SentencePair rows
      data/images/<shard>.parquet       TestImage rows (metadata)
      images/<sha256>.<ext>             the image files
      data/specs/<shard>.parquet        BiasSpec rows (the JSON form)
      data/results/<shard>.parquet      result rows (their JSON form)
      .biastest/                        local state, never synced (temp files, push ledger)

**Append-only, no shared file.** Every write creates a new, uniquely named
shard (``<UTC time>-<process id>-<random>.parquet``): it is written to a
temporary file and renamed into place atomically, so a reader never sees a
half-written shard and two processes (or two threads) appending at once never
lose a row. Nothing ever rewrites an existing file. A writer that dies between
the two steps (a crash, a kill, a power cut) leaves its temporary file behind:
the store removes such orphans when it opens (see
:meth:`DatasetStore.remove_stale_temp_files` for the rule).

**Dedup on read.** Records have content-hash ids (:mod:`biastest.records`);
the same content written twice (by two users, two runs, a pull and a local
write) is one record. Shards are read in name order (oldest first) and the
**first occurrence wins** (its provenance and creation time are kept).

**Indexed look-up.** Each sentence shard gets an inverted index (word token
→ row numbers) built once, when the shard is first seen, with vectorised
Arrow kernels. A look-up of a term costs dictionary look-ups plus the exact
word-bounded regex check (:func:`biastest.spec.term_regex`) on the candidate
rows only; new shards (from this process, another process or a pull) are
noticed by listing the shard folders and indexed incrementally.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from biastest import __version__
from biastest.errors import DataError, StoreError
from biastest.provenance import utc_now
from biastest.records import SentencePair, TestImage, TestSentence, content_id
from biastest.spec import BiasSpec, term_regex

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "TABLES",
    "IMAGE_FORMATS",
    "MAX_IMAGE_BYTES",
    "AddReport",
    "DatasetStore",
    "TableView",
    "default_store_dir",
    "fold",
    "term_keys",
]

log = logging.getLogger(__name__)

DATA_DIR_ENV = "BIASTEST_DATA_DIR"
DEFAULT_DATA_DIR = Path("~/.cache/biastest/store")
STATE_DIR = ".biastest"
TABLES = ("sentences", "pairs", "images", "specs", "results")
#: Suffix of shards that must never be pushed to the user's dataset (read-only public imports).
LOCAL_ONLY_SUFFIX = "-public"
#: A temporary file unchanged for this many seconds belongs to a write that died (removed when a store opens).
STALE_TMP_SECONDS = 600.0
#: Image formats accepted (Pillow format name → file extension).
IMAGE_FORMATS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif", "BMP": "bmp"}
MAX_IMAGE_BYTES = 40 * 1024 * 1024

MSG_NOT_AN_IMAGE = (
    "The file for '{image_term}' is not an image that can be read ({problem}). Upload a PNG, JPEG, WEBP, GIF or "
    "BMP file."
)
MSG_IMAGE_FORMAT = "Images in {fmt} format cannot be stored. Use one of: {allowed}."
MSG_IMAGE_TOO_LARGE = "The image for '{image_term}' is {size_mb:.1f} MB; images may be at most {limit_mb:.0f} MB."
MSG_IMAGE_NO_TERM = "Every image needs the term it shows (for example 'nurse'); this one has none."
MSG_UNKNOWN_TABLE = "There is no table called '{table}' in the store. Tables: {tables}."
MSG_WRONG_RECORD = "The {table} table stores {expected} records, but got {got}."
MSG_CANNOT_WRITE = (
    "The test data could not be saved in {root} ({problem}). Check that the folder exists, is writable and that "
    "the disk is not full; set {env} to use another folder."
)
MSG_NEWER_SCHEMA = (
    "The file {path} was written by a newer biastest (dataset schema {version}; this one reads up to "
    "{supported}). It is skipped: update biastest to read it."
)
MSG_BAD_SHARD = (
    "The stored data file {path} cannot be read ({problem}); it was skipped. Remove or replace it to use its rows."
)
MSG_NO_TO_DICT = "A result to store must be a mapping or have a to_dict() method; got {type_name}."


def default_store_dir() -> Path:
    """The store folder: ``$BIASTEST_DATA_DIR`` or ``~/.cache/biastest/store``."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else DEFAULT_DATA_DIR.expanduser()


# ------------------------------------------------------------------ folding
# Index keys must group exactly the strings that ``re.IGNORECASE`` treats as
# equal, character by character, so that the index never misses a row that
# the word-bounded regex would match. ``str.lower`` is not enough outside
# ASCII (e.g. the regex matches 'ſ' to 's' and 'İ' to 'i'), so non-ASCII text
# is mapped through the same simple lower-case mapping and extra case classes
# that the regex engine uses.
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def _fold_tables() -> tuple[dict[int, int], frozenset[str]]:
    import _sre

    try:  # CPython's table of extra case-insensitive equivalences (e.g. s ~ ſ, i ~ ı)
        from re._casefix import _EXTRA_CASES  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - other interpreters
        _EXTRA_CASES = {}
    classes: dict[int, set[int]] = {}
    for lo, others in _EXTRA_CASES.items():
        members = {lo, *others}
        for m in list(members):
            members |= classes.get(m, set())
        for m in members:
            classes[m] = members
    rep: dict[int, int] = {}
    unsafe: set[str] = set()
    seen: set[int] = set()
    for members in classes.values():
        if id(members) in seen:
            continue
        seen.add(id(members))
        wordy = [m for m in members if chr(m).isalnum() or chr(m) == "_"]
        if 0 < len(wordy) < len(members):
            # A class with both word and non-word characters: map it to a
            # non-word member (tokens may only split, never merge) and send
            # terms that contain it to a full scan.
            target = min(m for m in members if m not in wordy)
            unsafe.update(chr(m) for m in members)
        else:
            target = min(members)
        for m in members:
            rep[m] = target
    table: dict[int, int] = {}
    for cp in range(0x110000):
        lo = _sre.unicode_tolower(cp)
        tgt = rep.get(lo, lo)
        if tgt != cp:
            table[cp] = tgt
    # Upper-case forms of unsafe characters are unsafe too.
    for cp, tgt in table.items():
        if chr(tgt) in unsafe:
            unsafe.add(chr(cp))
    return table, frozenset(unsafe)


def fold(text: str) -> str:
    """Case-fold ``text`` the way the regex engine's IGNORECASE compares it.

    ASCII text is simply lower-cased; other text is mapped character by
    character (same length), so word boundaries are kept.
    """
    if text.isascii():
        return text.lower()
    return text.translate(_fold_tables()[0])


def term_keys(term: str) -> tuple[str, ...] | None:
    """Index keys (folded word tokens) that every match of ``term`` contains.

    Returns None when the term cannot be looked up in the word index (it has
    no word characters, or characters whose case class mixes word and
    non-word characters); such a term is found by a full scan instead.
    """
    if not term.isascii() and any(ch in _fold_tables()[1] for ch in term):
        return None
    keys = tuple(_WORD.findall(fold(term)))
    return keys or None


# On ASCII text the word-bounded pattern of :func:`biastest.spec.term_regex` is decided by Arrow's vectorised
# RE2 engine instead of a Python loop. RE2 has no look-behind, so the boundaries are spelled as "start or a
# non-word character" and "a non-word character or end" (the same answer to "is there a match?"), and ``\s`` /
# ``\w`` are spelled out as the ASCII characters that Python's Unicode ``\s`` / ``\w`` match.
_ASCII_WORD_CHARS = "".join(chr(i) for i in range(128) if re.fullmatch(r"\w", chr(i)))
_ASCII_SPACE_CLASS = "[" + "".join(f"\\x{i:02x}" for i in range(128) if re.fullmatch(r"\s", chr(i))) + "]+"
_ASCII_NONWORD_CLASS = "[^" + "".join(f"\\x{ord(c):02x}" for c in _ASCII_WORD_CHARS) + "]"


@lru_cache(maxsize=256)
def ascii_term_pattern(term: str) -> str | None:
    """RE2 pattern that finds ``term`` in ASCII text exactly where ``term_regex(term).search`` does.

    Returns None for a term that is not ASCII (or has no characters), which
    must be checked with :func:`biastest.spec.term_regex`. The pattern is
    lower-case: match it case-sensitively against ASCII text lower-cased
    (``pyarrow.compute.ascii_lower``), which is faster in RE2 than its
    case-insensitive mode and gives the same answer on ASCII text.
    """
    words = term.strip().lower().split()
    if not words or not term.isascii():
        return None
    body = _ASCII_SPACE_CLASS.join(
        "".join(c if c in _ASCII_WORD_CHARS else f"\\x{ord(c):02x}" for c in w) for w in words
    )
    return f"(?:^|{_ASCII_NONWORD_CLASS})(?:{body})(?:{_ASCII_NONWORD_CLASS}|$)"


def plain_word(term: str) -> bool:
    """Whether ``term`` is one ASCII word of word characters only.

    Such a term needs no regex check on ASCII rows: there the word index's
    tokens are exactly the maximal word runs, compared case-insensitively as
    the regex does. Any other term is checked on its candidate rows.
    """
    bare = term.strip()
    return bare.isascii() and _WORD.fullmatch(bare) is not None


def field_key(value: str) -> str:
    """Key of a short field (a term) for exact, case-insensitive equality."""
    return fold(" ".join(str(value).split()))


# ------------------------------------------------------------------ schemas
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
_RECORD_TYPES: dict[str, type] = {"sentences": TestSentence, "pairs": SentencePair, "images": TestImage}


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
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


# ------------------------------------------------------------------- shards
class _TokenIndex:
    """Inverted index of one shard's text column: folded word token → sorted row numbers."""

    __slots__ = ("ascii", "offsets", "rows", "vocab")

    def __init__(self, texts: pa.ChunkedArray | pa.Array) -> None:
        texts = pa.chunked_array([texts]) if isinstance(texts, pa.Array) else texts
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
        texts = pc.fill_null(texts, "")
        n = len(texts)
        is_ascii = pc.string_is_ascii(texts).to_numpy(zero_copy_only=False)
        self.ascii = is_ascii
        token_parts: list[pa.Array] = []
        row_parts: list[np.ndarray] = []
        ascii_rows = np.flatnonzero(is_ascii)
        if len(ascii_rows):
            sub = texts.take(pa.array(ascii_rows)) if len(ascii_rows) != n else texts
            lowered = pc.ascii_lower(sub)
            lists = pc.split_pattern_regex(lowered, pattern=r"[^0-9a-z_]+")
            flat = pc.list_flatten(lists)
            parents = pc.list_parent_indices(lists).to_numpy()
            nonempty = pc.not_equal(flat, "")
            token_parts.append(pc.filter(flat, nonempty))
            row_parts.append(ascii_rows[parents[nonempty.to_numpy(zero_copy_only=False)]])
        other_rows = np.flatnonzero(~is_ascii)
        if len(other_rows):
            toks: list[str] = []
            rws: list[int] = []
            for r in other_rows.tolist():
                words = _WORD.findall(fold(texts[r].as_py()))
                toks.extend(words)
                rws.extend([r] * len(words))
            token_parts.append(pa.array(toks, type=pa.string()))
            row_parts.append(np.asarray(rws, dtype=np.int64))
        if not token_parts:
            self.vocab: dict[str, int] = {}
            self.offsets = np.zeros(1, dtype=np.int64)
            self.rows = np.zeros(0, dtype=np.int32)
            return
        tokens = pa.chunked_array(token_parts, type=pa.string()).combine_chunks()
        rows = np.concatenate(row_parts).astype(np.int64)
        encoded = pc.dictionary_encode(tokens)
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        vocab_list = encoded.dictionary.to_pylist()
        # Sort by (token, row) and drop repeated (token, row) pairs.
        key = codes * (n + 1) + rows
        key = np.unique(key)
        codes_sorted = key // (n + 1)
        self.rows = (key % (n + 1)).astype(np.int32)
        counts = np.bincount(codes_sorted, minlength=len(vocab_list))
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.vocab = {t: i for i, t in enumerate(vocab_list)}

    def rows_for(self, key: str) -> np.ndarray:
        i = self.vocab.get(key)
        if i is None:
            return self.rows[:0]
        return self.rows[self.offsets[i] : self.offsets[i + 1]]


@dataclass
class _Shard:
    name: str
    path: Path
    size: int
    mtime_ns: int
    table: pa.Table
    ids: np.ndarray  # uint64 (hex ids) or object
    _token_index: dict[str, _TokenIndex] | None = None
    _field_index: dict[str, dict[str, np.ndarray]] | None = None
    _arrays: dict[str, pa.Array] | None = None

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def array(self, column: str) -> pa.Array:
        """One column as a single Arrow array (taking rows from it is cheaper than from a chunked column)."""
        if self._arrays is None:
            self._arrays = {}
        arr = self._arrays.get(column)
        if arr is None:
            col = self.table.column(column)
            arr = self._arrays[column] = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
        return arr

    def token_index(self, column: str) -> _TokenIndex:
        if self._token_index is None:
            self._token_index = {}
        index = self._token_index.get(column)
        if index is None:
            index = self._token_index[column] = _TokenIndex(self.table.column(column))
        return index

    def field_index(self, column: str) -> dict[str, np.ndarray]:
        if self._field_index is None:
            self._field_index = {}
        idx = self._field_index.get(column)
        if idx is None:
            groups: dict[str, list[int]] = {}
            for r, v in enumerate(self.table.column(column).to_pylist()):
                groups.setdefault(field_key(v or ""), []).append(r)
            idx = {k: np.asarray(v, dtype=np.int64) for k, v in groups.items()}
            self._field_index[column] = idx
        return idx


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _provenance(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) and value else {}


def _records(cls: type, names: Sequence[str], columns: Sequence[list[Any]]) -> list[Any]:
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


def _ids_array(ids: pa.ChunkedArray) -> np.ndarray:
    values = ids.to_pylist()
    if all(isinstance(v, str) and len(v) == 16 for v in values):
        try:
            return np.frombuffer(bytes.fromhex("".join(values)), dtype=">u8").astype(np.uint64)
        except ValueError:
            pass
    return np.asarray([v or "" for v in values], dtype=object)


class TableView:
    """An immutable snapshot of one table: its shards, dedup mask and indexes.

    Obtain one with :meth:`DatasetStore.view`; row numbers returned by a view
    are only meaningful for that view.
    """

    def __init__(self, table: str, shards: Sequence[_Shard]) -> None:
        self.table = table
        self.shards = tuple(shards)
        sizes = np.asarray([s.num_rows for s in self.shards], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.keep = self._first_occurrence()
        self._ascii: dict[str, np.ndarray] = {}

    def _first_occurrence(self) -> np.ndarray:
        if not self.shards:
            return np.zeros(0, dtype=bool)
        import pandas as pd

        parts = [s.ids for s in self.shards]
        if all(p.dtype == np.uint64 for p in parts):
            ids = np.concatenate(parts)
        else:
            ids = np.concatenate([p.astype(object) if p.dtype != object else p for p in parts])
            ids = np.asarray([format(int(v), "016x") if not isinstance(v, str) else v for v in ids], dtype=object)
        return ~pd.Series(ids).duplicated(keep="first").to_numpy()

    # ----------------------------------------------------------- sizes
    @property
    def num_rows(self) -> int:
        """Rows in all shards, duplicates included."""
        return int(self.offsets[-1])

    def __len__(self) -> int:
        """Distinct records (duplicates removed)."""
        return int(self.keep.sum())

    # ----------------------------------------------------------- access
    def _locate(self, rows: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        rows = np.asarray(rows, dtype=np.int64)
        shard_of = np.searchsorted(self.offsets, rows, side="right") - 1
        out = []
        for s in np.unique(shard_of):
            sel = np.flatnonzero(shard_of == s)
            out.append((int(s), sel, rows[sel] - self.offsets[s]))
        return out

    def column(self, name: str, rows: np.ndarray) -> list[Any]:
        """Values of one column at global ``rows`` (in the order given)."""
        rows = np.asarray(rows, dtype=np.int64)
        out: list[Any] = [None] * len(rows)
        for s, sel, local in self._locate(rows):
            values = pc.take(self.shards[s].array(name), local).to_pylist()
            for i, v in zip(sel.tolist(), values, strict=True):
                out[i] = v
        return out

    def _columns(self, rows: np.ndarray) -> tuple[list[str], list[list[Any]]]:
        """Column names and, per column, its values at global ``rows`` (in the order given)."""
        rows = np.asarray(rows, dtype=np.int64)
        located = self._locate(rows)
        if not located:
            names = self.shards[0].table.column_names if self.shards else []
            return names, [[] for _ in names]
        taken = pa.concat_tables([self.shards[s].table.take(local) for s, _, local in located])
        order = np.concatenate([sel for _, sel, _ in located])
        if len(order) > 1 and np.any(order[1:] < order[:-1]):  # rows were not in store order: put them back
            taken = taken.take(np.argsort(order, kind="stable"))
        return taken.column_names, [taken.column(n).to_pylist() for n in taken.column_names]

    def rows_dicts(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """Flat rows at global ``rows`` (in the order given)."""
        names, columns = self._columns(rows)
        return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]

    def unique_rows(self) -> np.ndarray:
        """Global row numbers of the distinct records, in store order."""
        return np.flatnonzero(self.keep)

    def records(self, rows: np.ndarray | None = None) -> list[Any]:
        """Records (TestSentence, SentencePair, TestImage, or dicts for specs/results)."""
        rows = self.unique_rows() if rows is None else rows
        cls = _RECORD_TYPES.get(self.table)
        if cls is None:
            return self.rows_dicts(rows)
        names, columns = self._columns(rows)
        return _records(cls, names, columns)

    # ----------------------------------------------------------- look-up
    def term_rows(self, term: str, *, column: str = "text", within: np.ndarray | None = None) -> np.ndarray:
        """Distinct rows whose ``column`` contains ``term`` as whole words.

        Exactly the rows for which :func:`biastest.spec.contains_term` is
        true, found through the shard indexes (candidates from the word
        index, then the regex check on the candidates only).

        Parameters
        ----------
        term : str
        column : str
        within : numpy.ndarray of bool, optional
            A mask over this view's rows: only rows where it is true are
            returned (and only they are regex-checked), for a caller that
            needs the term's rows among rows it already holds.
        """
        if within is not None and len(within) != self.num_rows:
            raise ValueError(f"within has {len(within)} entries for a view of {self.num_rows} rows")
        pattern = term_regex(term)
        keys = term_keys(term)
        exact = keys is not None and len(keys) == 1 and plain_word(term)
        if exact:
            rows = self._exact_rows(keys[0], pattern, column)
            return rows if within is None else rows[within[rows]]
        candidates: list[tuple[int, np.ndarray, np.ndarray]] = []
        for s, shard in enumerate(self.shards):
            if keys is None:
                local = np.arange(shard.num_rows, dtype=np.int64)
            else:
                index = shard.token_index(column)
                local = None
                for k in sorted(set(keys), key=lambda k: len(index.rows_for(k))):
                    r = index.rows_for(k)
                    local = r if local is None else np.intersect1d(local, r, assume_unique=True)
                    if len(local) == 0:
                        break
                local = np.asarray(local, dtype=np.int64)
            glob = local + self.offsets[s]
            keep = self.keep[glob] if within is None else self.keep[glob] & within[glob]
            if keep.any():
                candidates.append((s, local[keep], glob[keep]))
        if not candidates:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([glob for _, _, glob in candidates])[self._check(candidates, column, term, pattern)]

    def _check(self, candidates: list[tuple[int, np.ndarray, np.ndarray]], column: str, term: str,
               pattern: re.Pattern[str]) -> np.ndarray:
        """Which candidate rows ``(shard, local rows, global rows)`` match ``pattern``, in order.

        ASCII rows are checked in one call of Arrow's RE2 engine (see :func:`ascii_term_pattern`); other
        rows, and every row of a non-ASCII term, with the Python pattern.
        """
        fast = ascii_term_pattern(term)
        texts, on_ascii = [], []
        for s, local, _ in candidates:
            shard = self.shards[s]
            texts.append(pc.take(shard.array(column), local))
            on_ascii.append(shard.token_index(column).ascii[local] if fast is not None
                            else np.zeros(len(local), dtype=bool))
        flat = pa.concat_arrays(texts)
        ascii_rows = np.concatenate(on_ascii)
        ok = np.zeros(len(flat), dtype=bool)
        if ascii_rows.any():
            sub = flat.filter(pa.array(ascii_rows)) if not ascii_rows.all() else flat
            hit = pc.match_substring_regex(pc.ascii_lower(sub), pattern=fast)
            ok[ascii_rows] = pc.fill_null(hit, False).to_numpy(zero_copy_only=False)
        rest = np.flatnonzero(~ascii_rows)
        if len(rest):
            values = flat.take(pa.array(rest)).to_pylist()
            ok[rest] = np.fromiter((t is not None and pattern.search(t) is not None for t in values), bool, len(rest))
        return ok

    def _ascii_mask(self, column: str) -> np.ndarray:
        cached = self._ascii.get(column)
        if cached is None:
            parts = [s.token_index(column).ascii for s in self.shards]
            cached = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
            self._ascii[column] = cached
        return cached

    def _exact_rows(self, key: str, pattern: re.Pattern[str], column: str) -> np.ndarray:
        """Rows of a one-word ASCII term: index hits, regex-checked only on non-ASCII rows."""
        parts = []
        for s, shard in enumerate(self.shards):
            r = shard.token_index(column).rows_for(key)
            if len(r):
                parts.append(r + self.offsets[s])
        if not parts:
            return np.zeros(0, dtype=np.int64)
        glob = np.concatenate(parts)
        glob = glob[self.keep[glob]]
        need = ~self._ascii_mask(column)[glob]
        if need.any():
            texts = self.column(column, glob[need])
            ok = np.ones(len(glob), dtype=bool)
            ok[need] = np.fromiter((t is not None and pattern.search(t) is not None for t in texts), bool, len(texts))
            glob = glob[ok]
        return glob

    def field_rows(self, column: str, value: str) -> np.ndarray:
        """Distinct rows whose ``column`` equals ``value`` (case-insensitive, white space collapsed)."""
        key = field_key(value)
        pattern = term_regex(value)
        found = []
        for s, shard in enumerate(self.shards):
            local = shard.field_index(column).get(key)
            if local is None:
                continue
            local = local[self.keep[local + self.offsets[s]]]
            if len(local) == 0:
                continue
            vals = shard.table.column(column).take(pa.array(local)).to_pylist()
            ok = np.fromiter(
                (pattern.fullmatch(" ".join((v or "").split())) is not None for v in vals), bool, len(vals)
            )
            found.append(local[ok] + self.offsets[s])
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class AddReport:
    """What one :meth:`DatasetStore.add` call wrote.

    Attributes
    ----------
    written : dict
        Table → number of new rows written.
    skipped : dict
        Table → number of records not written because the store (or the same
        call) already had them.
    shards : tuple of str
        Paths (relative to the store root) of the new shard files.
    """

    written: dict[str, int]
    skipped: dict[str, int]
    shards: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"written": dict(self.written), "skipped": dict(self.skipped), "shards": list(self.shards)}


# -------------------------------------------------------------------- store
class DatasetStore:
    """The on-disk dataset: append-only Parquet shards, deduplicated and indexed.

    Parameters
    ----------
    root : str or Path, optional
        The store folder (created if missing). Default: ``$BIASTEST_DATA_DIR``
        or ``~/.cache/biastest/store``.
    writer : str
        Who writes through this store (an app name, a user name); recorded in
        the provenance of every row written (``stored_by``).

    Notes
    -----
    Safe to share between the threads of one server (one lock guards the
    in-memory state) and between processes (files are only ever created,
    never modified). Build one per process and pass it to the apps.
    """

    def __init__(self, root: str | Path | None = None, *, writer: str = "") -> None:
        self.root = Path(root).expanduser() if root is not None else default_store_dir()
        self.writer = writer
        self._lock = threading.RLock()
        self._shards: dict[str, dict[str, _Shard]] = {t: {} for t in TABLES}
        self._views: dict[str, TableView] = {}
        self._bad: dict[str, str] = {}
        self._listeners: list[Callable[[str], None]] = []
        try:
            for t in TABLES:
                (self.root / "data" / t).mkdir(parents=True, exist_ok=True)
            (self.root / "images").mkdir(parents=True, exist_ok=True)
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                MSG_CANNOT_WRITE.format(root=self.root, problem=exc.strerror or str(exc), env=DATA_DIR_ENV),
                root=str(self.root),
            ) from None
        self.remove_stale_temp_files()

    def remove_stale_temp_files(self, *, max_age: float = STALE_TMP_SECONDS, now: float | None = None) -> list[str]:
        """Remove the temporary files of writes that died (called when the store opens).

        The rule: a file in ``.biastest/tmp`` whose name ends in ``.tmp`` and
        that has not changed for ``max_age`` seconds (default ten minutes).
        A live write keeps its temporary file for the moments it takes to
        write, sync and rename it, changing it all the while, so a file that
        old belongs to a writer that is gone. Ages, not process ids, decide:
        the store folder may be shared by processes of other machines or
        containers, whose ids mean nothing here.

        Parameters
        ----------
        max_age : float
            Seconds without a change.
        now : float, optional
            The current time (``time.time()``), for tests.

        Returns
        -------
        list of str
            The names of the files removed.
        """
        now = time.time() if now is None else float(now)
        removed = []
        try:
            candidates = [p for p in self.tmp_dir.iterdir() if p.name.endswith(".tmp")]
        except OSError:
            return removed
        for path in candidates:
            try:
                if path.is_symlink() or not path.is_file() or now - path.stat().st_mtime <= max_age:
                    continue
                path.unlink()
            except OSError:  # gone meanwhile, or not ours to remove: leave it
                continue
            removed.append(path.name)
        if removed:
            log.info("removed %d orphaned temporary file(s) from %s", len(removed), self.tmp_dir)
        return removed

    # ------------------------------------------------------------ paths
    @property
    def state_dir(self) -> Path:
        """Local, never-synced state (temporary files, ledgers)."""
        return self.root / STATE_DIR

    @property
    def tmp_dir(self) -> Path:
        return self.state_dir / "tmp"

    def table_dir(self, table: str) -> Path:
        _check_table(table)
        return self.root / "data" / table

    def image_path(self, image: TestImage | str) -> Path:
        """Absolute path of a stored image (a :class:`TestImage` or its relative path)."""
        rel = image.path if isinstance(image, TestImage) else image
        return self.root / rel

    def shard_files(self, table: str | None = None) -> list[Path]:
        """Shard files on disk (one table or all), in read order."""
        tables = [table] if table else list(TABLES)
        out = []
        for t in tables:
            d = self.table_dir(t)
            out.extend(sorted((p for p in d.glob("*.parquet")), key=lambda p: p.name))
        return out

    def add_listener(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(relative_path)`` after every new file (shard or image) is written."""
        with self._lock:
            self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[str], None]) -> None:
        with self._lock:
            if callback in self._listeners:
                self._listeners.remove(callback)

    @property
    def problems(self) -> dict[str, str]:
        """Shard files that could not be read (path → user-facing message)."""
        with self._lock:
            return dict(self._bad)

    # ------------------------------------------------------------ reading
    def refresh(self) -> bool:
        """Notice new shard files on disk and index them; True if anything changed.

        Called by every read; costs one directory listing per table when
        nothing changed.
        """
        changed = False
        with self._lock:
            for t in TABLES:
                if self._refresh_table(t):
                    changed = True
        return changed

    def _refresh_table(self, table: str) -> bool:
        d = self.table_dir(table)
        try:
            entries = {e.name: e for e in os.scandir(d) if e.name.endswith(".parquet") and e.is_file()}
        except FileNotFoundError:
            entries = {}
        known = self._shards[table]
        gone = [n for n in known if n not in entries]
        new = sorted(n for n in entries if n not in known and str(d / n) not in self._bad)
        if not gone and not new and table in self._views:
            return False
        for n in gone:
            del known[n]
        for n in new:
            shard = self._load_shard(table, Path(entries[n].path))
            if shard is not None:
                known[n] = shard
        self._views[table] = TableView(table, [known[n] for n in sorted(known)])
        return bool(gone or new)

    def _load_shard(self, table: str, path: Path) -> _Shard | None:
        try:
            st = path.stat()
            data = _conform(pq.read_table(path), SCHEMAS[table])
        except (OSError, pa.ArrowException, ValueError) as exc:
            message = MSG_BAD_SHARD.format(path=path, problem=str(exc)[:200])
            self._bad[str(path)] = message
            log.warning(message)
            return None
        newest = pc.max(data.column(SCHEMA_VERSION_COLUMN)).as_py() if data.num_rows else None
        if newest is not None and newest > SCHEMA_VERSION:
            message = MSG_NEWER_SCHEMA.format(path=path, version=newest, supported=SCHEMA_VERSION)
            self._bad[str(path)] = message
            log.warning(message)
            return None
        return _Shard(path.name, path, st.st_size, st.st_mtime_ns, data, _ids_array(data.column("id")))

    def shards_of(self, table: str, ids: Iterable[str]) -> dict[str, str]:
        """The shard file (relative to the store root) holding each id's first copy, as reads see it.

        Ids the table does not hold are left out. Vectorised per shard (one Arrow ``is_in``), so a few thousand
        ids cost milliseconds in a store of a million rows.
        """
        wanted = [str(i) for i in ids]
        if not wanted:
            return {}
        view = self.view(table)
        value_set = pa.array(sorted(set(wanted)), type=pa.string())
        out: dict[str, str] = {}
        for shard in view.shards:
            column = shard.table.column("id")
            hits = pc.filter(column, pc.is_in(column, value_set=value_set)).to_pylist()
            rel = shard.path.relative_to(self.root).as_posix() if shard.path.is_relative_to(self.root) else shard.name
            for i in hits:
                out.setdefault(i, rel)
            if len(out) == len(value_set):
                break
        return out

    def view(self, table: str) -> TableView:
        """A consistent snapshot of ``table`` (refreshed from disk first)."""
        _check_table(table)
        with self._lock:
            self._refresh_table(table)
            return self._views[table]

    def sentences(self) -> list[TestSentence]:
        """All distinct stored sentences (first occurrence wins)."""
        return self.view("sentences").records()

    def pairs(self) -> list[SentencePair]:
        """All distinct stored sentence pairs."""
        return self.view("pairs").records()

    def images(self) -> list[TestImage]:
        """All distinct stored image records."""
        return self.view("images").records()

    def specs(self) -> list[BiasSpec]:
        """All distinct stored bias specifications."""
        return [BiasSpec.from_json(r["spec_json"]) for r in self.view("specs").records()]

    def results(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Stored results as dicts (``result`` holds the result's ``to_dict()``)."""
        out = []
        for r in self.view("results").records():
            if kind is not None and r["kind"] != kind:
                continue
            out.append({**r, "result": json.loads(r["result_json"]), "provenance": json.loads(r["provenance"] or "{}")})
        return out

    def count(self, table: str) -> int:
        """Distinct records in ``table``."""
        return len(self.view(table))

    def read_image(self, image: TestImage) -> bytes:
        """The bytes of a stored image."""
        try:
            return self.image_path(image).read_bytes()
        except OSError as exc:
            raise StoreError(
                MSG_CANNOT_WRITE.format(root=self.root, problem=exc.strerror or str(exc), env=DATA_DIR_ENV)
            ) from None

    # ------------------------------------------------------------ writing
    def _stamp(self, prov: Mapping[str, Any] | None) -> str:
        record = dict(prov or {})
        record.setdefault("stored_at", utc_now())
        record.setdefault("stored_by", self.writer or f"biastest {__version__}")
        return json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)

    def _new_name(self, local_only: bool) -> str:
        now = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        suffix = LOCAL_ONLY_SUFFIX if local_only else ""
        return f"{now}-{os.getpid()}-{uuid.uuid4().hex[:12]}{suffix}.parquet"

    def _atomic_write(self, target: Path, write: Callable[[Path], None]) -> None:
        tmp = self.tmp_dir / f"{target.name}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
            write(tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(
                MSG_CANNOT_WRITE.format(root=self.root, problem=exc.strerror or str(exc), env=DATA_DIR_ENV),
                root=str(self.root),
            ) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _write_rows(self, table: str, rows: list[dict[str, Any]], *, local_only: bool = False) -> str | None:
        if not rows:
            return None
        for row in rows:
            row[SCHEMA_VERSION_COLUMN] = SCHEMA_VERSION
        data = pa.Table.from_pylist(rows, schema=SCHEMAS[table])
        target = self.table_dir(table) / self._new_name(local_only)
        self._atomic_write(target, lambda p: pq.write_table(data, p, compression="zstd"))
        rel = target.relative_to(self.root).as_posix()
        self._notify(rel)
        return rel

    def _notify(self, rel: str) -> None:
        for cb in list(self._listeners):
            try:
                cb(rel)
            except Exception:  # a listener must never break a write
                log.exception("store listener failed")

    def _existing_ids(self, table: str, ids: Sequence[str]) -> set[str]:
        view = self.view(table)
        if not view.shards or not ids:
            return set()
        wanted = pa.array(list(ids), type=pa.string())
        found: set[str] = set()
        for shard in view.shards:
            mask = pc.is_in(wanted, value_set=shard.table.column("id").combine_chunks())
            found.update(v for v, m in zip(ids, mask.to_pylist(), strict=True) if m)
        return found

    def _add_records(
        self, table: str, records: Iterable[Any], *, skip_existing: bool, local_only: bool
    ) -> tuple[int, int, str | None]:
        cls = _RECORD_TYPES[table]
        batch: dict[str, Any] = {}
        skipped = 0
        for rec in records:
            if not isinstance(rec, cls):
                raise DataError(
                    MSG_WRONG_RECORD.format(table=table, expected=cls.__name__, got=type(rec).__name__), table=table
                )
            if rec.id in batch:
                skipped += 1
                continue
            batch[rec.id] = rec
        if skip_existing and batch:
            existing = self._existing_ids(table, list(batch))
            skipped += len(existing)
            batch = {k: v for k, v in batch.items() if k not in existing}
        rows = []
        for rec in batch.values():
            row = rec.to_row()
            row["provenance"] = self._stamp(rec.provenance)
            rows.append(row)
        return len(rows), skipped, self._write_rows(table, rows, local_only=local_only)

    def add(
        self,
        sentences: Iterable[TestSentence] = (),
        pairs: Iterable[SentencePair] = (),
        *,
        skip_existing: bool = True,
        local_only: bool = False,
    ) -> AddReport:
        """Append sentences and pairs (one new shard per non-empty table).

        Parameters
        ----------
        sentences, pairs : iterables of records
        skip_existing : bool
            Leave out records the store already has (same content id).
            Duplicates that slip through (two processes writing the same
            record at once) are removed on read.
        local_only : bool
            Mark the new shards as never to be pushed to the Hub (used for
            read-only public imports).
        """
        written: dict[str, int] = {}
        skipped: dict[str, int] = {}
        shards: list[str] = []
        with self._lock:
            for table, records in (("sentences", sentences), ("pairs", pairs)):
                n, k, rel = self._add_records(table, records, skip_existing=skip_existing, local_only=local_only)
                written[table] = n
                skipped[table] = k
                if rel:
                    shards.append(rel)
        return AddReport(written, skipped, tuple(shards))

    def add_sentences(self, sentences: Iterable[TestSentence], **kw: Any) -> AddReport:
        """Shortcut for :meth:`add` with sentences only."""
        return self.add(sentences, (), **kw)

    def add_pairs(self, pairs: Iterable[SentencePair], **kw: Any) -> AddReport:
        """Shortcut for :meth:`add` with pairs only."""
        return self.add((), pairs, **kw)

    # ------------------------------------------------------------ images
    def _validate_image(self, data: bytes, image_term: str) -> tuple[str, int, int]:
        from PIL import Image, UnidentifiedImageError

        if not isinstance(image_term, str) or not image_term.strip():
            raise DataError(MSG_IMAGE_NO_TERM)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DataError(MSG_NOT_AN_IMAGE.format(image_term=image_term, problem="no image data"))
        if len(data) > MAX_IMAGE_BYTES:
            raise DataError(
                MSG_IMAGE_TOO_LARGE.format(
                    image_term=image_term, size_mb=len(data) / 2**20, limit_mb=MAX_IMAGE_BYTES / 2**20
                )
            )
        try:
            with Image.open(io.BytesIO(data)) as img:
                fmt = img.format or ""
                img.verify()
            with Image.open(io.BytesIO(data)) as img:
                img.load()
                width, height = img.size
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            raise DataError(
                MSG_NOT_AN_IMAGE.format(image_term=image_term, problem=str(exc)[:120] or type(exc).__name__)
            ) from None
        if fmt not in IMAGE_FORMATS:
            raise DataError(MSG_IMAGE_FORMAT.format(fmt=fmt or "unknown", allowed=", ".join(IMAGE_FORMATS)))
        return IMAGE_FORMATS[fmt], width, height

    def _put_image_file(self, data: bytes, ext: str) -> tuple[str, str]:
        import hashlib

        sha = hashlib.sha256(data).hexdigest()
        rel = f"images/{sha}.{ext}"
        target = self.root / rel
        if not target.exists():
            self._atomic_write(target, lambda p: p.write_bytes(bytes(data)))
            self._notify(rel)
        return sha, rel

    def add_image(
        self,
        data: bytes,
        *,
        image_term: str,
        prompt: str = "",
        generator: str = "",
        model: str = "",
        seed: int | None = None,
        source: str = "user",
        spec_name: str = "",
        provenance: Mapping[str, Any] | None = None,
    ) -> TestImage:
        """Validate and store one image file plus its metadata row.

        The bytes are checked with Pillow before anything is written; the
        file is written to a temporary name and renamed into
        ``images/<sha256>.<ext>``; the metadata row is written last, so a
        failure never leaves a row without its file.

        Raises
        ------
        DataError
            Not an image, unsupported format, too large, or no term.
        StoreError
            The disk cannot be written.
        """
        return self.add_images([(data, {"image_term": image_term, "prompt": prompt, "generator": generator,
                                        "model": model, "seed": seed, "source": source, "spec_name": spec_name,
                                        "provenance": dict(provenance or {})})])[0]

    def add_images(self, items: Iterable[Any]) -> list[TestImage]:
        """Store several images with one metadata shard.

        Each item is ``(bytes, fields)`` (fields as for :meth:`add_image`) or
        an object with ``png`` bytes and ``to_test_image()`` (a generated
        image from :mod:`biastest.generate.images`). All images are validated
        before any is written.
        """
        prepared = []
        for item in items:
            if isinstance(item, tuple):
                data, f = item
                f = dict(f)
            else:
                data = item.png
                rec = item.to_test_image()
                f = {k: getattr(rec, k) for k in ("image_term", "prompt", "generator", "model", "seed", "source",
                                                  "spec_name", "provenance")}
            ext, w, h = self._validate_image(data, f.get("image_term", ""))
            prepared.append((data, ext, w, h, f))
        out: list[TestImage] = []
        with self._lock:
            for data, ext, w, h, f in prepared:
                sha, rel = self._put_image_file(data, ext)
                out.append(TestImage(path=rel, sha256=sha, width=w, height=h, **f))
            existing = self._existing_ids("images", [r.id for r in out])
            rows, seen = [], set()
            for rec in out:
                if rec.id in existing or rec.id in seen:
                    continue
                seen.add(rec.id)
                row = rec.to_row()
                row["provenance"] = self._stamp(rec.provenance)
                rows.append(row)
            self._write_rows("images", rows)
        return out

    # ------------------------------------------------------------ specs, results
    def add_spec(self, spec: BiasSpec, *, provenance: Mapping[str, Any] | None = None) -> str:
        """Store a bias specification (its BiasTestGPT JSON); returns its id."""
        sid = content_id("spec", spec.to_dict())
        with self._lock:
            if not self._existing_ids("specs", [sid]):
                self._write_rows("specs", [{"id": sid, "name": spec.name, "source": spec.source,
                                            "spec_json": spec.to_json(indent=None), "created_at": utc_now(),
                                            "provenance": self._stamp(provenance)}])
        return sid

    def add_result(
        self,
        result: Any,
        *,
        kind: str,
        spec_name: str = "",
        model: str = "",
        method: str = "",
    ) -> str:
        """Store a result (a mapping or an object with ``to_dict()``); returns its id."""
        if isinstance(result, Mapping):
            payload = dict(result)
        elif hasattr(result, "to_dict"):
            payload = result.to_dict()
        else:
            raise DataError(MSG_NO_TO_DICT.format(type_name=type(result).__name__))
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
        rid = content_id("result", kind, text)
        prov = payload.get("provenance") if isinstance(payload.get("provenance"), Mapping) else {}
        with self._lock:
            if not self._existing_ids("results", [rid]):
                self._write_rows("results", [{"id": rid, "kind": kind, "spec_name": spec_name, "model": model,
                                              "method": method, "result_json": text, "created_at": utc_now(),
                                              "provenance": self._stamp(prov)}])
        return rid

    def __repr__(self) -> str:
        return f"DatasetStore({str(self.root)!r})"


def _check_table(table: str) -> None:
    if table not in TABLES:
        raise StoreError(MSG_UNKNOWN_TABLE.format(table=table, tables=", ".join(TABLES)))
