"""Models that only answer, behind an OpenAI-compatible chat endpoint (hosted APIs, vLLM, llama.cpp, Ollama's ``/v1``).

:class:`EndpointChatLM` satisfies :class:`~biastest.models.protocols.ChatLM`:
each :class:`~biastest.models.chat_records.ChatRequest` is one request::

    POST {base_url}/chat/completions
    {"model": NAME, "messages": [{"role": "user", "content": "…"}, …],
     "max_tokens": 16, "temperature": 0, "seed": 7, "n": 1,
     "logprobs": true, "top_logprobs": 5}                      (the last two only when asked)

and its answer is one :class:`~biastest.models.chat_records.ChatReply`
holding the text exactly as given (``choices[0].message.content``; a
structured ``refusal`` where the content is empty), the ``finish_reason``, the
log-probabilities of the answer tokens where given (per token, the
``top_logprobs`` alternatives' text → log P, the chosen token's included), the
model name the server answered under (``model``) and its
``system_fingerprint``. The backend never reads the answer: the measure does.

Seeds
-----
The request's seed is sent as the protocol's ``seed`` (servers that honour it
answer the same again); a second or later *sample* of the same question is
sent with a seed derived from (seed, sample)
(:func:`~biastest.models.chat_records.sampling_seed`), so samples differ and
each is reproducible.

Log-probabilities
-----------------
Asked only for requests with ``top_logprobs > 0`` (at most
:data:`MAX_TOP_LOGPROBS`). A server that answers them with ``logprobs: null``
gives answers without them (counted: ``answers_without_logprobs``); one that
refuses the field (HTTP 400 or 422) is asked the same question again without
it, and — remembered for the run — every later question too
(``logprobs: refused (HTTP 400)`` in :meth:`EndpointChatLM.describe`).
Log-probabilities that cannot be read — not a list of tokens each with its
number, or a number that is not finite and at most 0 (up to
:data:`~biastest.models.endpoint_lm.served.LOGPROB_TOLERANCE` = 1e-6 of float
rounding: :data:`~biastest.models.endpoint_lm.served.MSG_BAD_LOGPROB`) — are
not kept: the answer is (``top_logprobs`` None, the reason in its
``extra["logprobs_unreadable"]``, counted: ``unreadable_logprobs``).

What is fatal and what is one reply
-----------------------------------
Requests go through the shared machinery of
:class:`~biastest.models.endpoint_lm.ServedEndpoint`: at most ``concurrency``
at once, retries with backoff on 429, 5xx, time-outs and lost connections
(honouring ``Retry-After``), a request budget and an overall time limit.

* **The run ends with an error** (:class:`~biastest.errors.EndpointError`,
  nothing made up): the key refused (401/403, :data:`MSG_KEY_REFUSED`), no chat
  service or no such model (404, :data:`MSG_NO_CHAT`; a model the server's list
  lacks, :data:`MSG_NOT_SERVED`, before any question), no quota, an answer
  under another model's name (:data:`MSG_MODEL_MISMATCH`; a dated snapshot of
  the name asked is accepted and recorded), nothing answered at all
  (:data:`MSG_CHAT_FAILED`), or the first :data:`FAIL_FAST` questions all
  without an answer (:data:`MSG_NOTHING_ANSWERED`: a server that refuses every
  question does not use up the budget). An address public mode refuses is
  refused before any connection (:class:`~biastest.errors.PolicyError`).
* **One reply says what happened, the run goes on**: a body that cannot be
  read even after :data:`GARBLED_TRIES` tries (:data:`MSG_REPLY_GARBLED`) or a
  question the server refuses (HTTP 400/413/422, :data:`MSG_REPLY_REJECTED`)
  is a failed reply (``ChatReply.failed``); a content filter is an *answer*
  with ``finish_reason="content_filter"`` (and empty text when the server
  withheld it), also when the server says so with HTTP 400 and the error code
  ``content_filter`` (Azure).
* **The run stops early** (a limit, rate limits or server errors past the
  retries, the stop signal): what was answered is kept, the questions not
  asked are None, and :attr:`EndpointChatLM.stop_message` says why
  (:data:`MSG_CHAT_PARTIAL`).

Keys and addresses are handled as in :mod:`biastest.models.endpoint_lm`: the
key lives only in the client object (never in :meth:`~EndpointChatLM.describe`,
a ``repr``, a log line or a pickle); the address is recorded without
credentials or query and passes the public-mode check before anything is sent.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from biastest.errors import EndpointError
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest, sampling_seed
from biastest.models.endpoint_lm import (
    DEFAULT_CONCURRENCY,
    MSG_KEY_REFUSED,
    MSG_NOT_SERVED,
    ProgressCallback,
    ServedEndpoint,
)
from biastest.models.endpoint_lm.served import MSG_BAD_LOGPROB, is_logprob
from biastest.models.endpoint_vlm import MSG_NO_CHAT, MSG_WHY
from biastest.remote import RetryPolicy, RunLimits, RunState, mask_secret

__all__ = [
    "FAIL_FAST",
    "GARBLED_TRIES",
    "MAX_TOP_LOGPROBS",
    "MSG_CHAT_FAILED",
    "MSG_CHAT_PARTIAL",
    "MSG_CHAT_REJECTED",
    "MSG_GARBLED",
    "MSG_KEY_REFUSED",
    "MSG_MODEL_MISMATCH",
    "MSG_NOTHING_ANSWERED",
    "MSG_NOT_SERVED",
    "MSG_NO_CHAT",
    "MSG_REPLY_GARBLED",
    "MSG_REPLY_REJECTED",
    "MSG_WHY",
    "EndpointChatLM",
]

log = logging.getLogger(__name__)

#: The model kind recorded for a model that answers.
CHAT_KIND = "chat"
#: The most alternatives the OpenAI protocol allows per answer token.
MAX_TOP_LOGPROBS = 20
#: Tries of one question whose answer cannot be read before its reply is a failed one.
GARBLED_TRIES = 2
#: Questions that may fail one after the other from the start of a run before it ends (nothing answered).
FAIL_FAST = 8
#: HTTP statuses that refuse one question (its reply fails; the run goes on).
_REJECTS_ONE = (400, 413, 422)
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")

MSG_CHAT_REJECTED = (
    "The endpoint at {where} refused a question for the model '{model}' (HTTP {status}). A setting may not be "
    "allowed for this model (the answer length, the temperature or the seed); check the model's documentation."
)
MSG_GARBLED = (
    "The endpoint at {where} answered with something that is not a chat answer. Check the address (for vLLM it ends "
    "in /v1) and that the server speaks the OpenAI chat protocol."
)
MSG_MODEL_MISMATCH = (
    "The endpoint at {where} answered for the model '{served}', not '{model}' as asked, so its answers would be "
    "recorded under the wrong name; the run was stopped. Give the model's name exactly as the server reports it."
)
MSG_CHAT_FAILED = (
    "The endpoint at {where} did not answer any question: {why}. Check that the server is running and its address, "
    "then try again."
)
MSG_CHAT_PARTIAL = (
    "The endpoint stopped early ({why}): {missing} of {total} questions were not asked; they have no answer and are "
    "listed as not asked. Run again to ask them."
)
MSG_NOTHING_ANSWERED = (
    "The endpoint at {where} gave no answer to the first {count} questions (the last: {error}), so the run was "
    "stopped before it used up the request budget. Check the model's name and settings, then try again."
)
#: A failed reply's ``error``: the answer could not be read.
MSG_REPLY_GARBLED = "the endpoint's answer could not be read ({problem}), {tries} tries"
#: A failed reply's ``error``: the server refused this question.
MSG_REPLY_REJECTED = "the endpoint refused this question (HTTP {status})"
MSG_PROGRESS = "Asking the model"


class _Garbled(Exception):
    """An answer that cannot be read (tried again, then a failed reply)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)  # NaN too: is_logprob refuses it


def _content_text(message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The answer's text as given, and what the reply's ``extra`` records about it."""
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    extra: dict[str, Any] = {}
    if content is None or content == "":
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            content, extra["refusal_field"] = refusal, True
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise _Garbled("the answer is not text")
    return content, extra


def read_token_logprobs(logprobs: Any) -> tuple[dict[str, float], ...] | None:
    """Per answer token, its alternatives' text → log P (the chosen token's included); None when not given.

    Raises
    ------
    ValueError
        The log-probabilities are there but cannot be read.
    """
    if logprobs is None:
        return None
    content = logprobs.get("content") if isinstance(logprobs, dict) else "bad"
    if content is None:
        return None
    if not isinstance(content, list):
        raise ValueError("logprobs.content is not a list")
    out = []
    for entry in content:
        if not (isinstance(entry, dict) and isinstance(entry.get("token"), str) and _is_number(entry.get("logprob"))):
            raise ValueError("a token without its log-probability")
        if not is_logprob(entry["logprob"]):
            raise ValueError(MSG_BAD_LOGPROB)
        alternatives: dict[str, float] = {}
        top = entry.get("top_logprobs") or []
        if not isinstance(top, list):
            raise ValueError("top_logprobs is not a list")
        for alt in top:
            if not (isinstance(alt, dict) and isinstance(alt.get("token"), str) and _is_number(alt.get("logprob"))):
                raise ValueError("an alternative without its log-probability")
            if not is_logprob(alt["logprob"]):
                raise ValueError(MSG_BAD_LOGPROB)
            alternatives.setdefault(alt["token"], float(alt["logprob"]))
        alternatives.setdefault(entry["token"], float(entry["logprob"]))
        out.append(alternatives)
    return tuple(out)


class EndpointChatLM(ServedEndpoint):
    """A model that only answers, behind an OpenAI-compatible chat endpoint (see the module).

    Parameters
    ----------
    base_url : str
        The API root, e.g. ``http://localhost:8000/v1`` (vLLM) or ``https://api.openai.com/v1``.
    model : str
        The model's name as the server serves it.
    api_key : str, optional
        Sent as ``Authorization: Bearer …`` for this object's requests only; never stored elsewhere.
    concurrency : int
        Questions in flight at once.
    limits : RunLimits, optional
        Request budget (retries included), overall time limit and per-request time-out of each :meth:`chat`.
    retry : RetryPolicy, optional
        Default :func:`~biastest.models.endpoint_lm.default_retry`.
    seed : int
        Seeds the backoff jitter (the questions carry their own seeds).
    cancel : threading.Event, optional
        Set it to stop a run early (what was answered is kept).

    Raises
    ------
    OptionError, PolicyError
        No model name, a bad address or one that public mode refuses (before any connection), a bad option.
    """

    kind: ClassVar[str] = CHAT_KIND
    _msg_not_found: ClassVar[str] = MSG_NO_CHAT
    _msg_rejected: ClassVar[str] = MSG_CHAT_REJECTED
    _msg_garbled: ClassVar[str] = MSG_GARBLED

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        limits: RunLimits | None = None,
        retry: RetryPolicy | None = None,
        seed: int = 0,
        cancel: threading.Event | None = None,
    ) -> None:
        super().__init__(base_url, model, api_key=api_key, concurrency=concurrency, limits=limits, retry=retry,
                         seed=seed, cancel=cancel, service="chat")
        self._no_logprobs = threading.Event()
        self.logprobs_refused_status: int | None = None
        self.logprobs_asked = False
        self.counts = {"questions": 0, "answered": 0, "failed": 0, "not_asked": 0, "content_filter": 0,
                       "answers_with_logprobs": 0, "answers_without_logprobs": 0, "unreadable_logprobs": 0}
        self._fail_streak = 0
        self.stopped_because: str | None = None
        self.stop_why: str | None = None
        self.stop_message: str | None = None

    # ------------------------------------------------------------------ asking
    def chat(self, requests: Sequence[ChatRequest], *,
             progress: ProgressCallback | None = None) -> list[ChatReply | None]:
        """Ask every question; one :class:`ChatReply` per request, in order (None: not asked, the run stopped).

        Raises
        ------
        EndpointError
            A fatal answer (see the module), or nothing answered at all.
        PolicyError
            Public mode refused an address (a redirect to a private host).
        """
        requests = list(requests)
        for r in requests:
            if not isinstance(r, ChatRequest):
                raise TypeError(f"a chat model answers ChatRequest objects, not {type(r).__name__}")
        self.stopped_because = self.stop_why = self.stop_message = None
        self.connect()
        if not requests:
            return []
        with self._lock:
            self.counts["questions"] += len(requests)
        replies, stop, done, run = self._dispatch(requests, self._request, progress=progress, message=MSG_PROGRESS)
        if stop is not None:
            why = MSG_WHY[stop].format(max_requests=self.limits.max_requests, seconds=self.limits.max_seconds,
                                       tries=run.last_tries)
            if done == 0:
                raise EndpointError(MSG_CHAT_FAILED.format(where=self.where, why=why), stopped_because=stop)
            missing = sum(r is None for r in replies)
            with self._lock:
                self.counts["not_asked"] += missing
            self.stopped_because, self.stop_why = stop, why
            self.stop_message = MSG_CHAT_PARTIAL.format(why=why, missing=missing, total=len(requests))
            log.warning("%s", self.stop_message)
        return replies

    def _request(self, run: RunState, request: ChatRequest) -> ChatReply:
        """One question under the run's retries, budget and time limit: an answer or a failed reply."""
        problem = ""
        for _ in range(GARBLED_TRIES):
            try:
                reply = self._ask(run, request)
            except _Garbled as exc:
                problem = exc.problem
                continue
            except EndpointError as exc:
                status = exc.details.get("status")
                if status not in _REJECTS_ONE:
                    raise
                return self._failed(MSG_REPLY_REJECTED.format(status=status))
            with self._lock:
                self.counts["answered"] += 1
                self._fail_streak = -1  # something was answered: no fast failure from now on
                if reply.finish_reason == "content_filter":
                    self.counts["content_filter"] += 1
            return reply
        return self._failed(MSG_REPLY_GARBLED.format(problem=problem, tries=GARBLED_TRIES))

    def _failed(self, error: str) -> ChatReply:
        with self._lock:
            self.counts["failed"] += 1
            if self._fail_streak >= 0:
                self._fail_streak += 1
                if self._fail_streak >= FAIL_FAST:
                    raise EndpointError(MSG_NOTHING_ANSWERED.format(where=self.where, count=self._fail_streak,
                                                                    error=error))
        return ChatReply.failed(error)

    def _ask(self, run: RunState, request: ChatRequest) -> ChatReply:
        want = request.top_logprobs > 0 and not self._no_logprobs.is_set()
        what = f"endpoint:{self.model_id}"
        try:
            return run.call(lambda timeout: self._attempt(request, timeout, logprobs=want), what=what)
        except EndpointError as exc:
            status = exc.details.get("status")
            if not want or status not in (400, 422):
                raise
        # The server refused the question with log-probabilities: ask without them (from now on).
        self._no_logprobs.set()
        with self._lock:
            self.logprobs_refused_status = status
        return run.call(lambda timeout: self._attempt(request, timeout, logprobs=False), what=what)

    def _attempt(self, request: ChatRequest, timeout: float, *, logprobs: bool) -> ChatReply:
        import openai  # the openai package loads with the first question

        sent: dict[str, Any] = {"model": self.model_id, "messages": request.as_dict()["messages"],
                                "max_tokens": request.max_tokens, "temperature": request.temperature, "n": 1}
        seed = sampling_seed(request)
        if seed is not None:
            sent["seed"] = int(seed)
        if logprobs:
            sent.update(logprobs=True, top_logprobs=min(request.top_logprobs, MAX_TOP_LOGPROBS))
            self.logprobs_asked = True
        try:
            raw = self._client.chat.completions.with_raw_response.create(**sent, timeout=timeout)
            body = raw.http_response.json()
        except openai.BadRequestError as exc:
            if _error_code(exc) == "content_filter":
                return ChatReply(status=REPLY_ANSWERED, text="", finish_reason="content_filter",
                                 served_model=self.model_id, extra={"http_status": exc.status_code})
            raise self._translate(exc) from None
        except Exception as exc:
            mapped = self._translate(exc)
            if isinstance(mapped, EndpointError) and mapped.message == MSG_GARBLED.format(where=self.where):
                raise _Garbled(str(mapped.details.get("cause", "not JSON"))) from None
            raise mapped from None
        return self._parse(body, asked_logprobs=logprobs)

    def _check_model(self, served: Any) -> str:
        """The name the answer came under (refused when it is another model's)."""
        if not isinstance(served, str) or not served.strip():
            return self.model_id
        name = served.strip()
        if name != self.model_id and not (name.startswith(self.model_id + "-")
                                          and _SNAPSHOT.fullmatch(name[len(self.model_id):])):
            raise EndpointError(MSG_MODEL_MISMATCH.format(where=self.where, served=name[:200], model=self.model_id))
        with self._lock:
            self.served_model = name[:200]
        return name[:200]

    def _parse(self, body: Any, *, asked_logprobs: bool) -> ChatReply:
        """Check one chat answer and record it as given (see the module)."""
        if not isinstance(body, dict):
            raise _Garbled("not a JSON object")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Garbled("no choice")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _Garbled("no message")
        text, extra = _content_text(message)
        served = self._check_model(body.get("model"))
        fingerprint = body.get("system_fingerprint")
        fingerprint = fingerprint[:200] if isinstance(fingerprint, str) and fingerprint else None
        finish = choice.get("finish_reason")
        top = None
        if asked_logprobs:
            try:
                top = read_token_logprobs(choice.get("logprobs"))
            except ValueError as exc:
                extra["logprobs_unreadable"] = str(exc)
        with self._lock:
            if fingerprint is not None:
                self.fingerprints.add(fingerprint)
            if asked_logprobs:
                key = ("unreadable_logprobs" if "logprobs_unreadable" in extra else
                       "answers_without_logprobs" if top is None else "answers_with_logprobs")
                self.counts[key] += 1
        return ChatReply(status=REPLY_ANSWERED, text=text, finish_reason=finish if isinstance(finish, str) else None,
                         top_logprobs=top, served_model=served, system_fingerprint=fingerprint, extra=extra)

    # ------------------------------------------------------------------ provenance
    @property
    def logprobs_state(self) -> str:
        """``refused (HTTP 400)``, ``not given`` (asked, never given), ``asked`` or ``not asked``."""
        if self.logprobs_refused_status is not None:
            return f"refused (HTTP {self.logprobs_refused_status})"
        if not self.logprobs_asked:
            return "not asked"
        if self.counts["answers_with_logprobs"] == 0 and self.counts["answers_without_logprobs"] > 0:
            return "not given"
        return "asked"

    def describe(self) -> dict[str, Any]:
        """JSON-able description for provenance (never the key)."""
        return {
            "model_id": self.model_id,
            "model_revision": self.revision,
            "model_kind": self.kind,
            "served_by": "endpoint",
            "protocol": "openai-chat",
            "endpoint": self.where,
            "served_model": self.served_model,
            "server_version": self.server_version,
            "system_fingerprints": sorted(self.fingerprints),
            "api_key": mask_secret("x" if self._has_key else None),
            "sent": "messages, max_tokens, temperature, seed (later samples: derived from seed and sample), n=1; "
                    "logprobs and top_logprobs when asked",
            "logprobs": self.logprobs_state,
            "requests": dict(self.requests),
            "transient_failures": dict(self.transient),
            "questions": dict(self.counts),
            "concurrency": self.concurrency,
            "limits": {"max_requests": self.limits.max_requests, "max_seconds": self.limits.max_seconds,
                       "request_timeout": self.limits.request_timeout},
            "retry": self.retry.to_dict(),
            "complete": self.stopped_because is None,
            "stopped_because": self.stopped_because,
            "stop_message": self.stop_message,
        }

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model_id!r}, base_url={self.where!r}, "
                f"api_key={mask_secret('x' if self._has_key else None)})")

    def __getstate__(self) -> Any:
        raise TypeError(f"{type(self).__name__} may hold an API key and cannot be pickled; build one per run.")


def _error_code(exc: Any) -> Any:
    """The ``error.code`` of an HTTP error's JSON body (or the exception's ``code``)."""
    code = getattr(exc, "code", None)
    body = getattr(exc, "body", None)
    if code is None and isinstance(body, dict):
        inner = body.get("error", body)
        code = inner.get("code") if isinstance(inner, dict) else None
    return code
