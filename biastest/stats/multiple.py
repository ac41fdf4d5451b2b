"""Adjusted p-values for many comparisons: Holm (family-wise error) and Benjamini–Hochberg (false discovery rate).

A bias test reports one p-value per attribute term or group term — often 10 to
40 of them. At a 5 % level some will fall below 0.05 by chance alone, so a
reading that names "significant" terms must use adjusted p-values:

- :func:`holm` — Holm (1979, Scand. J. Statist. 6:65), step-down Bonferroni.
  With the m p-values sorted ascending, ``p_(1) ≤ … ≤ p_(m)``:
  ``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1)·p_(j))``. Rejecting every
  hypothesis with ``p̃ ≤ α`` keeps the family-wise error rate (chance of even
  one false finding) ≤ α under any dependence between the tests.
- :func:`benjamini_hochberg` — Benjamini & Hochberg (1995, JRSS B 57:289)
  q-values: ``q_(i) = min(1, min_{j ≥ i} m·p_(j) / j)``. Rejecting every
  ``q ≤ α`` keeps the expected share of false findings among the findings
  ≤ α for independent or positively dependent tests. Equal to
  ``scipy.stats.false_discovery_control(p, method="bh")``.

Both are None-safe: a None (a term with nothing to test, e.g. only ties)
stays None and does not count in m.

Examples
--------
>>> holm([0.01, 0.04, None, 0.03])
[0.03, 0.06, None, 0.06]
>>> [round(q, 4) for q in benjamini_hochberg([0.01, 0.04, 0.03])]
[0.03, 0.04, 0.04]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biastest.errors import DataError

__all__ = ["MSG_BAD_P_VALUE", "benjamini_hochberg", "holm"]

MSG_BAD_P_VALUE = "p-value {value!r} at position {index} is not a number between 0 and 1 (or None)."


def _present(p_values: Sequence[float | None]) -> tuple[list[int], np.ndarray]:
    where, values = [], []
    for i, p in enumerate(p_values):
        if p is None:
            continue
        if isinstance(p, bool) or not isinstance(p, int | float | np.floating | np.integer):
            raise DataError(MSG_BAD_P_VALUE.format(value=p, index=i))
        v = float(p)
        if not 0.0 <= v <= 1.0:  # also catches NaN
            raise DataError(MSG_BAD_P_VALUE.format(value=p, index=i))
        where.append(i)
        values.append(v)
    return where, np.asarray(values, dtype=np.float64)


def _scatter(n: int, where: list[int], adjusted: np.ndarray) -> list[float | None]:
    out: list[float | None] = [None] * n
    for i, v in zip(where, adjusted, strict=True):
        out[i] = float(v)
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values (None kept as None, not counted).

    Formula: ``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1)·p_(j))`` over the m
    non-None p-values sorted ascending (Holm 1979).

    Raises
    ------
    DataError
        :data:`MSG_BAD_P_VALUE` for a value that is not a number in [0, 1].
    """
    where, p = _present(p_values)
    if p.size == 0:
        return [None] * len(p_values)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate(scaled))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return _scatter(len(p_values), where, adjusted)


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg q-values (None kept as None, not counted).

    Formula: ``q_(i) = min(1, min_{j ≥ i} m·p_(j) / j)`` over the m non-None
    p-values sorted ascending (Benjamini & Hochberg 1995).

    Raises
    ------
    DataError
        :data:`MSG_BAD_P_VALUE` for a value that is not a number in [0, 1].
    """
    where, p = _present(p_values)
    if p.size == 0:
        return [None] * len(p_values)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = m * p[order] / np.arange(1, m + 1)
    adjusted_sorted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return _scatter(len(p_values), where, adjusted)
