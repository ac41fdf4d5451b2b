"""Comparing word embeddings' 2AFC PSEs on the target words and cue pairs they all share.

Per target word w and embedding m, the mean over the cue pairs every embedding used of the closed-form PSEs
(Liang & Acuna 2020; raw: a saturated PSE keeps its value outside [0, 1]), ``PSE_mw``; per embedding the statistic

    mean_w |PSE_mw − 1/2|      ("mean-abs-deviation": how far the words sit from no preference, whichever side)
    mean_w (PSE_mw − 1/2)      ("mean-deviation": the average lean towards the first cue)

compared with :func:`biastest.stats.compare.compare_items`: a paired percentile bootstrap over target words (the
same words for every embedding, Efron & Tibshirani 1993 ch. 13), the exact sign test of the paired differences
``p = min(1, 2 · P(X ≤ min(n₊, n₋)))``, ``X ~ Binomial(n₊ + n₋, 1/2)``, and Holm (1979) over the pairs.

Examples
--------
>>> pair_pses({"pairs": [{"target": "nurse", "cue_pair": "she/he", "pse": 0.7}]})
{('nurse', 'she/he'): 0.7}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.measures.embedding_common import embedding_id, field_of
from biastest.stats.compare import (
    KIND_TWOAFC,
    MSG_NOT_SAME_ITEMS,
    MSG_TOO_FEW_MODELS,
    ComparedQuantity,
    Comparison,
    ModelItems,
    check_settings,
    compare_items,
)

__all__ = [
    "MSG_BAD_STATISTIC",
    "MSG_TWOAFC_CUES",
    "TWOAFC_STATISTICS",
    "compare_twoafc",
    "pair_pses",
]

TWOAFC_STATISTICS = {
    "mean-abs-deviation": "mean |PSE − 0.5| over target words (distance from no preference, either side)",
    "mean-deviation": "mean (PSE − 0.5) over target words (average lean towards the first cue)",
}

MSG_BAD_STATISTIC = "Unknown 2AFC statistic '{value}'. Choose one of: {choices}."
MSG_TWOAFC_CUES = "PSEs are averaged over the {n} cue pair(s) every embedding used: {cues}."


def pair_pses(result: Any) -> dict[tuple[str, str], float]:
    """The pair PSEs of a 2AFC result: ``(target, cue pair)`` → PSE, in the result's order.

    Parameters
    ----------
    result : TwoAFCResult or its ``to_dict()``
        A pair without ``cue_pair`` is named ``"cue1/cue2"``.

    Returns
    -------
    dict
    """
    out = {}
    for p in field_of(result, "pairs") or ():
        cue = field_of(p, "cue_pair") or f"{field_of(p, 'cue1')}/{field_of(p, 'cue2')}"
        out[str(field_of(p, "target")), str(cue)] = float(field_of(p, "pse"))
    return out


def compare_twoafc(
    results: Sequence[Any],
    *,
    seed: int,
    statistic: str = "mean-abs-deviation",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    labels: Sequence[str] | None = None,
) -> Comparison:
    """Compare embeddings' 2AFC PSEs on the target words and cue pairs they all share.

    Per target word ``PSE_mw`` = mean over the common cue pairs of the closed-form pair PSEs (raw); per embedding
    ``mean_w |PSE_mw − 1/2|`` (``"mean-abs-deviation"``) or ``mean_w (PSE_mw − 1/2)`` (``"mean-deviation"``),
    with a paired bootstrap over target words and the sign test of the paired differences; Holm over the pairs.

    Parameters
    ----------
    results : sequence of TwoAFCResult (or their ``to_dict()``)
    seed : int
    statistic : {"mean-abs-deviation", "mean-deviation"}
    n_resamples, confidence, labels :
        As in :func:`biastest.stats.compare.compare_arrays`.

    Returns
    -------
    Comparison
        Unit ``"PSE"``, reference 0.

    Raises
    ------
    DataError
        An unknown statistic (:data:`MSG_BAD_STATISTIC`), fewer than two results, no cue pair or target word in
        common.
    """
    if statistic not in TWOAFC_STATISTICS:
        raise DataError(MSG_BAD_STATISTIC.format(value=statistic, choices=", ".join(TWOAFC_STATISTICS)))
    settings = check_settings(seed, n_resamples, confidence)
    if len(results) < 2:
        raise DataError(MSG_TOO_FEW_MODELS.format(n=len(results)))
    pses = [pair_pses(r) for r in results]
    # Each result holds a full grid (its targets × its cue pairs): the common cue pairs are those of every result.
    cue_sets = [{c for _, c in p} for p in pses]
    cues = [c for c in dict.fromkeys(c for _, c in pses[0]) if all(c in s for s in cue_sets)]
    if not cues:
        raise DataError(MSG_NOT_SAME_ITEMS.format(what="cue pairs"))

    def value(v: float) -> float:
        return abs(v - 0.5) if statistic == "mean-abs-deviation" else v - 0.5

    items = []
    for r, p in zip(results, pses, strict=True):
        targets = list(dict.fromkeys(t for t, _ in p))
        values: dict[tuple[str, int], float | None] = {
            (t, 1): (value(float(np.mean([p[t, c] for c in cues]))) if all((t, c) in p for c in cues) else None)
            for t in targets
        }
        items.append(ModelItems(model_id=embedding_id(r), method="2AFC", own=None, values=values, ties={},
                                records={(t, 1): {"target": t} for t in targets}))
    quantity = ComparedQuantity(kind=KIND_TWOAFC, measure=f"2AFC: {TWOAFC_STATISTICS[statistic]}", binary=False,
                                scale=1.0, unit="PSE", reference=0.0, statistic=statistic)
    cmp = compare_items(items, labels=labels, what="target words", quantity=quantity, settings=settings)
    return replace(cmp, notes=(MSG_TWOAFC_CUES.format(n=len(cues), cues=", ".join(cues)),),
                   provenance={**cmp.provenance, "cue_pairs": cues})
