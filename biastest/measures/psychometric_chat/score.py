"""Asking a psychometric question: the plan (contexts × stimuli × both orders × k samples) and how answers are read.

**Design.** Every stimulus of the continuum is asked in every context, with the cues in both orders — cue 1 (the
cue at α = 0) shown first (:data:`~.result.CUE1_FIRST`), then cue 2 first (:data:`~.result.CUE2_FIRST`) —
``samples`` times per order, with the template's words (:mod:`.templates`). Each question is its own
:class:`~biastest.models.chat_records.ChatRequest` whose ``seed`` is :func:`request_seed` of the run's seed and
the sample number, recorded in the request.

**Reading** (:func:`read_cue`). The answer is read by forced choice's strict parser
(:func:`~biastest.measures.forced_choice.parse.parse_answer`) with the two cues as the two options: the answer is
a choice only when it *is* one of the cues (case, markup, quotes, a lead-in such as ``Answer:`` and final
punctuation aside); a leading article (``a``, ``an``, ``the``) is set aside too (``"A woman."``). The question
offered no letters, so an answer the parser reads as a letter (``A``, ``(B)``) is *unparseable* (rule
``label-not-offered``). Refusals (``I cannot tell …``, ``both``, ``neither`` …) are *refused*; anything else
*unparseable*; a failed request *failed*; a question the run did not ask *not-asked* — each its own outcome, never
a cue.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from biastest.continuum import Continuum
from biastest.measures.forced_choice.parse import CHOICE, REFUSED, UNPARSEABLE, parse_answer
from biastest.measures.psychometric_chat.result import (
    CUE1,
    CUE1_FIRST,
    CUE2,
    FAILED,
    NOT_ASKED,
    ORDERS,
    AskRow,
)
from biastest.measures.psychometric_chat.templates import QuestionTemplate
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest

__all__ = ["CueReading", "Question", "plan_questions", "read_ask", "read_cue", "request_seed"]

_ARTICLE = re.compile(r"^\s*(?:a|an|the)\s+", re.IGNORECASE)
_MARKUP = re.compile(r"(\*\*|__|\*|`)")
_QUOTES = "\"'“”‘’«»"


def request_seed(seed: int, sample: int) -> int:
    """The ``seed`` sent with sample ``sample``: the first 4 bytes of SHA-256 of ``"psychometric-chat:{seed}:{k}"``.

    >>> request_seed(42, 0) == request_seed(42, 0) != request_seed(42, 1)
    True
    """
    digest = hashlib.sha256(f"psychometric-chat:{int(seed)}:{int(sample)}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class CueReading:
    """How one answer was read: ``outcome`` (``choice``, ``refused``, ``unparseable``), ``position`` (``first`` or
    ``second`` shown cue, for a choice) and the deciding ``rule``."""

    outcome: str
    position: str | None
    rule: str


def _without_article(text: str) -> str:
    body = _MARKUP.sub("", text).strip().strip(_QUOTES).strip()
    return _ARTICLE.sub("", body, count=1)


def read_cue(text: str | None, first: str, second: str) -> CueReading:
    """Which shown cue an answer names (see the module docstring).

    Examples
    --------
    >>> read_cue("Woman.", "man", "woman").position, read_cue("**A man**", "man", "woman").position
    ('second', 'first')
    >>> read_cue("A", "man", "woman").rule, read_cue("I cannot tell.", "man", "woman").outcome
    ('label-not-offered', 'refused')
    """
    parsed = parse_answer(text, first, second)
    if parsed.outcome == CHOICE and parsed.rule == "sentence":
        return CueReading(CHOICE, "first" if parsed.label == "A" else "second", "cue")
    if parsed.outcome == CHOICE:
        return CueReading(UNPARSEABLE, None, "label-not-offered")
    if parsed.outcome == REFUSED:
        return CueReading(REFUSED, None, parsed.rule)
    bare = _without_article(text or "")
    if bare and bare != (text or ""):
        again = parse_answer(bare, _without_article(first) or first, _without_article(second) or second)
        if again.outcome == CHOICE and again.rule == "sentence":
            return CueReading(CHOICE, "first" if again.label == "A" else "second", "cue+article")
    return CueReading(UNPARSEABLE, None, parsed.rule)


@dataclass(frozen=True)
class Question:
    """One question of the plan: which context, stimulus, order and sample, the cues shown and the request."""

    context_index: int
    stimulus_index: int
    order: str
    sample: int
    first: str
    second: str
    request: ChatRequest
    pair_index: int = 0


def plan_questions(continuum: Continuum, contexts: Sequence[str],
                   cues: tuple[str, str] | Sequence[tuple[str, str]], template: QuestionTemplate, *, samples: int,
                   temperature: float, max_tokens: int, top_logprobs: int, seed: int) -> list[Question]:
    """Every question of a run: context by context, stimulus by stimulus, cue pair by cue pair (``cues``: one pair or
    several), cue 1 first then cue 2 first."""
    pairs = [tuple(cues)] if isinstance(cues[0], str) else [tuple(p) for p in cues]
    out = []
    for c, context in enumerate(contexts):
        for s, stimulus in enumerate(continuum.stimuli):
            for p, pair in enumerate(pairs):
                for order in ORDERS:
                    first, second = pair if order == CUE1_FIRST else (pair[1], pair[0])
                    system, user = template.render(context=context, stimulus=stimulus.text, first=first,
                                                   second=second)
                    for k in range(samples):
                        request = ChatRequest.ask(user, system=system or None, max_tokens=max_tokens,
                                                  temperature=temperature, seed=request_seed(seed, k),
                                                  top_logprobs=top_logprobs, sample=k)
                        out.append(Question(c, s, order, k, first, second, request, p))
    return out


def read_ask(question: Question, reply: ChatReply | None, continuum: Continuum) -> AskRow:
    """One question's :class:`~.result.AskRow`: its request, raw reply and outcome."""
    stimulus = continuum.stimuli[question.stimulus_index]
    base = {"context_index": question.context_index, "stimulus_index": question.stimulus_index,
            "stimulus": stimulus.text, "alpha": stimulus.alpha, "group": stimulus.group, "order": question.order,
            "sample": question.sample, "request": question.request.as_dict(), "pair_index": question.pair_index}
    if reply is None:
        return AskRow(**base, reply=None, outcome=NOT_ASKED, rule=NOT_ASKED)
    if reply.status != REPLY_ANSWERED:
        return AskRow(**base, reply=reply.as_dict(), outcome=FAILED, rule=FAILED)
    reading = read_cue(reply.text, question.first, question.second)
    if reading.outcome != CHOICE:
        return AskRow(**base, reply=reply.as_dict(), outcome=reading.outcome, rule=reading.rule)
    cue2_named = (reading.position == "second") == (question.order == CUE1_FIRST)
    return AskRow(**base, reply=reply.as_dict(), outcome=CUE2 if cue2_named else CUE1, position=reading.position,
                  rule=reading.rule)
