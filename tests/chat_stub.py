"""A local chat model server (OpenAI chat protocol) whose answers follow a rule the test plants.

It binds ``127.0.0.1`` on an ephemeral port (the lifecycle, recording and common faults are
:class:`tests.served_stub.ServedStub`'s) and answers ``POST /v1/chat/completions`` as vLLM or a hosted API does:

* the answer text is ``rule(messages, seed)`` — the request's messages (a list of ``{"role", "content"}``) and its
  ``seed`` (None when none was sent); a test plants its decision rule here;
* with ``logprobs: true, top_logprobs: k`` (and :attr:`ChatStub.give_logprobs`), the answer is split into tokens
  at word starts (:func:`answer_tokens`) and each token carries :func:`token_alternatives`: the token itself with
  log 0.6, its upper-cased form with log 0.3 and ``"zzz"`` with log 0.1, the ``k`` most likely (a test computes
  the expected values from the same two functions);
* ``finish_reason`` is ``stop``; the answer's ``model`` is the served name, ``system_fingerprint`` the stub's;
* ``delay``: every answer waits this many seconds first (no lock held: ``concurrency`` answers in flight take
  ``delay`` together, so the stub's own answer rate is ``concurrency / delay``);
* ``GET /v1/models`` (the served name) and ``GET /version``.

Faults: the scripted actions of :class:`~tests.served_stub.ServedStub` — ``status`` (e.g. 429 with
``Retry-After``, 500, 401, 404), ``sleep``, ``hang`` (slow answers beyond the time-out), ``garbage`` (a 200 body
that is not JSON) — and these, each consumed once, in order: ``shapeless`` (JSON without ``choices``),
``content_filter`` (``finish_reason: "content_filter"``, ``content: null``), ``filter400`` (HTTP 400 with the error
code ``content_filter``, as Azure refuses a prompt), ``no_logprobs`` (``logprobs: null``), ``model`` (answered under
``action.model``), ``refusal`` (``content: null`` and ``refusal: action.text``), ``logprob`` (the first token's
log-probability is ``float(action.text)``: an impossible 5, nan or inf). Flags that stay in force:
:attr:`ChatStub.refuse_logprobs` (HTTP 400 to any request that asks for log-probabilities) and
:attr:`ChatStub.give_logprobs` (False: ``logprobs: null`` always). :meth:`ServedStub.count` counts the chat
requests.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any

from tests.served_stub import HANG_MAX_SECONDS, Action, ServedStub, _Handler

__all__ = ["Action", "ChatStub", "HANG_MAX_SECONDS", "answer_tokens", "echo_rule", "token_alternatives"]

Rule = Callable[[list[dict[str, Any]], Any], str]


def echo_rule(messages: list[dict[str, Any]], seed: Any) -> str:
    """The default rule: the last message's text and the seed, so every answer says what was asked."""
    return f"{messages[-1]['content']} | seed={seed}"


def answer_tokens(text: str) -> list[str]:
    """The answer's tokens: pieces that begin at a word (with the spaces before it)."""
    return re.findall(r"\s*\S+", text) or [text]


def token_alternatives(token: str, k: int) -> list[tuple[str, float]]:
    """A token's ``k`` most likely alternatives: itself (0.6), upper-cased (0.3), ``"zzz"`` (0.1)."""
    alts = [(token, math.log(0.6)), (token.upper(), math.log(0.3)), ("zzz", math.log(0.1))]
    if token.upper() == token:
        alts = [(token, math.log(0.9)), ("zzz", math.log(0.1))]
    return alts[:k]


class ChatStub(ServedStub):
    """Serve a planted rule as a chat model under ``served_name`` (see the module).

    Use as a context manager::

        with ChatStub(rule=lambda messages, seed: "A") as stub:
            ...  # stub.base_url is http://127.0.0.1:PORT/v1
    """

    route = "/v1/chat/completions"

    def __init__(self, rule: Rule = echo_rule, *, served_name: str = "stub-chat", version: str = "stub-chat-1.0",
                 fingerprint: str = "fp_stub_chat", delay: float = 0.0) -> None:
        super().__init__(served_name=served_name, version=version, fingerprint=fingerprint)
        self.rule = rule
        self.delay = float(delay)
        self.refuse_logprobs = False
        self.give_logprobs = True

    def reset(self) -> None:
        """Forget scripted actions, recorded requests and counters, and put the flags back."""
        super().reset()
        self.refuse_logprobs = False
        self.give_logprobs = True

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests received, in order."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"] == self.route]

    def _logprobs(self, text: str, k: int) -> dict[str, Any]:
        content = []
        for token in answer_tokens(text):
            alts = token_alternatives(token, max(k, 1))
            content.append({"token": token, "logprob": alts[0][1], "bytes": list(token.encode("utf-8")),
                            "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode("utf-8"))}
                                             for t, v in alts[:k]]})
        return {"content": content}

    def answer(self, body: dict[str, Any], action: Action | None) -> dict[str, Any]:
        """The answer to one request's body (the rule's text, with log-probabilities where asked)."""
        kind = action.kind if action is not None else ""
        if kind == "shapeless":
            return {"id": "chatcmpl-stub", "object": "chat.completion", "detail": "no choices here"}
        text = self.rule(body["messages"], body.get("seed"))
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        if kind == "content_filter":
            message["content"], finish = None, "content_filter"
        elif kind == "refusal":
            message.update(content=None, refusal=action.text)
        k = int(body.get("top_logprobs") or 0)
        give = body.get("logprobs") and self.give_logprobs and kind not in ("no_logprobs", "content_filter")
        logprobs = self._logprobs(text, k) if give else None
        if logprobs is not None and kind == "logprob":
            logprobs["content"][0]["logprob"] = float(action.text)
        return {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
            "model": action.model if kind == "model" else self.served_name,
            "system_fingerprint": self.fingerprint,
            "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": len(answer_tokens(text)),
                      "total_tokens": 20 + len(answer_tokens(text))},
        }

    def _respond(self, handler: _Handler, body: dict[str, Any], action: Action | None) -> None:
        kind = action.kind if action is not None else ""
        if body.get("logprobs") and (self.refuse_logprobs or kind == "refuse_logprobs"):
            handler.send_json(400, {"object": "error", "message": "logprobs are not supported for this model",
                                    "type": "BadRequestError", "code": 400})
            return
        if self._wrong_model(handler, body):
            return
        if kind == "filter400":
            handler.send_json(400, {"error": {"message": "The prompt was filtered.", "type": "invalid_request_error",
                                              "param": "prompt", "code": "content_filter"}})
            return
        if self.delay > 0:
            self._stop.wait(self.delay)
        handler.send_json(200, self.answer(body, action))
