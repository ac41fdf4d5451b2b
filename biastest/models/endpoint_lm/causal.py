"""The causal language model behind an OpenAI-compatible completions endpoint (:class:`EndpointCausalLM`).

The request and answer protocol, the two ways to send a sentence, the limits
and the handling of keys are described in the package docstring
(:mod:`biastest.models.endpoint_lm`); the client, the server's model list
and the dispatch of requests are :class:`~biastest.models.endpoint_lm.served.ServedEndpoint`'s.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from biastest import public
from biastest.errors import (
    DataError,
    EndpointError,
    MethodError,
    ModelLoadError,
    PolicyError,
)
from biastest.models.base import quiet_transformers, resolve_model_source, translate_load_error
from biastest.models.endpoint_lm.served import DEFAULT_CONCURRENCY, ProgressCallback, ServedEndpoint
from biastest.models.lm import MSG_TOO_LONG, begin_token_id
from biastest.options import check_option
from biastest.remote import (
    STOP_BUDGET,
    STOP_CANCELLED,
    STOP_RATE_LIMITED,
    STOP_TIME,
    STOP_UNAVAILABLE,
    RetryPolicy,
    RunLimits,
    RunState,
    mask_secret,
)

__all__ = [
    "ENDPOINT_METHODS",
    "EndpointCausalLM",
    "PROMPTS_TEXT",
    "PROMPTS_TOKEN_IDS",
    "load_tokenizer",
]

log = logging.getLogger(__name__)

PROMPTS_TOKEN_IDS = "token-ids"
PROMPTS_TEXT = "text"
#: The scoring methods that work through an endpoint (the causal ones).
ENDPOINT_METHODS = ("causal-sum", "causal-diff-span")

_UNKNOWN_LENGTH = 1_000_000

MSG_SPAN_NEEDS_TOKENIZER = (
    "The scoring method 'causal-diff-span' needs the model's own tokens to find the words that differ, but no "
    "tokenizer for '{model}' is available here, so the endpoint would split the text itself. Give the model's "
    "tokenizer (a Hub id or a folder), or use causal-sum."
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


def load_tokenizer(reference: str, *, revision: str | None = None) -> Any:
    """A model's tokenizer alone (no weights), from a Hub id or a folder.

    In public mode a folder is refused (:func:`biastest.public.check_model_reference`).

    Raises
    ------
    ModelLoadError, PolicyError
    """
    from transformers import AutoTokenizer  # late: transformers is heavy (~0.6 s), needed only to load a tokenizer

    source = resolve_model_source(public.check_model_reference(reference), revision=revision)
    quiet_transformers()
    try:
        return AutoTokenizer.from_pretrained(source.location, **source.pretrained_kwargs())
    except Exception as exc:
        raise translate_load_error(exc, source=source, what="tokenizer") from None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
