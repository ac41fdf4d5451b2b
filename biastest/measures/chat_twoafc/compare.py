"""Chat models against each other on the same targets and cue pairs.

For each model: P(cue 1) overall, the position bias and the correlation with % women (as measured). For each pair
of models (A, B), on the targets both answered parseably: the **mean difference** of P(cue 1 | target), A − B, in
percentage points, with a percentile bootstrap interval over targets (targets resampled with replacement,
``numpy.random.default_rng(seed)``), and the **agreement** of their target profiles (Pearson r of the two models'
P(cue 1 | target); None when either is constant). Models asked with different targets, cue pairs or templates are
compared only where they meet, and a warning says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from biastest.errors import DataError
from biastest.measures.chat_twoafc.labour import pearson
from biastest.measures.chat_twoafc.result import TwoAFCChatResult

__all__ = ["MSG_COMPARE_FEW", "MSG_DIFFERENT_DESIGN", "PairComparison", "TwoAFCChatComparison",
           "compare_twoafc_chat"]

MSG_COMPARE_FEW = "Comparing needs at least two results of the 2AFC test of a chat model; got {n}."
MSG_DIFFERENT_DESIGN = ("{a} and {b} were not asked the same questions ({what} differ); they are compared on the "
                        "targets they share.")


class PairComparison(BaseModel):
    """Model A against model B on their shared targets (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    model_a: str
    model_b: str
    n_targets: int
    mean_difference: float | None
    low: float | None
    high: float | None
    profile_r: float | None


class TwoAFCChatComparison(BaseModel):
    """Per-model figures and pairwise comparisons."""

    model_config = ConfigDict(frozen=True)

    models: tuple[dict[str, Any], ...]
    pairs: tuple[PairComparison, ...]
    warnings: tuple[str, ...]
    confidence: float
    n_resamples: int
    seed: int


def _as_result(result: Any) -> TwoAFCChatResult:
    return result if isinstance(result, TwoAFCChatResult) else TwoAFCChatResult.from_dict(result)


def _profile(result: TwoAFCChatResult) -> dict[str, float]:
    return {t.target.casefold(): t.p_cue1_rate.estimate for t in result.targets if t.p_cue1_rate.estimate is not None}


def _name(result: TwoAFCChatResult, i: int) -> str:
    return f"{result.served_model or result.model_id} (#{i + 1})"


def _pair(a: TwoAFCChatResult, b: TwoAFCChatResult, names: tuple[str, str], *, seed: int, n_resamples: int,
          confidence: float) -> PairComparison:
    pa, pb = _profile(a), _profile(b)
    shared = [t for t in pa if t in pb]
    x, y = np.array([pa[t] for t in shared]), np.array([pb[t] for t in shared])
    if not shared:
        return PairComparison(model_a=names[0], model_b=names[1], n_targets=0, mean_difference=None, low=None,
                              high=None, profile_r=None)
    d = x - y
    rng = np.random.default_rng(seed)
    means = [float(d[rng.integers(0, d.size, d.size)].mean()) for _ in range(n_resamples)]
    low, high = (np.quantile(means, [(1 - confidence) / 2, 1 - (1 - confidence) / 2]) if d.size >= 2
                 else (None, None))
    return PairComparison(model_a=names[0], model_b=names[1], n_targets=len(shared), mean_difference=float(d.mean()),
                          low=None if low is None else float(low), high=None if high is None else float(high),
                          profile_r=pearson(x, y) if d.size >= 3 else None)


def compare_twoafc_chat(results: Sequence[Any], *, seed: int, n_resamples: int = 2000,
                        confidence: float = 0.95) -> TwoAFCChatComparison:
    """Compare two or more results (objects or their ``to_dict()``) on the same targets (module docstring).

    Raises
    ------
    DataError
        :data:`MSG_COMPARE_FEW`.
    """
    rs = [_as_result(r) for r in results]
    if len(rs) < 2:
        raise DataError(MSG_COMPARE_FEW.format(n=len(rs)))
    names = [_name(r, i) for i, r in enumerate(rs)]
    models = tuple({"model": names[i], "p_cue1": r.p_cue1_rate.estimate, "position_bias": r.position_bias.estimate,
                    "refusal_rate": r.refusal_rate.estimate,
                    "pearson_r": None if r.labour is None else r.labour.pearson_r,
                    "pearson_low": None if r.labour is None else r.labour.pearson_low,
                    "pearson_high": None if r.labour is None else r.labour.pearson_high,
                    "template": r.template["name"], "n_targets": r.n_targets} for i, r in enumerate(rs))
    warnings, pairs = [], []
    for (i, a), (j, b) in combinations(enumerate(rs), 2):
        what = [w for w, same in (("targets", [t.target for t in a.targets] == [t.target for t in b.targets]),
                                  ("cue pairs", a.cue_pairs == b.cue_pairs), ("templates", a.template == b.template))
                if not same]
        if what:
            warnings.append(MSG_DIFFERENT_DESIGN.format(a=names[i], b=names[j], what=", ".join(what)))
        pairs.append(_pair(a, b, (names[i], names[j]), seed=seed, n_resamples=n_resamples, confidence=confidence))
    return TwoAFCChatComparison(models=models, pairs=tuple(pairs), warnings=tuple(warnings), confidence=confidence,
                                n_resamples=n_resamples, seed=seed)
