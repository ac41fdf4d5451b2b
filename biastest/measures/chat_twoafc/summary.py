"""The statistics of a 2AFC test of a chat model: from the answers to P(cue 1 | target), the rates, the totals.

Answers nest: sample within order within cue pair within target. **No cluster is ever split.**

* **P(cue 1 | target)** (percent): answers choosing cue 1 / parseable answers of the target (cue 1 + cue 2;
  refused, unparseable, failed and not-asked answers are in neither numerator nor denominator). Interval: the
  cluster bootstrap of :mod:`biastest.stats.clusters` with the target's **cue pairs** as clusters (a pair's orders
  and samples stay together; none below 5 pairs, with the reason), and beside it the Wilson interval at the Kish
  effective sample size (:func:`~biastest.measures.forced_choice.summary.rate_summary`, same clusters), which stays
  honest at 0 % and 100 %.
* **Overall** figures pool every target's answers with the **targets** as clusters: P(cue 1) (cluster bootstrap
  and Wilson/effective n), the refusal and unparseable rates (among answers received), the **position bias**
  (parseable answers choosing option A; 50 % is none, a model that always says "A" reads 100 %) and the **order
  consistency** (among (target, cue pair, sample) triples answered parseably in both orders, the share that chose
  the same cue both times; a model that always says "A" reads 0 %).

Balanced orders: if an answer follows the position (option A) with probability q and otherwise picks cue 1 with
probability p, P(cue 1) = q/2 + (1 − q)·p and the position bias q + (1 − q)/2 (METHODS §6). Reported as measured,
never "corrected".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from biastest.measures.chat_twoafc.result import (
    CUE1,
    CUE1_FIRST,
    CUE2_FIRST,
    OUTCOMES,
    PARSEABLE,
    REFUSED,
    UNPARSEABLE,
    CueAsk,
    TargetRecord,
)
from biastest.measures.forced_choice.summary import rate_summary
from biastest.stats.clusters import ClusterSummary, summarize_clusters

__all__ = ["BY_PAIR", "BY_TARGET", "summarize_targets", "target_record"]

#: How the clusters are named in the summaries.
BY_PAIR = "cue pair"
BY_TARGET = "target"
ANSWERED = (*PARSEABLE, REFUSED, UNPARSEABLE)


def _share(values: Sequence[float], labels: Sequence[str], cluster_by: str,
           kw: dict[str, Any]) -> ClusterSummary | None:
    if not values:
        return None
    v = np.asarray(values, dtype=np.float64)
    return summarize_clusters(v, list(labels), cluster_by=cluster_by, test_values=2 * v - 1, null=0.0,
                              **kw).scaled(100.0)


def _pair_label(cue_pairs: Sequence[tuple[str, str]], j: int) -> str:
    return f"{cue_pairs[j][0]}/{cue_pairs[j][1]}"


def target_record(index: int, target: str, asks: Sequence[CueAsk], cue_pairs: Sequence[tuple[str, str]], *,
                  seed: int, n_resamples: int, confidence: float) -> TargetRecord:
    """One target's record: P(cue 1) with its cue-pair-clustered intervals, its counts (see the module docstring)."""
    chosen = [a for a in asks if a.outcome in PARSEABLE]
    values = [1.0 if a.outcome == CUE1 else 0.0 for a in chosen]
    labels = [_pair_label(cue_pairs, a.pair) for a in chosen]
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    counts = {o: 0 for o in OUTCOMES}
    for a in asks:
        counts[a.outcome] += 1
    return TargetRecord(index=index, target=target, p_cue1=_share(values, labels, BY_PAIR, kw),
                        p_cue1_rate=rate_summary(values, labels, confidence=confidence), counts=counts,
                        n_first=sum(a.position == "first" for a in chosen), asks=tuple(asks))


def _rate(records: Sequence[TargetRecord], among: Callable[[CueAsk], bool], hit: Callable[[CueAsk], bool],
          confidence: float):
    values, labels = [], []
    for t in records:
        for a in t.asks:
            if among(a):
                values.append(1.0 if hit(a) else 0.0)
                labels.append(t.target)
    return rate_summary(values, labels, confidence=confidence)


def _consistency(records: Sequence[TargetRecord], confidence: float):
    values, labels = [], []
    for t in records:
        first = {(a.pair, a.sample): a.outcome for a in t.asks if a.order == CUE1_FIRST and a.outcome in PARSEABLE}
        second = {(a.pair, a.sample): a.outcome for a in t.asks if a.order == CUE2_FIRST and a.outcome in PARSEABLE}
        for key in sorted(set(first) & set(second)):
            values.append(1.0 if first[key] == second[key] else 0.0)
            labels.append(t.target)
    return rate_summary(values, labels, confidence=confidence)


def summarize_targets(records: Sequence[TargetRecord], *, seed: int, n_resamples: int,
                      confidence: float) -> dict[str, Any]:
    """The overall figures (fields of :class:`~.result.TwoAFCChatResult`): ``p_cue1``, ``p_cue1_rate``,
    ``refusal_rate``, ``unparseable_rate``, ``position_bias``, ``order_consistency``, ``counts``."""
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    values, labels = [], []
    for t in records:
        for a in t.asks:
            if a.outcome in PARSEABLE:
                values.append(1.0 if a.outcome == CUE1 else 0.0)
                labels.append(t.target)
    counts = {o: sum(t.counts[o] for t in records) for o in OUTCOMES}
    return {
        "p_cue1": _share(values, labels, BY_TARGET, kw),
        "p_cue1_rate": rate_summary(values, labels, confidence=confidence),
        "refusal_rate": _rate(records, lambda a: a.outcome in ANSWERED, lambda a: a.outcome == REFUSED, confidence),
        "unparseable_rate": _rate(records, lambda a: a.outcome in ANSWERED, lambda a: a.outcome == UNPARSEABLE,
                                  confidence),
        "position_bias": _rate(records, lambda a: a.outcome in PARSEABLE, lambda a: a.position == "first",
                               confidence),
        "order_consistency": _consistency(records, confidence),
        "counts": counts,
    }
