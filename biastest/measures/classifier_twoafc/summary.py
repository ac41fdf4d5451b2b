"""The plan and the statistics of a classifier's 2AFC on occupations: from the scored sentences to P(cue 1 | target).

**Design.** For target ``t`` (an occupation), cue pair ``j`` = ``(c₁, c₂)`` and template ``k`` of the pair's role
(:mod:`.templates`), the two sentences ``s₁ = k(c₁, t)`` and ``s₂ = k(c₂, t)`` differ only in the cue. With ``p(s)``
the classifier's probability of the chosen label, ``d = p(s₁) − p(s₂)``; the comparison's **outcome** is ``cue-1``
when ``d > m``, ``cue-2`` when ``d < −m``, ``tie`` otherwise (``m`` the tie margin, 0 by default: only equal scores
tie), ``unscored`` when either sentence has no score.

**P(cue 1 | target)** (percent) = cue-1 outcomes / (cue-1 + cue-2 outcomes) of the target; ties and unscored
comparisons are in neither (counted, the tie rate reported). Comparisons nest: template within cue pair within
target. The target's interval is the cluster bootstrap of :mod:`biastest.stats.clusters` with the target's **cue
pairs** as clusters (``clusters="template"``: its templates; none below 5 clusters, with the reason), and beside it
the Wilson interval at the Kish effective sample size (:func:`biastest.measures.rates.rate_summary`, same clusters),
honest at 0 % and 100 %; the mean paired difference with the same clusters. **Overall** figures pool every target's
comparisons with the **targets** as clusters (every cue pair and template of one target stays together), as do the
per-cue-pair and per-template rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.measures.classifier_twoafc.result import (
    CUE1,
    CUE2,
    OUTCOMES,
    TIE,
    UNSCORED,
    Comparison,
    SubsetRow,
    TargetRecord,
)
from biastest.measures.classifier_twoafc.templates import fill, pair_role
from biastest.measures.rates import rate_summary
from biastest.stats.clusters import ClusterSummary, summarize_clusters

__all__ = ["BY_TARGET", "PlannedPair", "outcome_of", "plan_pairs", "subset_rows", "summarize", "target_record"]

BY_TARGET = "target"
_DECIDED = (CUE1, CUE2)


@dataclass(frozen=True)
class PlannedPair:
    """One planned comparison: which target, cue pair and template, and its two sentences."""

    target: int
    pair: int
    template: str
    role: str
    sentence_1: str
    sentence_2: str


def plan_pairs(targets: Sequence[str], cue_pairs: Sequence[tuple[str, str]],
               templates: dict[str, tuple[str, ...]] | tuple[str, ...]) -> list[PlannedPair]:
    """Every comparison: target by target, cue pair by cue pair, template by template.

    ``templates``: role → templates (the shipped ones: each pair gets its role's), or one tuple for every pair.
    """
    out = []
    for i, t in enumerate(targets):
        for j, (c1, c2) in enumerate(cue_pairs):
            role = pair_role((c1, c2)) if isinstance(templates, dict) else "any"
            for k in (templates[role] if isinstance(templates, dict) else templates):
                out.append(PlannedPair(i, j, k, role, fill(k, c1, t), fill(k, c2, t)))
    return out


def outcome_of(score_1: float | None, score_2: float | None, margin: float) -> tuple[float | None, str]:
    """``(d, outcome)`` of one comparison (module docstring).

    >>> outcome_of(0.7, 0.2, 0.0), outcome_of(0.5, 0.5, 0.0), outcome_of(None, 0.1, 0.0)
    ((0.49999999999999994, 'cue-1'), (0.0, 'tie'), (None, 'unscored'))
    """
    if score_1 is None or score_2 is None:
        return None, UNSCORED
    d = score_1 - score_2
    return d, CUE1 if d > margin else CUE2 if d < -margin else TIE


def _share(values: Sequence[float], labels: Sequence[str], cluster_by: str,
           kw: dict[str, Any]) -> ClusterSummary | None:
    if not values:
        return None
    v = np.asarray(values, dtype=np.float64)
    return summarize_clusters(v, list(labels), cluster_by=cluster_by, test_values=2 * v - 1, null=0.0,
                              **kw).scaled(100.0)


def _mean(values: Sequence[float], labels: Sequence[str], cluster_by: str,
          kw: dict[str, Any]) -> ClusterSummary | None:
    if not values:
        return None
    return summarize_clusters(np.asarray(values, dtype=np.float64), list(labels), cluster_by=cluster_by, null=0.0,
                              **kw)


def _pair_label(cue_pairs: Sequence[tuple[str, str]], j: int) -> str:
    return f"{cue_pairs[j][0]}/{cue_pairs[j][1]}"


def target_record(index: int, target: str, comparisons: Sequence[Comparison], cue_pairs: Sequence[tuple[str, str]],
                  *, clusters: str, seed: int, n_resamples: int, confidence: float) -> TargetRecord:
    """One target's record: P(cue 1) and the mean difference with their intervals, its counts."""
    def label(c: Comparison) -> str:
        return c.template if clusters == "template" else _pair_label(cue_pairs, c.pair)

    cluster_by = "template" if clusters == "template" else "cue pair"
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    decided = [c for c in comparisons if c.outcome in _DECIDED]
    values = [1.0 if c.outcome == CUE1 else 0.0 for c in decided]
    labels = [label(c) for c in decided]
    scored = [c for c in comparisons if c.diff is not None]
    counts = {o: sum(c.outcome == o for c in comparisons) for o in OUTCOMES}
    return TargetRecord(index=index, target=target, p_cue1=_share(values, labels, cluster_by, kw),
                        p_cue1_rate=rate_summary(values, labels, confidence=confidence),
                        diff=_mean([c.diff for c in scored], [label(c) for c in scored], cluster_by, kw),
                        counts=counts, comparisons=tuple(comparisons))


def subset_rows(records: Sequence[TargetRecord], key: Callable[[Comparison], str],
                kw: dict[str, Any]) -> tuple[SubsetRow, ...]:
    """P(cue 1) over every target for each value of ``key`` (a cue pair, a template), targets as clusters."""
    groups: dict[str, tuple[list[float], list[str], list[int]]] = {}
    for t in records:
        for c in t.comparisons:
            values, labels, ties = groups.setdefault(key(c), ([], [], [0]))
            if c.outcome in _DECIDED:
                values.append(1.0 if c.outcome == CUE1 else 0.0)
                labels.append(t.target)
            ties[0] += c.outcome == TIE
    return tuple(SubsetRow(key=k, p_cue1=_share(v, lab, BY_TARGET, kw),
                           p_cue1_rate=rate_summary(v, lab, confidence=kw["confidence"]), n=len(v), n_ties=ties[0])
                 for k, (v, lab, ties) in groups.items())


def summarize(records: Sequence[TargetRecord], cue_pairs: Sequence[tuple[str, str]], *, seed: int,
              n_resamples: int, confidence: float) -> dict[str, Any]:
    """The overall figures (fields of :class:`~.result.TwoAFCClassifierResult`): ``p_cue1``, ``p_cue1_rate``,
    ``tie_rate``, ``diff``, ``per_pair``, ``per_template``, ``counts``."""
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    values, labels, ties, tie_labels, diffs, diff_labels = [], [], [], [], [], []
    for t in records:
        for c in t.comparisons:
            if c.outcome in _DECIDED:
                values.append(1.0 if c.outcome == CUE1 else 0.0)
                labels.append(t.target)
            if c.outcome != UNSCORED:
                ties.append(1.0 if c.outcome == TIE else 0.0)
                tie_labels.append(t.target)
                diffs.append(c.diff)
                diff_labels.append(t.target)
    return {
        "p_cue1": _share(values, labels, BY_TARGET, kw),
        "p_cue1_rate": rate_summary(values, labels, confidence=confidence),
        "tie_rate": rate_summary(ties, tie_labels, confidence=confidence),
        "diff": _mean(diffs, diff_labels, BY_TARGET, kw),
        "per_pair": subset_rows(records, lambda c: _pair_label(cue_pairs, c.pair), kw),
        "per_template": subset_rows(records, lambda c: c.template, kw),
        "counts": {o: sum(t.counts[o] for t in records) for o in OUTCOMES},
    }
