"""How much can WEAT's d vary by chance? Word lists of the same sizes drawn at random.

The Bayesian paper (seed ``002``) shows that WEAT's effect size reaches 1.82 from simulated similarities with no
difference at all, as large as the largest d Caliskan et al. (2017) report (1.81). This module lets a user see the
same thing on their own embedding (with the paper's two targets per group, |d| cannot exceed √3 ≈ 1.73 with the
sample SD used here, so its 1.82 and −1.93 imply the population SD; ``docs/reproduction.md`` repeats the
simulation): it draws ``n_draws`` sets of word lists X*, Y*, A*, B* of the sizes of the
user's lists, computes d for each (the formula of :func:`biastest.measures.weat.score.weat_effect_size`), and
shows the distribution beside the observed d, with the share of draws whose |d*| ≥ |d|.

Two ways to draw (``mode``):

``"vocabulary"``
    Every list from the embedding's vocabulary, all words distinct, none of them the user's. The pool is a fixed,
    frequency-filtered slice (:func:`vocabulary_slice`): the embedding's words in row order (GloVe, word2vec and
    fastText files list the most frequent word first), the first :data:`VOCAB_SKIP` rows (mostly function words
    and punctuation) left out, then the next :data:`VOCAB_SIZE` words made of the letters a–z only. On GloVe
    6B 50d these are ranks 1,001 to about 21,300. Draw b is ``rng.choice(len(pool), k, replace=False)``,
    ``k = |X| + |Y| + |A| + |B|``; its first |X| words are X*, the next |Y| Y*, then A*, then B*.
``"shuffled"``
    The user's own words, shuffled between the four roles: draw b is ``rng.permutation(k)`` of the words in the
    order X, Y, A, B, split the same way. This asks how large d gets when the roles carry no meaning.

``rng`` is ``numpy.random.default_rng(seed)``; draws are made one after another in that order, so a seed gives
the same draws. A draw whose associations s(w, A*, B*) are all equal has no d and is left out (``n_valid``).

This is not a p-value of WEAT: the permutation test answers whether the split into X and Y matters for these
words; the simulation answers how large d can be when nothing was chosen to differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from biastest.errors import DataError, EmbeddingError, MethodError

__all__ = [
    "MSG_NULL_MODE",
    "MSG_NULL_NO_VALID",
    "MSG_NULL_NO_VOCABULARY",
    "MSG_NULL_SEED",
    "MSG_NULL_VOCAB_TOO_SMALL",
    "NULL_MODES",
    "VOCAB_SIZE",
    "VOCAB_SKIP",
    "WEATNull",
    "effect_sizes",
    "vocabulary_slice",
    "weat_null",
]

#: The most frequent rows left out of the vocabulary pool (mostly function words and punctuation).
VOCAB_SKIP = 1_000
#: Words of the pool after those rows: the next this many made of the letters a–z only.
VOCAB_SIZE = 20_000
#: The two ways to draw random word lists.
NULL_MODES = ("vocabulary", "shuffled")

MSG_NULL_SEED = "The random word lists are drawn at random; give a seed so that they can be repeated."
MSG_NULL_NO_VOCABULARY = (
    "Random word lists from the vocabulary need an embedding with a word list; '{source}' embeds any text and has "
    "none. Choose the user's lists shuffled between roles instead."
)
MSG_NULL_VOCAB_TOO_SMALL = (
    "Random word lists from the vocabulary need {need:,} distinct words; the embedding's pool has only {n:,}. "
    "Choose the user's lists shuffled between roles instead."
)
MSG_NULL_NO_VALID = (
    "None of the {n:,} random word lists had a defined d (their associations were all equal), so there is no "
    "distribution to show."
)
MSG_NULL_MODE = "The random word lists come from 'vocabulary' or 'shuffled', got {mode!r}."

_CHUNK = 512


class WEATNull(BaseModel):
    """The distribution of d over random word lists of the same sizes (see the module docstring).

    Attributes
    ----------
    mode : {"vocabulary", "shuffled"}
    pool : str
        Where the words came from, in words.
    sizes : dict
        |X|, |Y|, |A|, |B|.
    observed : float
        The user's d.
    n_draws, n_valid : int
        Draws made, and those with a defined d.
    seed : int
    draws : tuple of float
        d of every valid draw, in draw order.
    share_at_least : float
        Share of valid draws with |d*| ≥ |observed|.
    n_at_least : int
        Their number.
    quantiles : dict
        The 2.5 %, 50 % and 97.5 % quantiles of d*.
    share_large : float
        Share of valid draws with |d*| ≥ 0.8 (a "large" effect by the usual reading).
    max_abs : float
        The largest |d*|.
    """

    model_config = ConfigDict(frozen=True)

    mode: Literal["vocabulary", "shuffled"]
    pool: str
    sizes: dict[str, int]
    observed: float
    n_draws: int
    n_valid: int
    seed: int
    draws: tuple[float, ...]
    share_at_least: float
    n_at_least: int
    quantiles: dict[str, float]
    share_large: float
    max_abs: float


def effect_sizes(vectors: np.ndarray, index: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """d of each draw: rows of ``index`` pick X*, Y*, A*, B* (in that order) from ``vectors``.

    Parameters
    ----------
    vectors : array [n_words, dim]
        Unit-length rows (cosine = dot product).
    index : int array [n_draws, |X| + |Y| + |A| + |B|]
    sizes : (|X|, |Y|, |A|, |B|)

    Returns
    -------
    numpy array [n_draws]
        d with ddof = 1 (NaN where the associations are all equal).
    """
    nx, ny, na, nb = (int(s) for s in sizes)
    nt = nx + ny
    out = np.empty(len(index))
    for lo in range(0, len(index), _CHUNK):
        idx = index[lo:lo + _CHUNK]
        v = vectors[idx].astype(np.float64)  # [b, k, dim]
        cos = np.einsum("btd,bad->bta", v[:, :nt], v[:, nt:])  # [b, |X|+|Y|, |A|+|B|]
        s = cos[:, :, :na].mean(axis=2) - cos[:, :, na:na + nb].mean(axis=2)
        sd = s.std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = (s[:, :nx].mean(axis=1) - s[:, nx:].mean(axis=1)) / sd
        out[lo:lo + len(idx)] = np.where(sd > 1e-12 * (1 + np.abs(s).max(axis=1)), d, np.nan)
    return out


def _unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return v / norms


def vocabulary_slice(emb: Any, *, exclude: Sequence[str] = ()) -> tuple[list[str], np.ndarray, str]:
    """The vocabulary pool: words, their vectors and a description (see the module docstring).

    Rows ``VOCAB_SKIP`` onwards of the embedding's vocabulary, the first ``VOCAB_SIZE`` made of the letters a–z
    only, without the words in ``exclude`` (compared in lower case).

    Raises
    ------
    DataError
        The embedding has no vocabulary (:data:`MSG_NULL_NO_VOCABULARY`).
    """
    try:
        vocab = emb.vocabulary()
    except EmbeddingError as exc:  # an encoder (MSG_NO_VOCABULARY); any other failure is not "no vocabulary"
        raise DataError(MSG_NULL_NO_VOCABULARY.format(source=getattr(emb, "name", "?"))) from exc
    skip = {w.lower() for w in exclude}
    words, rows = [], []
    for i in range(VOCAB_SKIP, len(vocab)):
        w = vocab[i]
        if isinstance(w, str) and w.isascii() and w.isalpha() and w.lower() not in skip:
            words.append(w)
            rows.append(i)
            if len(words) == VOCAB_SIZE:
                break
    last = rows[-1] + 1 if rows else VOCAB_SKIP
    label = (f"{len(words):,} words of '{getattr(emb, 'name', '?')}' made of the letters a–z only, from "
             f"frequency ranks {VOCAB_SKIP + 1:,} to {last:,} (the {VOCAB_SKIP:,} most frequent rows and the "
             "user's own words left out)")
    vectors = np.asarray(emb.matrix()[np.asarray(rows, dtype=np.int64)], dtype=np.float64) if rows else \
        np.zeros((0, 1))
    return words, vectors, label


def _draw_index(rng: np.random.Generator, mode: str, n_pool: int, k: int, n_draws: int) -> np.ndarray:
    if mode == "vocabulary":
        return np.stack([rng.choice(n_pool, k, replace=False) for _ in range(n_draws)]) if n_draws else \
            np.zeros((0, k), dtype=np.int64)
    return np.stack([rng.permutation(k) for _ in range(n_draws)]) if n_draws else np.zeros((0, k), dtype=np.int64)


def weat_null(
    observed: float,
    *,
    mode: str,
    n_draws: int,
    seed: int,
    role_vectors: Mapping[str, np.ndarray],
    pool_vectors: np.ndarray | None = None,
    pool_label: str = "",
) -> WEATNull:
    """Draw ``n_draws`` random word lists of the sizes of ``role_vectors`` and compute d for each.

    Parameters
    ----------
    observed : float
        The user's d.
    mode : {"vocabulary", "shuffled"}
    n_draws : int
    seed : int
    role_vectors : mapping "X", "Y", "A", "B" → array [n, dim]
        The user's word vectors (their sizes; for ``"shuffled"`` also the pool).
    pool_vectors : array, optional
        The vocabulary pool (:func:`vocabulary_slice`), needed for ``"vocabulary"``.
    pool_label : str
        How that pool was made, recorded.

    Returns
    -------
    WEATNull

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> roles = {r: rng.normal(size=(4, 5)) for r in "XYAB"}
    >>> n = weat_null(1.0, mode="shuffled", n_draws=200, seed=0, role_vectors=roles)
    >>> n.n_valid, 0.0 <= n.share_at_least <= 1.0
    (200, True)
    """
    if seed is None:
        raise MethodError(MSG_NULL_SEED)
    if int(n_draws) < 1:
        raise DataError(MSG_NULL_NO_VALID.format(n=0))
    if mode not in NULL_MODES:
        raise MethodError(MSG_NULL_MODE.format(mode=mode))
    sizes = tuple(len(role_vectors[r]) for r in "XYAB")
    k = sum(sizes)
    if mode == "vocabulary":
        if pool_vectors is None or len(pool_vectors) < k:
            raise DataError(MSG_NULL_VOCAB_TOO_SMALL.format(need=k, n=0 if pool_vectors is None else
                                                            len(pool_vectors)))
        pool = _unit(pool_vectors)
        label = pool_label or f"{len(pool):,} words of the embedding's vocabulary"
    else:
        pool = _unit(np.concatenate([np.asarray(role_vectors[r], dtype=np.float64) for r in "XYAB"]))
        label = "the user's own words (X, Y, A and B), shuffled between the four roles"
    rng = np.random.default_rng(int(seed))
    d = effect_sizes(pool, _draw_index(rng, mode, len(pool), k, int(n_draws)), sizes)
    draws = d[np.isfinite(d)]
    n_valid = int(draws.size)
    if not n_valid:
        raise DataError(MSG_NULL_NO_VALID.format(n=int(n_draws)))
    at_least = int(np.sum(np.abs(draws) >= abs(observed)))
    q = np.quantile(draws, [0.025, 0.5, 0.975])
    return WEATNull(
        mode=mode, pool=label, sizes=dict(zip("XYAB", sizes, strict=True)), observed=float(observed),
        n_draws=int(n_draws), n_valid=n_valid, seed=int(seed), draws=tuple(float(x) for x in draws),
        share_at_least=at_least / n_valid, n_at_least=at_least,
        quantiles={"q2.5": float(q[0]), "q50": float(q[1]), "q97.5": float(q[2])},
        share_large=float(np.mean(np.abs(draws) >= 0.8)), max_abs=float(np.max(np.abs(draws))),
    )
