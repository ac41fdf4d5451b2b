"""A rate with an honest interval, shared by the measures that count a model's answers.

The refusal rate, the unparseable rate, the position bias and the order consistency of the forced-choice measure
(:mod:`biastest.measures.forced_choice`) and of the vision-language chat path (:mod:`biastest.measures.vlm`) are
each a :class:`RateSummary` made by :func:`rate_summary`: a share of answers with the Wilson score interval at the
Kish effective sample size of its clusters (an item's orders and samples are one cluster).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.stats import norm

from biastest.stats.clusters import cluster_codes, design_effect

__all__ = ["RATE_METHOD", "RateSummary", "rate_summary"]

RATE_METHOD = (
    "Wilson score interval with the Kish effective sample size n/deff (cluster design effect, at least 1; the "
    "number of clusters when every value is alike)"
)


class RateSummary(BaseModel):
    """A rate (refusals, unparseable answers, first position, order consistency) with an honest interval.

    The interval is the Wilson score interval (Wilson 1927) computed with the Kish effective sample size
    ``n_eff = n / deff`` (``deff`` the cluster design effect, :func:`biastest.stats.clusters.design_effect`, at
    least 1); where the design effect is not defined — every value alike, as at 0 % or 100 % — ``n_eff`` is the
    number of clusters, the most cautious choice (every cluster worth one answer). The same device as Korn &
    Graubard (1998, Survey Methodology 24:193) for rare proportions from clustered samples. It never collapses to
    a point: 0 of n reads ``0 %`` with an upper bound above 0.

    Attributes
    ----------
    estimate, low, high : float or None
        Percent; None when ``n`` is 0.
    k, n : int
        Count and denominator.
    n_clusters : int
    n_effective : float or None
    confidence : float
    method : str
    """

    model_config = ConfigDict(frozen=True)

    estimate: float | None
    low: float | None
    high: float | None
    k: int
    n: int
    n_clusters: int
    n_effective: float | None
    confidence: float
    method: str


def rate_summary(values: Sequence[float], clusters: Sequence[str], *, confidence: float) -> RateSummary:
    """A rate in percent with the Wilson interval at the Kish effective sample size (see :class:`RateSummary`).

    >>> r = rate_summary([0.0] * 40, [f"c{i // 4}" for i in range(40)], confidence=0.95)
    >>> r.estimate, r.low, r.n_effective, round(r.high, 1)
    (0.0, 0.0, 10.0, 27.8)
    """
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return RateSummary(estimate=None, low=None, high=None, k=0, n=0, n_clusters=0, n_effective=None,
                           confidence=confidence, method=RATE_METHOD)
    codes, n_clusters = cluster_codes(list(clusters), n)
    deff = design_effect(x, codes)
    n_eff = float(n_clusters) if deff is None else n / max(1.0, deff)
    p = float(x.mean())
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    denom = 1 + z * z / n_eff
    centre = (p + z * z / (2 * n_eff)) / denom
    half = z / denom * np.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff * n_eff))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    low, high = (0.0 if p == 0.0 else low), (1.0 if p == 1.0 else high)  # exact ends, not round-off
    return RateSummary(estimate=100 * p, low=100 * low, high=100 * high, k=int(np.rint(x.sum())), n=n,
                       n_clusters=n_clusters, n_effective=n_eff, confidence=confidence, method=RATE_METHOD)
