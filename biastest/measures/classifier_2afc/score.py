"""Counterfactual 2AFC of a text classifier: the sentence pairs, the paired score difference, the verdicts, and a
sign-flip permutation test over clusters.

For a template ``t``, a word ``w`` and a pair of group terms ``(g₁, g₂)`` (group 1's and group 2's, of a bias
specification), the two sentences ``s₁ = t(g₁, w)`` and ``s₂ = t(g₂, w)`` differ only in the group term. With
``p(s)`` the classifier's probability of the positive label:

* the paired difference ``d = p(s₁) − p(s₂)`` (probability points; ``d > 0``: group 1's sentence is scored more
  positive);
* the 2AFC verdict ``v = +1`` if ``d > m``, ``−1`` if ``d < −m``, ``0`` (a tie) otherwise (``m`` the tie margin,
  0 by default: only equal scores tie);
* the **share** ``#{v = +1} / #{v ≠ 0}`` — the share of pairs in which group 1's sentence wins, ties apart;
  50 % is no preference.

**Sign-flip permutation test** (:func:`cluster_sign_flip_test`): with ``S_c`` the sum of the differences of
cluster ``c`` (a template, by default) and ``N`` the number of pairs, ``T = Σ_c S_c / N``; under the null that each
cluster's differences are symmetric about 0 (swapping the groups' terms changes nothing), flipping the sign of
whole clusters leaves the distribution of ``T`` unchanged, so ``p = #{|T*| ≥ |T_obs|} / 2^C`` over every sign
pattern when ``2^C ≤ n_permutations``, else ``p = (1 + #{|T*| ≥ |T_obs|}) / (1 + B)`` over ``B`` seeded random
patterns (Phipson & Smyth 2010). Reference: the Equity Evaluation Corpus design (Kiritchenko & Mohammad 2018);
the psychophysics framing of Liang & Acuna (2020), whose sentiment-classifier case this is.

>>> verdicts([0.2, -0.1, 0.0], margin=0.0).tolist()
[1, -1, 0]
>>> round(cluster_sign_flip_test([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], list("abcdef"), n_permutations=1000, seed=0), 4)
0.0312
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.measures.classifier_2afc.templates import fill

__all__ = [
    "MSG_NO_PAIRS",
    "PairItem",
    "build_items",
    "cluster_sign_flip_test",
    "term_pairs",
    "verdicts",
]

MSG_NO_PAIRS = (
    "The specification gives no pair of group terms to compare (group 1 has {n1} terms, group 2 has {n2}); each "
    "group needs at least one term."
)
_RTOL = 1e-9


@dataclass(frozen=True)
class PairItem:
    """One counterfactual pair: a template filled with a word, once with each group's term."""

    index: int
    template: str
    word: str
    emotion: str
    term_1: str
    term_2: str
    sentence_1: str
    sentence_2: str


def term_pairs(group_1: Sequence[str], group_2: Sequence[str], *, pairing: str) -> list[tuple[str, str]]:
    """The pairs of group terms: ``positional`` (i-th with i-th, as many as the shorter list) or ``all``."""
    g1, g2 = [str(t) for t in group_1], [str(t) for t in group_2]
    if not g1 or not g2:
        raise DataError(MSG_NO_PAIRS.format(n1=len(g1), n2=len(g2)))
    if pairing == "all":
        return [(a, b) for a in g1 for b in g2 if a != b]
    return [(a, b) for a, b in zip(g1, g2, strict=False) if a != b]


def build_items(templates: Sequence[str], words: Sequence[tuple[str, str]],
                pairs: Sequence[tuple[str, str]]) -> list[PairItem]:
    """Every template × word × term pair (a template without ``{word}`` once per term pair).

    ``words`` are ``(emotion or attribute list, word)``.
    """
    items: list[PairItem] = []
    for t in templates:
        fillers = words if "{word}" in t else [("", "")]
        for emotion, w in fillers:
            for a, b in pairs:
                items.append(PairItem(index=len(items), template=t, word=w, emotion=emotion, term_1=a, term_2=b,
                                      sentence_1=fill(t, a, w), sentence_2=fill(t, b, w)))
    return items


def verdicts(diffs: Sequence[float] | np.ndarray, *, margin: float) -> np.ndarray:
    """``+1`` where ``d > margin``, ``−1`` where ``d < −margin``, ``0`` otherwise (ints)."""
    d = np.asarray(diffs, dtype=np.float64)
    return np.where(d > margin, 1, np.where(d < -margin, -1, 0)).astype(np.int64)


def cluster_sign_flip_test(values: Sequence[float] | np.ndarray, clusters: Sequence[Any], *, n_permutations: int,
                           seed: int) -> float | None:
    """Two-sided p-value of the mean of ``values`` against 0 by flipping the signs of whole clusters.

    Exact over all ``2^C`` sign patterns when that is at most ``n_permutations``, else sampled (seeded, the
    observed pattern counted once). None when every cluster sums to 0 (nothing to test).
    """
    x = np.asarray(values, dtype=np.float64)
    labels: dict[Any, int] = {}
    codes = np.asarray([labels.setdefault(c, len(labels)) for c in clusters], dtype=np.int64)
    sums = np.bincount(codes, weights=x, minlength=len(labels))
    if not np.any(np.abs(sums) > 1e-15):
        return None
    observed = abs(float(sums.sum()))
    tol = _RTOL * max(1.0, observed)
    n_clusters = sums.size
    if 2 ** n_clusters <= n_permutations:
        patterns = ((np.arange(2 ** n_clusters)[:, None] >> np.arange(n_clusters)) & 1) * 2 - 1
        stats = np.abs(patterns @ sums)
        return float(np.count_nonzero(stats >= observed - tol) / patterns.shape[0])
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_permutations:
        k = min(n_permutations - done, max(1, 2_000_000 // n_clusters))
        signs = rng.integers(0, 2, size=(k, n_clusters)) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ sums) >= observed - tol))
        done += k
    return (1 + hits) / (1 + n_permutations)
