"""The statistics of a psychometric test: from every answer to each context's curve, shift and rates.

Per context and stimulus: ``k`` = answers naming cue 2 (the cue at α = 1), ``n`` = answers naming either cue;
refused, unparseable, failed and not-asked questions are in neither and are counted apart.

* **Fit** (:func:`~biastest.stats.psychometric.guess_lapse.fit_guess_lapse`): ψ_obs(α) = q/2 + (1 − q)·F((α − μ)/s)
  over the stimuli (one level per stimulus), binomial maximum likelihood; PSE = μ, JND = the standard deviation of
  the distribution whose CDF is F((α − μ)/s) (``s`` for norm, ``π·s/√3`` for the logistic). ``q`` is fitted
  (``guess_lapse="fit"``) or fixed for every context at ``|2·P(first) − 1|``, ``P(first)`` the share of all the
  run's parseable answers that name the first-shown cue (``"position"``). Percentile bootstrap intervals; the
  default ``levels`` bootstrap resamples stimuli with their answers.
* **Shift** (:func:`~biastest.stats.psychometric.shift.pse_shift`): PSE of the context minus the reference
  context's, with the percentile interval of the bootstrap differences (stimuli resampled alike in both contexts
  when they were asked the same stimuli: paired).
* **Rates** (:func:`~biastest.measures.forced_choice.summary.rate_summary`: Wilson interval at the Kish effective
  sample size, clusters = stimuli): refused, unparseable, failed among the questions asked; **position bias** =
  parseable answers naming the first-shown cue / parseable answers (50 %: none); **order consistency** = among
  (stimulus, sample) pairs with both orders parseable, the share naming the same cue in both.

Seeds: context ``c``'s fit is bootstrapped with :func:`derived_seed` ``(seed, 1, c)``, its shift with
``(seed, 2, c)`` (both recorded in the fit and the shift).

**Several cue pairs** (``man/woman, male/female``): every question is asked with every pair. The **pooled** fits (the
result's ``summaries``) count, per stimulus, the answers naming the α = 1 cue of whichever pair was shown among the
answers naming either cue of it; the levels bootstrap resamples a stimulus with all its answers, so the pairs stay
nested in the stimulus. Each pair also gets its own fits (``per_pair``; seeds ``(seed, 1, c, p + 1)`` and
``(seed, 2, c, p + 1)`` for pair ``p``). With one pair the pooled fits are that pair's (as before).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from biastest.continuum import Continuum
from biastest.errors import DataError
from biastest.measures.forced_choice.summary import rate_summary
from biastest.measures.psychometric_chat.result import (
    CUE2,
    FAILED,
    NOT_ASKED,
    ORDERS,
    OUTCOMES,
    PARSEABLE,
    REFUSED,
    UNPARSEABLE,
    AskRow,
    ContextSummary,
    LevelCounts,
)
from biastest.stats.psychometric.guess_lapse import fit_guess_lapse, guess_lapse_from_position_share
from biastest.stats.psychometric.shift import pse_shift

__all__ = ["FitSettings", "context_counts", "derived_seed", "position_q", "summarize_contexts"]

TOO_FEW_LEVELS = "too_few_levels"


class FitSettings:
    """How each context is fitted: sigmoid, q mode, bootstrap kind and size, level, seed."""

    __slots__ = ("bootstrap", "confidence", "guess_lapse", "n_bootstrap", "seed", "sigmoid")

    def __init__(self, *, sigmoid: str, guess_lapse: str, bootstrap: str, n_bootstrap: int, confidence: float,
                 seed: int) -> None:
        self.sigmoid, self.guess_lapse, self.bootstrap = sigmoid, guess_lapse, bootstrap
        self.n_bootstrap, self.confidence, self.seed = n_bootstrap, confidence, seed


def derived_seed(seed: int, *parts: int) -> int:
    """A 32-bit seed drawn from ``SeedSequence([seed, *parts])`` (independent streams per context and use).

    >>> derived_seed(42, 1, 0) == derived_seed(42, 1, 0) != derived_seed(42, 1, 1)
    True
    """
    return int(np.random.SeedSequence([int(seed), *parts]).generate_state(1)[0])


def context_counts(asks: Sequence[AskRow], continuum: Continuum, context_index: int) -> list[LevelCounts]:
    """Per stimulus of one context: cue-2 answers, parseable answers and the other outcomes."""
    tally: dict[int, Counter] = defaultdict(Counter)
    for a in asks:
        if a.context_index == context_index:
            tally[a.stimulus_index][a.outcome] += 1
    out = []
    for i, s in enumerate(continuum.stimuli):
        t = tally[i]
        out.append(LevelCounts(stimulus=s.text, alpha=s.alpha, group=s.group, k=t[CUE2], n=t[CUE2] + t["cue-1"],
                               refused=t[REFUSED], unparseable=t[UNPARSEABLE], failed=t[FAILED],
                               not_asked=t[NOT_ASKED]))
    return out


def position_q(asks: Sequence[AskRow]) -> float | None:
    """q implied by the share of all parseable answers naming the first-shown cue (None without any)."""
    chose = [a.position == "first" for a in asks if a.outcome in PARSEABLE]
    return guess_lapse_from_position_share(float(np.mean(chose))) if chose else None


def _xkn(levels: Sequence[LevelCounts]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.array([lv.alpha for lv in levels], dtype=float), np.array([lv.k for lv in levels]),
            np.array([lv.n for lv in levels]))


def _fit(levels: Sequence[LevelCounts], settings: FitSettings, q: float | None, seed: int) -> dict[str, Any]:
    try:
        fit = fit_guess_lapse(*_xkn(levels), sigmoid=settings.sigmoid, guess_lapse=q,
                              n_bootstrap=settings.n_bootstrap, bootstrap=settings.bootstrap,
                              ci_level=settings.confidence, seed=seed)
    except DataError as exc:  # fewer than three levels with a parseable answer
        return {"status": TOO_FEW_LEVELS, "message": str(exc), "pse": None, "jnd": None}
    out = fit.to_dict()
    out.pop("provenance", None)
    return out


def _shift(ref: Sequence[LevelCounts], levels: Sequence[LevelCounts], settings: FitSettings, q: float | None,
           seed: int) -> dict[str, Any]:
    try:
        s = pse_shift(_xkn(ref), _xkn(levels), sigmoid=settings.sigmoid, guess_lapse=q,
                      n_bootstrap=settings.n_bootstrap, bootstrap=settings.bootstrap, ci_level=settings.confidence,
                      seed=seed)
    except DataError as exc:
        return {"shift": None, "shift_ci": None, "message": str(exc)}
    d = s.to_dict()
    d.pop("fit_a"), d.pop("fit_b")
    return d


def _rates(asks: Sequence[AskRow], confidence: float) -> dict[str, Any]:
    asked = [a for a in asks if a.outcome != NOT_ASKED]
    parseable = [a for a in asks if a.outcome in PARSEABLE]

    def rate(rows: Sequence[AskRow], hit: Any) -> Any:
        return rate_summary([1.0 if hit(a) else 0.0 for a in rows], [str(a.stimulus_index) for a in rows],
                            confidence=confidence)

    pairs: dict[tuple[int, int, int], dict[str, str]] = defaultdict(dict)
    for a in parseable:
        pairs[(a.stimulus_index, a.sample, a.pair_index)][a.order] = a.outcome
    both = [(key, v) for key, v in pairs.items() if all(o in v for o in ORDERS)]
    consistency = rate_summary([1.0 if v[ORDERS[0]] == v[ORDERS[1]] else 0.0 for _, v in both],
                               [str(key[0]) for key, _ in both], confidence=confidence)
    return {"refusal_rate": rate(asked, lambda a: a.outcome == REFUSED),
            "unparseable_rate": rate(asked, lambda a: a.outcome == UNPARSEABLE),
            "failed_rate": rate(asked, lambda a: a.outcome == FAILED),
            "position_bias": rate(parseable, lambda a: a.position == "first"),
            "order_consistency": consistency}


def summarize_contexts(asks: Sequence[AskRow], continuum: Continuum, contexts: Sequence[str], *, reference: int,
                       settings: FitSettings, reader: Any, pair: int | None = None,
                       q_asks: Sequence[AskRow] | None = None) -> tuple[list[ContextSummary], float | None]:
    """Every context's :class:`~.result.ContextSummary` (``reference`` is 0-based here) and the fixed q (or None).

    ``reader(context_summary_fields) -> str`` writes the plain reading (:func:`~.report.reading`). ``pair``: the
    fits of one cue pair (``asks`` its answers only; seeds ``(seed, 1, c, pair + 1)`` and ``(seed, 2, c, pair + 1)``);
    None: pooled over every pair (seeds ``(seed, 1, c)``, ``(seed, 2, c)``, as a run with one pair). ``q_asks``: the
    answers a fixed ``position`` q is read from (default ``asks``; a pair's fits use the whole run's).
    """
    q = position_q(asks if q_asks is None else q_asks) if settings.guess_lapse == "position" else None
    extra = () if pair is None else (pair + 1,)
    levels = [context_counts(asks, continuum, c) for c in range(len(contexts))]
    out = []
    for c, context in enumerate(contexts):
        rows = [a for a in asks if a.context_index == c]
        fields: dict[str, Any] = {
            "index": c, "context": context, "reference": c == reference, "levels": levels[c],
            "counts": {o: sum(a.outcome == o for a in rows) for o in OUTCOMES},
            "fit": _fit(levels[c], settings, q, derived_seed(settings.seed, 1, c, *extra)),
            "shift": None if c == reference else _shift(levels[reference], levels[c], settings, q,
                                                        derived_seed(settings.seed, 2, c, *extra)),
            **_rates(rows, settings.confidence),
        }
        fields["reading"] = reader(fields, contexts[reference])
        out.append(ContextSummary(**fields))
    return out, q
