"""Comparing chat models' forced choices on the same sentence pairs, and a forced choice with a likelihood score.

:func:`compare_forced_choice` — several :class:`~.result.ForcedChoiceResult` on the same pairs (matched by
``pair_id``): each item's value is its **stereotyped-choice share** among its parseable answers (both orders,
every sample; an item with no parseable answer is left out for every model and counted), compared with the
paired machinery of :mod:`biastest.stats.compare` (paired or cluster bootstrap of the difference of mean item
shares, exact sign test of the paired differences, Holm over the pairs). The mean of item shares weighs every
item alike; it equals the headline share when every item has the same number of parseable answers.

:func:`agreement_with_likelihood` — a forced-choice result and a stereotype-score result
(:class:`~biastest.measures.stereotype.result.StereotypeResult`, e.g. the same open model scored by
log-likelihood) on the same pairs: do the two ways of asking agree? An item's forced-choice *direction* is
stereotyped when its share is above 50 %, anti-stereotyped below, undecided at exactly 50 % or with no parseable
answer; the likelihood verdict is the stereotype score's (ties undecided). Reported: the items both decided, the
share of them on which the directions agree (Wilson interval, items independent), Cohen's kappa (Cohen 1960) and
the 2×2 table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from biastest.errors import DataError
from biastest.measures.forced_choice.result import ForcedChoiceResult, RateSummary
from biastest.measures.forced_choice.summary import cluster_key, rate_summary, resolve_item_clusters
from biastest.measures.stereotype.clusters import CLUSTER_LABELS
from biastest.measures.stereotype.result import StereotypeResult
from biastest.stats.compare import (
    CLUSTER_FIELD,
    MSG_BAD_RESULT,
    BootstrapSettings,
    ComparedQuantity,
    Comparison,
    ModelItems,
    check_settings,
    compare_items,
    keyed,
)

__all__ = ["KIND_FORCED_CHOICE", "MSG_NO_COMMON_DECIDED", "Agreement", "agreement_with_likelihood",
           "compare_forced_choice"]

#: The kind of a forced-choice comparison (:attr:`biastest.stats.compare.Comparison.kind`).
KIND_FORCED_CHOICE = "forced-choice-share"
MSG_NO_COMMON_DECIDED = (
    "The two results share {n_common} sentence pairs, and on none of them did both decide a direction; there is "
    "no agreement to measure."
)


def _as_result(result: Any, index: int) -> ForcedChoiceResult:
    if isinstance(result, ForcedChoiceResult):
        return result
    if isinstance(result, Mapping):
        return ForcedChoiceResult.from_dict(dict(result))
    raise DataError(MSG_BAD_RESULT.format(index=index, what="forced-choice", type_name=type(result).__name__))


def compare_forced_choice(results: Sequence[Any], *, seed: int, n_resamples: int = 10_000,
                          confidence: float = 0.95, labels: Sequence[str] | None = None,
                          clusters: str | None = None) -> Comparison:
    """Compare chat models' stereotyped-choice shares on the same sentence pairs (see the module docstring).

    Parameters
    ----------
    results : sequence of ForcedChoiceResult (or their ``to_dict()``)
        Two or more, on the same pairs.
    seed, n_resamples, confidence :
        Bootstrap settings (recorded).
    labels : sequence of str, optional
    clusters : {"auto", "template", "attribute-term", "pair"}, optional
        The items that lean together, resolved on the first result's items; None or ``pair``: independent items.

    Raises
    ------
    DataError
        Fewer than two results, no pair in common, nothing parseable for all.
    """
    settings = check_settings(seed, n_resamples, confidence)
    parsed = [_as_result(r, i) for i, r in enumerate(results)]
    items = []
    resolved = resolve_item_clusters(parsed[0].items, clusters) if parsed and clusters else "pair"
    for n, r in enumerate(parsed):
        keys = keyed([it.pair_id for it in r.items])
        records = {k: {"pair_id": it.pair_id, "attribute_term": it.attribute_term,
                       "group_term_stereotyped": it.group_term_stereotyped,
                       **({CLUSTER_FIELD: cluster_key(it, resolved)} if n == 0 else {})}
                   for k, it in zip(keys, r.items, strict=True)}
        items.append(ModelItems(model_id=r.served_model or r.model_id, method=r.template["name"], own=r.score,
                                values={k: it.share for k, it in zip(keys, r.items, strict=True)},
                                ties=dict.fromkeys(keys, False),  # a share, not a verdict: no ties
                                records=records, own_interval=_own_interval(r, settings.confidence)))
    quantity = ComparedQuantity(kind=KIND_FORCED_CHOICE, binary=False,
                                measure="stereotyped-choice share: mean over pairs of the share of a pair's "
                                        "parseable answers (both orders) that chose the stereotyped sentence")
    clustered = resolved != "pair"
    return compare_items(items, labels=labels, what="sentence pairs", quantity=quantity,
                         settings=BootstrapSettings(*settings),
                         cluster_by=CLUSTER_FIELD if clustered else None,
                         cluster_name=CLUSTER_LABELS[resolved] if clustered else None)


def _own_interval(r: Any, confidence: float) -> tuple[float | None, float | None] | None:
    """The share's interval as the result's main summary shows it (None: another level, or no share)."""
    share = getattr(r, "share", None)
    if share is None or abs(share.confidence - confidence) > 1e-12:
        return None
    return share.low, share.high


@dataclass(frozen=True)
class Agreement:
    """How a forced choice and a likelihood score agree on the same pairs.

    Attributes
    ----------
    n_common : int
        Pairs in both results.
    n_decided : int
        Pairs both decided (a direction each).
    agreement : RateSummary
        Share of decided pairs with the same direction (percent, Wilson interval).
    kappa : float or None
        Cohen's kappa of the two directions (None when the chance agreement is 1).
    table : dict
        ``{"stereotyped|stereotyped": n, "stereotyped|anti-stereotyped": n, …}``: forced choice | likelihood.
    """

    n_common: int
    n_decided: int
    agreement: RateSummary
    kappa: float | None
    table: dict[str, int]


def _direction(share: float | None) -> str | None:
    if share is None or share == 0.5:
        return None
    return "stereotyped" if share > 0.5 else "anti-stereotyped"


def agreement_with_likelihood(forced: Any, likelihood: Any, *, confidence: float = 0.95) -> Agreement:
    """Agreement of a forced-choice result with a stereotype-score result on the same pairs (module docstring).

    Raises
    ------
    DataError
        No pair in common that both decided (:data:`MSG_NO_COMMON_DECIDED`), or not the results expected.
    """
    fc = _as_result(forced, 0)
    if isinstance(likelihood, Mapping):
        likelihood = StereotypeResult.from_dict(dict(likelihood))
    if not isinstance(likelihood, StereotypeResult):
        raise DataError(MSG_BAD_RESULT.format(index=1, what="stereotype-test", type_name=type(likelihood).__name__))
    mine = dict(zip(keyed([it.pair_id for it in fc.items]), fc.items, strict=True))
    theirs = dict(zip(keyed([p.pair_id for p in likelihood.pairs]), likelihood.pairs, strict=True))
    common = [k for k in mine if k in theirs]
    sides = ("stereotyped", "anti-stereotyped")
    table = {f"{a}|{b}": 0 for a in sides for b in sides}
    for k in common:
        a, b = _direction(mine[k].share), theirs[k].verdict
        if a is not None and b in sides:
            table[f"{a}|{b}"] += 1
    n = sum(table.values())
    if n == 0:
        raise DataError(MSG_NO_COMMON_DECIDED.format(n_common=len(common)))
    agree = table["stereotyped|stereotyped"] + table["anti-stereotyped|anti-stereotyped"]
    values = [1.0] * agree + [0.0] * (n - agree)
    rate = rate_summary(values, [f"pair {i}" for i in range(n)], confidence=confidence)
    pa = sum(table[f"stereotyped|{b}"] for b in sides) / n
    pb = sum(table[f"{a}|stereotyped"] for a in sides) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    kappa = None if chance >= 1 else (agree / n - chance) / (1 - chance)
    return Agreement(n_common=len(common), n_decided=n, agreement=rate, kappa=kappa, table=table)
