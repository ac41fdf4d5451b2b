"""Retries with backoff, request and time limits, and cancellation of outbound requests.

:class:`RunLimits` and :class:`RetryPolicy` bound a run: a request budget, a
wall-clock limit, and per-request retries with exponential backoff that
respects ``Retry-After`` (capped). :class:`RunState` enforces them; when a
limit is hit it raises :class:`RunStopped` and the caller keeps what was
produced. A run also stops when the caller sets its stop signal (a plain
:class:`threading.Event`): the signal and the time limit are watched while a
request is in flight and during backoff waits, so a hanging service holds the
caller for at most about :data:`POLL_SECONDS` after a stop and
:data:`DEADLINE_GRACE_SECONDS` after the time limit.

A request function translates its service's failures into
:class:`TransientError` (worth retrying), :class:`MalformedAnswer` (the answer
is unusable) or a :class:`~biastest.errors.BiastestError` (fatal). The
generators (:mod:`biastest.generate`) and the endpoint adapters
(:mod:`biastest.models.endpoint_lm`, :mod:`biastest.models.endpoint_vlm`) share
this machinery.
"""

from __future__ import annotations

import contextvars
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from biastest.errors import GenerationError

__all__ = [
    "DEADLINE_GRACE_SECONDS",
    "MSG_BAD_LIMIT",
    "POLL_SECONDS",
    "REJECT_MALFORMED",
    "STOP_BUDGET",
    "STOP_CANCELLED",
    "STOP_RATE_LIMITED",
    "STOP_TIME",
    "STOP_UNAVAILABLE",
    "MalformedAnswer",
    "RetryPolicy",
    "RunLimits",
    "RunState",
    "RunStopped",
    "TransientError",
    "check_positive",
    "mask_secret",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

# ----------------------------------------------------------------- reasons a run stops
STOP_BUDGET = "request_budget"
STOP_TIME = "time_limit"
STOP_RATE_LIMITED = "rate_limited"
STOP_UNAVAILABLE = "service_unavailable"
STOP_CANCELLED = "cancelled"

#: How often a run waiting on a request looks at its stop signal and its time limit, in seconds.
POLL_SECONDS = 0.05
#: How long past the time limit a request in flight may still answer before it is given up, in seconds.
DEADLINE_GRACE_SECONDS = 0.5

#: Why an answer that arrived cannot be used (the reason a :class:`MalformedAnswer` carries by default).
REJECT_MALFORMED = "malformed"

MSG_BAD_LIMIT = "The setting {name} must be {allowed}, got {value!r}."


def mask_secret(secret: str | None) -> str:
    """A display form of a secret that never contains it: ``'***'`` or ``'(none)'``."""
    return "***" if secret else "(none)"


# ------------------------------------------------------------ limits/retry
def check_positive(name: str, value: Any, *, integer: bool, allow_zero: bool = False) -> None:
    """Refuse a setting that is not a (whole) number above 0, or of at least 0 (:data:`MSG_BAD_LIMIT`)."""
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
        check_positive("max_retries", self.max_retries, integer=True, allow_zero=True)
        for name in ("initial_delay", "max_delay", "max_retry_after"):
            check_positive(name, getattr(self, name), integer=False, allow_zero=True)
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
        check_positive("max_requests", self.max_requests, integer=True)
        check_positive("max_seconds", self.max_seconds, integer=False)
        check_positive("request_timeout", self.request_timeout, integer=False)
        check_positive("attempts_per_item", self.attempts_per_item, integer=True)

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


