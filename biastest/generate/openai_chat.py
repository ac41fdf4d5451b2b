"""Sentence generation through OpenAI chat models or any OpenAI-compatible server.

:class:`OpenAIChatGenerator` talks to ``api.openai.com`` with the user's key
(given for the session, or ``OPENAI_API_KEY``); :class:`OpenAICompatibleGenerator`
talks to any server that speaks ``/v1/chat/completions`` (vLLM, Ollama,
LM Studio, llama.cpp server ...) at a ``base_url``, with no key required.

Keys
----
The key lives only inside the ``openai`` client object of the generator,
in memory. It is never written to a record, a report, provenance, a log
line or a ``repr`` (which shows ``api_key=***``); generators refuse to be
pickled. ``OPENAI_API_KEY`` from the environment is used **only** for the
official endpoint — a custom ``base_url`` receives a key only when one is
given explicitly, so an OpenAI key is never sent to a third-party server by
accident.

The client's own retries are switched off (``max_retries=0``): retries,
backoff, the request budget and the time limit are enforced by
:class:`~biastest.generate.base.RunState`.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from biastest.errors import GenerationError, PolicyError
from biastest.generate.base import (
    REJECT_EMPTY,
    REJECT_MALFORMED,
    MalformedAnswer,
    TextGenerator,
    TransientError,
    mask_secret,
)

__all__ = [
    "OpenAIChatGenerator",
    "OpenAICompatibleGenerator",
    "translate_openai_error",
    "safe_base_url",
    "REJECT_REFUSED",
]

log = logging.getLogger(__name__)

REJECT_REFUSED = "refused"

MSG_NO_API_KEY = (
    "No OpenAI API key was given. Paste your key into the key field (it is used for this session only and "
    "never stored), or set OPENAI_API_KEY on the server."
)
MSG_AUTH_FAILED = (
    "The service at {where} did not accept the API key (HTTP {status}). Check that the key is correct and "
    "active."
)
MSG_QUOTA = (
    "The account behind this API key has no quota left at {where}. Add credit or use another key, then run "
    "again."
)
MSG_MODEL_NOT_FOUND = (
    "The service at {where} does not know the model '{model}' (HTTP 404). Choose a model from the service's "
    "list."
)
MSG_REQUEST_REJECTED = (
    "The service at {where} rejected the request for model '{model}' (HTTP {status}). The model may not "
    "support chat, or a setting is not allowed for it; choose another model."
)
MSG_BAD_BASE_URL = "The service address {value!r} is not a web address. Give one such as http://localhost:8000/v1."
MSG_LIST_FAILED = "Could not list the models at {where}: {problem}. Check the address and that the server is running."
MSG_BAD_MODEL_NAME = "The model name must be non-empty text, got {value!r}."

OFFICIAL = "api.openai.com"


def safe_base_url(base_url: str | None) -> str:
    """The endpoint for display and provenance: no user:password, no query string."""
    if not base_url:
        return "https://api.openai.com/v1"
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _check_base_url(base_url: str) -> str:
    from biastest import public

    try:
        parts = urllib.parse.urlsplit(base_url or "")
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except (ValueError, TypeError):
        ok = False
    if not ok:
        shown = safe_base_url(base_url)[:100] if isinstance(base_url, str) and base_url else base_url
        raise GenerationError(MSG_BAD_BASE_URL.format(value=shown))
    public.check_outbound_url(base_url)  # public mode: public addresses only, checked before any connection
    return base_url


def guarded_http_client(timeout: float):
    """An ``httpx2`` client whose every request (redirects included) passes the public-mode address check.

    In public mode the OpenAI clients use it, so a public endpoint cannot redirect a request to a private,
    loopback or link-local address, and a host whose name starts resolving to one is refused at the next
    request (:func:`biastest.public.check_outbound_url`; a :class:`~biastest.errors.PolicyError` is raised
    before the connection is opened).
    """
    import httpx2

    from biastest import public

    class _GuardedTransport(httpx2.HTTPTransport):
        def handle_request(self, request):
            public.check_outbound_url(str(request.url))
            return super().handle_request(request)

    return httpx2.Client(transport=_GuardedTransport(), timeout=timeout, follow_redirects=True)


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def translate_openai_error(exc: BaseException, *, where: str, model: str) -> BaseException:
    """Map an ``openai`` exception to ours (never carrying the provider's text).

    Returns
    -------
    TransientError, MalformedAnswer or GenerationError
        Transient for 408/409/429/5xx, time-outs and connection failures;
        fatal GenerationError for 401/403 (key), 404 (model), 429 with
        ``insufficient_quota``, and other 4xx; MalformedAnswer for answers
        that cannot be parsed.
    """
    import openai

    if isinstance(exc, PolicyError):
        return exc
    if isinstance(exc, openai.APIConnectionError) and isinstance(exc.__cause__, PolicyError):
        return exc.__cause__  # the guarded transport refused the address: final, never retried
    if isinstance(exc, openai.APITimeoutError):
        return TransientError("timeout")
    if isinstance(exc, openai.APIConnectionError):
        return TransientError("connection")
    if isinstance(exc, openai.APIResponseValidationError):
        return MalformedAnswer(REJECT_MALFORMED)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code = getattr(exc, "code", None)
        body = exc.body if isinstance(exc.body, Mapping) else {}
        if code is None and isinstance(body.get("error"), Mapping):
            code = body["error"].get("code")
        if status == 429 and code == "insufficient_quota":
            return GenerationError(MSG_QUOTA.format(where=where), status=status)
        headers = getattr(exc.response, "headers", None)
        if status in (408, 409, 429) or status >= 500:
            kind = "rate_limit" if status == 429 else "server_error"
            return TransientError(kind, retry_after=_retry_after(headers), status=status)
        if status in (401, 403):
            return GenerationError(MSG_AUTH_FAILED.format(where=where, status=status), status=status)
        if status == 404:
            return GenerationError(MSG_MODEL_NOT_FOUND.format(where=where, model=model), status=status)
        return GenerationError(MSG_REQUEST_REJECTED.format(where=where, model=model, status=status), status=status)
    if isinstance(exc, json.JSONDecodeError | ValueError | KeyError | TypeError | AttributeError):
        return MalformedAnswer(REJECT_MALFORMED)
    return exc


class _OpenAIClientMixin:
    """Builds and guards the ``openai`` client (shared with the image generators)."""

    _client: Any
    _has_key: bool
    base_url: str | None
    model: str

    def _init_client(self, *, api_key: str | None, base_url: str | None, require_key: bool,
                     organization: str | None, timeout: float) -> None:
        from openai import OpenAI

        if not isinstance(self.model, str) or not self.model.strip():
            raise GenerationError(MSG_BAD_MODEL_NAME.format(value=self.model))
        if base_url is not None:
            _check_base_url(base_url)
        key = api_key if api_key else None
        if key is None and base_url is None:
            key = os.environ.get("OPENAI_API_KEY") or None
        if key is None and require_key:
            raise GenerationError(MSG_NO_API_KEY)
        self._has_key = key is not None
        self.base_url = base_url
        from biastest import public

        http_client = guarded_http_client(timeout) if public.current().public else None
        # Servers without authentication ignore the header; the client insists on a value.
        self._client = OpenAI(api_key=key or "no-key", base_url=base_url, organization=organization,
                              max_retries=0, timeout=timeout, http_client=http_client)

    @property
    def where(self) -> str:
        return safe_base_url(self.base_url)

    def list_models(self) -> list[str]:
        """Model ids the endpoint offers (``GET /models``), sorted."""
        try:
            return sorted(m.id for m in self._client.models.list())
        except Exception as exc:
            mapped = translate_openai_error(exc, where=self.where, model=self.model)
            if isinstance(mapped, GenerationError | PolicyError):
                raise mapped from None
            problem = {"timeout": "it did not answer in time", "connection": "it could not be reached"}.get(
                getattr(mapped, "kind", ""), "the answer was not understood")
            raise GenerationError(MSG_LIST_FAILED.format(where=self.where, problem=problem)) from None

    def __getstate__(self) -> Any:
        raise TypeError(f"{type(self).__name__} holds an API key and cannot be pickled; build one per session.")

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self  # immutable after construction; sharing avoids copying the key around

    def __copy__(self) -> Any:
        return self

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model!r}, base_url={self.where!r}, "
                f"api_key={mask_secret('x' if self._has_key else None)})")


class OpenAIChatGenerator(_OpenAIClientMixin, TextGenerator):
    """Sentences from an OpenAI chat model.

    Parameters
    ----------
    model : str
        E.g. ``gpt-4o-mini``.
    api_key : str, optional
        The user's key for this session (default: ``OPENAI_API_KEY``).
    temperature : float
        Sampling temperature (the original used 0.8).
    max_tokens : int
        Answer length limit in tokens.
    send_seed : bool
        Pass each request's seed (OpenAI and vLLM honour it on a best-effort
        basis).
    organization : str, optional
    request_timeout : float
        Default client time-out (each request's time-out is set by the run).
    base_url : str, optional
        Only for tests and proxies of the official API; use
        :class:`OpenAICompatibleGenerator` for other servers.
    """

    kind = "openai"

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        api_key: str | None = None,
        temperature: float = 0.8,
        max_tokens: int = 120,
        send_seed: bool = True,
        organization: str | None = None,
        request_timeout: float = 60.0,
        base_url: str | None = None,
    ) -> None:
        self.model = model
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.send_seed = send_seed
        self._init_client(api_key=api_key, base_url=base_url, require_key=self._requires_key(),
                          organization=organization, timeout=request_timeout)

    def _requires_key(self) -> bool:
        return True

    def _token_limit(self) -> dict[str, int]:
        return {"max_completion_tokens": self.max_tokens}

    def _complete(self, messages: Sequence[Mapping[str, str]], *, seed: int | None, timeout: float) -> str:
        kwargs: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages],
                                  "temperature": self.temperature, "timeout": timeout, **self._token_limit()}
        if self.send_seed and seed is not None:
            kwargs["seed"] = int(seed)
        try:
            response = self._client.chat.completions.create(**kwargs)
            choices = response.choices
            if not choices:
                raise MalformedAnswer(REJECT_MALFORMED)
            message = choices[0].message
        except MalformedAnswer:
            raise
        except Exception as exc:
            mapped = translate_openai_error(exc, where=self.where, model=self.model)
            if mapped is exc:
                raise
            raise mapped from None
        if getattr(message, "refusal", None):
            raise MalformedAnswer(REJECT_REFUSED)
        content = message.content
        if content is None or not str(content).strip():
            raise MalformedAnswer(REJECT_EMPTY)
        return str(content)

    def describe(self) -> dict[str, Any]:
        return {"generator": self.kind, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "endpoint": self.where}


class OpenAICompatibleGenerator(OpenAIChatGenerator):
    """Sentences from any server speaking the OpenAI chat protocol.

    Parameters
    ----------
    base_url : str
        E.g. ``http://localhost:8000/v1`` (vLLM), ``http://localhost:11434/v1``
        (Ollama), ``http://localhost:1234/v1`` (LM Studio).
    model : str
        The model name the server knows (see :meth:`list_models`).
    api_key : str, optional
        Only if the server wants one; ``OPENAI_API_KEY`` is never sent here.
    Other parameters as :class:`OpenAIChatGenerator`.
    """

    kind = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.8,
        max_tokens: int = 120,
        send_seed: bool = True,
        request_timeout: float = 60.0,
    ) -> None:
        _check_base_url(base_url)
        super().__init__(model, api_key=api_key, temperature=temperature, max_tokens=max_tokens,
                         send_seed=send_seed, request_timeout=request_timeout, base_url=base_url)

    def _requires_key(self) -> bool:
        return False

    def _token_limit(self) -> dict[str, int]:
        return {"max_tokens": self.max_tokens}
