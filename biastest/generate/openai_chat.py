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

The client is :func:`biastest.remote.openai_client`: every request (redirects
included) connects only to addresses checked for it, and the client's own
retries are switched off (``max_retries=0``): retries, backoff, the request
budget and the time limit are enforced by :class:`~biastest.remote.RunState`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from biastest import settings
from biastest.errors import GenerationError, PolicyError
from biastest.generate.base import REJECT_EMPTY, TextGenerator
from biastest.remote import (
    REJECT_MALFORMED,
    MalformedAnswer,
    check_base_url,
    mask_secret,
    openai_client,
    safe_base_url,
    translate_openai_error,
)

__all__ = [
    "OpenAIChatGenerator",
    "OpenAICompatibleGenerator",
    "REJECT_REFUSED",
]

log = logging.getLogger(__name__)

REJECT_REFUSED = "refused"

MSG_NO_API_KEY = (
    "No OpenAI API key was given. Paste your key into the key field (it is used for this session only and "
    "never stored), or set OPENAI_API_KEY on the server."
)
MSG_LIST_FAILED = "Could not list the models at {where}: {problem}. Check the address and that the server is running."
MSG_BAD_MODEL_NAME = "The model name must be non-empty text, got {value!r}."

OFFICIAL = "api.openai.com"


class _OpenAIClientMixin:
    """Builds and guards the ``openai`` client (shared with the image generators)."""

    _client: Any
    _has_key: bool
    base_url: str | None
    model: str

    def _init_client(self, *, api_key: str | None, base_url: str | None, require_key: bool,
                     organization: str | None, timeout: float) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise GenerationError(MSG_BAD_MODEL_NAME.format(value=self.model))
        if base_url is not None:
            check_base_url(base_url)
        key = api_key if api_key else None
        if key is None and base_url is None:
            key = settings.openai_api_key()
        if key is None and require_key:
            raise GenerationError(MSG_NO_API_KEY)
        self._has_key = key is not None
        self.base_url = base_url
        self._client = openai_client(base_url, api_key=key, timeout=timeout, organization=organization)

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
        check_base_url(base_url)
        super().__init__(model, api_key=api_key, temperature=temperature, max_tokens=max_tokens,
                         send_seed=send_seed, request_timeout=request_timeout, base_url=base_url)

    def _requires_key(self) -> bool:
        return False

    def _token_limit(self) -> dict[str, int]:
        return {"max_tokens": self.max_tokens}
