"""What the local OpenAI-protocol model servers of the tests share: scripting, recording and the HTTP lifecycle.

:class:`ServedStub` binds ``127.0.0.1`` on an ephemeral port, answers in background threads (``GET /v1/models``
with the served name, ``GET /version``, ``POST`` to its :attr:`~ServedStub.route`), records every request (path,
lower-cased headers, JSON body), counts the requests in flight, and plays scripted faults before a subclass
answers: ``status`` (e.g. 429 with ``Retry-After``, 500), ``sleep`` (answer after ``seconds``), ``hang`` (never
answer; closed after ``seconds`` or when the stub stops, at most :data:`HANG_MAX_SECONDS`) and ``garbage`` (a 200
body that is not JSON). Subclasses (:class:`tests.completions_stub.CompletionsStub`,
:class:`tests.chat_images_stub.ChatImagesStub`) implement :meth:`~ServedStub._respond` with their real model.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

__all__ = ["Action", "HANG_MAX_SECONDS", "ServedStub"]

#: Longest a ``hang`` action holds a request open (every wait in the stubs is bounded).
HANG_MAX_SECONDS = 20.0


@dataclass
class Action:
    """One scripted answer (the kinds are listed by each stub's module docstring)."""

    kind: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    model: str = ""
    text: str = ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16
    stub: ServedStub  # set on the subclass made by ServedStub.start

    def log_message(self, format: str, *args: Any) -> None:
        return

    def send_bytes(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
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

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self.send_bytes(status, json.dumps(obj).encode("utf-8"), headers)

    def _record(self, body: Any) -> None:
        stub = self.stub
        with stub._lock:
            stub.requests.append({"path": self.path.rstrip("/"),
                                  "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})

    def do_GET(self) -> None:
        self._record(None)
        path = self.path.rstrip("/")
        if path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [self.stub._model_entry()]})
        elif path == "/version":
            self.send_json(200, {"version": self.stub.version})
        else:
            self.send_json(404, {"object": "error", "message": "Not Found", "code": 404})

    def do_POST(self) -> None:
        stub = self.stub
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        self._record(body)
        if self.path.rstrip("/") != stub.route:
            self.send_json(404, {"object": "error", "message": "Not Found", "code": 404})
            return
        with stub._lock:
            stub.in_flight += 1
            stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
        try:
            self._answer(body)
        finally:
            with stub._lock:
                stub.in_flight -= 1

    def _answer(self, body: dict[str, Any]) -> None:
        stub = self.stub
        action = stub._next()
        kind = action.kind if action is not None else ""
        if kind == "status":
            self.send_json(action.status, {"object": "error", "message": f"scripted status {action.status}",
                                           "type": "ServerError", "code": action.status}, action.headers)
            return
        if kind == "hang":
            stub._stop.wait(min(action.seconds or HANG_MAX_SECONDS, HANG_MAX_SECONDS))
            self.close_connection = True
            return
        if kind == "sleep":
            stub._stop.wait(min(action.seconds, HANG_MAX_SECONDS))
        if kind == "garbage":
            self.send_bytes(200, b"<html><body>502 Bad Gateway</body></html>")
            return
        stub._respond(self, body, action)


class ServedStub:
    """Base of the stubs: scripting, recording, counting and the server's lifecycle (see the module docstring).

    Use a subclass as a context manager; ``stub.base_url`` is ``http://127.0.0.1:PORT/v1``.
    """

    #: The POST route the model answers (e.g. ``/v1/completions``).
    route: ClassVar[str]

    def __init__(self, *, served_name: str, version: str, fingerprint: str) -> None:
        self.served_name = served_name
        self.version = version
        self.fingerprint = fingerprint
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
        """Queue actions for the model's requests (consumed in order)."""
        with self._lock:
            self._queue.extend(actions)

    def always(self, action: Action | None) -> None:
        """Answer every model request with ``action`` once the queue is empty (None: normally)."""
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

    def count(self, path: str | None = None) -> int:
        """How many requests reached ``path`` (default: the model's route)."""
        path = self.route if path is None else path
        with self._lock:
            return sum(1 for r in self.requests if r["path"] == path)

    # ------------------------------------------------------------ what subclasses answer
    def _model_entry(self) -> dict[str, Any]:
        """The served model's entry in ``GET /v1/models``."""
        return {"id": self.served_name, "object": "model", "created": 0, "owned_by": "stub"}

    def _wrong_model(self, handler: _Handler, body: dict[str, Any]) -> bool:
        """Answer 404 as vLLM does to a request for another model; True when it did."""
        if body.get("model") == self.served_name:
            return False
        handler.send_json(404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                                "type": "NotFoundError", "code": 404})
        return True

    def _respond(self, handler: _Handler, body: dict[str, Any], action: Action | None) -> None:
        """Answer a request to :attr:`route` once the common faults were played."""
        raise NotImplementedError

    # ------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self):
        handler = type("Handler", (_Handler,), {"stub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
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

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
