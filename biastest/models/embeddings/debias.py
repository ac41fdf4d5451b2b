"""Hard debiasing (Bolukbasi et al. 2016) as a transform of any loaded embedding.

Bolukbasi, Chang, Zou, Saligrama & Kalai (2016), *Man is to Computer Programmer as Woman is to Homemaker?
Debiasing Word Embeddings*, NeurIPS (arXiv:1607.06520), §5 "hard de-biasing", as their code does it
(``debiaswe/debias.py`` of https://github.com/tolga-b/debiaswe):

1. **Gender direction** ``g``: every vector is scaled to unit length; for each definitional pair ``(a, b)``
   (``woman/man``, ``girl/boy``, ``she/he`` …) the centred vectors ``a − c`` and ``b − c`` with
   ``c = (a + b)/2`` are rows of a matrix; ``g`` is its first principal component (unit length; its sign is
   chosen so that the first words of the pairs, the female ones, lie on its positive side).
2. **Neutralise**: every word that is not gender-specific becomes ``w ← (w − (w·g) g) / ‖w − (w·g) g‖``, so
   its component on ``g`` is zero and it keeps unit length. The gender-specific words (the seed list) keep their
   unit vector.
3. **Equalise**: for each equality pair ``(a, b)`` (``grandfather/grandmother``, ``king/queen`` …, in lower,
   title and upper case where the embedding has both words as written), with ``a, b`` as after step 2:
   ``y = ν − (ν·g) g`` for ``ν = (a + b)/2``, ``z = √(1 − ‖y‖²)`` with the sign of ``(a − b)·g``, and
   ``a ← y + z g``, ``b ← y − z g``: the two are equidistant from every neutralised word, have the same
   neutral part ``y`` and equal and opposite components ``±z`` on ``g``, and unit length.

The word lists are the authors' (:func:`load_debias_lists`, ``biastest/data/debias/bolukbasi2016.json``, MIT):
10 definitional pairs, 52 equality pairs and the 218-word **seed** list of gender-specific words
(``gender_specific_seed.json``; the paper also learned a longer list with a classifier, which is not used here).
The seed list, exact as written, is what is not neutralised; the definitional words are read as the embedding
reads any term (GloVe 6B lower-cases ``Mary`` and ``John``).

The transform is applied as vectors are read (:class:`HardDebiasedEmbeddings` wraps the loaded embedding), so it
works on any source: the embedded GloVe 6B, word-vector files, and sentence encoders (a term embedded whole is
treated as one word: neutralised unless it is on the seed list, equalised when it is in an equality pair). A
multi-word term of a word-vector source is the mean of its debiased word vectors. The debiased embedding is named
``<source> + hard-debias(bolukbasi2016)`` (:func:`debiased_source`), a source string that
:func:`~biastest.models.embeddings.sources.load_embeddings` accepts, so it is recorded in every result's
provenance and can be loaded again.

Examples
--------
>>> import numpy as np
>>> g = gender_direction([(np.array([1.0, 0.2]), np.array([-1.0, 0.2]))])
>>> np.round(g, 6).tolist()
[1.0, 0.0]
>>> np.round(neutralise(np.array([[0.6, 0.8]]), g), 6).tolist()
[[0.0, 1.0]]
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from biastest.errors import EmbeddingError
from biastest.models.embeddings.interface import LookupReport, WordEmbeddings

__all__ = [
    "DEBIAS_METHODS",
    "LISTS_NAME",
    "MSG_DEBIAS_TWICE",
    "MSG_FEW_DEFINITIONAL",
    "MSG_UNKNOWN_DEBIAS",
    "MSG_UNKNOWN_LISTS",
    "DebiasLists",
    "HardDebiasedEmbeddings",
    "debiased_source",
    "equalise",
    "gender_direction",
    "load_debias_lists",
    "neutralise",
    "split_debiased",
]

#: The word lists shipped (``biastest/data/debias/<name>.json``).
LISTS_NAME = "bolukbasi2016"
#: The debiasing methods a user can ask for (command line ``--debias``, audit ``debias:``).
DEBIAS_METHODS = ("hard",)
#: Fewest definitional pairs the embedding must have for a gender direction.
MIN_DEFINITIONAL = 2

MSG_FEW_DEFINITIONAL = (
    "Hard debiasing needs at least {need} of the definitional pairs ({pairs}) in the embedding '{source}' to find "
    "its gender direction; only {found} are there. Choose another embedding."
)
MSG_DEBIAS_TWICE = "The embedding '{source}' is already hard-debiased; choose the embedding before debiasing."
MSG_UNKNOWN_LISTS = "Unknown word lists '{lists}' for hard debiasing. Choose: " + LISTS_NAME + "."
MSG_UNKNOWN_DEBIAS = "Unknown debiasing '{value}'. Choose one of: " + ", ".join(DEBIAS_METHODS) + "."

_SUFFIX = re.compile(r"^(?P<base>.+?)\s*\+\s*hard-debias(?:\s*\(\s*(?P<lists>[^()]*?)\s*\))?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class DebiasLists:
    """The word lists of hard debiasing.

    Attributes
    ----------
    name : str
        ``bolukbasi2016``.
    source : str
        Where the lists come from (paper, repository, licence).
    definitional_pairs : tuple of (str, str)
        Pairs whose differences define the gender direction (female word first).
    equalize_pairs : tuple of (str, str)
        Pairs made equidistant from every neutral word.
    gender_specific : tuple of str
        Words that are not neutralised (the authors' seed list).
    """

    name: str
    source: str
    definitional_pairs: tuple[tuple[str, str], ...]
    equalize_pairs: tuple[tuple[str, str], ...]
    gender_specific: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """What a result's provenance records: the lists' name, source and sizes."""
        return {"name": self.name, "source": self.source, "definitional_pairs": len(self.definitional_pairs),
                "equalize_pairs": len(self.equalize_pairs), "gender_specific": len(self.gender_specific)}


def load_debias_lists(name: str = LISTS_NAME) -> DebiasLists:
    """The shipped word lists ``name`` (only :data:`LISTS_NAME`).

    Raises
    ------
    EmbeddingError
        :data:`MSG_UNKNOWN_LISTS`.
    """
    if name != LISTS_NAME:
        raise EmbeddingError(MSG_UNKNOWN_LISTS.format(lists=name), lists=name)
    doc = json.loads((resources.files("biastest") / "data" / "debias" / f"{name}.json").read_text(encoding="utf-8"))
    return DebiasLists(
        name=doc["name"], source=doc["source"],
        definitional_pairs=tuple((str(a), str(b)) for a, b in doc["definitional_pairs"]),
        equalize_pairs=tuple((str(a), str(b)) for a, b in doc["equalize_pairs"]),
        gender_specific=tuple(str(w) for w in doc["gender_specific"]),
    )


# --------------------------------------------------------------------------- the source string
def debiased_source(source: str, method: str = "hard") -> str:
    """The source string of ``source`` hard-debiased: ``"<source> + hard-debias(bolukbasi2016)"``.

    Raises
    ------
    EmbeddingError
        :data:`MSG_UNKNOWN_DEBIAS` for a method other than ``hard``; :data:`MSG_DEBIAS_TWICE`.
    """
    if str(method).strip().lower() not in DEBIAS_METHODS:
        raise EmbeddingError(MSG_UNKNOWN_DEBIAS.format(value=method), value=method)
    if split_debiased(source) is not None:
        raise EmbeddingError(MSG_DEBIAS_TWICE.format(source=source), source=source)
    return f"{source} + hard-debias({LISTS_NAME})"


def split_debiased(source: str) -> tuple[str, str] | None:
    """``(base source, lists name)`` of a hard-debiased source string, None for any other source.

    Accepts ``<source>+hard-debias`` and ``<source> + hard-debias(<lists>)`` (any case and spacing).
    """
    m = _SUFFIX.match(source.strip()) if isinstance(source, str) else None
    if m is None:
        return None
    return m.group("base").strip(), (m.group("lists") or LISTS_NAME).strip()


# --------------------------------------------------------------------------- the three steps
def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0)


def gender_direction(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The first principal component of the centred definitional-pair vectors (unit length, float64).

    Parameters
    ----------
    pairs : sequence of (vector, vector)
        The two words' vectors of each definitional pair, the female word first (scaled to unit length here).

    Returns
    -------
    np.ndarray
        ``g`` [dim], oriented so that the first words lie on its positive side (``Σ (a − b)·g > 0``).
    """
    rows = []
    for a, b in pairs:
        ua, ub = _unit(np.asarray(a, dtype=np.float64)), _unit(np.asarray(b, dtype=np.float64))
        c = (ua + ub) / 2
        rows += [ua - c, ub - c]
    m = np.stack(rows)
    m = m - m.mean(axis=0)  # already centred by construction, as PCA centres
    _, _, vt = np.linalg.svd(m, full_matrices=False)
    g = vt[0] / np.linalg.norm(vt[0])
    lean = sum(float((_unit(np.asarray(a, float)) - _unit(np.asarray(b, float))) @ g) for a, b in pairs)
    return -g if lean < 0 else g


def neutralise(vectors: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Rows with their component on the unit ``direction`` removed, scaled to unit length (float64)."""
    u = _unit(np.atleast_2d(np.asarray(vectors, dtype=np.float64)))
    return _unit(u - np.outer(u @ direction, direction))


def equalise(a: np.ndarray, b: np.ndarray, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The equality pair ``(a, b)`` made equidistant: same neutral part, equal and opposite parts on ``direction``.

    ``a`` and ``b`` are unit vectors (as after neutralising); returns unit vectors ``y + z g`` and ``y − z g``.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    mid = (a + b) / 2
    y = mid - (mid @ direction) * direction
    z = float(np.sqrt(max(0.0, 1.0 - float(y @ y))))
    if float((a - b) @ direction) < 0:
        z = -z
    return y + z * direction, y - z * direction


def _variants(a: str, b: str) -> list[tuple[str, str]]:
    """The pair in lower, title and upper case, each once (as the authors' code does)."""
    out = [(a.lower(), b.lower()), (a.title(), b.title()), (a.upper(), b.upper())]
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- the transformed embedding
class HardDebiasedEmbeddings(WordEmbeddings):
    """``base`` hard-debiased (see the module docstring); every vector is read through the transform.

    Parameters
    ----------
    base : WordEmbeddings
        Any loaded embedding.
    lists : DebiasLists, optional
        Default :func:`load_debias_lists`.

    Attributes
    ----------
    direction : np.ndarray
        The gender direction ``g`` of ``base``.
    pairs_used : tuple of (str, str)
        The definitional pairs found in ``base``.
    equalised : tuple of (str, str)
        The equality pairs (as written) found in ``base``.

    Raises
    ------
    EmbeddingError
        :data:`MSG_FEW_DEFINITIONAL`; :data:`MSG_DEBIAS_TWICE` when ``base`` is already debiased.
    """

    def __init__(self, base: WordEmbeddings, lists: DebiasLists | None = None) -> None:
        if isinstance(base, HardDebiasedEmbeddings):
            raise EmbeddingError(MSG_DEBIAS_TWICE.format(source=base.name), source=base.name)
        self.base = base
        self.lists = lists or load_debias_lists()
        self.name = debiased_source(base.name)
        self.dim = base.dim
        self.lowercase = base.lowercase
        self.case_fallback = base.case_fallback
        self.multiword = base.multiword
        self._encoder = base.multiword == "encoder"
        self._specific_words = frozenset(self.lists.gender_specific)
        self.direction, self.pairs_used = self._direction()
        self._lock = threading.Lock()
        self._full: np.ndarray | None = None
        if self._encoder:
            self._specific_rows = np.zeros(0, dtype=np.int64)
            self._eq_rows: dict[int, np.ndarray] = {}
            self._eq_words, self.equalised = self._equalise_words()
        else:
            idx = np.asarray(base._index_of(list(self.lists.gender_specific)), dtype=np.int64)
            self._specific_rows = np.unique(idx[idx >= 0])
            self._eq_words = {}
            self._eq_rows, self.equalised = self._equalise_rows()

    # -- building --------------------------------------------------------------
    def _direction(self) -> tuple[np.ndarray, tuple[tuple[str, str], ...]]:
        found, vecs = [], []
        for a, b in self.lists.definitional_pairs:
            v, missing = self.base.vectors([a, b])
            if not missing:
                found.append((a, b))
                vecs.append((v[0], v[1]))
        if len(found) < MIN_DEFINITIONAL:
            pairs = ", ".join(f"{a}/{b}" for a, b in self.lists.definitional_pairs)
            raise EmbeddingError(MSG_FEW_DEFINITIONAL.format(need=MIN_DEFINITIONAL, pairs=pairs,
                                                             source=self.base.name, found=len(found)),
                                 source=self.base.name)
        return gender_direction(vecs), tuple(found)

    def _candidates(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys(v for a, b in self.lists.equalize_pairs for v in _variants(a, b)))

    def _equalise_rows(self) -> tuple[dict[int, np.ndarray], tuple[tuple[str, str], ...]]:
        out: dict[int, np.ndarray] = {}
        used = []
        for a, b in self._candidates():
            ia, ib = (int(i) for i in self.base._index_of([a, b]))
            if ia < 0 or ib < 0 or ia == ib:
                continue
            ua, ub = self._neutral_stage(np.asarray([ia, ib], dtype=np.int64))
            out[ia], out[ib] = equalise(ua, ub, self.direction)
            used.append((a, b))
        return out, tuple(used)

    def _equalise_words(self) -> tuple[dict[str, np.ndarray], tuple[tuple[str, str], ...]]:
        out: dict[str, np.ndarray] = {}
        used = []
        for a, b in self._candidates():
            v, missing = self.base.vectors([a, b])
            if missing:
                continue
            ua, ub = self._neutral_words([a, b], np.asarray(v, dtype=np.float64))
            out[a], out[b] = equalise(ua, ub, self.direction)
            used.append((a, b))
        return out, tuple(used)

    # -- the transform -----------------------------------------------------------
    def _neutral_stage(self, index: np.ndarray) -> np.ndarray:
        """Unit rows, neutralised unless gender-specific (steps 1–2), float64."""
        u = _unit(np.asarray(self.base._rows(index), dtype=np.float64))
        drop = ~np.isin(index, self._specific_rows)
        if drop.any():
            u[drop] = neutralise(u[drop], self.direction)
        return u

    def _neutral_words(self, terms: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        u = _unit(np.asarray(vectors, dtype=np.float64))
        drop = np.fromiter((t not in self._specific_words for t in terms), dtype=bool, count=len(terms))
        if drop.any():
            u[drop] = neutralise(u[drop], self.direction)
        return u

    def _index_of(self, words: Sequence[str]) -> np.ndarray:
        return self.base._index_of(words)

    def _rows(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        u = self._neutral_stage(index)
        for k, i in enumerate(index.tolist()):
            if i in self._eq_rows:
                u[k] = self._eq_rows[i]
        return u.astype(np.float32)

    def _subword(self, word: str) -> np.ndarray | None:
        v = self.base._subword(word)
        if v is None:
            return None
        return self._neutral_words([word], np.asarray(v, dtype=np.float64)[None, :])[0].astype(np.float32)

    def lookup_report(self, terms: Sequence[str]) -> LookupReport:
        if not self._encoder:
            return super().lookup_report(terms)
        rep = self.base.lookup_report(terms)
        return LookupReport(self.name, rep.terms, rep.note)

    def vectors(self, terms: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        if not self._encoder:
            return super().vectors(terms)
        terms = list(terms)
        v, missing = self.base.vectors(terms)
        found = [t for t in terms if t not in set(missing)]
        u = self._neutral_words(found, np.asarray(v, dtype=np.float64))
        for k, t in enumerate(found):
            if t in self._eq_words:
                u[k] = self._eq_words[t]
        return u.astype(np.float32), missing

    def vocabulary(self) -> Sequence[str]:
        return self.base.vocabulary()

    def matrix(self) -> np.ndarray:
        """The whole debiased vocabulary (computed once, in blocks)."""
        with self._lock:
            if self._full is None:
                n = len(self.base.vocabulary())
                out = np.empty((n, self.dim), dtype=np.float32)
                for start in range(0, n, 50_000):
                    out[start:start + 50_000] = self._rows(np.arange(start, min(n, start + 50_000)))
                self._full = out
        return self._full

    def describe(self) -> dict[str, Any]:
        """The base's description, and the transform: method, lists, the pairs found."""
        return {
            **self.base.describe(), "source": self.name, "kind": type(self).__name__,
            "base": self.base.describe(),
            "transform": {"method": "hard-debias", "reference": "Bolukbasi et al. 2016", "lists": self.lists.to_dict(),
                          "definitional_pairs_used": [list(p) for p in self.pairs_used],
                          "equalised_pairs": len(self.equalised),
                          "gender_specific_in_vocabulary": (None if self._encoder
                                                            else int(self._specific_rows.size))},
        }
