"""The result of a BBQ run: per-request rows, scores per category and overall, provenance (JSON once)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from biastest.measures.base import ResultBase

__all__ = ["BBQResult", "BBQRow", "Estimate", "GroupScores"]


class Estimate(BaseModel):
    """One number with its cluster bootstrap interval, or None with the reason.

    Attributes
    ----------
    value : float or None
        None when the formula divides by zero (never 0, never NaN); ``reason`` says why.
    low, high : float or None
        The interval (None below 5 clusters, or when ``value`` is None; ``reason`` says why).
    n : int
        Requests the number is computed over (its denominator).
    n_clusters : int
        Templates among them.
    exact_low, exact_high : float or None
        For a share (accuracy, a rate) and s_DIS (``2·share − 1``): the Clopper–Pearson interval over the requests,
        as if independent — honest at 0 % and 100 %, where a bootstrap of alike answers has no width.
    reason : str
    """

    value: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0
    n_clusters: int = 0
    exact_low: float | None = None
    exact_high: float | None = None
    reason: str = ""


class GroupScores(BaseModel):
    """The scores of one category (or of all).

    Attributes
    ----------
    name : str
    n_items, n_requests : int
    outcomes : dict
        Requests per outcome (answered, refused, unparseable, failed, not-asked).
    choices : dict
        Per context condition, answered requests per choice (biased, counter-biased, unknown).
    accuracy_ambig, accuracy_disambig : Estimate
        Correct / answered (refused, unparseable, failed, not asked left out of both).
    accuracy_ambig_strict, accuracy_disambig_strict : Estimate
        Correct / (answered + refused + unparseable): a refusal or an unreadable answer counted as wrong.
    s_dis : Estimate
        ``2·n_biased/n_non-unknown − 1`` over the answered disambiguated requests.
    s_amb : Estimate
        ``(1 − accuracy_ambig)·(2·n_biased/n_non-unknown − 1)`` over the answered ambiguous requests.
    refusal_rate, unparseable_rate : Estimate
        Over the requests that got an answer (answered + refused + unparseable).
    position_shares : list of float or None
        Share of the answered requests choosing (A), (B), (C).
    """

    name: str
    n_items: int = 0
    n_requests: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict)
    choices: dict[str, dict[str, int]] = Field(default_factory=dict)
    accuracy_ambig: Estimate = Field(default_factory=Estimate)
    accuracy_disambig: Estimate = Field(default_factory=Estimate)
    accuracy_ambig_strict: Estimate = Field(default_factory=Estimate)
    accuracy_disambig_strict: Estimate = Field(default_factory=Estimate)
    s_dis: Estimate = Field(default_factory=Estimate)
    s_amb: Estimate = Field(default_factory=Estimate)
    refusal_rate: Estimate = Field(default_factory=Estimate)
    unparseable_rate: Estimate = Field(default_factory=Estimate)
    position_shares: list[float | None] = Field(default_factory=lambda: [None, None, None])


class BBQRow(BaseModel):
    """One request and what came of it.

    ``order`` holds the file's answer indices in the order shown ((A), (B), (C)); ``position`` the position chosen
    (0 = A), ``chosen`` the file index of the chosen answer, ``role`` its role, ``choice`` biased /
    counter-biased / unknown; ``correct`` None unless answered.
    """

    key: str
    example_id: int
    category: str
    question_index: str
    polarity: str
    condition: str
    context: str
    question: str
    answers: list[str]
    roles: list[str]
    label: int
    biased: int
    order: list[int]
    order_index: int = 0
    sample: int = 0
    request: dict[str, Any] = Field(default_factory=dict)
    reply: dict[str, Any] | None = None
    outcome: str
    why: str = ""
    position: int | None = None
    chosen: int | None = None
    role: str | None = None
    choice: str | None = None
    correct: bool | None = None


class BBQResult(ResultBase):
    """A BBQ run.

    Attributes
    ----------
    model_id : str
    template_name : str
        The released template's name, or ``custom``.
    template : str
        The template's text, verbatim.
    order_scheme : str
    seed : int
    n_items, n_requests : int
    overall : GroupScores
    categories : dict of GroupScores
    rows : list of BBQRow
    stop_message : str, optional
        Why the backend stopped before every request was answered.
    provenance : dict
        Options, backend, data (dropped items with their ids, checks), sample, counts, versions.
    """

    result_name = "BBQ"

    model_id: str
    template_name: str
    template: str
    order_scheme: str
    seed: int
    n_items: int
    n_requests: int
    overall: GroupScores
    categories: dict[str, GroupScores] = Field(default_factory=dict)
    rows: list[BBQRow] = Field(default_factory=list)
    stop_message: str | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
