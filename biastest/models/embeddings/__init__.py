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

The package's modules, lowest first: :mod:`~biastest.models.embeddings.interface`
(:class:`WordEmbeddings`, reports, vectors in memory),
:mod:`~biastest.models.embeddings.readers` (the safe file readers),
:mod:`~biastest.models.embeddings.backends`,
:mod:`~biastest.models.embeddings.debias` (hard debiasing, Bolukbasi et al. 2016, as a transform of any
embedding), :mod:`~biastest.models.embeddings.sources` (named sources, loading) and
:mod:`~biastest.models.embeddings.replicates` (bootstrap word2vec replicates).
This file is the package's face: the public names, imported from those modules.
"""

from __future__ import annotations

from biastest.models.embeddings.backends import (
    MSG_ENCODER_LOAD,
    MSG_FILE_NOT_FOUND,
    MSG_PACKAGE_MISSING,
    MSG_SPACY_MISSING,
    MSG_SPACY_PACKAGE,
    GloveEmbeddings,
    KeyedVectorsEmbeddings,
    SentenceEncoderEmbeddings,
    SpacyEmbeddings,
)
from biastest.models.embeddings.debias import (
    DEBIAS_METHODS,
    MSG_DEBIAS_TWICE,
    MSG_FEW_DEFINITIONAL,
    MSG_UNKNOWN_DEBIAS,
    MSG_UNKNOWN_LISTS,
    HardDebiasedEmbeddings,
    debiased_source,
    load_debias_lists,
    split_debiased,
)
from biastest.models.embeddings.interface import (
    MSG_BAD_MATRIX,
    MSG_EMPTY_TERM,
    MSG_MISSING_TERMS,
    MSG_MOSTLY_MISSING,
    MSG_NO_VOCABULARY,
    InMemoryEmbeddings,
    LookupReport,
    TermLookup,
    WordEmbeddings,
    check_coverage,
    cosine_matrix,
)
from biastest.models.embeddings.readers import (
    MSG_BAD_VECTORS,
    MSG_DUPLICATE_WORDS,
    MSG_EMPTY_WORD,
    MSG_FILE_UNREADABLE,
    MSG_GZ_TOO_LARGE,
    MSG_HEADER_TOO_LARGE,
    MSG_NPZ_LAYOUT,
    MSG_PICKLE_REFUSED,
    MSG_SAFETENSORS_LAYOUT,
    MSG_UNSAFE_UPLOAD,
    MSG_WORDS_ROWS,
    PICKLE_SUFFIXES,
    SAFE_EMBEDDING_SUFFIXES,
    check_upload_file,
    is_pickle_header,
)
from biastest.models.embeddings.replicates import (
    MSG_BAD_REPLICATES,
    MSG_EMPTY_CORPUS,
    poisson_stream_bootstrap,
    tokenize,
    train_bootstrap_replicates,
)
from biastest.models.embeddings.sources import (
    EMBEDDING_SOURCES,
    MSG_UNKNOWN_SOURCE,
    MSG_UNKNOWN_SOURCE_SUGGEST,
    EmbeddingSource,
    available_sources,
    load_embeddings,
    resolve_source,
)

__all__ = [
    "WordEmbeddings",
    "GloveEmbeddings",
    "KeyedVectorsEmbeddings",
    "InMemoryEmbeddings",
    "SentenceEncoderEmbeddings",
    "SpacyEmbeddings",
    "HardDebiasedEmbeddings",
    "DEBIAS_METHODS",
    "debiased_source",
    "split_debiased",
    "load_debias_lists",
    "MSG_DEBIAS_TWICE",
    "MSG_FEW_DEFINITIONAL",
    "MSG_UNKNOWN_DEBIAS",
    "MSG_UNKNOWN_LISTS",
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
