"""The result of a psychometric test of a chat model: per context the counts, the fit, the shift, the rates.

Every question is kept as an :class:`AskRow` (the exact request, the raw reply, how it was read); every context as
a :class:`ContextSummary` (per stimulus counts, the guess/lapse fit with its status and message, the PSE shift from
the reference context, the refusal, unparseable, failed, position and order-consistency rates, a plain reading).
A fit that the data cannot identify keeps its status and message and no number (never NaN).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from biastest.measures.base import ResultBase
from biastest.measures.forced_choice.result import RateSummary

__all__ = [
    "CUE1", "CUE1_FIRST", "CUE2", "CUE2_FIRST", "FAILED", "NOT_ASKED", "ORDERS", "OUTCOMES", "PARSEABLE",
    "REFUSED", "UNPARSEABLE", "AskRow", "ContextSummary", "LevelCounts", "PairSummaries",
    "PsychometricChatResult",
]

CUE1, CUE2 = "cue-1", "cue-2"
REFUSED, UNPARSEABLE, FAILED, NOT_ASKED = "refused", "unparseable", "failed", "not-asked"
#: Every outcome of a question; only the first two are answers that name a cue.
OUTCOMES = (CUE1, CUE2, REFUSED, UNPARSEABLE, FAILED, NOT_ASKED)
PARSEABLE = (CUE1, CUE2)
CUE1_FIRST, CUE2_FIRST = "cue1-first", "cue2-first"
ORDERS = (CUE1_FIRST, CUE2_FIRST)


class AskRow(BaseModel):
    """One question (one context, stimulus, order, sample) and what came of it.

    Attributes
    ----------
    context_index, stimulus_index : int
    stimulus : str
    alpha : float
    group : str or None
    order : {"cue1-first", "cue2-first"}
    sample : int
    request : dict
        The exact messages and settings (:meth:`~biastest.models.chat_records.ChatRequest.as_dict`).
    reply : dict or None
        The raw reply (:meth:`~biastest.models.chat_records.ChatReply.as_dict`); None when not asked.
    outcome : str
        One of :data:`OUTCOMES`.
    position : {"first", "second"} or None
        Which shown cue the answer named.
    rule : str
        Which reading rule decided.
    pair_index : int
        Which cue pair of the run was shown (0 for a run with one pair, and for results saved before pairs).
    """

    model_config = ConfigDict(frozen=True)

    context_index: int
    stimulus_index: int
    stimulus: str
    alpha: float
    group: str | None = None
    order: str
    sample: int
    request: dict[str, Any]
    reply: dict[str, Any] | None
    outcome: str
    position: str | None = None
    rule: str
    pair_index: int = 0


class LevelCounts(BaseModel):
    """One stimulus in one context: cue-2 answers ``k`` among parseable answers ``n``, and the other outcomes."""

    model_config = ConfigDict(frozen=True)

    stimulus: str
    alpha: float
    group: str | None = None
    k: int
    n: int
    refused: int
    unparseable: int
    failed: int
    not_asked: int


class ContextSummary(BaseModel):
    """One context's figures.

    Attributes
    ----------
    index : int
    context : str
    reference : bool
    levels : list of LevelCounts
    counts : dict
        Outcome → answers.
    fit : dict
        :meth:`~biastest.stats.psychometric.guess_lapse.GuessLapseFit.to_dict` (``status``, ``message``, ``pse``,
        ``jnd``, their intervals …), or ``{"status": "too_few_levels", "message": …}``.
    shift : dict or None
        PSE of this context minus the reference's, its interval and message (None for the reference).
    refusal_rate, unparseable_rate, failed_rate : RateSummary
        Among questions asked (not-asked left out); percent; clusters: stimuli.
    position_bias : RateSummary
        Parseable answers naming the first-shown cue.
    order_consistency : RateSummary
        (Stimulus, sample) pairs with both orders parseable whose two answers name the same cue.
    reading : str
        The plain-language reading.
    """

    model_config = ConfigDict(frozen=True)

    index: int
    context: str
    reference: bool
    levels: list[LevelCounts]
    counts: dict[str, int]
    fit: dict[str, Any]
    shift: dict[str, Any] | None
    refusal_rate: RateSummary
    unparseable_rate: RateSummary
    failed_rate: RateSummary
    position_bias: RateSummary
    order_consistency: RateSummary
    reading: str


class PairSummaries(BaseModel):
    """One cue pair's own fits: every context's :class:`ContextSummary` from the answers shown that pair."""

    model_config = ConfigDict(frozen=True)

    pair_index: int
    cues: tuple[str, str]
    summaries: list[ContextSummary]


class PsychometricChatResult(ResultBase):
    """A psychometric test of a chat model (see the module docstring)."""

    result_name: ClassVar[str] = "psychometric-chat result"

    model_id: str
    served_model: str | None = None
    seed: int
    template: dict[str, Any]
    cues: tuple[str, str]
    contexts: tuple[str, ...]
    reference: int
    continuum: dict[str, Any]
    samples: int
    temperature: float
    sigmoid: str
    guess_lapse_mode: str
    guess_lapse_fixed: float | None = None
    bootstrap: str
    n_bootstrap: int
    confidence: float
    n_requests: int
    summaries: list[ContextSummary]
    cue_pairs: tuple[tuple[str, str], ...] = ()
    per_pair: list[PairSummaries] = Field(default_factory=list)
    asks: list[AskRow]
    stop_message: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
