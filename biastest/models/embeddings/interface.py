"""The one interface of every embedding source: :class:`WordEmbeddings`, its lookup reports, vectors in memory.

A backend (:mod:`biastest.models.embeddings.backends`) gives the vocabulary
lookup (``_index_of``, ``_rows``); :class:`WordEmbeddings` does normalisation,
case handling, multi-word terms (the mean of the word vectors) and the per-term
:class:`LookupReport`. :class:`InMemoryEmbeddings` holds vectors in memory
(bootstrap replicates, restricted copies, tests); :func:`check_coverage`
refuses a list whose terms are mostly missing; :func:`cosine_matrix` is the
cosine of every pair of rows.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import EmbeddingError

__all__ = [
    "MSG_BAD_MATRIX",
    "MSG_EMPTY_TERM",
    "MSG_MISSING_TERMS",
    "MSG_MOSTLY_MISSING",
    "MSG_NO_VOCABULARY",
    "InMemoryEmbeddings",
    "LookupReport",
    "TermLookup",
    "WordEmbeddings",
    "check_coverage",
    "cosine_matrix",
]

MSG_MOSTLY_MISSING = (
    "{n_missing} of {n_terms} {role} are not in the embedding '{source}' (more than {limit:.0%} missing), so "
    "this test would not mean much: {missing}. Use other words or another embedding source."
)
MSG_MISSING_TERMS = "These {role} are not in the embedding '{source}': {missing}."
MSG_NO_VOCABULARY = (
    "The embedding '{source}' has no fixed vocabulary (it encodes any text), so nearest words cannot be listed."
)
MSG_EMPTY_TERM = "An empty term cannot be embedded; remove it from the list."
MSG_BAD_MATRIX = "The vectors for '{name}' must be a 2-D array with one row per word; got shape {shape}."


# --------------------------------------------------------------------------- helpers
def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of ``a`` with every row of ``b``.

    ``cos(a_i, b_j) = a_i·b_j / (‖a_i‖‖b_j‖)``, computed in float64.
    A zero row raises :class:`EmbeddingError` (its cosine is undefined).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    na = np.linalg.norm(a, axis=-1, keepdims=True)
    nb = np.linalg.norm(b, axis=-1, keepdims=True)
    if np.any(na == 0) or np.any(nb == 0):
        raise EmbeddingError("A word vector is all zeros, so its cosine similarity is undefined.")
    return (a / na) @ (b / nb).T


_MULTI = re.compile(r"[\s_]")


def _split_words(term: str) -> list[str]:
    return [w for w in re.split(r"[\s_]+", term.strip()) if w]


@dataclass(frozen=True)
class TermLookup:
    """How one term was looked up.

    Attributes
    ----------
    term : str
        The term as given.
    found : bool
        Whether the term has a vector.
    key : str
        What was looked up (e.g. the lower-cased word); for multi-word terms the
        words joined by spaces.
    how : str
        ``"word"``, ``"mean"`` (mean of the word vectors of a multi-word term),
        ``"encoder"`` (embedded whole by a sentence encoder), ``"subword"``
        (fastText n-grams for an out-of-vocabulary word) or ``"missing"``.
    missing_words : tuple of str
        For a multi-word term, the words that were not found.
    lowercased : bool
        Whether the lookup lower-cased the term.
    """

    term: str
    found: bool
    key: str
    how: str
    missing_words: tuple[str, ...] = ()
    lowercased: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": self.term,
            "found": self.found,
            "key": self.key,
            "how": self.how,
            "missing_words": list(self.missing_words),
            "lowercased": self.lowercased,
        }


@dataclass(frozen=True)
class LookupReport:
    """Per-term lookup report of a list of terms in one embedding source."""

    source: str
    terms: tuple[TermLookup, ...]
    note: str = ""

    @property
    def found(self) -> tuple[str, ...]:
        return tuple(t.term for t in self.terms if t.found)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(t.term for t in self.terms if not t.found)

    @property
    def missing_fraction(self) -> float:
        return len(self.missing) / len(self.terms) if self.terms else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "note": self.note,
            "found": list(self.found),
            "missing": list(self.missing),
            "terms": [t.to_dict() for t in self.terms],
        }

    def records(self) -> list[dict[str, Any]]:
        """One row per term (for a table)."""
        return [
            {
                "term": t.term,
                "found": t.found,
                "looked_up_as": t.key,
                "how": t.how,
                "missing_words": " ".join(t.missing_words),
            }
            for t in self.terms
        ]

# --------------------------------------------------------------------------- interface
class WordEmbeddings(ABC):
    """One interface for every embedding source.

    Subclasses give the vocabulary lookup (:meth:`_index_of`, :meth:`_rows`) and
    the base class does normalisation, case handling, multi-word terms and
    reporting. Sentence encoders override :meth:`lookup_report` and
    :meth:`vectors` to embed whole terms.

    Attributes
    ----------
    name : str
        The source id (as resolved by :func:`resolve_source`).
    dim : int
        Vector dimension.
    lowercase : bool
        Whether lookups are lower-cased (GloVe 6B: yes).
    multiword : str
        How multi-word terms are embedded: ``"mean"`` or ``"encoder"``.
    """

    name: str
    dim: int
    lowercase: bool = False
    case_fallback: bool = False
    multiword: str = "mean"

    # -- to implement ------------------------------------------------------
    @abstractmethod
    def _index_of(self, words: Sequence[str]) -> np.ndarray:
        """Row index of each word in :meth:`_rows`, ``-1`` when missing."""

    @abstractmethod
    def _rows(self, index: np.ndarray) -> np.ndarray:
        """The vectors at the given row indices, as float32 [n, dim]."""

    def _subword(self, word: str) -> np.ndarray | None:  # fastText only
        return None

    # -- vocabulary (optional) --------------------------------------------
    def vocabulary(self) -> Sequence[str]:
        """The words of the vocabulary, in row order."""
        raise EmbeddingError(MSG_NO_VOCABULARY.format(source=self.name), source=self.name)

    def matrix(self) -> np.ndarray:
        """The full [vocabulary, dim] matrix (may be memory-mapped)."""
        raise EmbeddingError(MSG_NO_VOCABULARY.format(source=self.name), source=self.name)

    # -- lookups ------------------------------------------------------------
    def _keys(self, word: str) -> list[str]:
        if self.lowercase:
            return [word.lower()]
        if self.case_fallback and word.lower() != word:
            return [word, word.lower()]
        return [word]

    def _resolve_words(self, words: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Row index per word (``-1`` missing) and the key actually used."""
        first = [self._keys(w)[0] for w in words]
        idx = np.asarray(self._index_of(first), dtype=np.int64).copy()
        used = list(first)
        for i, w in enumerate(words):
            if idx[i] < 0:
                for alt in self._keys(w)[1:]:
                    j = int(self._index_of([alt])[0])
                    if j >= 0:
                        idx[i], used[i] = j, alt
                        break
        return idx, used

    def _plan(self, terms: Sequence[str]) -> tuple[list[TermLookup], list[list[int]], dict[int, np.ndarray]]:
        clean = []
        for t in terms:
            if not isinstance(t, str) or not t.strip():
                raise EmbeddingError(MSG_EMPTY_TERM, term=t)
            clean.append(t)
        words_per_term = [_split_words(t) for t in clean]
        flat = [w for ws in words_per_term for w in ws]
        idx, used = self._resolve_words(flat) if flat else (np.zeros(0, dtype=np.int64), [])
        lookups: list[TermLookup] = []
        rows: list[list[int]] = []
        subword: dict[int, np.ndarray] = {}
        pos = 0
        for term, ws in zip(clean, words_per_term, strict=True):
            ix = idx[pos : pos + len(ws)]
            keys = used[pos : pos + len(ws)]
            missing = tuple(w for w, j in zip(ws, ix, strict=True) if j < 0)
            lowered = any(k != w for k, w in zip(keys, ws, strict=True))
            key = " ".join(keys)
            if len(ws) == 1 and missing:
                vec = self._subword(keys[0])
                if vec is not None:
                    subword[len(lookups)] = vec
                    lookups.append(TermLookup(term, True, key, "subword", (), lowered))
                    rows.append([])
                    pos += len(ws)
                    continue
            how = "missing" if missing else ("word" if len(ws) == 1 else "mean")
            lookups.append(TermLookup(term, not missing, key, how, missing if len(ws) > 1 else (), lowered))
            rows.append([int(j) for j in ix] if not missing else [])
            pos += len(ws)
        return lookups, rows, subword

    def has(self, word: str) -> bool:
        """Whether ``word`` (or multi-word term) can be embedded."""
        return self.lookup_report([word]).terms[0].found

    def lookup_report(self, terms: Sequence[str]) -> LookupReport:
        """Per-term report: found or missing, and how it is embedded."""
        lookups, _, _ = self._plan(list(terms))
        return LookupReport(self.name, tuple(lookups), self.case_note())

    def case_note(self) -> str:
        if self.lowercase:
            return f"'{self.name}' is lower-case only: every term is looked up in lower case."
        if self.case_fallback:
            return f"Terms not found as written are looked up in lower case in '{self.name}'."
        return ""

    def vectors(self, terms: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Vectors of the terms that are found, and the list of missing terms.

        Returns
        -------
        vectors : np.ndarray
            float32 [n_found, dim], rows in the order of the found terms.
        missing : list of str
            The terms with no vector (never NaN rows).
        """
        terms = list(terms)
        if terms and all(isinstance(t, str) and t and t.strip() == t and not _MULTI.search(t) for t in terms):
            idx, _ = self._resolve_words(terms)  # fast path: single words, all found
            if np.all(idx >= 0):
                return np.asarray(self._rows(idx), dtype=np.float32), []
        lookups, rows, subword = self._plan(terms)
        out = []
        flat_rows = sorted({j for r in rows for j in r})
        lut = {}
        if flat_rows:
            block = np.asarray(self._rows(np.asarray(flat_rows, dtype=np.int64)), dtype=np.float32)
            lut = {j: block[i] for i, j in enumerate(flat_rows)}
        for i, (lk, r) in enumerate(zip(lookups, rows, strict=True)):
            if not lk.found:
                continue
            if i in subword:
                out.append(np.asarray(subword[i], dtype=np.float32))
            elif len(r) == 1:
                out.append(lut[r[0]])
            else:
                out.append(np.mean(np.stack([lut[j] for j in r]).astype(np.float64), axis=0).astype(np.float32))
        arr = np.stack(out).astype(np.float32) if out else np.zeros((0, self.dim), dtype=np.float32)
        return arr, [lk.term for lk in lookups if not lk.found]

    # -- nearest words -------------------------------------------------------
    def _normalised_matrix(self) -> np.ndarray:
        cached = getattr(self, "_unit_matrix", None)
        if cached is None:
            lock = self.__dict__.setdefault("_unit_lock", threading.Lock())
            with lock:
                cached = getattr(self, "_unit_matrix", None)
                if cached is None:
                    m = np.asarray(self.matrix(), dtype=np.float32)
                    norms = np.linalg.norm(m, axis=1, keepdims=True)
                    norms[norms == 0] = 1.0
                    cached = m / norms
                    self._unit_matrix = cached
        return cached

    def nearest(
        self, vector: np.ndarray, k: int = 10, *, exclude: Iterable[str] = ()
    ) -> list[tuple[str, float]] | list[list[tuple[str, float]]]:
        """The ``k`` vocabulary words with the highest cosine similarity.

        Parameters
        ----------
        vector : np.ndarray
            One vector [dim] or a batch [m, dim].
        k : int
            Number of words per query.
        exclude : iterable of str
            Words never returned (e.g. the query words).

        Returns
        -------
        list of (word, cosine), best first; a list of such lists for a batch.
        """
        unit = self._normalised_matrix()
        words = self.vocabulary()
        q = np.asarray(vector, dtype=np.float32)
        single = q.ndim == 1
        q = np.atleast_2d(q)
        qn = np.linalg.norm(q, axis=1, keepdims=True)
        if np.any(qn == 0):
            raise EmbeddingError("A query vector is all zeros, so its nearest words are undefined.")
        sims = (q / qn) @ unit.T
        ex = [i for i in self._index_of(list(exclude)) if i >= 0] if exclude else []
        if ex:
            sims[:, ex] = -np.inf
        k = max(1, min(int(k), sims.shape[1]))
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(sims, top, axis=1).argsort(axis=1)[:, ::-1]
        top = np.take_along_axis(top, order, axis=1)
        res = [[(str(words[j]), float(sims[r, j])) for j in top[r]] for r in range(sims.shape[0])]
        return res[0] if single else res

    def restrict(self, terms: Sequence[str], *, name: str | None = None) -> InMemoryEmbeddings:
        """A small in-memory copy holding only the found ``terms`` (as looked up)."""
        vecs, missing = self.vectors(terms)
        found = [t for t in terms if t not in set(missing)]
        return InMemoryEmbeddings(name or f"{self.name}[restricted]", found, vecs, multiword=self.multiword)

    def describe(self) -> dict[str, Any]:
        """JSON-able description for provenance."""
        return {
            "source": self.name,
            "dim": int(self.dim),
            "lowercase": bool(self.lowercase),
            "multiword": self.multiword,
            "kind": type(self).__name__,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


# --------------------------------------------------------------------------- vectors in memory
class InMemoryEmbeddings(WordEmbeddings):
    """Vectors held in memory (replicates, restricted copies, tests).

    Parameters
    ----------
    name : str
    words : sequence of str
    matrix : array-like [n_words, dim]
    lowercase : bool
    multiword : str
    """

    def __init__(
        self,
        name: str,
        words: Sequence[str],
        matrix: np.ndarray,
        *,
        lowercase: bool = False,
        multiword: str = "mean",
    ) -> None:
        m = np.asarray(matrix, dtype=np.float32)
        if m.ndim != 2 or m.shape[0] != len(words):
            raise EmbeddingError(MSG_BAD_MATRIX.format(name=name, shape=tuple(m.shape)), name=name)
        self.name = name
        self.dim = int(m.shape[1])
        self.lowercase = lowercase
        self.multiword = multiword
        self._words = list(words)
        self._matrix = m
        self._lookup = {w: i for i, w in enumerate(self._words)}

    def _index_of(self, words: Sequence[str]) -> np.ndarray:
        return np.fromiter((self._lookup.get(w, -1) for w in words), dtype=np.int64, count=len(words))

    def _rows(self, index: np.ndarray) -> np.ndarray:
        return self._matrix[index]

    def vocabulary(self) -> Sequence[str]:
        return self._words

    def matrix(self) -> np.ndarray:
        return self._matrix


def check_coverage(report: LookupReport, *, role: str = "terms", max_missing_fraction: float = 0.5) -> LookupReport:
    """Refuse a list whose terms are mostly missing.

    Raises :class:`EmbeddingError` (:data:`MSG_MOSTLY_MISSING`, listing the
    missing terms) when more than ``max_missing_fraction`` of the terms are
    missing; returns the report otherwise.
    """
    n, miss = len(report.terms), report.missing
    if n and len(miss) / n > max_missing_fraction:
        raise EmbeddingError(
            MSG_MOSTLY_MISSING.format(
                n_missing=len(miss),
                n_terms=n,
                role=role,
                source=report.source,
                limit=max_missing_fraction,
                missing=", ".join(miss),
            ),
            missing=list(miss),
            role=role,
        )
    return report
