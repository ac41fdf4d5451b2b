"""Shared machinery of every generator: limits, retries, validation, reports.

A generator subclass implements one method — :meth:`TextGenerator._complete`
(messages in, text out) or :meth:`ImageGenerator._generate` (prompt in, image
bytes out) — and translates its provider's failures into
:class:`TransientError` (worth retrying), :class:`MalformedAnswer` (the
answer is unusable; counted as a rejection) or a
:class:`~biastest.errors.GenerationError` (fatal: wrong key, unknown model).
Everything else lives here:

* :class:`RunLimits` and :class:`RetryPolicy` bound a run: a request budget,
  a wall-clock limit, and per-request retries with exponential backoff that
  respects ``Retry-After`` (capped). :class:`RunState` enforces them; when a
  limit is hit it raises :class:`RunStopped` and the orchestration keeps
  what was produced. A run also stops when the caller sets its stop signal
  (a plain :class:`threading.Event`): the signal and the time limit are
  watched while a request is in flight and during backoff waits, so a
  hanging service holds the caller for at most about
  :data:`POLL_SECONDS` after a stop and :data:`DEADLINE_GRACE_SECONDS`
  after the time limit.
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
import contextvars
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from biastest.errors import GenerationError, PolicyError
from biastest.spec import contains_term, terms_regex

__all__ = [
    "ProgressCallback",
    "RetryPolicy",
    "RunLimits",
    "RunState",
    "RunStopped",
    "TransientError",
    "MalformedAnswer",
    "TextGenerator",
    "ImageGenerator",
    "SentenceRules",
    "GenerationReport",
    "normalise_sentence",
    "clean_answer",
    "split_sentences",
    "word_tokens",
    "token_edit_distance",
    "mask_secret",
    "STOP_COMPLETED",
    "STOP_BUDGET",
    "STOP_TIME",
    "STOP_ATTEMPTS",
    "STOP_RATE_LIMITED",
    "STOP_UNAVAILABLE",
    "STOP_ERROR",
    "STOP_CANCELLED",
    "POLL_SECONDS",
    "DEADLINE_GRACE_SECONDS",
    "REJECT_EMPTY",
    "REJECT_MALFORMED",
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
T = TypeVar("T")

# ----------------------------------------------------------------- reasons
STOP_COMPLETED = "completed"
STOP_BUDGET = "request_budget"
STOP_TIME = "time_limit"
STOP_ATTEMPTS = "attempts_exhausted"
STOP_RATE_LIMITED = "rate_limited"
STOP_UNAVAILABLE = "service_unavailable"
STOP_ERROR = "error"
STOP_CANCELLED = "cancelled"

#: How often a run waiting on a request looks at its stop signal and its time limit, in seconds.
POLL_SECONDS = 0.05
#: How long past the time limit a request in flight may still answer before it is given up, in seconds.
DEADLINE_GRACE_SECONDS = 0.5

REJECT_EMPTY = "empty"
REJECT_MALFORMED = "malformed"
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

MSG_BAD_LIMIT = "The setting {name} must be {allowed}, got {value!r}."

_STOP_MESSAGES = {
    STOP_BUDGET: MSG_RUN_BUDGET,
    STOP_TIME: MSG_RUN_TIME,
    STOP_ATTEMPTS: MSG_RUN_ATTEMPTS,
    STOP_RATE_LIMITED: MSG_RUN_RATE_LIMITED,
    STOP_UNAVAILABLE: MSG_RUN_UNAVAILABLE,
    STOP_ERROR: MSG_RUN_ERROR,
    STOP_CANCELLED: MSG_RUN_CANCELLED,
}


def mask_secret(secret: str | None) -> str:
    """A display form of a secret that never contains it: ``'***'`` or ``'(none)'``."""
    return "***" if secret else "(none)"


# ------------------------------------------------------------ limits/retry
def _check_positive(name: str, value: Any, *, integer: bool, allow_zero: bool = False) -> None:
    ok_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type or value < 0 or (value == 0 and not allow_zero):
        allowed = ("a whole number" if integer else "a number") + (" of at least 0" if allow_zero else " above 0")
        raise GenerationError(MSG_BAD_LIMIT.format(name=name, allowed=allowed, value=value), name=name)


@dataclass(frozen=True)
class RetryPolicy:
    """How one request is retried after a transient failure.

    The delay before retry ``k`` (0-based) is
    ``min(initial_delay * factor**k, max_delay)``, stretched by a seeded
    jitter of up to ``jitter`` (a fraction); when the service sends
    ``Retry-After``, that value is used instead, capped at
    ``max_retry_after``.

    Attributes
    ----------
    max_retries : int
        Retries per request after the first try (so ``max_retries + 1`` tries).
    initial_delay, factor, max_delay : float
        Exponential backoff, in seconds.
    max_retry_after : float
        Largest ``Retry-After`` honoured, in seconds.
    jitter : float
        Relative random stretch of each delay (0 = none).
    """

    max_retries: int = 4
    initial_delay: float = 1.0
    factor: float = 2.0
    max_delay: float = 30.0
    max_retry_after: float = 60.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        _check_positive("max_retries", self.max_retries, integer=True, allow_zero=True)
        for name in ("initial_delay", "max_delay", "max_retry_after"):
            _check_positive(name, getattr(self, name), integer=False, allow_zero=True)
        if isinstance(self.factor, bool) or not isinstance(self.factor, int | float) or self.factor < 1:
            raise GenerationError(MSG_BAD_LIMIT.format(name="factor", allowed="a number of at least 1",
                                                       value=self.factor))
        if isinstance(self.jitter, bool) or not isinstance(self.jitter, int | float) or not 0 <= self.jitter <= 1:
            raise GenerationError(MSG_BAD_LIMIT.format(name="jitter", allowed="a number from 0 to 1",
                                                       value=self.jitter))

    def delay(self, retry: int, *, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(float(retry_after), self.max_retry_after)
        base = min(self.initial_delay * self.factor**retry, self.max_delay)
        return base * (1.0 + self.jitter * rng.random())

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class RunLimits:
    """Bounds of one generation run.

    Attributes
    ----------
    max_requests : int
        Request budget: every request sent counts, retries included.
    max_seconds : float
        Wall-clock limit of the run; no request starts and no backoff wait
        extends beyond it (a request's time-out is shortened to fit).
    request_timeout : float
        Time-out of one request, in seconds.
    attempts_per_item : int
        Generations tried for one wanted item before giving up on it
        (rejected answers count; transport retries do not).
    """

    max_requests: int = 200
    max_seconds: float = 600.0
    request_timeout: float = 60.0
    attempts_per_item: int = 5

    def __post_init__(self) -> None:
        _check_positive("max_requests", self.max_requests, integer=True)
        _check_positive("max_seconds", self.max_seconds, integer=False)
        _check_positive("request_timeout", self.request_timeout, integer=False)
        _check_positive("attempts_per_item", self.attempts_per_item, integer=True)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class TransientError(Exception):
    """A failure worth retrying (rate limit, server error, time-out, connection).

    Parameters
    ----------
    kind : {"rate_limit", "server_error", "timeout", "connection"}
    retry_after : float, optional
        Seconds the service asked to wait.
    status : int, optional
        HTTP status code.
    """

    def __init__(self, kind: str, *, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status


class MalformedAnswer(Exception):
    """The service answered, but the answer cannot be used (counted as a rejection).

    Parameters
    ----------
    reason : str
        Rejection reason (e.g. ``malformed``, ``empty``).
    """

    def __init__(self, reason: str = REJECT_MALFORMED) -> None:
        super().__init__(reason)
        self.reason = reason


class RunStopped(Exception):
    """A run limit was reached; ``reason`` is one of the ``STOP_*`` constants."""

    def __init__(self, reason: str, *, error: GenerationError | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


class RunState:
    """Book-keeping of one run: requests used, the clock, retries, stop reason.

    Parameters
    ----------
    limits : RunLimits
    retry : RetryPolicy
    seed : int
        Seeds the backoff jitter.
    cancel : threading.Event, optional
        The stop signal: set it from another thread to stop the run early.
        It is checked before each request, every :data:`POLL_SECONDS`
        while a request is in flight (the request is then given up) and
        during backoff waits.
    clock : callable, optional
        Monotonic clock (seconds); ``time.monotonic`` by default.

    Notes
    -----
    Each request runs in a helper (daemon) thread so that the run can give
    it up: at a stop, or :data:`DEADLINE_GRACE_SECONDS` after the time
    limit when the request's own time-out did not end it (a local model, a
    service that trickles bytes). A request given up keeps its thread until
    its own time-out or computation ends; its answer is dropped.

    Several threads may call :meth:`call` on one run at once (concurrent
    requests): they share its request budget, clock and counters.
    """

    def __init__(
        self,
        limits: RunLimits,
        retry: RetryPolicy,
        *,
        seed: int,
        cancel: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.retry = retry
        self.cancel = cancel
        self.clock = clock
        self.started = clock()
        self.deadline = self.started + limits.max_seconds
        self.requests_used = 0
        self.transient: dict[str, int] = {}
        self.last_tries = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()  # requests sent from several threads share one budget

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        return self.deadline - self.clock()

    def check(self) -> None:
        """Raise :class:`RunStopped` if no further request may start."""
        if self.cancel is not None and self.cancel.is_set():
            raise RunStopped(STOP_CANCELLED)
        if self.requests_used >= self.limits.max_requests:
            raise RunStopped(STOP_BUDGET)
        if self.remaining() <= 0.01:
            raise RunStopped(STOP_TIME)

    def call(self, fn: Callable[[float], T], *, what: str) -> T:
        """Call ``fn(timeout)`` with retries on :class:`TransientError`.

        Every try counts against the request budget; its time-out is the
        smaller of ``request_timeout`` and the time left. Backoff waits
        respect ``Retry-After`` (capped) and never extend past the run's
        time limit. A stop signal ends the call within about
        :data:`POLL_SECONDS`, even while a request hangs.

        Raises
        ------
        RunStopped
            When a limit is hit, the stop signal is set (``cancelled``), or
            retries are exhausted (``rate_limited`` or
            ``service_unavailable``).
        MalformedAnswer, GenerationError
            Passed through from ``fn``.
        """
        tries = 0
        while True:
            with self._lock:
                self.check()
                self.requests_used += 1
            tries += 1
            timeout = max(0.01, min(self.limits.request_timeout, self.remaining()))
            try:
                return self._bounded(fn, timeout, what=what)
            except TransientError as exc:
                with self._lock:
                    self.transient[exc.kind] = self.transient.get(exc.kind, 0) + 1
                    self.last_tries = tries
                if tries > self.retry.max_retries:
                    log.warning("%s: giving up after %d tries (last failure: %s)", what, tries, exc.kind)
                    raise RunStopped(STOP_RATE_LIMITED if exc.kind == "rate_limit" else STOP_UNAVAILABLE) from None
                with self._lock:
                    wait = self.retry.delay(tries - 1, retry_after=exc.retry_after, rng=self._rng)
                if wait >= self.remaining():
                    log.warning("%s: a wait of %.2f s would pass the time limit", what, wait)
                    raise RunStopped(STOP_TIME) from None
                log.info("%s: %s (status %s); retry %d in %.2f s", what, exc.kind, exc.status, tries, wait)
                if self.cancel is not None:
                    if self.cancel.wait(wait):
                        log.info("%s: stopped on request during a backoff wait", what)
                        raise RunStopped(STOP_CANCELLED) from None
                else:
                    time.sleep(wait)

    def _bounded(self, fn: Callable[[float], T], timeout: float, *, what: str) -> T:
        """``fn(timeout)`` in a helper thread, given up at a stop or past the time limit."""
        box: dict[str, Any] = {}
        finished = threading.Event()

        def work() -> None:
            try:
                box["value"] = fn(timeout)
            except BaseException as exc:  # handed to the caller's thread below
                box["error"] = exc
            finally:
                finished.set()

        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(work,), name=f"biastest-request {what}", daemon=True).start()
        while not finished.wait(POLL_SECONDS):
            if self.cancel is not None and self.cancel.is_set():
                log.info("%s: stopped on request; the request in flight is given up", what)
                raise RunStopped(STOP_CANCELLED)
            if self.remaining() < -DEADLINE_GRACE_SECONDS:
                log.warning("%s: the request in flight passed the time limit and is given up", what)
                raise RunStopped(STOP_TIME)
        if "error" in box:
            raise box.pop("error")
        return box["value"]


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
        _check_positive("min_words", self.min_words, integer=True)
        _check_positive("max_words", self.max_words, integer=True)
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
