"""A small, real HTTP server speaking the parts of the OpenAI API we use.

It binds to ``127.0.0.1`` on an ephemeral port and serves, in a background
thread:

* ``POST /v1/chat/completions`` — answers from a scripted queue of actions,
  then from a rule (default: write a sentence that contains the requested
  target and attribute terms parsed from the prompt, or perform the requested
  "Rewrite the sentence to replace X with Y" by a word-bounded swap);
* ``POST /v1/images/generations`` — a small PNG (``b64_json``, or a ``url``
  served by ``GET /files/<name>.png``);
* ``GET /v1/models``.

The rule's sentences cycle through :data:`FRAMES` (by request count), so
repeated requests give distinct sentences. Scripted faults (each consumed
once, in order, per endpoint, before any ``always`` action): ``status``
(e.g. 429 with ``Retry-After``, 500), ``sleep`` (answer late, beyond a client
time-out), ``hang`` (hold the request open and never answer: the connection
is closed after ``seconds``, default :data:`HANG_MAX_SECONDS`, or when the
stub stops), ``empty`` (empty content), ``null`` (null content), ``malformed``
(a body that is not JSON), ``no_choices``, ``text`` (a given answer) and
``missing_attribute`` (a sentence with the target term only). ``always`` sets
a fault that repeats for every request (e.g. a server that is down).

The server records every request (path, lower-cased headers, JSON body) so tests can
check what the real ``openai`` client sent.
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image

__all__ = ["OpenAIStub", "Action", "png_bytes", "HANG_MAX_SECONDS"]

#: Longest a ``hang`` action holds a request open (every wait in the stub is bounded).
HANG_MAX_SECONDS = 20.0

_TARGET = re.compile(r'target term "([^"]+)"')
_ATTRIBUTE = re.compile(r'attribute term "([^"]+)"')
_REWRITE = re.compile(r"Rewrite the sentence to replace (.+?) with (.+?)\. Make only minimal changes")
_SENTENCE = re.compile(r"Sentence: (.*), Rewrite: ?$", re.DOTALL)


def png_bytes(width: int = 8, height: int = 8, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A small solid-colour PNG image."""
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, format="PNG")
    return buf.getvalue()


@dataclass
class Action:
    """One scripted answer.

    Attributes
    ----------
    kind : str
        ``status``, ``sleep``, ``hang``, ``empty``, ``null``, ``malformed``,
        ``no_choices``, ``text``, ``missing_attribute``, ``url`` (images) or
        ``rule`` (answer by the rule).
    status : int
        HTTP status for ``status``.
    headers : dict
        Extra response headers (``Retry-After``).
    seconds : float
        Delay for ``sleep`` (then answers by the rule); for ``hang``, how long
        the request is held before the connection is closed unanswered
        (0: :data:`HANG_MAX_SECONDS`).
    text : str
        Answer for ``text``.
    body : dict
        JSON error body for ``status``.
    """

    kind: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    text: str = ""
    body: dict[str, Any] | None = None


FRAMES = (
    "The {t} talked about {a} at dinner yesterday.",
    "Everyone agreed that the {t} was good at {a}.",
    "Last year the {t} discovered a passion for {a}.",
    "The {t} wrote a long essay about {a} for school.",
    "In the morning the {t} read a book on {a}.",
    "The {t} taught a class on {a} to beginners.",
    "Nobody expected the {t} to win the prize for {a}.",
    "The {t} spent the whole weekend practising {a}.",
)


def _rule_sentence(prompt: str, k: int) -> str:
    target = _TARGET.search(prompt)
    attribute = _ATTRIBUTE.search(prompt)
    if not target or not attribute:
        return "I am not sure what you want me to write."
    return FRAMES[k % len(FRAMES)].format(t=target.group(1), a=attribute.group(1))


def _rule_rewrite(system: str, user: str) -> str:
    m = _REWRITE.search(system)
    s = _SENTENCE.search(user)
    if not m or not s:
        return "I cannot rewrite that."
    old, new = m.group(1), m.group(2)
    return re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", new, s.group(1), flags=re.IGNORECASE)


class OpenAIStub:
    """Local OpenAI-protocol server with scripted answers and faults.

    Use as a context manager::

        with OpenAIStub() as stub:
            client = OpenAI(api_key="sk-test", base_url=stub.base_url)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Action]] = {"chat": deque(), "images": deque()}
        self._always: dict[str, Action | None] = {"chat": None, "images": None}
        self.requests: list[dict[str, Any]] = []
        self._images = 0
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.chat_rule = "echo"  # or "missing_attribute"

    # ------------------------------------------------------------ scripting
    def script(self, endpoint: str, *actions: Action) -> None:
        """Queue actions for ``chat`` or ``images`` (consumed in order)."""
        with self._lock:
            self._queues[endpoint].extend(actions)

    def always(self, endpoint: str, action: Action | None) -> None:
        """Answer every request of ``endpoint`` with ``action`` (None: stop)."""
        with self._lock:
            self._always[endpoint] = action

    def _next(self, endpoint: str) -> Action:
        with self._lock:
            if self._queues[endpoint]:
                return self._queues[endpoint].popleft()
            if self._always[endpoint] is not None:
                return self._always[endpoint]  # type: ignore[return-value]
            return Action("rule")

    def next_png(self) -> bytes:
        """A new small PNG (a different colour each time, so images are distinct)."""
        with self._lock:
            self._images += 1
            k = self._images
        return png_bytes(color=((37 * k) % 256, (91 * k) % 256, (53 * k) % 256))

    def count(self, path: str) -> int:
        """How many requests reached ``path``."""
        with self._lock:
            return sum(1 for r in self.requests if r["path"] == path)

    # ------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAIStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # headers and body leave in one write (no Nagle / delayed-ACK stall)

            def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
                return

            def _send(self, status: int, body: bytes, ctype: str = "application/json",
                      headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (time-out)
                    pass

            def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                self._send(status, json.dumps(obj).encode("utf-8"), headers=headers)

            def do_GET(self) -> None:
                stub._record(self, None)
                if self.path.rstrip("/") == "/v1/models":
                    self._json(200, {"object": "list", "data": [
                        {"id": "stub-chat", "object": "model", "created": 0, "owned_by": "stub"},
                        {"id": "stub-image", "object": "model", "created": 0, "owned_by": "stub"},
                    ]})
                elif self.path.startswith("/files/"):
                    self._send(200, stub.next_png(), "image/png")
                else:
                    self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                stub._record(self, body)
                path = self.path.rstrip("/")
                if path == "/v1/chat/completions":
                    self._chat(body)
                elif path == "/v1/images/generations":
                    self._images(body)
                else:
                    self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

            def _fault(self, action: Action) -> bool:
                """Handle the actions shared by both endpoints; True when answered."""
                if action.kind == "status":
                    body = action.body or {"error": {"message": f"scripted status {action.status}",
                                                     "type": "server_error", "code": None}}
                    self._json(action.status, body, headers=action.headers)
                    return True
                if action.kind == "sleep":
                    stub._stop.wait(action.seconds)
                    return False
                if action.kind == "hang":  # never answer; close the connection when released
                    stub._stop.wait(min(action.seconds or HANG_MAX_SECONDS, HANG_MAX_SECONDS))
                    self.close_connection = True
                    return True
                if action.kind == "malformed":
                    self._send(200, b'{"id": "x", "choices": [ {"message": ')
                    return True
                return False

            def _chat(self, body: dict[str, Any]) -> None:
                action = stub._next("chat")
                if self._fault(action):
                    return
                messages = body.get("messages") or []
                model = body.get("model", "stub-chat")
                content: str | None
                if action.kind == "no_choices":
                    self._json(200, {"id": "c", "object": "chat.completion", "created": int(time.time()),
                                     "model": model, "choices": []})
                    return
                if action.kind == "empty":
                    content = ""
                elif action.kind == "null":
                    content = None
                elif action.kind == "text":
                    content = action.text
                else:
                    system = " ".join(m.get("content", "") for m in messages if m.get("role") == "system")
                    user = " ".join(m.get("content", "") for m in messages if m.get("role") == "user")
                    if _REWRITE.search(system):
                        content = _rule_rewrite(system, user)
                    elif action.kind == "missing_attribute" or stub.chat_rule == "missing_attribute":
                        t = _TARGET.search(user + system)
                        content = f"The {t.group(1) if t else 'person'} went home early."
                    else:
                        content = _rule_sentence(user + " " + system, stub.count("/v1/chat/completions"))
                self._json(200, {
                    "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

            def _images(self, body: dict[str, Any]) -> None:
                action = stub._next("images")
                if self._fault(action):
                    return
                n = int(body.get("n") or 1)
                if action.kind == "empty":
                    data = [{"b64_json": ""} for _ in range(n)]
                elif action.kind == "text":  # not an image
                    data = [{"b64_json": base64.b64encode(action.text.encode()).decode()} for _ in range(n)]
                elif action.kind == "url" or body.get("response_format") == "url":
                    host, port = self.server.server_address[:2]
                    data = [{"url": f"http://{host}:{port}/files/img{i}.png"} for i in range(n)]
                else:
                    data = [{"b64_json": base64.b64encode(stub.next_png()).decode(),
                             "revised_prompt": body.get("prompt", "")} for _ in range(n)]
                self._json(200, {"created": int(time.time()), "data": data})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        with self._lock:
            headers = {k.lower(): v for k, v in handler.headers.items()}
            self.requests.append({"path": handler.path.rstrip("/"), "headers": headers, "body": body})

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
