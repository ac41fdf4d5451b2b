"""Causal language models behind an endpoint, scored through the OpenAI completions protocol.

:class:`EndpointCausalLM` stands in for
:class:`~biastest.models.lm.CausalLanguageModel` in the ``causal-sum`` and
``causal-diff-span`` scoring methods when the model runs on a server (vLLM,
llama.cpp's server, or anything that speaks the protocol as
lm-evaluation-harness's ``local-completions`` uses it). Each request is::

    POST {base_url}/completions
    {"model": NAME, "prompt": [[BOS, t1, …, tn], …], "echo": true, "logprobs": 1, "max_tokens": 1, "temperature": 0}

and each answer's ``choices[i].logprobs.token_logprobs`` holds one value per
prompt token — ``null`` for the first (nothing comes before it), then
``log P(t_j | BOS, t_1..t_{j−1})`` — followed by the one generated token's,
which is dropped.

Two ways to send a sentence
---------------------------
**Token ids** (the model's tokenizer is available: ``tokenizer=`` a Hub id
or a folder, or by default the served model's name): the prompt is
``[prefix_token_id, *encode(S)]`` with the same begin token and the same
token ids as in-process scoring, so the numbers are those of
:meth:`CausalLanguageModel.token_log_probs` on the same weights (tested to
1e-4 against a server doing real forward passes).

**Text** (no tokenizer: ``tokenizer=False``, or the served name is not a
loadable tokenizer): the server tokenizes each sentence itself, with its
default special tokens. The first token of every prompt then has no
log-probability: it is the server's begin token when the server adds one
(Llama-style tokenizers do; the numbers are then in-process causal-sum's),
otherwise the sentence's first word, which is left unscored and conditions
what follows without a begin token. A pair whose two sentences begin with
different tokens is therefore excluded (``first-token-unscored``) rather than
compared without its differing word, and ``causal-diff-span``, which needs
the model's token positions, is refused (:data:`MSG_SPAN_NEEDS_TOKENIZER`).
Provenance says which way was used.

Requests
--------
``batch_size`` prompts per request, at most ``concurrency`` requests at once.
Every request goes through one :class:`~biastest.generate.base.RunState`:
retries with backoff on 429, 5xx, time-outs and lost connections (honouring
``Retry-After``), a request budget and an overall time limit. When a limit
ends the run, what was scored is kept and the sentences not scored come back
as ``None`` (their pairs are listed as not scored, never given a value);
when nothing at all could be scored the run fails with
:data:`MSG_ENDPOINT_FAILED`. Answers are checked: one choice per prompt, one
log-probability per prompt token, the served model's name — a different
name, an answer without prompt log-probabilities (hosted chat-only models)
or an unreadable one ends the run with a message (:class:`EndpointError`),
never with a made-up score.

Keys and addresses
------------------
The key lives only in the ``openai`` client object, in memory: never in
:meth:`EndpointCausalLM.describe`, a log line or a ``repr``; the address is
recorded without credentials or query (:func:`safe_base_url`). The address
passes the public-mode check before anything is sent, and in public mode every
request (redirects included) goes through
:func:`biastest.generate.openai_chat.guarded_http_client`.

Which scoring methods an endpoint can serve is the measure's business
(:func:`biastest.measures.stereotype.options.check_endpoint_method`); this adapter only refuses
``causal-diff-span`` without the model's tokens (:meth:`EndpointCausalLM.check_method`).
"""

from __future__ import annotations

import logging
import math
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, ClassVar

import numpy as np

from biastest.errors import (
    DataError,
    EndpointError,
    GenerationError,
    MethodError,
    ModelLoadError,
    OptionError,
    PolicyError,
)
from biastest.generate.base import (
    STOP_BUDGET,
    STOP_CANCELLED,
    STOP_RATE_LIMITED,
    STOP_TIME,
    STOP_UNAVAILABLE,
    RetryPolicy,
    RunLimits,
    RunState,
    RunStopped,
    TransientError,
    mask_secret,
)
from biastest.generate.openai_chat import MSG_QUOTA, safe_base_url
from biastest.models.lm import MSG_TOO_LONG, begin_token_id

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_REQUESTS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TIME_LIMIT",
    "ENDPOINT_METHODS",
    "EndpointCausalLM",
    "PROMPTS_TEXT",
    "PROMPTS_TOKEN_IDS",
    "ServedEndpoint",
    "check_endpoint_url",
    "default_retry",
    "load_tokenizer",
    "safe_base_url",
]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int, str], None]

PROMPTS_TOKEN_IDS = "token-ids"
PROMPTS_TEXT = "text"
#: The scoring methods that work through an endpoint (the causal ones).
ENDPOINT_METHODS = ("causal-sum", "causal-diff-span")

DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_REQUESTS = 2000
DEFAULT_TIME_LIMIT = 3600.0
DEFAULT_REQUEST_TIMEOUT = 120.0
#: Longest wait for the model list and the version (never retried, never fatal).
INFO_TIMEOUT = 10.0
_UNKNOWN_LENGTH = 1_000_000

MSG_NO_MODEL_NAME = (
    "Give the name of the model the endpoint serves (for example meta-llama/Llama-3.1-8B); the server's model list "
    "shows it."
)
MSG_BAD_ENDPOINT = "The endpoint address {value!r} is not a web address. Give one such as http://localhost:8000/v1."
MSG_SPAN_NEEDS_TOKENIZER = (
    "The scoring method 'causal-diff-span' needs the model's own tokens to find the words that differ, but no "
    "tokenizer for '{model}' is available here, so the endpoint would split the text itself. Give the model's "
    "tokenizer (a Hub id or a folder), or use causal-sum."
)
MSG_NOT_SERVED = (
    "The endpoint at {where} does not serve a model named '{model}'. It serves: {served}. Give one of these."
)
MSG_MODEL_MISMATCH = (
    "The endpoint at {where} answered for the model '{served}', not '{model}' as asked, so its numbers would be "
    "reported under the wrong name; nothing was scored. Give the model's name exactly as the server reports it "
    "(llama.cpp's server reports the name given with --alias)."
)
MSG_NO_PROMPT_LOGPROBS = (
    "The endpoint at {where} gives no log-probabilities for the words of the prompt with the model '{model}', so "
    "the sentences cannot be scored (hosted chat models such as GPT-4o never give them). Serve the model with vLLM "
    "or llama.cpp's server, or test it in this process."
)
MSG_LOGPROB_COUNT = (
    "The endpoint at {where} returned {got} log-probabilities for a prompt of {expected} tokens, so they cannot be "
    "matched to the words; nothing was scored. The server may not use the tokenizer given here: give the served "
    "model's own tokenizer."
)
MSG_NO_TOKENS = (
    "The endpoint at {where} does not say which tokens it scored, so without the model's tokenizer the two "
    "sentences of a pair cannot be compared safely; nothing was scored. Give the model's tokenizer (a Hub id or a "
    "folder)."
)
MSG_GARBLED = (
    "The endpoint at {where} answered with something that is not a completions answer. Check the address (for "
    "vLLM and llama.cpp's server it ends in /v1) and that the server speaks the OpenAI completions protocol."
)
MSG_NO_COMPLETIONS = (
    "The endpoint at {where} has no completions service for the model '{model}' (HTTP 404). Check the address (it "
    "usually ends in /v1) and the model's name; hosted chat-only models (such as GPT-4o) have none and cannot be "
    "scored."
)
MSG_REJECTED = (
    "The endpoint at {where} refused to score prompts with the model '{model}' (HTTP {status}). It may not give "
    "log-probabilities of the prompt (echo with logprobs), or a sentence may be longer than the model reads."
)
MSG_KEY_REFUSED = (
    "The endpoint at {where} did not accept the API key (HTTP {status}). Check the key, or give none if the server "
    "needs none."
)
MSG_ENDPOINT_FAILED = (
    "The endpoint at {where} could not score any sentence: {why}. Check that the server is running and its address, "
    "then try again."
)
MSG_ENDPOINT_PARTIAL = (
    "The endpoint stopped early ({why}): {missing} of {total} sentences were not scored, and their pairs are listed "
    "as not scored. Run again to score them."
)
#: Why a run ended early, per stop reason (for the messages above and the not-scored pairs' reason).
MSG_WHY: dict[str, str] = {
    STOP_BUDGET: "the request budget of {max_requests} requests was used up",
    STOP_TIME: "the time limit of {seconds:g} s was reached",
    STOP_RATE_LIMITED: "the endpoint kept refusing requests because of its rate limit ({tries} tries)",
    STOP_UNAVAILABLE: "the endpoint kept failing with server errors, time-outs or lost connections ({tries} tries)",
    STOP_CANCELLED: "the run was stopped on request",
}
MSG_NOTE_TOKEN_IDS = (
    "Token ids from the tokenizer '{tokenizer}', after the begin token {prefix}, as in this process: the scores are "
    "in-process causal scores on the same weights."
)
MSG_NOTE_TEXT = (
    "The endpoint split the sentences into tokens itself (no tokenizer for '{model}' was used here{why}). The first "
    "token of each sentence has no log-probability, so pairs whose sentences begin with different tokens were not "
    "scored; the scores equal in-process causal-sum only if the server adds the model's begin token."
)


def default_retry() -> RetryPolicy:
    """Retries of one scoring request: 3 retries after 0.5, 1 and 2 s (or what ``Retry-After`` asks, capped)."""
    return RetryPolicy(max_retries=3, initial_delay=0.5, factor=2.0, max_delay=10.0)


def check_endpoint_url(base_url: Any) -> str:
    """An http(s) endpoint address, checked against the public-mode policy before any connection.

    Raises
    ------
    OptionError
        :data:`MSG_BAD_ENDPOINT` (not a web address).
    PolicyError
        Public mode and the address is private, loopback, link-local … (:mod:`biastest.public`).
    """
    from biastest.generate.openai_chat import _check_base_url

    if not isinstance(base_url, str) or not base_url.strip():
        raise OptionError(MSG_BAD_ENDPOINT.format(value=base_url if not isinstance(base_url, str) else ""))
    try:
        return _check_base_url(base_url.strip())
    except GenerationError:
        raise OptionError(MSG_BAD_ENDPOINT.format(value=safe_base_url(base_url.strip())[:100])) from None


def load_tokenizer(reference: str, *, revision: str | None = None) -> Any:
    """A model's tokenizer alone (no weights), from a Hub id or a folder.

    In public mode a folder is refused (:func:`biastest.public.check_model_reference`).

    Raises
    ------
    ModelLoadError, PolicyError
    """
    from transformers import AutoTokenizer

    from biastest import public
    from biastest.models.base import quiet_transformers, resolve_model_source, translate_load_error

    source = resolve_model_source(public.check_model_reference(reference), revision=revision)
    quiet_transformers()
    try:
        return AutoTokenizer.from_pretrained(source.location, **source.pretrained_kwargs())
    except Exception as exc:
        raise translate_load_error(exc, source=source, what="tokenizer") from None


def _build_client(base_url: str, api_key: str | None, timeout: float) -> Any:
    from openai import OpenAI

    from biastest import public
    from biastest.generate.openai_chat import guarded_http_client

    http_client = guarded_http_client(timeout) if public.current().public else None
    # Servers without authentication ignore the header; the client insists on a value.
    return OpenAI(api_key=api_key or "no-key", base_url=base_url, max_retries=0, timeout=timeout,
                  http_client=http_client)


def _version_url(base_url: str) -> str | None:
    """``/version`` beside the API root (vLLM serves it at the server's root), or None."""
    parts = urllib.parse.urlsplit(base_url)
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        return None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path[: -len("/v1")] + "/version", "", ""))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class ServedEndpoint:
    """What every model behind an OpenAI-compatible endpoint shares: the client, the server's model list and
    version, and the bounded, concurrent dispatch of requests under one :class:`RunState`.

    Subclasses (:class:`EndpointCausalLM`, :class:`biastest.models.endpoint_vlm.EndpointVLM`) build each
    request and read its answer; the address, the key and the limits are handled here once.

    Parameters
    ----------
    base_url, model, api_key, concurrency, limits, retry, seed, cancel :
        As :class:`EndpointCausalLM`.
    service : str
        The name under which the scoring requests are counted in :attr:`requests` (``completions``, ``chat``).

    Raises
    ------
    OptionError, PolicyError
        No model name, a bad address or one that public mode refuses, a bad concurrency.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None,
        concurrency: int,
        limits: RunLimits | None,
        retry: RetryPolicy | None,
        seed: int,
        cancel: threading.Event | None,
        service: str,
    ) -> None:
        from biastest.options import check_option

        if not isinstance(model, str) or not model.strip():
            raise OptionError(MSG_NO_MODEL_NAME)
        self.model_id = model.strip()
        self.revision: str | None = None  # a served model reports no commit; the server's version is recorded
        self.base_url = check_endpoint_url(base_url)
        self.where = safe_base_url(self.base_url)
        self.concurrency = check_option("concurrency", concurrency)
        self.limits = limits or RunLimits(max_requests=DEFAULT_MAX_REQUESTS, max_seconds=DEFAULT_TIME_LIMIT,
                                          request_timeout=DEFAULT_REQUEST_TIMEOUT)
        self.retry = retry or default_retry()
        self._seed = int(seed)
        self._cancel = cancel
        self._has_key = bool(api_key)
        self._client = _build_client(self.base_url, api_key or None, self.limits.request_timeout)
        self._service = service
        self._lock = threading.Lock()
        self._connected = False
        self.served_models: list[str] | None = None
        self.max_model_len: int | None = None
        self.server_version: str | None = None
        self.served_model: str | None = None
        self.fingerprints: set[str] = set()
        self.requests = {service: 0, "models": 0, "version": 0}
        self.transient: dict[str, int] = {}

    # What a subclass's endpoint answers when its route is missing, when it rejects a request, when it is garbled.
    _msg_not_found: ClassVar[str]
    _msg_rejected: ClassVar[str]
    _msg_garbled: ClassVar[str]

    def _translate(self, exc: BaseException) -> BaseException:
        """An exception of the OpenAI client as the error the run reports (transient ones are retried)."""
        from biastest.generate.openai_chat import translate_openai_error

        mapped = translate_openai_error(exc, where=self.where, model=self.model_id)
        if isinstance(mapped, TransientError | PolicyError):
            return mapped
        if isinstance(mapped, GenerationError):
            status = mapped.details.get("status")
            if status == 404:
                return EndpointError(self._msg_not_found.format(where=self.where, model=self.model_id), status=status)
            if mapped.message == MSG_QUOTA.format(where=self.where):
                return EndpointError(mapped.message, status=status)
            if status in (401, 403):
                return EndpointError(MSG_KEY_REFUSED.format(where=self.where, status=status), status=status)
            return EndpointError(self._msg_rejected.format(where=self.where, model=self.model_id, status=status),
                                 status=status)
        # MalformedAnswer, or a body that is not JSON at all
        return EndpointError(self._msg_garbled.format(where=self.where), cause=type(exc).__name__)

    def _garbled(self, problem: str) -> EndpointError:
        return EndpointError(self._msg_garbled.format(where=self.where), problem=problem)

    def connect(self) -> ServedEndpoint:
        """Read the server's model list and version once (neither is required; failures are ignored).

        Raises
        ------
        EndpointError
            :data:`MSG_NOT_SERVED` when the server lists its models and this
            one is not among them.
        PolicyError
            Public mode refused an address (a redirect to a private host).
        """
        with self._lock:
            if self._connected:
                return self
            self._connected = True
        listing = self._get_json("/models", "models")
        data = listing.get("data") if isinstance(listing, dict) else None
        if isinstance(data, list):
            entries = {str(d.get("id")): d for d in data if isinstance(d, dict) and isinstance(d.get("id"), str)}
            self.served_models = sorted(entries)
            if entries and self.model_id not in entries:
                shown = ", ".join(self.served_models[:10]) + (" …" if len(entries) > 10 else "")
                raise EndpointError(MSG_NOT_SERVED.format(where=self.where, model=self.model_id, served=shown))
            limit = entries.get(self.model_id, {}).get("max_model_len")
            if isinstance(limit, int) and not isinstance(limit, bool) and limit > 1:
                self.max_model_len = limit
        url = _version_url(self.base_url)
        info = self._get_json(url, "version") if url else None
        if isinstance(info, dict) and isinstance(info.get("version"), str | int | float):
            self.server_version = str(info["version"])[:100]
        return self

    def _get_json(self, path: str, what: str) -> Any:
        import httpx2
        import openai

        self.requests[what] += 1
        try:
            response = self._client.get(path, cast_to=httpx2.Response,
                                        options={"timeout": min(INFO_TIMEOUT, self.limits.request_timeout)})
            return response.json()
        except PolicyError:
            raise
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, PolicyError):
                raise exc.__cause__ from None
            return None
        except Exception:  # the list and the version are optional: an old server may have neither
            return None

    def _dispatch(
        self,
        jobs: Sequence[Any],
        request: Callable[[RunState, Any], Any],
        *,
        progress: ProgressCallback | None,
        message: str,
    ) -> tuple[list[Any], str | None, int, RunState]:
        """Send ``request(run, job)`` for every job, at most :attr:`concurrency` at once, under one run.

        Returns
        -------
        answers : list
            Per job, what ``request`` returned, or None for a job the run stopped before answering.
        stop : str or None
            Why the run stopped early (a ``STOP_*`` reason), or None.
        done : int
            Jobs answered.
        run : RunState
            The run's book-keeping (requests used, retries).

        Raises
        ------
        BaseException
            The first fatal error of a request (the requests in flight are given up), after the requests
            made are counted.
        """
        answers: list[Any] = [None] * len(jobs)
        halt = threading.Event()
        run = RunState(self.limits, self.retry, seed=self._seed, cancel=halt)
        stop: str | None = None
        fatal: BaseException | None = None
        done = 0
        queue = iter(range(len(jobs)))
        pending: dict[Future, int] = {}
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="biastest-endpoint") as pool:

            def fill() -> None:
                while stop is None and fatal is None and len(pending) < self.concurrency:
                    j = next(queue, None)
                    if j is None:
                        return
                    pending[pool.submit(request, run, jobs[j])] = j

            fill()
            while pending:
                finished, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                if self._cancel is not None and self._cancel.is_set() and not halt.is_set():
                    halt.set()
                    stop = stop or STOP_CANCELLED
                for future in finished:
                    j = pending.pop(future)
                    try:
                        answers[j] = future.result()
                    except RunStopped as exc:
                        stop = stop or exc.reason
                        continue
                    except BaseException as exc:  # fatal: give up the requests in flight, report this one
                        if fatal is None:
                            fatal = exc
                        halt.set()
                        continue
                    done += 1
                    if progress is not None:
                        progress(done, len(jobs), message)
                fill()
        with self._lock:
            self.requests[self._service] += run.requests_used
            for kind, count in run.transient.items():
                self.transient[kind] = self.transient.get(kind, 0) + count
        if fatal is not None:
            raise fatal
        return answers, stop, done, run


class EndpointCausalLM(ServedEndpoint):
    """A causal language model behind an OpenAI-compatible completions endpoint.

    Used by the causal scoring methods in place of
    :class:`~biastest.models.lm.CausalLanguageModel` (same ``kind``,
    ``encode``, ``max_length``, ``prefix_token_id``, ``token_log_probs``,
    ``describe``).

    Parameters
    ----------
    base_url : str
        The API root, e.g. ``http://localhost:8000/v1`` (vLLM) or
        ``http://localhost:8080/v1`` (llama.cpp's server).
    model : str
        The model's name as the server serves it.
    api_key : str, optional
        Sent as ``Authorization: Bearer …`` for this object's requests only;
        never stored elsewhere. ``OPENAI_API_KEY`` is never read here.
    tokenizer : str, False or None
        A Hub id or folder of the served model's tokenizer (token-id prompts);
        ``False`` sends text; None (default) tries the served model's name and
        sends text when no tokenizer loads from it.
    revision : str, optional
        Hub revision of the tokenizer.
    concurrency : int
        Requests in flight at once.
    limits : RunLimits, optional
        Request budget, overall time limit and per-request time-out of each
        scoring call (default :data:`DEFAULT_MAX_REQUESTS` requests,
        :data:`DEFAULT_TIME_LIMIT` s, :data:`DEFAULT_REQUEST_TIMEOUT` s).
    retry : RetryPolicy, optional
        Default :func:`default_retry`.
    seed : int
        Seeds the backoff jitter.
    cancel : threading.Event, optional
        Set it to stop a run early (what was scored is kept).

    Raises
    ------
    OptionError, PolicyError
        A bad address, or one that public mode refuses; a bad option.
    ModelLoadError, PolicyError
        An explicit ``tokenizer`` that cannot be loaded (or is a folder in
        public mode).
    """

    kind: ClassVar[str] = "causal"
    _msg_not_found: ClassVar[str] = MSG_NO_COMPLETIONS
    _msg_rejected: ClassVar[str] = MSG_REJECTED
    _msg_garbled: ClassVar[str] = MSG_GARBLED

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        tokenizer: str | bool | None = None,
        revision: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        limits: RunLimits | None = None,
        retry: RetryPolicy | None = None,
        seed: int = 0,
        cancel: threading.Event | None = None,
    ) -> None:
        super().__init__(base_url, model, api_key=api_key, concurrency=concurrency, limits=limits, retry=retry,
                         seed=seed, cancel=cancel, service="completions")
        self.tokenizer, self.tokenizer_id, why = self._resolve_tokenizer(tokenizer, revision)
        self.prompts = PROMPTS_TOKEN_IDS if self.tokenizer is not None else PROMPTS_TEXT
        self.prefix_token_id: int | None = None
        self._tokenizer_max: int | None = None
        if self.tokenizer is not None:
            self.prefix_token_id = begin_token_id(self.tokenizer, model_id=self.tokenizer_id)
            limit = getattr(self.tokenizer, "model_max_length", None)
            self._tokenizer_max = limit if isinstance(limit, int) and 0 < limit < _UNKNOWN_LENGTH else None
            self.notes = [MSG_NOTE_TOKEN_IDS.format(tokenizer=self.tokenizer_id, prefix=self.prefix_token_id)]
        else:
            self.notes = [MSG_NOTE_TEXT.format(model=self.model_id, why=why)]
        self.prompts_per_request: int | None = None
        self.n_sentences = 0
        self.n_missing = 0
        self.stopped_because: str | None = None
        self.stop_why: str | None = None
        self.stop_message: str | None = None

    # ------------------------------------------------------------------ set-up
    def _resolve_tokenizer(self, tokenizer: str | bool | None, revision: str | None) -> tuple[Any, str | None, str]:
        if tokenizer is False:
            return None, None, ""
        if isinstance(tokenizer, str) and tokenizer.strip():
            ref = tokenizer.strip()
            return load_tokenizer(ref, revision=revision), ref, ""
        try:
            return load_tokenizer(self.model_id, revision=revision), self.model_id, ""
        except (ModelLoadError, PolicyError):
            log.info("no tokenizer loads from the served name %r; the endpoint tokenizes text", self.model_id)
            return None, None, ": none loads from that name"

    def check_method(self, method: str) -> str:
        """The method if this endpoint can score it (before any request).

        ``method`` is a causal method's name, already checked by the measure's options.

        Raises
        ------
        MethodError
            :data:`MSG_SPAN_NEEDS_TOKENIZER` for ``causal-diff-span`` with text prompts.
        """
        name = method
        if name == "causal-diff-span" and self.prompts == PROMPTS_TEXT:
            raise MethodError(MSG_SPAN_NEEDS_TOKENIZER.format(model=self.model_id), method=name)
        return name

    # ------------------------------------------------------------------ the adapter's interface
    @property
    def max_length(self) -> int:
        """Most tokens one prompt may have (the server's ``max_model_len``, the tokenizer's limit), if known."""
        self.connect()
        known = [v for v in (self.max_model_len, self._tokenizer_max) if v]
        return min(known) if known else _UNKNOWN_LENGTH

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens, as :meth:`CausalLanguageModel.encode`."""
        if self.tokenizer is None:
            raise RuntimeError("text prompts: the endpoint tokenizes; use text_log_probs")
        return [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def token_log_probs(
        self,
        sequences: Sequence[Sequence[int]],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
        message: str = "Scoring sentences",
    ) -> list[np.ndarray | None]:
        """Per-token log-probabilities of whole sentences, from the endpoint.

        Each sequence ``t_1..t_n`` is sent as ``[prefix] t_1 .. t_n``; the
        result is ``log P(t_i | prefix, t_1..t_{i-1})`` for i = 1..n, as
        :meth:`CausalLanguageModel.token_log_probs` computes it in process.

        Parameters
        ----------
        sequences : sequence of sequence of int
            Token ids from :meth:`encode`.
        batch_size : int
            Prompts per request.
        progress : callable, optional
            ``progress(done_requests, total_requests, message)``.

        Returns
        -------
        list of numpy.ndarray or None
            One float64 array of length n per sequence; None for a sequence
            the run stopped before scoring (:attr:`stop_message` says why).

        Raises
        ------
        EndpointError
            Nothing could be scored, or an answer cannot be used (see the module).
        """
        if self.prompts != PROMPTS_TOKEN_IDS:
            raise RuntimeError("text prompts: the endpoint tokenizes; use text_log_probs")
        limit = self.max_length
        prompts = []
        for s in sequences:
            if len(s) == 0:
                raise DataError("A sentence to score has no tokens; remove empty sentences.")
            if len(s) + 1 > limit:
                raise DataError(MSG_TOO_LONG.format(n_tokens=len(s) + 1, max_length=limit, model_id=self.model_id))
            prompts.append([self.prefix_token_id, *map(int, s)])
        answers = self._score(prompts, batch_size=batch_size, progress=progress, message=message)
        return [None if a is None else a[1] for a in answers]

    def text_log_probs(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
        message: str = "Scoring sentences",
    ) -> list[tuple[tuple[str, ...], np.ndarray] | None]:
        """The server's tokens of each text and their log-probabilities (text prompts).

        Returns
        -------
        list of (tuple of str, numpy.ndarray) or None
            Per text: the prompt's tokens as the server shows them and
            ``log P(token_j | token_<j)`` for each, ``nan`` for the first
            (the server gives none); None for a text the run stopped before
            scoring.
        """
        answers = self._score([str(t) for t in texts], batch_size=batch_size, progress=progress, message=message)
        return [None if a is None else (a[0], a[1]) for a in answers]

    def describe(self) -> dict[str, Any]:
        """JSON-able description for provenance (never the key)."""
        return {
            "model_id": self.model_id,
            "model_revision": self.revision,
            "model_kind": self.kind,
            "served_by": "endpoint",
            "endpoint": self.where,
            "served_model": self.served_model,
            "server_version": self.server_version,
            "system_fingerprints": sorted(self.fingerprints),
            "prompts": self.prompts,
            "tokenizer": self.tokenizer_id,
            "prefix_token_id": self.prefix_token_id,
            "max_length": min([v for v in (self.max_model_len, self._tokenizer_max) if v], default=None),
            "api_key": mask_secret("x" if self._has_key else None),
            "requests": dict(self.requests),
            "transient_failures": dict(self.transient),
            "concurrency": self.concurrency,
            "prompts_per_request": self.prompts_per_request,
            "limits": {"max_requests": self.limits.max_requests, "max_seconds": self.limits.max_seconds,
                       "request_timeout": self.limits.request_timeout},
            "retry": self.retry.to_dict(),
            "sentences": self.n_sentences,
            "sentences_not_scored": self.n_missing,
            "complete": self.stopped_because is None,
            "stopped_because": self.stopped_because,
            "stop_message": self.stop_message,
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model_id!r}, base_url={self.where!r}, prompts={self.prompts!r}, "
                f"api_key={mask_secret('x' if self._has_key else None)})")

    def __getstate__(self) -> Any:
        raise TypeError(f"{type(self).__name__} may hold an API key and cannot be pickled; build one per run.")

    # ------------------------------------------------------------------ requests
    def _score(self, prompts: list[Any], *, batch_size: int, progress: ProgressCallback | None,
               message: str) -> list[tuple[tuple[str, ...], np.ndarray] | None]:
        """Send the prompts, ``batch_size`` per request, at most :attr:`concurrency` requests at once."""
        from biastest.options import check_option

        batch_size = check_option("batch_size", batch_size)
        self.connect()
        self.prompts_per_request = batch_size
        n = len(prompts)
        results: list[tuple[tuple[str, ...], np.ndarray] | None] = [None] * n
        if n == 0:
            return results
        batches = [list(range(i, min(i + batch_size, n))) for i in range(0, n, batch_size)]
        self.n_sentences += n
        answers, stop, done, run = self._dispatch(
            [[prompts[i] for i in batch] for batch in batches], self._request, progress=progress, message=message)
        for batch, answer in zip(batches, answers, strict=True):
            if answer is not None:
                for i, value in zip(batch, answer, strict=True):
                    results[i] = value
        if stop is not None:
            why = MSG_WHY[stop].format(max_requests=self.limits.max_requests, seconds=self.limits.max_seconds,
                                       tries=run.last_tries)
            if done == 0:
                raise EndpointError(MSG_ENDPOINT_FAILED.format(where=self.where, why=why), stopped_because=stop)
            missing = sum(r is None for r in results)
            self.n_missing += missing
            self.stopped_because, self.stop_why = stop, why
            self.stop_message = MSG_ENDPOINT_PARTIAL.format(why=why, missing=missing, total=n)
            log.warning("%s", self.stop_message)
        return results

    def _request(self, run: RunState, prompts: list[Any]) -> list[tuple[tuple[str, ...], np.ndarray]]:
        """One request for ``prompts`` under the run's retries, budget and time limit."""

        def attempt(timeout: float) -> list[tuple[tuple[str, ...], np.ndarray]]:
            try:
                raw = self._client.completions.with_raw_response.create(
                    model=self.model_id, prompt=prompts, echo=True, logprobs=1, max_tokens=1, temperature=0,
                    timeout=timeout,
                )
                body = raw.http_response.json()
            except Exception as exc:
                raise self._translate(exc) from None
            return self._parse(body, prompts)

        return run.call(attempt, what=f"endpoint:{self.model_id}")

    def _parse(self, body: Any, prompts: list[Any]) -> list[tuple[tuple[str, ...], np.ndarray]]:
        """Check one answer and return, per prompt, its tokens (text prompts) and log-probabilities."""
        if not isinstance(body, dict):
            raise self._garbled("not a JSON object")
        choices = body.get("choices")
        if not isinstance(choices, list) or len(choices) != len(prompts) or not all(isinstance(c, dict)
                                                                                   for c in choices):
            raise self._garbled("not one choice per prompt")
        served = body.get("model")
        if isinstance(served, str) and served.strip():
            if served.strip() != self.model_id:
                raise EndpointError(MSG_MODEL_MISMATCH.format(where=self.where, served=served.strip()[:200],
                                                              model=self.model_id))
            self.served_model = served.strip()
        fingerprint = body.get("system_fingerprint")
        if isinstance(fingerprint, str) and fingerprint:
            with self._lock:
                self.fingerprints.add(fingerprint[:200])
        indices = [c.get("index") for c in choices]
        if all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
            if sorted(indices) != list(range(len(prompts))):
                raise self._garbled("choice indices do not match the prompts")
            choices = sorted(choices, key=lambda c: c["index"])
        return [self._parse_choice(c, p) for c, p in zip(choices, prompts, strict=True)]

    def _parse_choice(self, choice: dict[str, Any], prompt: Any) -> tuple[tuple[str, ...], np.ndarray]:
        logprobs = choice.get("logprobs")
        values = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
        if values is None:
            raise EndpointError(MSG_NO_PROMPT_LOGPROBS.format(where=self.where, model=self.model_id))
        if not isinstance(values, list):
            raise self._garbled("token_logprobs is not a list")
        if self.prompts == PROMPTS_TOKEN_IDS:
            expected = len(prompt)
            if len(values) <= 1 < expected:  # the generated token only: the prompt was not echoed
                raise EndpointError(MSG_NO_PROMPT_LOGPROBS.format(where=self.where, model=self.model_id))
            if len(values) not in (expected, expected + 1):  # the prompt's tokens, then (usually) the generated one
                raise EndpointError(MSG_LOGPROB_COUNT.format(where=self.where, got=len(values), expected=expected))
            tokens: tuple[str, ...] = ()
            scored = values[1:expected]
        else:
            tokens_raw = logprobs.get("tokens")
            if not isinstance(tokens_raw, list) or len(tokens_raw) != len(values) or not all(
                    isinstance(t, str) for t in tokens_raw):
                raise EndpointError(MSG_NO_TOKENS.format(where=self.where))
            if len(values) < 2:
                raise EndpointError(MSG_NO_PROMPT_LOGPROBS.format(where=self.where, model=self.model_id))
            # as lm-evaluation-harness: the last entry is the one generated token (max_tokens=1)
            tokens = tuple(tokens_raw[:-1])
            scored = values[1:-1]
        if any(v is None for v in scored):
            raise EndpointError(MSG_NO_PROMPT_LOGPROBS.format(where=self.where, model=self.model_id))
        if not all(_number(v) for v in scored):
            raise self._garbled("a log-probability is not a number")
        out = np.array([float(v) for v in scored], dtype=np.float64)
        if self.prompts == PROMPTS_TEXT:
            out = np.concatenate([[math.nan], out])
        return tokens, out
