"""Asking the 2AFC questions: every target × cue pair in both orders × k samples, and how each answer is read.

**Design.** For target ``t`` and cue pair ``(c1, c2)`` the question (:mod:`.templates`) shows ``c1`` as option A and
``c2`` as B (:data:`~.result.CUE1_FIRST`), then the other way round (:data:`~.result.CUE2_FIRST`), ``samples`` times
per order, at the options' ``temperature``. Every question is its own
:class:`~biastest.models.chat_records.ChatRequest`; its ``seed`` is :func:`request_seed` of the run's seed and the
sample number (the same for every target, pair and order, so sample k of a rerun is asked exactly as before and
two samples of one question differ), recorded in the request.

**Reading** (:func:`read_answer`). A reply of None was not asked (``not-asked``); a failed reply got no answer
(``failed``); an answer is read by the forced-choice measure's strict parser
(:func:`biastest.measures.forced_choice.parse.parse_answer` with the two cues as the two options: ``A``, ``(B)``,
the cue word itself …) into a label, ``refused`` or ``unparseable``. A label is mapped to a cue by the order: in
``cue1-first`` A is cue 1, in ``cue2-first`` B is. Refused, unparseable, failed and not-asked answers are outcomes
of their own, never a side. With top log-probabilities, :func:`~biastest.measures.forced_choice.score.soft_choice`
gives the answer's soft P(cue 1) (recorded per answer).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from biastest.measures.chat_twoafc.result import (
    CUE1,
    CUE1_FIRST,
    CUE2,
    FAILED,
    NOT_ASKED,
    ORDERS,
    CueAsk,
)
from biastest.measures.chat_twoafc.templates import ChatTemplate
from biastest.measures.forced_choice.parse import CHOICE, parse_answer
from biastest.measures.forced_choice.result import ANTI_FIRST, STEREOTYPED_FIRST
from biastest.measures.forced_choice.score import soft_choice
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest

__all__ = ["Question", "plan_questions", "read_answer", "read_asks", "request_seed"]


def request_seed(seed: int, sample: int) -> int:
    """The ``seed`` sent with sample ``sample``: the first 4 bytes of SHA-256 of ``"twoafc-chat:{seed}:{sample}"``.

    >>> request_seed(42, 0) == request_seed(42, 0) != request_seed(42, 1)
    True
    """
    digest = hashlib.sha256(f"twoafc-chat:{int(seed)}:{int(sample)}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class Question:
    """One question of the plan: which target, cue pair, order and sample, the two options shown and the request."""

    target: int
    pair: int
    order: str
    sample: int
    option_a: str
    option_b: str
    request: ChatRequest


def plan_questions(targets: Sequence[str], cue_pairs: Sequence[tuple[str, str]], template: ChatTemplate, *,
                   samples: int, temperature: float, max_tokens: int, top_logprobs: int,
                   seed: int) -> list[Question]:
    """Every question of a run: target by target, cue pair by pair, cue 1 first (samples 0…k−1), then cue 2 first."""
    out = []
    for i, target in enumerate(targets):
        for j, (c1, c2) in enumerate(cue_pairs):
            for order in ORDERS:
                a, b = (c1, c2) if order == CUE1_FIRST else (c2, c1)
                system, user = template.render(target, a, b)
                for k in range(samples):
                    request = ChatRequest.ask(user, system=system or None, max_tokens=max_tokens,
                                              temperature=temperature, seed=request_seed(seed, k),
                                              top_logprobs=top_logprobs, sample=k)
                    out.append(Question(i, j, order, k, a, b, request))
    return out


def read_answer(question: Question, reply: ChatReply | None) -> CueAsk:
    """One question's :class:`~.result.CueAsk`: its request, raw reply and outcome (see the module docstring)."""
    base = {"pair": question.pair, "order": question.order, "sample": question.sample,
            "request": question.request.as_dict()}
    if reply is None:
        return CueAsk(**base, reply=None, outcome=NOT_ASKED, rule=NOT_ASKED)
    if reply.status != REPLY_ANSWERED:
        return CueAsk(**base, reply=reply.as_dict(), outcome=FAILED, rule=FAILED)
    parsed = parse_answer(reply.text, question.option_a, question.option_b)
    soft = soft_choice(reply, STEREOTYPED_FIRST if question.order == CUE1_FIRST else ANTI_FIRST)
    if parsed.outcome != CHOICE:
        return CueAsk(**base, reply=reply.as_dict(), outcome=parsed.outcome, rule=parsed.rule, p_cue1=soft)
    cue1_label = "A" if question.order == CUE1_FIRST else "B"
    return CueAsk(**base, reply=reply.as_dict(), outcome=CUE1 if parsed.label == cue1_label else CUE2,
                  label=parsed.label, position="first" if parsed.label == "A" else "second", rule=parsed.rule,
                  p_cue1=soft)


def read_asks(n_targets: int, questions: Sequence[Question],
              replies: Sequence[ChatReply | None]) -> list[list[CueAsk]]:
    """Every target's answers, read (one reply per question, in the plan's order)."""
    asks: list[list[CueAsk]] = [[] for _ in range(n_targets)]
    for q, r in zip(questions, replies, strict=True):
        asks[q.target].append(read_answer(q, r))
    return asks
