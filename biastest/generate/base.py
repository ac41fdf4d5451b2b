"""Shared machinery of every generator: limits, retries, validation, reports.

A generator subclass implements one method — :meth:`TextGenerator._complete`
(messages in, text out) or :meth:`ImageGenerator._generate` (prompt in, image
bytes out) — and translates its provider's failures into
:class:`~biastest.remote.TransientError` (worth retrying),
:class:`~biastest.remote.MalformedAnswer` (the answer is unusable; counted as a rejection) or a
:class:`~biastest.errors.GenerationError` (fatal: wrong key, unknown model).
Everything else lives here:

* the request budget, time limit, retries with backoff and the stop signal
  of a run are :class:`biastest.remote.RunState`'s (shared with the
  endpoint adapters); :meth:`TextGenerator.ask` and
  :meth:`ImageGenerator.ask` send each request through it;
* :class:`SentenceRules` validates a generation: one sentence, containing the
  group term and the attribute term (escaped, word-bounded,
  case-insensitive), no term of the other social group, within word-count
  bounds, not a duplicate (normalised). Each rejection has a reason.
* :class:`GenerationReport` says what a run produced, what it rejected and
  why, what is still missing, and why it stopped, in a message for the user.

Progress reaches the caller through a plain callback
``progress(done, total, message)``.
"""

from __future__ import annotations

import abc
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from biastest.errors import GenerationError, PolicyError
from biastest.remote import (
    MSG_BAD_LIMIT,
    STOP_BUDGET,
    STOP_CANCELLED,
    STOP_RATE_LIMITED,
    STOP_TIME,
    STOP_UNAVAILABLE,
    RunState,
    check_positive,
)
from biastest.spec import contains_term, terms_regex

__all__ = [
    "ProgressCallback",
    "TextGenerator",
    "ImageGenerator",
    "SentenceRules",
    "GenerationReport",
    "normalise_sentence",
    "clean_answer",
    "split_sentences",
    "word_tokens",
    "token_edit_distance",
    "STOP_COMPLETED",
    "STOP_ATTEMPTS",
    "STOP_ERROR",
    "REJECT_EMPTY",
    "REJECT_NOT_ONE_SENTENCE",
    "REJECT_MISSING_GROUP",
    "REJECT_MISSING_ATTRIBUTE",
    "REJECT_OTHER_GROUP",
    "REJECT_TOO_SHORT",
    "REJECT_TOO_LONG",
    "REJECT_DUPLICATE",
]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int, str], None]

# ----------------------------------------------------------------- reasons (the others are biastest.remote's)
STOP_COMPLETED = "completed"
STOP_ATTEMPTS = "attempts_exhausted"
STOP_ERROR = "error"

REJECT_EMPTY = "empty"
REJECT_NOT_ONE_SENTENCE = "not_one_sentence"
REJECT_MISSING_GROUP = "missing_group_term"
REJECT_MISSING_ATTRIBUTE = "missing_attribute_term"
REJECT_OTHER_GROUP = "other_group_term"
REJECT_TOO_SHORT = "too_short"
REJECT_TOO_LONG = "too_long"
REJECT_DUPLICATE = "duplicate"

# ----------------------------------------------------------------- messages
MSG_RUN_COMPLETED = "Generated {accepted} new {items}; every {unit} now has the number asked for."
MSG_RUN_NOTHING_MISSING = "Nothing to generate: every {unit} already has the number asked for."
MSG_RUN_BUDGET = (
    "Stopped after using the request budget ({requests} requests). {accepted} new {items} were kept; "
    "still missing: {missing}. Raise the request budget or run again to generate the rest."
)
MSG_RUN_TIME = (
    "Stopped at the time limit ({seconds:g} s). {accepted} new {items} were kept; still missing: "
    "{missing}. Run again later or allow more time."
)
MSG_RUN_ATTEMPTS = (
    "The model's answers were rejected too often ({rejected} rejected; most often: {top_reason}). {accepted} "
    "new {items} were kept; still missing: {missing} (for: {missing_terms}). Try another prompt or model, "
    "or add these {items} yourself."
)
MSG_RUN_RATE_LIMITED = (
    "The generation service kept refusing requests because of its rate limit (gave up after {tries} tries). "
    "{accepted} new {items} were kept; still missing: {missing}. Wait a minute and run again, or check "
    "the limits of your plan."
)
MSG_RUN_UNAVAILABLE = (
    "The generation service did not answer properly (server errors or time-outs; gave up after {tries} "
    "tries). {accepted} new {items} were kept; still missing: {missing}. Check the service address and "
    "try again later."
)
MSG_RUN_ERROR = "{error} {accepted} new {items} were kept; still missing: {missing}."
MSG_RUN_CANCELLED = "Stopped on request. {accepted} new {items} were kept; still missing: {missing}."

_STOP_MESSAGES = {
    STOP_BUDGET: MSG_RUN_BUDGET,
    STOP_TIME: MSG_RUN_TIME,
    STOP_ATTEMPTS: MSG_RUN_ATTEMPTS,
    STOP_RATE_LIMITED: MSG_RUN_RATE_LIMITED,
    STOP_UNAVAILABLE: MSG_RUN_UNAVAILABLE,
    STOP_ERROR: MSG_RUN_ERROR,
    STOP_CANCELLED: MSG_RUN_CANCELLED,
}


# --------------------------------------------------------------- generators
class TextGenerator(abc.ABC):
    """A text generator: chat messages in, one answer out.

    Subclasses implement :meth:`_complete` and set :attr:`kind` and
    :attr:`model`; this base class adds retries and the request budget
    (:meth:`ask`) and a description for provenance (:meth:`describe`, which
    never contains a secret).
    """

    kind: str = "text"
    model: str = ""
    temperature: float = 0.8

    @abc.abstractmethod
    def _complete(self, messages: Sequence[Mapping[str, str]], *, seed: int | None, timeout: float) -> str:
        """Return the model's answer to ``messages``.

        Raise :class:`TransientError` for failures worth retrying,
        :class:`MalformedAnswer` for unusable answers and
        :class:`~biastest.errors.GenerationError` for fatal ones.
        """

    def ask(self, messages: Sequence[Mapping[str, str]], *, run: RunState, seed: int | None) -> str:
        """:meth:`_complete` under the run's limits and retry policy.

        A public-mode refusal of the address (a redirect to a private host) ends the run like any fatal error:
        what was generated before it is kept.
        """
        try:
            return run.call(lambda timeout: self._complete(messages, seed=seed, timeout=timeout),
                            what=f"{self.kind}:{self.model}")
        except PolicyError as exc:
            raise GenerationError(exc.message) from None

    def describe(self) -> dict[str, Any]:
        """JSON-able description for provenance (never a key)."""
        return {"generator": self.kind, "model": self.model, "temperature": self.temperature}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"


class ImageGenerator(abc.ABC):
    """An image generator: a prompt in, encoded image bytes out.

    Subclasses implement :meth:`_generate`; :meth:`ask` adds retries and the
    request budget.
    """

    kind: str = "image"
    model: str = ""
    width: int = 1024
    height: int = 1024
    honours_seed: bool = False

    @abc.abstractmethod
    def _generate(self, prompt: str, *, seed: int | None, timeout: float) -> bytes:
        """Return one image (any format Pillow reads) for ``prompt``."""

    def ask(self, prompt: str, *, run: RunState, seed: int | None) -> bytes:
        """:meth:`_generate` under the run's limits and retry policy (a public-mode refusal is fatal)."""
        try:
            return run.call(lambda timeout: self._generate(prompt, seed=seed, timeout=timeout),
                            what=f"{self.kind}:{self.model}")
        except PolicyError as exc:
            raise GenerationError(exc.message) from None

    def describe(self) -> dict[str, Any]:
        """JSON-able description for provenance (never a key)."""
        return {"generator": self.kind, "model": self.model, "width": self.width, "height": self.height,
                "honours_seed": self.honours_seed}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"


# --------------------------------------------------------------- validation
_QUOTES = "\"'“”‘’«»`"
_LABEL = re.compile(r"^\s*(?:sentence|rewrite|answer|output)\s*[:\-–]\s*", re.IGNORECASE)
_ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "inc", "ltd", "no")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
_WS = re.compile(r"\s+")


def clean_answer(text: str) -> str:
    """Tidy a model answer before validation.

    Strips white space, a leading label (``Sentence:``, ``Rewrite:``) and one
    pair of quotes around the whole answer; collapses inner white space
    (a newline inside the answer is kept, so multi-line answers still fail
    the one-sentence rule).
    """
    text = text.strip()
    text = _LABEL.sub("", text, count=1).strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES and text[1:-1].count(text[0]) == 0:
        text = text[1:-1].strip()
    lines = [_WS.sub(" ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (newlines always split).

    A full stop, question or exclamation mark followed by white space and a
    capital letter or digit ends a sentence, except after common
    abbreviations (``Mr.``, ``Dr.``, ``e.g.`` ...).
    """
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        start = 0
        for m in _SENTENCE_END.finditer(line):
            before = line[start:m.start()].rstrip(_QUOTES + ")]")
            last_word = before.rsplit(None, 1)[-1].rstrip(".!?").lower() if before.split() else ""
            if before.endswith(".") and last_word in _ABBREVIATIONS:
                continue
            out.append(line[start:m.start()].strip())
            start = m.end()
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out


def word_tokens(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens (``man's`` stays one token)."""
    return _TOKEN.findall(text.casefold())


def token_edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between the token sequences of ``a`` and ``b``.

    Tokens are :func:`word_tokens`; insertion, deletion and substitution of a
    token each cost 1.
    """
    ta, tb = word_tokens(a), word_tokens(b)
    prev = list(range(len(tb) + 1))
    for i, x in enumerate(ta, 1):
        cur = [i] + [0] * len(tb)
        for j, y in enumerate(tb, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def normalise_sentence(text: str) -> str:
    """Key for duplicate detection: case-folded word tokens, punctuation dropped."""
    return " ".join(t for t in word_tokens(text) if t[0].isalnum() or t[0] == "_")


@dataclass(frozen=True)
class SentenceRules:
    """What a generated sentence must satisfy to be accepted.

    Attributes
    ----------
    min_words, max_words : int
        Word-count bounds (white-space separated words), inclusive.
    reject_other_group_terms : bool
        Reject a sentence that also contains a term of the other social
        group (its counterfactual would contain both groups).
    """

    min_words: int = 4
    max_words: int = 40
    reject_other_group_terms: bool = True

    def __post_init__(self) -> None:
        check_positive("min_words", self.min_words, integer=True)
        check_positive("max_words", self.max_words, integer=True)
        if self.max_words < self.min_words:
            raise GenerationError(MSG_BAD_LIMIT.format(name="max_words", allowed=f"at least min_words "
                                                       f"({self.min_words})", value=self.max_words))

    def check(
        self,
        text: str,
        *,
        group_term: str,
        attribute_term: str,
        other_group_terms: Iterable[str] = (),
        seen: set[str] | None = None,
    ) -> str | None:
        """Return the rejection reason of ``text`` (already cleaned), or None if accepted.

        Checks, in order: empty, one sentence, group term present, attribute
        term present, no other-group term, word count, not a duplicate of a
        normalised sentence in ``seen``.
        """
        if not text.strip():
            return REJECT_EMPTY
        if len(split_sentences(text)) != 1:
            return REJECT_NOT_ONE_SENTENCE
        if not contains_term(text, group_term):
            return REJECT_MISSING_GROUP
        if not contains_term(text, attribute_term):
            return REJECT_MISSING_ATTRIBUTE
        if self.reject_other_group_terms:
            others = [t for t in other_group_terms if t.strip()]
            if others and terms_regex(others).search(text):
                return REJECT_OTHER_GROUP
        n = len(text.split())
        if n < self.min_words:
            return REJECT_TOO_SHORT
        if n > self.max_words:
            return REJECT_TOO_LONG
        if seen is not None and normalise_sentence(text) in seen:
            return REJECT_DUPLICATE
        return None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


# ------------------------------------------------------------------- report
@dataclass(frozen=True)
class GenerationReport:
    """What a generation run did, for the user and for provenance.

    Attributes
    ----------
    accepted : int
        New items kept.
    rejected : dict
        Rejected answers by reason (``REJECT_*`` and ``rewrite_*`` reasons).
    requested : dict
        Items wanted per attribute (sentences) or image term (images).
    missing : dict
        Items still missing per attribute or image term (0 when covered).
    requests_used, max_requests : int
        Requests sent (retries included) and the budget.
    transient_failures : dict
        Transient failures seen, by kind (``rate_limit``, ``server_error``,
        ``timeout``, ``connection``).
    elapsed_s : float
        Wall time of the run.
    stopped_because : str
        One of the ``STOP_*`` constants.
    message : str
        A sentence for the user (what happened, what to do).
    items : str
        ``sentences`` or ``images``.
    seed : int
    provenance : dict
    """

    accepted: int
    rejected: dict[str, int]
    requested: dict[str, int]
    missing: dict[str, int]
    requests_used: int
    max_requests: int
    transient_failures: dict[str, int]
    elapsed_s: float
    stopped_because: str
    message: str
    items: str
    seed: int
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def total_missing(self) -> int:
        return sum(self.missing.values())

    @property
    def complete(self) -> bool:
        return self.stopped_because == STOP_COMPLETED

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "rejected": dict(self.rejected),
            "requested": dict(self.requested),
            "missing": dict(self.missing),
            "total_missing": self.total_missing,
            "requests_used": self.requests_used,
            "max_requests": self.max_requests,
            "transient_failures": dict(self.transient_failures),
            "elapsed_s": self.elapsed_s,
            "stopped_because": self.stopped_because,
            "message": self.message,
            "items": self.items,
            "seed": self.seed,
            "provenance": self.provenance,
        }


def report_message(
    reason: str,
    *,
    accepted: int,
    missing: Mapping[str, int],
    rejected: Mapping[str, int],
    items: str,
    unit: str,
    run: RunState,
    error: GenerationError | None = None,
) -> str:
    """The user-facing message of a finished run (see the ``MSG_RUN_*`` constants)."""
    total_missing = sum(missing.values())
    if reason == STOP_COMPLETED:
        return (MSG_RUN_COMPLETED if accepted else MSG_RUN_NOTHING_MISSING).format(
            accepted=accepted, items=items, unit=unit)
    template = _STOP_MESSAGES[reason]
    top = max(rejected.items(), key=lambda kv: (kv[1], kv[0]))[0] if rejected else "none"
    return template.format(
        accepted=accepted,
        missing=total_missing,
        items=items,
        requests=run.requests_used,
        seconds=run.limits.max_seconds,
        rejected=sum(rejected.values()),
        top_reason=top.replace("_", " "),
        missing_terms=", ".join(k for k, v in missing.items() if v > 0),
        tries=run.last_tries,
        error=error.message if error is not None else "",
    )
