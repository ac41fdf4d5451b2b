"""Bootstrap replicates of word2vec trained on a corpus (Liang & Acuna 2020, §4.2): the 2AFC measure's uncertainty.

gensim is imported when replicates are trained: it loads scipy, which every
import of the embedding package would otherwise pay for.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biastest.errors import EmbeddingError
from biastest.models.embeddings.interface import InMemoryEmbeddings

__all__ = [
    "MSG_BAD_REPLICATES",
    "MSG_EMPTY_CORPUS",
    "poisson_stream_bootstrap",
    "tokenize",
    "train_bootstrap_replicates",
]

MSG_EMPTY_CORPUS = (
    "The corpus has no usable lines of text; upload a plain-text file with one sentence or document a line."
)
MSG_BAD_REPLICATES = "The number of replicate models must be at least 2; got {value}."


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
    from gensim.models import Word2Vec  # late: gensim loads scipy (module docstring)

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
