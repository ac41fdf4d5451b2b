"""A small local Hugging Face Hub for tests: the endpoints ``huggingface_hub`` uses to commit and read back.

It speaks the real HTTP protocol that ``huggingface_hub`` 2.x uses, so the
product's code runs unchanged against it (``endpoint=stub.url``):

* ``GET  /api/whoami-v2``
* ``POST /api/repos/create`` (409 with the repo URL when it exists)
* ``POST /api/validate-yaml`` (called when a README.md is committed)
* ``POST /api/{type}s/{ns}/{name}/preupload/{rev}`` (answers ``uploadMode: "regular"``
  and the git-SHA1 ``oid`` of an existing file)
* ``POST /api/{type}s/{ns}/{name}/commit/{rev}`` (NDJSON ``header`` / ``file`` lines, base64 content)
* ``GET  /api/{type}s/{ns}/{name}/tree/{rev}[/{path}]`` (recursive, paginated with a ``Link`` header)
* ``GET  /api/{type}s/{ns}/{name}[/revision/{rev}]`` (repo info)
* ``HEAD/GET /{type}s/{ns}/{name}/resolve/{rev}/{path}`` (file download with ``X-Repo-Commit`` and ``ETag``)

What it does **not** emulate: the LFS / Xet upload of large binary files (the
real Hub answers ``uploadMode: "lfs"`` for Parquet and images and the client
then uploads them to Xet storage before the commit; here every file goes
inline, base64, in the commit body), branches other than ``main``, pull
requests, and deletions of folders.

Faults (set on the :class:`StubHub` object while it runs):

* ``drop_commits`` — 1-based numbers of commit requests whose connection is
  dropped after the body was read and **before** the commit is applied;
* ``drop_after_apply`` — commit numbers applied and then dropped (the client
  never hears of its success);
* ``drop_midway`` — commit numbers whose connection is closed after reading
  only part of the request body;
* ``fail_commits`` — commit number → HTTP status to answer (e.g. 500);
* ``delay_s`` — seconds to wait before answering any request;
* ``down`` — an HTTP status (e.g. 503) answered to **every** request, reads
  included, while it is set: the hub is down (None: up);
* ``tokens`` — if set, write requests must carry ``Bearer <one of these>``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob " + str(len(data)).encode() + b"\0" + data).hexdigest()


class _Repo:
    def __init__(self, repo_type: str, repo_id: str) -> None:
        self.repo_type = repo_type
        self.repo_id = repo_id
        self.files: dict[str, bytes] = {}
        self.commits: list[dict[str, Any]] = []
        self.sha = hashlib.sha1(f"init:{repo_type}:{repo_id}".encode()).hexdigest()


class StubHub:
    """A running stub Hub on 127.0.0.1 (use as a context manager)."""

    def __init__(self, *, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.repos: dict[tuple[str, str], _Repo] = {}
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.auth_headers: list[str] = []
        self.commit_requests = 0
        self.drop_commits: set[int] = set()
        self.drop_after_apply: set[int] = set()
        self.drop_midway: set[int] = set()
        self.fail_commits: dict[int, int] = {}
        self.delay_s = 0.0
        self.down: int | None = None
        self.tokens: set[str] | None = None
        self.user = "stub-user"
        handler = type("Handler", (_Handler,), {"hub": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="stub-hub", daemon=True)

    # ------------------------------------------------------------- lifecycle
    def start(self) -> StubHub:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StubHub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------- inspection
    def repo(self, repo_id: str, repo_type: str = "dataset") -> _Repo:
        return self.repos[(repo_type, repo_id)]

    def add_file(self, repo_id: str, path: str, data: bytes, repo_type: str = "dataset") -> None:
        """Put a file into a repo directly (as if committed by someone else)."""
        with self.lock:
            repo = self.repos.setdefault((repo_type, repo_id), _Repo(repo_type, repo_id))
            repo.files[path] = data
            repo.sha = hashlib.sha1(repo.sha.encode() + path.encode()).hexdigest()

    def parquet_rows(self, repo_id: str, table: str) -> list[dict[str, Any]]:
        """All rows of ``data/<table>/*.parquet`` in the repo (duplicates kept)."""
        import pyarrow.parquet as pq

        rows: list[dict[str, Any]] = []
        for path, data in sorted(self.repo(repo_id).files.items()):
            if path.startswith(f"data/{table}/") and path.endswith(".parquet"):
                rows.extend(pq.read_table(io.BytesIO(data)).to_pylist())
        return rows


class _Handler(BaseHTTPRequestHandler):
    hub: StubHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    # ------------------------------------------------------------- helpers
    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None, head: bool = False) -> None:
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        if not isinstance(body, bytes):
            self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _error(self, status: int, message: str, code: str | None = None, head: bool = False) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._send(status, {"error": message}, headers, head=head)

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _authorised(self) -> bool:
        auth = self.headers.get("Authorization", "")
        self.hub.auth_headers.append(auth)
        if self.hub.tokens is None:
            return True
        return auth.startswith("Bearer ") and auth[len("Bearer "):] in self.hub.tokens

    def _repo(self, rtype: str, rid: str) -> _Repo | None:
        return self.hub.repos.get((rtype, rid))

    # ------------------------------------------------------------- routing
    def do_HEAD(self) -> None:
        self._route("HEAD")

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        if self.hub.delay_s:
            time.sleep(self.hub.delay_s)
        parsed = urlparse(self.path)
        parts = [unquote(p) for p in parsed.path.split("/") if p]
        query = parse_qs(parsed.query)
        self.hub.requests.append((method, parsed.path))
        if self.hub.down:
            self._body()
            return self._error(self.hub.down, "Service Unavailable", head=method == "HEAD")
        try:
            if parts[:2] == ["api", "whoami-v2"]:
                if not self._authorised() or not self.headers.get("Authorization"):
                    return self._error(401, "Invalid credentials in Authorization header")
                return self._send(200, {"type": "user", "name": self.hub.user, "orgs": [],
                                        "auth": {"type": "access_token",
                                                 "accessToken": {"displayName": "stub", "role": "write"}}})
            if parts[:3] == ["api", "repos", "create"] and method == "POST":
                return self._create(json.loads(self._body() or b"{}"))
            if parts[:2] == ["api", "validate-yaml"] and method == "POST":
                self._body()
                return self._send(200, {"errors": [], "warnings": []})
            if len(parts) >= 4 and parts[0] == "api" and parts[1] in ("datasets", "models", "spaces"):
                rtype = parts[1][:-1]
                rid = f"{parts[2]}/{parts[3]}"
                rest = parts[4:]
                if rest[:1] == ["preupload"] and method == "POST":
                    return self._preupload(rtype, rid)
                if rest[:1] == ["commit"] and method == "POST":
                    return self._commit(rtype, rid)
                if rest[:1] == ["tree"] and method == "GET":
                    return self._tree(rtype, rid, "/".join(rest[2:]), query)
                if (not rest or rest[:1] == ["revision"]) and method == "GET":
                    return self._info(rtype, rid)
            if len(parts) >= 6 and parts[0] in ("datasets", "spaces") and parts[3] == "resolve":
                return self._resolve(parts[0][:-1], f"{parts[1]}/{parts[2]}", "/".join(parts[5:]), method)
            return self._error(404, f"no route for {method} {parsed.path}")
        except (ConnectionError, BrokenPipeError):
            return None

    # ------------------------------------------------------------- endpoints
    def _create(self, payload: dict[str, Any]) -> None:
        if not self._authorised():
            return self._error(401, "Invalid credentials")
        rtype = payload.get("type") or "model"
        name, org = payload.get("name"), payload.get("organization") or self.hub.user
        rid = f"{org}/{name}"
        prefix = "" if rtype == "model" else f"{rtype}s/"
        url = f"{self.hub.url}/{prefix}{rid}"
        with self.hub.lock:
            if (rtype, rid) in self.hub.repos:
                return self._send(409, {"error": "You already created this repo", "url": url})
            self.hub.repos[(rtype, rid)] = _Repo(rtype, rid)
        return self._send(200, {"url": url, "name": rid, "id": rid})

    def _preupload(self, rtype: str, rid: str) -> None:
        payload = json.loads(self._body() or b"{}")
        if not self._authorised():
            return self._error(401, "Invalid credentials")
        repo = self._repo(rtype, rid)
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound")
        files = []
        for f in payload.get("files", []):
            existing = repo.files.get(f["path"])
            files.append({"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                          "oid": git_blob_sha1(existing) if existing is not None else None})
        return self._send(200, {"files": files, "commitOid": repo.sha})

    def _commit(self, rtype: str, rid: str) -> None:
        with self.hub.lock:
            self.hub.commit_requests += 1
            number = self.hub.commit_requests
        if number in self.hub.drop_midway:
            n = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(min(n // 2, 64))
            return self._drop()
        body = self._body()
        if number in self.hub.drop_commits:
            return self._drop()
        if number in self.hub.fail_commits:
            return self._error(self.hub.fail_commits[number], "Internal Error - We're working hard to fix this")
        if not self._authorised():
            return self._error(401, "Invalid credentials")
        repo = self._repo(rtype, rid)
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound")
        header: dict[str, Any] = {}
        adds: dict[str, bytes] = {}
        deletes: list[str] = []
        for line in body.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "header":
                header = value
            elif key == "file":
                if value.get("encoding") != "base64":
                    return self._error(400, "only base64 file content is supported")
                adds[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                deletes.append(value["path"])
            else:
                return self._error(400, f"the stub hub does not support '{key}' operations")
        if not header.get("summary"):
            return self._error(400, "commit summary is required")
        with self.hub.lock:
            parent = header.get("parentCommit")
            if parent and parent != repo.sha:
                return self._error(412, "A commit has happened since. Please refresh and try again.")
            repo.files.update(adds)
            for p in deletes:
                repo.files.pop(p, None)
            repo.sha = hashlib.sha1((repo.sha + json.dumps(sorted(adds))).encode()).hexdigest()
            repo.commits.append({"oid": repo.sha, "summary": header["summary"], "files": sorted(adds)})
            oid = repo.sha
        if number in self.hub.drop_after_apply:
            return self._drop()
        prefix = "" if rtype == "model" else f"{rtype}s/"
        return self._send(200, {"commitUrl": f"{self.hub.url}/{prefix}{rid}/commit/{oid}", "commitOid": oid,
                                "pullRequestUrl": None})

    def _tree(self, rtype: str, rid: str, path: str, query: dict[str, list[str]]) -> None:
        repo = self._repo(rtype, rid)
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound")
        recursive = query.get("recursive", ["False"])[0].lower() == "true"
        prefix = f"{path.strip('/')}/" if path.strip("/") else ""
        entries: dict[str, dict[str, Any]] = {}
        for p, data in sorted(repo.files.items()):
            if not p.startswith(prefix):
                continue
            rel = p[len(prefix):].split("/")
            for depth in range(1, len(rel)):
                folder = prefix + "/".join(rel[:depth])
                if recursive or depth == 1:
                    entries.setdefault(folder, {"type": "directory", "path": folder,
                                                "oid": hashlib.sha1(folder.encode()).hexdigest()})
            if recursive or len(rel) == 1:
                entries[p] = {"type": "file", "path": p, "size": len(data), "oid": git_blob_sha1(data)}
        if prefix and not entries:
            return self._error(404, f"Entry not found: {path}", "EntryNotFound")
        items = [entries[k] for k in sorted(entries)]
        start = int(query.get("cursor", ["0"])[0])
        page = items[start: start + self.hub.page_size]
        headers = {}
        if start + self.hub.page_size < len(items):
            q = f"recursive={recursive}&expand=False&cursor={start + self.hub.page_size}"
            url = f"{self.hub.url}/api/{rtype}s/{rid}/tree/main/{quote(path)}".rstrip("/")
            headers["Link"] = f'<{url}?{q}>; rel="next"'
        return self._send(200, page, headers)

    def _info(self, rtype: str, rid: str) -> None:
        repo = self._repo(rtype, rid)
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound")
        return self._send(200, {"id": rid, "_id": rid, "sha": repo.sha, "private": False,
                                "siblings": [{"rfilename": p} for p in sorted(repo.files)]})

    def _resolve(self, rtype: str, rid: str, path: str, method: str) -> None:
        head = method == "HEAD"
        repo = self._repo(rtype, rid)
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound", head=head)
        data = repo.files.get(path)
        if data is None:
            return self._send(404, {"error": "Entry not found"},
                              {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.sha}, head=head)
        headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{git_blob_sha1(data)}"',
                   "Content-Type": "application/octet-stream"}
        return self._send(200, data, headers, head=head)
