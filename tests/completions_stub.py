"""A local server that serves a causal language model through the OpenAI completions protocol.

It binds ``127.0.0.1`` on an ephemeral port and answers, in background threads, as vLLM does:

* ``POST /v1/completions`` with ``echo``, ``logprobs`` and ``max_tokens=1``: the prompt may be a string, a
  list of strings, a list of token ids or a list of lists of token ids (one choice per prompt, in order). Text
  is tokenized with the tokenizer's default special tokens (``add_bos=True`` prepends the begin token, as a
  Llama-style tokenizer does). Each choice's ``logprobs.token_logprobs`` is ``null`` for the first prompt
  token, then ``log P(t_j | t_<j)`` from a **real forward pass** of the ``transformers`` model (its own code:
  right-padded batch, ``log_softmax``; nothing of :mod:`biastest`), then the greedy next token's;
  ``tokens`` are the decoded tokens and ``text_offset`` their cumulative offsets;
* ``GET /v1/models`` (the served name and ``max_model_len``) and ``GET /version``.

Scripted faults (each consumed once, in order, before any ``always`` action): ``status`` (e.g. 429 with
``Retry-After``, 500), ``sleep`` (answer after ``seconds``), ``hang`` (hold the request, never answer; closed
after ``seconds`` or when the stub stops, at most :data:`HANG_MAX_SECONDS`), ``garbage`` (a 200 body that is not
JSON), ``null_logprobs`` (``token_logprobs: null``, as a server that cannot give prompt log-probabilities),
``no_echo`` (only the generated token's log-probability), ``extra_token`` (one log-probability too many, as a
server that added its own begin token) and ``model`` (answer under another model name). Every request is
recorded (path, lower-cased headers, JSON body); ``max_in_flight`` is the most completions requests handled at
once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["Action", "CompletionsStub", "HANG_MAX_SECONDS"]

#: Longest a ``hang`` action holds a request open (every wait in the stub is bounded).
HANG_MAX_SECONDS = 20.0


@dataclass
class Action:
    """One scripted answer (see the module docstring for the kinds)."""

    kind: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    model: str = ""


class CompletionsStub:
    """Serve the causal LM saved in ``model_dir`` under ``served_name``.

    Use as a context manager::

        with CompletionsStub(folder, served_name="tiny-gpt2") as stub:
            ...  # stub.base_url is http://127.0.0.1:PORT/v1
    """

    def __init__(self, model_dir: str | Path, *, served_name: str = "tiny-gpt2", add_bos: bool = False,
                 version: str = "stub-1.0", fingerprint: str = "fp_stub") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.served_name = served_name
        self.add_bos = add_bos
        self.version = version
        self.fingerprint = fingerprint
        self.max_model_len = int(getattr(self.model.config, "n_positions", 0) or
                                 getattr(self.model.config, "max_position_embeddings", 0) or 0) or None
        self.pad_id = next(v for v in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id, 0) if v is not None)
        self._lock = threading.Lock()
        self._forward_lock = threading.Lock()  # one forward pass at a time, as one accelerator
        self._queue: deque[Action] = deque()
        self._always: Action | None = None
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ scripting
    def script(self, *actions: Action) -> None:
        """Queue actions for the completions requests (consumed in order)."""
        with self._lock:
            self._queue.extend(actions)

    def always(self, action: Action | None) -> None:
        """Answer every completions request with ``action`` once the queue is empty (None: normally)."""
        with self._lock:
            self._always = action

    def reset(self) -> None:
        """Forget scripted actions, recorded requests and counters."""
        with self._lock:
            self._queue.clear()
            self._always = None
            self.requests.clear()
            self.max_in_flight = 0

    def _next(self) -> Action | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            return self._always

    def count(self, path: str) -> int:
        """How many requests reached ``path`` (e.g. ``/v1/completions``)."""
        with self._lock:
            return sum(1 for r in self.requests if r["path"] == path)

    # ------------------------------------------------------------ the model
    def tokenize(self, text: str) -> list[int]:
        """The server's tokens of a text prompt (default special tokens, plus the begin token if ``add_bos``)."""
        ids = [int(i) for i in self.tokenizer(text)["input_ids"]]
        if self.add_bos:
            tok = self.tokenizer
            bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
            ids = [int(bos), *ids]
        return ids

    def forward(self, prompts: list[list[int]]) -> list[tuple[list[float | None], int]]:
        """Prompt-token log-probabilities (``None`` first) and the greedy next token, per prompt.

        One right-padded batch through the model; ``log_softmax`` of the logits, read at each next token.
        """
        import torch

        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(prompts), width), dtype=torch.long)
        for b, p in enumerate(prompts):
            ids[b, : len(p)] = torch.tensor(p)
            attn[b, : len(p)] = 1
        lengths = torch.tensor([len(p) for p in prompts])
        with self._forward_lock, torch.inference_mode():
            logp = torch.log_softmax(self.model(input_ids=ids, attention_mask=attn).logits.float(), dim=-1)
            prompt_lp = logp[:, :-1].gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).tolist()
            next_lp, next_id = logp[torch.arange(len(prompts)), lengths - 1].max(dim=-1)
        out = []
        for b, p in enumerate(prompts):
            values: list[float | None] = [None, *prompt_lp[b][: len(p) - 1], float(next_lp[b])]
            out.append((values, int(next_id[b])))
        return out

    def _completion(self, body: dict[str, Any], action: Action | None) -> dict[str, Any]:
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompt = [prompt]
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            prompt = [prompt]
        prompts = [self.tokenize(p) if isinstance(p, str) else [int(t) for t in p] for p in prompt]
        computed = self.forward(prompts)
        choices = []
        for i, (ids, (values, nxt)) in enumerate(zip(prompts, computed, strict=True)):
            all_ids = [*ids, nxt]
            tokens = [self.tokenizer.decode([t]) for t in all_ids]
            offsets, pos = [], 0
            for t in tokens:
                offsets.append(pos)
                pos += len(t)
            logprobs: dict[str, Any] | None = {"tokens": tokens, "token_logprobs": values, "text_offset": offsets,
                                               "top_logprobs": None}
            if action is not None and action.kind == "null_logprobs":
                logprobs = {"tokens": tokens, "token_logprobs": None, "text_offset": offsets, "top_logprobs": None}
            elif action is not None and action.kind == "no_echo":
                logprobs = {"tokens": tokens[-1:], "token_logprobs": values[-1:], "text_offset": [0],
                            "top_logprobs": None}
            elif action is not None and action.kind == "extra_token":
                logprobs = {"tokens": ["<s>", *tokens], "token_logprobs": [None, -1.0, *values[1:]],
                            "text_offset": [0, *offsets], "top_logprobs": None}
            choices.append({"index": i, "text": "".join(tokens), "logprobs": logprobs, "finish_reason": "length"})
        n_prompt = sum(len(p) for p in prompts)
        return {
            "id": "cmpl-stub", "object": "text_completion", "created": int(time.time()),
            "model": action.model if action is not None and action.kind == "model" else body.get("model"),
            "system_fingerprint": self.fingerprint,
            "choices": list(reversed(choices)),  # out of order on purpose: clients must read "index"
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(prompts),
                      "total_tokens": n_prompt + len(prompts)},
        }

    # ------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> CompletionsStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (time-out)
                    pass

            def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                self._send(status, json.dumps(obj).encode("utf-8"), headers)

            def _record(self, body: Any) -> None:
                with stub._lock:
                    stub.requests.append({"path": self.path.rstrip("/"),
                                          "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": body})

            def do_GET(self) -> None:
                self._record(None)
                path = self.path.rstrip("/")
                if path == "/v1/models":
                    self._json(200, {"object": "list", "data": [
                        {"id": stub.served_name, "object": "model", "created": 0, "owned_by": "stub",
                         "max_model_len": stub.max_model_len}]})
                elif path == "/version":
                    self._json(200, {"version": stub.version})
                else:
                    self._json(404, {"object": "error", "message": "Not Found", "code": 404})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                self._record(body)
                if self.path.rstrip("/") != "/v1/completions":
                    self._json(404, {"object": "error", "message": "Not Found", "code": 404})
                    return
                with stub._lock:
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    self._completions(body)
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

            def _completions(self, body: dict[str, Any]) -> None:
                action = stub._next()
                if action is not None and action.kind == "status":
                    self._json(action.status, {"object": "error", "message": f"scripted status {action.status}",
                                               "type": "ServerError", "code": action.status}, action.headers)
                    return
                if action is not None and action.kind == "hang":
                    stub._stop.wait(min(action.seconds or HANG_MAX_SECONDS, HANG_MAX_SECONDS))
                    self.close_connection = True
                    return
                if action is not None and action.kind == "sleep":
                    stub._stop.wait(min(action.seconds, HANG_MAX_SECONDS))
                if action is not None and action.kind == "garbage":
                    self._send(200, b"<html><body>502 Bad Gateway</body></html>")
                    return
                if body.get("model") != stub.served_name:
                    self._json(404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                                     "type": "NotFoundError", "code": 404})
                    return
                prompt = body.get("prompt")
                if not prompt:
                    self._json(400, {"object": "error", "message": "empty prompt", "type": "BadRequestError",
                                     "code": 400})
                    return
                self._json(200, stub._completion(body, action))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> CompletionsStub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
