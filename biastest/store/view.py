"""Reading a table: shards with their word and field indexes, and :class:`TableView`, one table's snapshot.

Each sentence shard gets an inverted index (word token → row numbers) built once, when the shard is first
seen, with vectorised Arrow kernels; a look-up of a term costs dictionary look-ups plus the exact
word-bounded regex check (:func:`biastest.spec.term_regex`) on the candidate rows only. Across shards the
first occurrence of a record wins (see :mod:`biastest.store.local`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from biastest.spec import term_regex
from biastest.store.folding import WORD, ascii_term_pattern, field_key, fold, plain_word, term_keys
from biastest.store.schema import RECORD_TYPES, records_from_columns

__all__ = ["Shard", "TableView", "TokenIndex"]


class TokenIndex:
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
                words = WORD.findall(fold(texts[r].as_py()))
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
class Shard:
    """One Parquet shard as read: its table, its ids and the indexes built on first use."""

    name: str
    path: Path
    size: int
    mtime_ns: int
    table: pa.Table
    ids: np.ndarray  # uint64 (hex ids) or object
    _token_index: dict[str, TokenIndex] | None = None
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

    def token_index(self, column: str) -> TokenIndex:
        if self._token_index is None:
            self._token_index = {}
        index = self._token_index.get(column)
        if index is None:
            index = self._token_index[column] = TokenIndex(self.table.column(column))
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


class TableView:
    """An immutable snapshot of one table: its shards, dedup mask and indexes.

    Obtain one with :meth:`DatasetStore.view`; row numbers returned by a view
    are only meaningful for that view.
    """

    def __init__(self, table: str, shards: Sequence[Shard]) -> None:
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
        cls = RECORD_TYPES.get(self.table)
        if cls is None:
            return self.rows_dicts(rows)
        names, columns = self._columns(rows)
        return records_from_columns(cls, names, columns)

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
