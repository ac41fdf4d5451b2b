"""A local server that answers questions about images through the OpenAI chat protocol, with a tiny CLIP model.

It binds ``127.0.0.1`` on an ephemeral port and answers, in background threads, as vLLM serving a
vision-language model does:

* ``POST /v1/chat/completions`` with one user message holding an image (``image_url`` with a ``data:`` URL) and a
  text. The allowed answers are read from the text's last line (``…: doctor, nurse.``, as a model reads them).
  The answerer is a **real CLIP forward pass** (``transformers``' ``CLIPModel`` and ``CLIPProcessor``, its own
  code, nothing of :mod:`biastest`): ``P(t | image) = softmax_t(logits_per_image)`` over the prompts
  ``"a photo of a {t}"``; the answer is the most probable term (greedy, as temperature 0). With ``logprobs``
  the answer's token carries ``top_logprobs`` at the answer position: each term as two tokens, ``"t"`` with
  0.8 and ``"T"`` (capitalised) with 0.2 of ``(1 − ε) · P(t)``, and two other words sharing ``ε`` (so the target
  terms hold ``1 − ε`` of the first token's probability), the ``top_logprobs`` most likely first;
* ``GET /v1/models`` (the served name) and ``GET /version``.

Every answer given is recorded in :attr:`ChatImagesStub.answered` (the answer, the CLIP probabilities, the image's
size and the SHA-256 of its RGB pixels) for naive references. Scripted faults (each consumed once, in order,
before any ``always`` action): ``status`` (e.g. 429 with ``Retry-After``, 500), ``sleep`` (answer after
``seconds``), ``hang`` (never answer; closed after ``seconds`` or when the stub stops, at most
:data:`HANG_MAX_SECONDS`), ``garbage`` (a 200 body that is not JSON), ``no_logprobs`` (``logprobs: null``, as a
server that does not give them), ``refuse_logprobs`` (HTTP 400 to a request that asks for log-probabilities, as a
server that cannot give them; it stays in force for the requests without them, which are answered), ``answer``
(answer ``text`` instead, tokenized by words, the CLIP terms still among the first token's alternatives),
``no_terms`` (answer "I don't know." with no target term among the alternatives), ``article`` (answer ``"A
<term>"``: the article first, the terms' distribution at the second token), ``model`` (answer under another model
name). Every request is recorded (path, lower-cased headers, JSON body); ``max_in_flight`` is the most chat
requests handled at once.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["Action", "ChatImagesStub", "HANG_MAX_SECONDS"]

#: Longest a ``hang`` action holds a request open (every wait in the stub is bounded).
HANG_MAX_SECONDS = 20.0
#: Probability the two words that are not target terms share at the answer position.
EPSILON = 0.05
OTHER_WORDS = ("I", "Sorry")
PROMPT_TEMPLATE = "a photo of a {}"
_ALLOWED = re.compile(r":\s*([^\n:]+?)\.\s*$")


@dataclass
class Action:
    """One scripted answer (see the module docstring for the kinds)."""

    kind: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    model: str = ""
    text: str = ""


class ChatImagesStub:
    """Serve the CLIP model saved in ``model_dir`` as a chat model that reads images, under ``served_name``.

    Use as a context manager::

        with ChatImagesStub(folder, served_name="tiny-llava") as stub:
            ...  # stub.base_url is http://127.0.0.1:PORT/v1
    """

    def __init__(self, model_dir: str | Path, *, served_name: str = "tiny-llava", version: str = "stub-vl-1.0",
                 fingerprint: str = "fp_stub_vl") -> None:
        import torch
        from transformers import CLIPModel, CLIPProcessor

        self.processor = CLIPProcessor.from_pretrained(model_dir)
        self.model = CLIPModel.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.served_name = served_name
        self.version = version
        self.fingerprint = fingerprint
        self._lock = threading.Lock()
        self._forward_lock = threading.Lock()  # one forward pass at a time, as one accelerator
        self._queue: deque[Action] = deque()
        self._always: Action | None = None
        self.requests: list[dict[str, Any]] = []
        self.answered: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ scripting
    def script(self, *actions: Action) -> None:
        """Queue actions for the chat requests (consumed in order)."""
        with self._lock:
            self._queue.extend(actions)

    def always(self, action: Action | None) -> None:
        """Answer every chat request with ``action`` once the queue is empty (None: normally)."""
        with self._lock:
            self._always = action

    def reset(self) -> None:
        """Forget scripted actions, recorded requests and answers, and counters."""
        with self._lock:
            self._queue.clear()
            self._always = None
            self.requests.clear()
            self.answered.clear()
            self.max_in_flight = 0

    def _next(self) -> Action | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            return self._always

    def count(self, path: str = "/v1/chat/completions") -> int:
        """How many requests reached ``path``."""
        with self._lock:
            return sum(1 for r in self.requests if r["path"] == path)

    # ------------------------------------------------------------ the answerer
    def probabilities(self, image, terms: list[str]) -> list[float]:
        """CLIP's zero-shot ``P(t | image)`` over ``"a photo of a {t}"`` (one forward pass)."""
        import torch

        inputs = self.processor(text=[PROMPT_TEMPLATE.format(t) for t in terms], images=[image],
                                return_tensors="pt", padding=True)
        with self._forward_lock, torch.inference_mode():
            logits = self.model(**inputs).logits_per_image[0].double()
        return torch.softmax(logits, dim=-1).tolist()

    @staticmethod
    def _entry(token: str, logprob: float, top: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8")), "top_logprobs": top or []}

    def _first_token(self, terms: list[str], probs: list[float], k: int, *, with_terms: bool = True
                     ) -> list[dict[str, Any]]:
        """The answer position's alternatives, most likely first (``k`` of them)."""
        alts: list[tuple[str, float]] = []
        if with_terms:
            for t, p in zip(terms, probs, strict=True):
                mass = (1.0 - EPSILON) * p
                alts += [(t, 0.8 * mass), (t[:1].upper() + t[1:], 0.2 * mass)]
            alts += [(w, EPSILON / len(OTHER_WORDS)) for w in OTHER_WORDS]
        else:
            alts += [(w, 1.0 / len(OTHER_WORDS)) for w in OTHER_WORDS]
        alts = [(tok, p) for tok, p in alts if p > 0]
        alts.sort(key=lambda a: -a[1])
        return [self._entry(tok, math.log(p)) for tok, p in alts[:k]]

    def _answer(self, body: dict[str, Any], action: Action | None) -> dict[str, Any]:
        from PIL import Image

        content = body["messages"][-1]["content"]
        url = next(p["image_url"]["url"] for p in content if p.get("type") == "image_url")
        text = next(p["text"] for p in content if p.get("type") == "text")
        header, _, data = url.partition(",")
        assert header == "data:image/png;base64", header
        raw = base64.b64decode(data)
        image = Image.open(io.BytesIO(raw))
        image.load()
        assert image.format == "PNG" and image.mode == "RGB"
        terms = [t.strip() for t in _ALLOWED.search(text).group(1).split(",")]
        probs = self.probabilities(image, terms)
        best = max(range(len(terms)), key=lambda i: probs[i])
        k = int(body.get("top_logprobs") or 0)
        kind = action.kind if action is not None else ""
        first = self._first_token(terms, probs, k, with_terms=kind != "no_terms") if k else []
        if kind == "answer":
            words = re.findall(r"\s*\S+", action.text)
            tokens = [self._entry(words[0], first[0]["logprob"] if first else -0.1, first)]
            tokens += [self._entry(w, -0.05) for w in words[1:]]
            answer = action.text
        elif kind == "no_terms":
            answer = "I don't know."
            tokens = [self._entry("I", first[0]["logprob"] if first else -0.7, first),
                      self._entry(" don't", -0.1), self._entry(" know", -0.1), self._entry(".", -0.1)]
        elif kind == "article":
            answer = "A " + terms[best]
            lead = [self._entry("A", math.log(0.9)), self._entry("The", math.log(0.1))][:k]
            spaced = [{**e, "token": " " + e["token"], "bytes": list((" " + e["token"]).encode())} for e in first]
            tokens = [self._entry("A", math.log(0.9), lead),
                      self._entry(" " + terms[best], math.log(0.8 * (1 - EPSILON) * probs[best]), spaced)]
        else:
            answer = terms[best]
            tokens = [self._entry(terms[best], math.log(0.8 * (1 - EPSILON) * probs[best]), first)]
        with self._lock:
            self.answered.append({"answer": answer, "terms": terms, "probabilities": probs, "size": image.size,
                                  "pixels": hashlib.sha256(image.tobytes()).hexdigest(), "prompt": text})
        logprobs = {"content": tokens} if body.get("logprobs") and kind != "no_logprobs" else None
        return {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
            "model": action.model if kind == "model" else self.served_name,
            "system_fingerprint": self.fingerprint,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "logprobs": logprobs, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 600, "completion_tokens": len(tokens), "total_tokens": 600 + len(tokens)},
        }

    # ------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ChatImagesStub:
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
                        {"id": stub.served_name, "object": "model", "created": 0, "owned_by": "stub"}]})
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
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"object": "error", "message": "Not Found", "code": 404})
                    return
                with stub._lock:
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    self._chat(body)
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

            def _chat(self, body: dict[str, Any]) -> None:
                action = stub._next()
                kind = action.kind if action is not None else ""
                if kind == "status":
                    self._json(action.status, {"object": "error", "message": f"scripted status {action.status}",
                                               "type": "ServerError", "code": action.status}, action.headers)
                    return
                if kind == "hang":
                    stub._stop.wait(min(action.seconds or HANG_MAX_SECONDS, HANG_MAX_SECONDS))
                    self.close_connection = True
                    return
                if kind == "sleep":
                    stub._stop.wait(min(action.seconds, HANG_MAX_SECONDS))
                if kind == "garbage":
                    self._send(200, b"<html><body>502 Bad Gateway</body></html>")
                    return
                if kind == "refuse_logprobs" and body.get("logprobs"):
                    self._json(400, {"object": "error", "message": "logprobs are not supported for this model",
                                     "type": "BadRequestError", "code": 400})
                    return
                if body.get("model") != stub.served_name:
                    self._json(404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                                     "type": "NotFoundError", "code": 404})
                    return
                self._json(200, stub._answer(body, action))

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

    def __enter__(self) -> ChatImagesStub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
