"""Permutation tests over re-partitions of a pooled sample into two groups.

Given one value per item of ``X ∪ Y`` (e.g. WEAT's ``s(w, A, B)``), the null
distribution of a two-group statistic is obtained by re-partitioning the
pooled items into a first group of size ``|X|`` and a second of size ``|Y|``.
Every statistic offered is an increasing affine function of the sum of the
first group, so all partitions are scored at once from the sums
(vectorised).

* **Exact** when the number of partitions ``C(|X|+|Y|, |X|)`` is at most
  ``exact_limit``: every partition is enumerated once.
* Otherwise **sampled without replacement**: ``n_samples`` distinct
  partitions other than the observed one are drawn with a seeded generator;
  ``p = (1 + #{T_i ≥ T_obs}) / (1 + n_samples)`` (the observed partition is
  counted once, as in Phipson & Smyth 2010).

Comparisons use a relative tolerance of 1e-9 so that partitions with the same
statistic as observed (up to floating-point summation order) count as "as
extreme". Two-sided p-values compare ``|T − E₀T|``, with ``E₀T`` the exact
mean of ``T`` over all partitions.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from biastest.errors import DataError, MethodError

__all__ = [
    "PermutationResult",
    "partition_permutation_test",
    "count_partitions",
    "MSG_BAD_ALTERNATIVE",
    "MSG_BAD_STATISTIC",
    "MSG_GROUP_SIZES",
    "MSG_BAD_SAMPLES",
]

MSG_BAD_ALTERNATIVE = "The alternative '{value}' is not known; choose 'greater', 'less' or 'two-sided'."
MSG_BAD_STATISTIC = "The statistic '{value}' is not known; choose 'difference_of_sums' or 'difference_of_means'."
MSG_GROUP_SIZES = (
    "A permutation test needs at least one item in each group; got {n_first} in the first and {n_second} in the second."
)
MSG_BAD_SAMPLES = "The number of sampled permutations must be at least 1; got {value}."

_RTOL = 1e-9


def count_partitions(n_first: int, n_second: int) -> int:
    """Number of ways to split ``n_first + n_second`` items into groups of those sizes."""
    return math.comb(n_first + n_second, n_first)


@dataclass(frozen=True)
class PermutationResult:
    """Outcome of :func:`partition_permutation_test`.

    Attributes
    ----------
    observed : float
        The statistic on the given partition.
    p_value : float
        For ``alternative``.
    p_greater, p_less, p_two_sided : float
        All three p-values from the same set of partitions.
    exact : bool
        True when every partition was enumerated.
    n_partitions : int
        Total number of partitions ``C(N, n_first)``.
    n_evaluated : int
        Partitions scored (all of them when exact; else ``n_samples + 1``).
    null_mean, null_sd : float
        Mean and SD of the statistic over the evaluated partitions.
    seed : int or None
        The seed of the sampling (None when exact).
    """

    statistic: str
    alternative: str
    observed: float
    p_value: float
    p_greater: float
    p_less: float
    p_two_sided: float
    exact: bool
    n_partitions: int
    n_evaluated: int
    null_mean: float
    null_sd: float
    seed: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "alternative": self.alternative,
            "observed": self.observed,
            "p_value": self.p_value,
            "p_greater": self.p_greater,
            "p_less": self.p_less,
            "p_two_sided": self.p_two_sided,
            "exact": self.exact,
            "n_partitions": self.n_partitions,
            "n_evaluated": self.n_evaluated,
            "null_mean": self.null_mean,
            "null_sd": self.null_sd,
            "seed": self.seed,
        }


def _all_first_groups(n: int, m: int) -> np.ndarray:
    total = math.comb(n, m)
    flat = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(n), m)), dtype=np.int64, count=total * m
    )
    return flat.reshape(total, m)


def _sample_first_groups(n: int, m: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """``n_samples`` distinct first groups (as boolean masks), never the observed one (items 0..m-1)."""
    observed = np.zeros(n, dtype=bool)
    observed[:m] = True
    seen = {np.packbits(observed).tobytes()}
    chosen: list[np.ndarray] = []
    batch = max(64, n_samples)
    for _ in range(1000):  # bounded; each round adds ~all of a batch when partitions are plentiful
        order = np.argsort(rng.random((batch, n)), axis=1)[:, :m]
        masks = np.zeros((batch, n), dtype=bool)
        np.put_along_axis(masks, order, True, axis=1)
        for row, key in zip(masks, np.packbits(masks, axis=1), strict=True):
            kb = key.tobytes()
            if kb not in seen:
                seen.add(kb)
                chosen.append(row)
                if len(chosen) == n_samples:
                    return np.asarray(chosen)
    raise MethodError(
        "Could not draw enough distinct partitions; lower the number of permutations."
    )  # pragma: no cover


def partition_permutation_test(
    values: Any,
    *,
    n_first: int,
    statistic: Literal["difference_of_sums", "difference_of_means"] = "difference_of_sums",
    alternative: Literal["greater", "less", "two-sided"] = "greater",
    exact_limit: int = 100_000,
    n_samples: int = 10_000,
    seed: int | None = None,
) -> PermutationResult:
    """Permutation test of a two-group statistic over re-partitions.

    Parameters
    ----------
    values : array-like [N]
        One value per item; the first ``n_first`` items form the observed
        first group, the rest the second.
    n_first : int
    statistic : {"difference_of_sums", "difference_of_means"}
        ``Σ_first − Σ_second`` (WEAT's test statistic) or
        ``mean_first − mean_second``.
    alternative : {"greater", "less", "two-sided"}
        Which p-value is reported as ``p_value`` (all three are kept).
    exact_limit : int
        Enumerate every partition when there are at most this many.
    n_samples : int
        Distinct partitions drawn (without replacement) otherwise.
    seed : int
        Required when sampling.

    Returns
    -------
    PermutationResult

    Examples
    --------
    >>> r = partition_permutation_test([3.0, 2.0, 1.0, 0.0], n_first=2)
    >>> r.exact, r.n_partitions, r.p_greater
    (True, 6, 0.16666666666666666)
    """
    if statistic not in ("difference_of_sums", "difference_of_means"):
        raise MethodError(MSG_BAD_STATISTIC.format(value=statistic), value=statistic)
    if alternative not in ("greater", "less", "two-sided"):
        raise MethodError(MSG_BAD_ALTERNATIVE.format(value=alternative), value=alternative)
    v = np.asarray(values, dtype=np.float64).ravel()
    n = v.size
    m = int(n_first)
    if m < 1 or n - m < 1:
        raise DataError(MSG_GROUP_SIZES.format(n_first=m, n_second=n - m))
    if not np.all(np.isfinite(v)):
        raise DataError("Every value in a permutation test must be a finite number.")
    total = v.sum()
    if statistic == "difference_of_sums":
        a, b = 2.0, -total  # T = S1 − (total − S1)
    else:
        a, b = 1.0 / m + 1.0 / (n - m), -total / (n - m)  # T = S1/m − (total − S1)/(n − m)
    n_part = count_partitions(m, n - m)
    # exact null mean of T over all partitions: E[S1] = m/n · total
    mean0 = a * (m / n) * total + b
    observed = a * v[:m].sum() + b
    if n_part <= exact_limit:
        groups = _all_first_groups(n, m)
        sums = v[groups].sum(axis=1)
        exact = True
        used_seed = None
    else:
        if not isinstance(n_samples, int) or n_samples < 1:
            raise MethodError(MSG_BAD_SAMPLES.format(value=n_samples), value=n_samples)
        if seed is None:
            raise MethodError("A seed is needed to sample permutations so that the p-value can be repeated.")
        rng = np.random.default_rng(seed)
        masks = _sample_first_groups(n, m, min(n_samples, n_part - 1), rng)
        sums = np.concatenate([[v[:m].sum()], masks.astype(np.float64) @ v])
        exact = False
        used_seed = seed
    t = a * sums + b
    scale = max(1.0, float(np.max(np.abs(t))))
    tol = _RTOL * scale
    k = t.size
    p_greater = float(np.count_nonzero(t >= observed - tol)) / k
    p_less = float(np.count_nonzero(t <= observed + tol)) / k
    p_two = float(np.count_nonzero(np.abs(t - mean0) >= abs(observed - mean0) - tol)) / k
    p = {"greater": p_greater, "less": p_less, "two-sided": p_two}[alternative]
    return PermutationResult(
        statistic=statistic,
        alternative=alternative,
        observed=float(observed),
        p_value=p,
        p_greater=p_greater,
        p_less=p_less,
        p_two_sided=p_two,
        exact=exact,
        n_partitions=n_part,
        n_evaluated=int(k),
        null_mean=float(t.mean()),
        null_sd=float(t.std(ddof=0)),
        seed=used_seed,
    )
