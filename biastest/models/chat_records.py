"""What is sent to a model that answers, and what it said: the records every chat backend speaks.

A chat model is a subject in an experiment: each :class:`ChatRequest` is the
exact question (messages, sampling settings, seed), and each :class:`ChatReply`
the exact answer (its raw text, why it stopped, the log-probabilities of its
first tokens where the backend gives them, which model answered and under
which fingerprint). A measure parses the text itself; the backend never guesses
an answer. Both records are frozen and JSON-ready (:meth:`ChatRequest.as_dict`,
:meth:`ChatReply.as_dict`), so a result can keep them verbatim and the response
cache can key on the request.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChatReply", "ChatRequest", "REPLY_ANSWERED", "REPLY_FAILED", "ROLES", "sampling_seed"]

#: The roles a message may have.
ROLES = ("system", "user", "assistant")

#: A reply's ``status``: the model answered (its text may still be a refusal or unparseable — the measure reads it).
REPLY_ANSWERED = "answered"
#: A reply's ``status``: no answer came back for this request (``error`` says why: the request was refused by the
#: server, its answer was garbled …); the run went on.
REPLY_FAILED = "failed"


@dataclass(frozen=True)
class ChatRequest:
    """One question to a chat model.

    Attributes
    ----------
    messages : tuple of (role, content)
        The conversation sent, in order; roles from :data:`ROLES`.
    max_tokens : int
        Longest answer asked for.
    temperature : float
        0 asks for the most likely answer (greedy where the backend can).
    seed : int or None
        Sent to backends that take one (the OpenAI protocol's ``seed``; the
        local model's sampling generator); recorded either way.
    top_logprobs : int
        Alternatives asked for at each answer token (0: no log-probabilities).
    sample : int
        Which of several samples of the same question this is (0, 1, …): two
        samples of one question differ only here, so each is its own request
        (and its own cache entry).
    """

    messages: tuple[tuple[str, str], ...]
    max_tokens: int = 16
    temperature: float = 0.0
    seed: int | None = None
    top_logprobs: int = 0
    sample: int = 0

    def __post_init__(self) -> None:
        if not self.messages:
            raise ValueError("a chat request needs at least one message")
        for role, content in self.messages:
            if role not in ROLES or not isinstance(content, str):
                raise ValueError(f"bad message: role {role!r}")

    @classmethod
    def ask(cls, question: str, *, system: str | None = None, **settings: Any) -> ChatRequest:
        """A request of one user message (after an optional system message)."""
        messages = ((("system", system),) if system else ()) + (("user", question),)
        return cls(messages=messages, **settings)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the messages as ``{"role", "content"}`` objects, then the settings."""
        return {
            "messages": [{"role": r, "content": c} for r, c in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "top_logprobs": self.top_logprobs,
            "sample": self.sample,
        }

    def digest(self) -> str:
        """A SHA-256 of the canonical JSON of :meth:`as_dict` (the request's identity, e.g. for a cache)."""
        text = json.dumps(self.as_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatReply:
    """What the model said to one :class:`ChatRequest`.

    Attributes
    ----------
    status : {"answered", "failed"}
        :data:`REPLY_ANSWERED` or :data:`REPLY_FAILED`.
    text : str or None
        The answer exactly as given (None when failed).
    finish_reason : str or None
        As the backend reports it (``stop``, ``length``, ``content_filter`` …).
    top_logprobs : tuple of dict or None
        Per answer token, the alternatives' log-probabilities (token text →
        log P), the chosen token's included; None when the backend gave none.
    served_model : str or None
        The model name the answer came from, as the backend reports it.
    system_fingerprint : str or None
        The hosted backend's configuration fingerprint, where it gives one.
    cached : bool
        Read from the response cache instead of asked.
    error : str
        Why a failed request has no answer ("" when answered).
    """

    status: str
    text: str | None
    finish_reason: str | None = None
    top_logprobs: tuple[dict[str, float], ...] | None = None
    served_model: str | None = None
    system_fingerprint: str | None = None
    cached: bool = False
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def failed(cls, error: str) -> ChatReply:
        """A request that got no answer, with the reason."""
        return cls(status=REPLY_FAILED, text=None, error=error)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the log-probabilities as a list of objects)."""
        return {
            "status": self.status,
            "text": self.text,
            "finish_reason": self.finish_reason,
            "top_logprobs": None if self.top_logprobs is None else [dict(t) for t in self.top_logprobs],
            "served_model": self.served_model,
            "system_fingerprint": self.system_fingerprint,
            "cached": self.cached,
            "error": self.error,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatReply:
        """The reply :meth:`as_dict` wrote (e.g. read back from the response cache)."""
        logprobs = data.get("top_logprobs")
        return cls(
            status=str(data["status"]),
            text=data.get("text"),
            finish_reason=data.get("finish_reason"),
            top_logprobs=None if logprobs is None else tuple(
                {str(k): float(v) for k, v in t.items()} for t in logprobs),
            served_model=data.get("served_model"),
            system_fingerprint=data.get("system_fingerprint"),
            cached=bool(data.get("cached", False)),
            error=str(data.get("error", "")),
            extra=dict(data.get("extra") or {}),
        )


def sampling_seed(request: ChatRequest) -> int | None:
    """The seed a backend samples ``request`` with: its ``seed`` for sample 0, one derived from (seed, sample) else.

    Two samples of one question must differ, so each sample after the first
    is sampled with its own seed: the first 31 bits of SHA-256 of
    ``"{seed}:{sample}"`` (a non-negative 32-bit integer, which every server
    that takes a seed accepts). None when the request has no seed and is the
    first sample (the backend's default); an unseeded later sample derives
    from seed 0.

    Examples
    --------
    >>> sampling_seed(ChatRequest.ask("q", seed=7)), sampling_seed(ChatRequest.ask("q"))
    (7, None)
    >>> sampling_seed(ChatRequest.ask("q", seed=7, sample=1)) == sampling_seed(ChatRequest.ask("q", seed=7, sample=2))
    False
    """
    if request.sample == 0:
        return request.seed
    text = f"{0 if request.seed is None else int(request.seed)}:{int(request.sample)}"
    return int.from_bytes(hashlib.sha256(text.encode("ascii")).digest()[:4], "big") >> 1
