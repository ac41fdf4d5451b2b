"""Comparing WEAT effect sizes of word embeddings on the target words they all know.

The effect size d of each embedding (Caliskan et al. 2017, Science 356:183–186) on the common target words,

    d = (mean_{x∈X} s(x) − mean_{y∈Y} s(y)) / sd_{w∈X∪Y} s(w)          (sd with ddof=1)

with the word scores ``s(w, A, B)`` of the results (:mod:`biastest.measures.weat.score`), and ``Δd = d_A − d_B``.
The bootstrap resamples the **target words**, X within X and Y within Y (stratified), the same words for every
embedding, and recomputes every d; the attribute words A, B are held fixed (the interval is conditional on them).
Resamples in which all chosen words have the same score (d undefined) are dropped and counted
(:attr:`~biastest.stats.compare.Comparison.notes`). d is not a mean over words, so there is no per-word sign test;
the test is the **paired bootstrap p-value** (:data:`~biastest.stats.compare.TEST_BOOTSTRAP`; the inversion of the
percentile interval, Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, §15–16):

    p = min(1, 2 · min(1 + #{Δd* ≤ 0}, 1 + #{Δd* ≥ 0}) / (B + 1)),

so ``p < 1 − confidence`` about when the interval excludes 0; Holm (1979) over all pairs of embeddings. The
paired machinery (records, percentile interval, Holm) is :mod:`biastest.stats.compare`'s.

**Each embedding's own interval** (issue 28: one interval per statistic) is its result's interval of d
(``effect_size_ci``, the jackknife over all four word lists, :mod:`biastest.measures.weat.score`), shown as the
main result shows it — when the comparison uses all of that result's target words and its level; otherwise d
is on fewer words (or another level) than the result's interval and none is shown, with a note. The bootstrap
above is the **difference's** own method: Δd is a statistic of its own, whose interval holds the attribute words
fixed (both embeddings are scored with the same A and B, so their variation is shared and largely cancels).

Examples
--------
>>> import numpy as np
>>> round(float(weat_d(np.array([[1.0], [2.0]]), np.array([[0.0], [1.0]]))[0]), 6)  # (1.5 − 0.5) / sd{1, 2, 0, 1}
1.224745
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.measures.embedding_common import embedding_id, field_of
from biastest.stats.compare import (
    ADJUST_HOLM,
    CHUNK_ELEMENTS,
    INTERVAL_WEAT,
    KIND_WEAT,
    MSG_NOT_SAME_ITEMS,
    MSG_TOO_FEW_MODELS,
    TEST_BOOTSTRAP,
    Comparison,
    ModelEstimate,
    PairedComparison,
    bootstrap_p_value,
    check_labels,
    check_settings,
    comparison_provenance,
    model_labels,
    percentile_interval,
    with_holm,
)

__all__ = [
    "MSG_DEGENERATE",
    "MSG_NO_SPREAD",
    "MSG_TOO_FEW_WORDS",
    "compare_weat",
    "weat_bootstrap",
    "weat_d",
    "word_scores",
]

MSG_TOO_FEW_WORDS = (
    "The embeddings have {nx} target word(s) of X and {ny} of Y in common; WEAT needs at least one of each and "
    "three in all."
)
MSG_NO_SPREAD = (
    "All common target words of '{label}' have the same association score, so its WEAT effect size is undefined."
)
MSG_OWN_INTERVAL_ONLY = (
    "{label}: no interval of d here — the comparison uses {n_common} of its {n_own} target words (or another "
    "level), and its own interval is for all of them; the interval of the difference is the comparison's own."
)
MSG_DEGENERATE = (
    "{n} of {total} bootstrap resamples drew target words that all had the same score (effect size undefined) and "
    "were left out of the interval."
)


def weat_d(sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
    """The effect size d of each column (or of each resample's columns); NaN where the scores have no spread.

    Parameters
    ----------
    sx, sy : ndarray (..., nx, k), (..., ny, k)
        Word scores of the X and Y words, one column per embedding (leading axes: resamples).

    Returns
    -------
    ndarray (..., k)
        ``(mean_x − mean_y) / sd_{x∪y}`` (ddof=1); NaN where the sd is below ``1e-12`` of the largest score (at
        least 1).
    """
    num = sx.mean(axis=-2) - sy.mean(axis=-2)
    sd = np.concatenate([sx, sy], axis=-2).std(axis=-2, ddof=1)
    scale = np.maximum(np.abs(np.concatenate([sx, sy], axis=-2)).max(axis=-2), 1.0)
    spread = sd > 1e-12 * scale
    return np.where(spread, num / np.where(spread, sd, 1.0), np.nan)


def weat_bootstrap(sx: np.ndarray, sy: np.ndarray, *, seed: int, n_resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """WEAT effect sizes of each column and their stratified paired bootstrap draws over target words.

    Each resample draws ``rng.integers(0, [nx]*nx + [ny]*ny)``: nx rows of ``sx`` and ny rows of ``sy`` with
    replacement, the same rows for every column, and computes ``d = (mean_x − mean_y) / sd_{x∪y}`` (ddof=1) per
    column. Draws in which a column's scores have no spread are NaN (the caller drops and counts them).

    Parameters
    ----------
    sx, sy : ndarray (nx, k), (ny, k)
        Word scores ``s(w, A, B)`` of X and Y words, one column per embedding.
    seed : int
    n_resamples : int

    Returns
    -------
    d : ndarray (k,)
    draws : ndarray (n_resamples, k)
    """
    sx = np.asarray(sx, dtype=np.float64)
    sy = np.asarray(sy, dtype=np.float64)
    nx, k = sx.shape
    ny = sy.shape[0]
    high = np.array([nx] * nx + [ny] * ny)
    rng = np.random.default_rng(seed)
    draws = np.empty((n_resamples, k))
    rows = max(1, CHUNK_ELEMENTS // max(1, (nx + ny) * k))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, high, size=(stop - start, nx + ny))
        draws[start:stop] = weat_d(sx[idx[:, :nx]], sy[idx[:, nx:]])
    return weat_d(sx, sy), draws


def word_scores(result: Any) -> tuple[dict[str, float], dict[str, float]]:
    """The word scores ``s(w, A, B)`` of a WEAT result: X words and Y words, each word → its score, in order.

    Parameters
    ----------
    result : WEATResult or its ``to_dict()``

    Returns
    -------
    (dict, dict)
    """
    xs: dict[str, float] = {}
    ys: dict[str, float] = {}
    for row in field_of(result, "word_scores") or ():
        (xs if row["set"] == "X" else ys)[str(row["word"])] = float(row["s"])
    return xs, ys


def compare_weat(
    results: Sequence[Any],
    *,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    labels: Sequence[str] | None = None,
) -> Comparison:
    """Compare WEAT effect sizes of embeddings on the target words they all know.

    ``d_m = (mean_{x∈X} s_m(x) − mean_{y∈Y} s_m(y)) / sd_{w∈X∪Y} s_m(w)`` (Caliskan et al. 2017) on the common
    target words; ``Δd = d_A − d_B`` with a paired bootstrap over target words (stratified by X/Y, attribute words
    fixed) and the paired bootstrap p-value; Holm over the pairs. See the module docstring.

    Parameters
    ----------
    results : sequence of WEATResult (or their ``to_dict()``)
        The same WEAT test run on different embeddings.
    seed, n_resamples, confidence, labels :
        As in :func:`biastest.stats.compare.compare_arrays` (default labels: the embeddings' names).

    Returns
    -------
    Comparison
        Unit ``"d"``, reference 0.

    Raises
    ------
    DataError
        Fewer than two results, too few common target words, an embedding whose scores have no spread.
    """
    seed, n_resamples, confidence = check_settings(seed, n_resamples, confidence)
    if len(results) < 2:
        raise DataError(MSG_TOO_FEW_MODELS.format(n=len(results)))
    labels = check_labels(labels, model_labels([embedding_id(r) for r in results]))
    scores = [word_scores(r) for r in results]
    common_x = [w for w in scores[0][0] if all(w in s[0] for s in scores)]
    common_y = [w for w in scores[0][1] if all(w in s[1] for s in scores)]
    if not common_x and not common_y:
        raise DataError(MSG_NOT_SAME_ITEMS.format(what="target words"))
    if not common_x or not common_y or len(common_x) + len(common_y) < 3:
        raise DataError(MSG_TOO_FEW_WORDS.format(nx=len(common_x), ny=len(common_y)))
    sx = np.array([[s[0][w] for s in scores] for w in common_x])
    sy = np.array([[s[1][w] for s in scores] for w in common_y])
    d, draws = weat_bootstrap(sx, sy, seed=seed, n_resamples=n_resamples)
    for j, label in enumerate(labels):
        if not np.isfinite(d[j]):
            raise DataError(MSG_NO_SPREAD.format(label=label))
    ok = np.all(np.isfinite(draws), axis=1)
    notes = []
    if not ok.all():
        notes.append(MSG_DEGENERATE.format(n=int(np.count_nonzero(~ok)), total=n_resamples))
    draws = draws[ok]
    n_common = len(common_x) + len(common_y)
    rows = []
    for j, (r, label) in enumerate(zip(results, labels, strict=True)):
        n_own = len(scores[j][0]) + len(scores[j][1])
        own = field_of(r, "effect_size")
        own_ci = field_of(r, "effect_size_ci")
        low = high = None
        same = (own_ci is not None and own is not None and n_own == n_common
                and abs(float(own) - float(d[j])) <= 1e-9 * max(1.0, abs(float(own)))
                and abs(float(field_of(r, "ci_level") or 0) - confidence) < 1e-12)
        if same:
            low, high = float(own_ci[0]), float(own_ci[1])  # the result's own interval, as its main result shows it
        else:
            notes.append(MSG_OWN_INTERVAL_ONLY.format(label=label, n_common=n_common, n_own=n_own))
        rows.append(ModelEstimate(
            label=label, model_id=embedding_id(r), method="WEAT", estimate=float(d[j]), ci_low=low, ci_high=high,
            n_items=n_own, n_excluded=0, n_unmatched=n_own - n_common, n_ties=0,
            own_estimate=None if own is None else float(own), interval_from_result=same,
        ))
    pairs = []
    for i, j in itertools.combinations(range(len(results)), 2):
        diff = draws[:, i] - draws[:, j]
        low, high = percentile_interval(diff, confidence)
        pairs.append(PairedComparison(
            a=labels[i], b=labels[j], estimate_a=float(d[i]), estimate_b=float(d[j]), difference=float(d[i] - d[j]),
            ci_low=low, ci_high=high, p_value=bootstrap_p_value(diff), test=TEST_BOOTSTRAP, p_exact=None,
            p_adjusted=None, discordant=None, n_items=n_common,
        ))
    return Comparison(
        kind=KIND_WEAT,
        measure="WEAT effect size d (Caliskan et al. 2017) on the target words every embedding knows",
        unit="d",
        reference=0.0,
        models=tuple(rows),
        pairs=tuple(with_holm(pairs)),
        n_items=n_common,
        n_clusters=None,
        cluster_by=None,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        interval_method=INTERVAL_WEAT,
        test=TEST_BOOTSTRAP,
        adjustment=ADJUST_HOLM,
        notes=tuple(notes),
        provenance=comparison_provenance(KIND_WEAT, seed=seed, n_resamples=n_resamples, confidence=confidence,
                                         target_words_x=common_x, target_words_y=common_y,
                                         models=[{"label": r.label, "model_id": r.model_id} for r in rows]),
    )
