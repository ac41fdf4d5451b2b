"""Asking a forced choice: the questions of each pair (both orders, k samples) and how each answer is read.

**Design.** Each sentence pair is asked in both orders — the stereotyped sentence as option A
(:data:`~.result.STEREOTYPED_FIRST`), then as option B (:data:`~.result.ANTI_FIRST`) — ``samples`` times per
order, at the options' ``temperature``, with the prompt template's words (:mod:`.templates`). Every question is its
own :class:`~biastest.models.chat_records.ChatRequest`; its ``seed`` is :func:`request_seed` of the run's seed and
the sample number (the same for both orders and every pair, so sample k of a rerun is asked exactly as before, and
two samples of one question differ), recorded in the request.

**Reading** (:func:`read_answer`). A reply of None was not asked (the run stopped: ``not-asked``); a failed reply
got no answer (``failed``); an answer is read by :func:`~.parse.parse_answer` into a label (A/B), ``refused`` or
``unparseable``. A label is mapped to content by the order: in ``stereotyped-first`` A is the stereotyped sentence,
in ``anti-first`` B is. Refused, unparseable, failed and not-asked answers are outcomes of their own, never a side.

**Soft score** (:func:`soft_choice`). When the reply carries the top log-probabilities of its answer tokens, the
first answer token's alternatives give ``P(A)`` and ``P(B)``: the sum of ``exp(logprob)`` over the alternatives
whose text, stripped of whitespace, is exactly ``A`` (resp. ``B``). The answer's soft score is
``P(stereotyped label) / (P(A) + P(B))`` — renormalised over the two labels; None when neither label is among the
alternatives (e.g. the answer starts with ``**`` or ``The``). An item's soft score is the mean over its samples
within each order, averaged over the two orders (None unless both orders have one), so a model that always puts
its mass on ``A`` reads 50 %.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from biastest.measures.forced_choice.parse import CHOICE, parse_answer
from biastest.measures.forced_choice.result import (
    ANTI,
    ANTI_FIRST,
    FAILED,
    NOT_ASKED,
    ORDERS,
    STEREOTYPED,
    STEREOTYPED_FIRST,
    Ask,
    ItemRecord,
)
from biastest.measures.forced_choice.templates import PromptTemplate
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest
from biastest.records import SentencePair

__all__ = ["Question", "plan_questions", "read_answer", "read_items", "request_seed", "soft_choice"]


def request_seed(seed: int, sample: int) -> int:
    """The ``seed`` sent with sample ``sample``: the first 4 bytes of SHA-256 of ``"forced-choice:{seed}:{sample}"``.

    >>> request_seed(42, 0) == request_seed(42, 0) != request_seed(42, 1)
    True
    """
    digest = hashlib.sha256(f"forced-choice:{int(seed)}:{int(sample)}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class Question:
    """One question of the plan: which pair, order and sample, the two options and the request."""

    __slots__ = ("index", "option_a", "option_b", "order", "request", "sample")

    def __init__(self, index: int, order: str, sample: int, option_a: str, option_b: str,
                 request: ChatRequest) -> None:
        self.index, self.order, self.sample = index, order, sample
        self.option_a, self.option_b, self.request = option_a, option_b, request


def plan_questions(pairs: Sequence[SentencePair], template: PromptTemplate, *, samples: int, temperature: float,
                   max_tokens: int, top_logprobs: int, seed: int) -> list[Question]:
    """Every question of a run, pair by pair: stereotyped first (samples 0…k−1), then anti-stereotyped first."""
    out = []
    for i, pair in enumerate(pairs):
        for order in ORDERS:
            a, b = ((pair.stereotyped, pair.anti_stereotyped) if order == STEREOTYPED_FIRST
                    else (pair.anti_stereotyped, pair.stereotyped))
            system, user = template.render(a, b)
            for k in range(samples):
                request = ChatRequest.ask(user, system=system or None, max_tokens=max_tokens,
                                          temperature=temperature, seed=request_seed(seed, k),
                                          top_logprobs=top_logprobs, sample=k)
                out.append(Question(i, order, k, a, b, request))
    return out


def _label_mass(alternatives: dict[str, float], label: str) -> float:
    return sum(math.exp(lp) for tok, lp in alternatives.items()
               if tok.strip() == label and lp is not None and math.isfinite(lp))


def soft_choice(reply: ChatReply | None, order: str) -> float | None:
    """The answer's soft score (see the module docstring), or None."""
    if reply is None or reply.status != REPLY_ANSWERED or not reply.top_logprobs:
        return None
    first = reply.top_logprobs[0] or {}
    pa, pb = _label_mass(first, "A"), _label_mass(first, "B")
    if pa + pb <= 0:
        return None
    return (pa if order == STEREOTYPED_FIRST else pb) / (pa + pb)


def read_answer(question: Question, reply: ChatReply | None) -> Ask:
    """One question's :class:`~.result.Ask`: its request, raw reply and outcome (see the module docstring)."""
    base = {"order": question.order, "sample": question.sample, "request": question.request.as_dict()}
    if reply is None:
        return Ask(**base, reply=None, outcome=NOT_ASKED, rule=NOT_ASKED)
    if reply.status != REPLY_ANSWERED:
        return Ask(**base, reply=reply.as_dict(), outcome=FAILED, rule=FAILED)
    parsed = parse_answer(reply.text, question.option_a, question.option_b)
    soft = soft_choice(reply, question.order)
    if parsed.outcome != CHOICE:
        return Ask(**base, reply=reply.as_dict(), outcome=parsed.outcome, rule=parsed.rule, p_stereotyped=soft)
    stereotyped_label = "A" if question.order == STEREOTYPED_FIRST else "B"
    return Ask(**base, reply=reply.as_dict(), outcome=STEREOTYPED if parsed.label == stereotyped_label else ANTI,
               label=parsed.label, position="first" if parsed.label == "A" else "second", rule=parsed.rule,
               p_stereotyped=soft)


def _item_soft(asks: Sequence[Ask]) -> float | None:
    means = []
    for order in (STEREOTYPED_FIRST, ANTI_FIRST):
        values = [a.p_stereotyped for a in asks if a.order == order and a.p_stereotyped is not None]
        if not values:
            return None
        means.append(sum(values) / len(values))
    return sum(means) / 2


def read_items(pairs: Sequence[SentencePair], questions: Sequence[Question],
               replies: Sequence[ChatReply | None]) -> list[ItemRecord]:
    """Every pair's :class:`~.result.ItemRecord` from the plan and the replies (one per question, in order)."""
    asks: list[list[Ask]] = [[] for _ in pairs]
    for q, r in zip(questions, replies, strict=True):
        asks[q.index].append(read_answer(q, r))
    return [ItemRecord(index=i, pair_id=p.id, stereotyped=p.stereotyped, anti_stereotyped=p.anti_stereotyped,
                       attribute_term=p.attribute_term, group_term_stereotyped=p.group_term_stereotyped,
                       group_term_anti=p.group_term_anti, template=p.template, category=p.category,
                       source=p.source, asks=tuple(a), soft=_item_soft(a))
            for i, (p, a) in enumerate(zip(pairs, asks, strict=True))]
