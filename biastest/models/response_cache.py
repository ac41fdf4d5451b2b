"""The response cache of models that answer: a question asked once is not asked again.

A rerun, a resumed audit or a second user asking the same model the same
question costs nothing and gets the same answer. :class:`CachedChatLM` wraps
any :class:`~biastest.models.protocols.ChatLM`: it looks every request up,
asks the model only the misses (in one batch, each distinct request once) and
stores what was answered. When the model's run stops before it answered any
miss (a limit, the stop signal), the answers read from the cache are still
given and the misses are None, with the model's message as :attr:`CachedChatLM.stop_message`.

Key
---
An entry's key is the SHA-256 of the canonical JSON of

* where the model answers: the endpoint's address without credentials or
  query (:func:`biastest.remote.safe_base_url`), or ``process`` for a model in
  this process;
* the model: the name asked (served name or Hub id / folder) and its revision;
* the full request: :meth:`~biastest.models.chat_records.ChatRequest.digest`
  (messages, answer length, temperature, seed, sample, top log-probabilities).

A hosted name that moves to a new snapshot (``gpt-4o``) keeps its entries:
each cached reply records the ``served_model`` and ``system_fingerprint`` it
was answered under, and a run's provenance shows them. Likewise a model folder
in this process is known by its path (and a Hub model by its id and
revision): after replacing the weights or the chat template in a folder, turn
the cache off for the run or give it another folder.

On disk
-------
One JSON file per entry, ``<folder>/<key[:2]>/<key>.json``, holding the key's
parts, the request and the reply (:meth:`ChatReply.as_dict`), written
atomically (a temporary file in the same folder, then :func:`os.replace`), so
a reader sees a whole entry or none. The folder is the caller's; the default
is :func:`default_cache_dir` in the data dir. Only **answered** replies are
stored (a failed one is asked again next time). An entry that cannot be read,
is not JSON, or does not hold exactly the request and the model looked up
(corruption, a hand edit) is ignored and the question asked again (counted as
``ignored``). No API key is ever written: none is part of a key, a request or a
reply, and the address is stored without credentials.

A reply read from the cache has ``cached=True``; :meth:`CachedChatLM.describe`
adds the hits, misses, entries written and entries ignored to the model's own
provenance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biastest import settings
from biastest.errors import EndpointError
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest
from biastest.models.protocols import ChatLM, ProgressCallback
from biastest.remote import safe_base_url

__all__ = ["CACHE_FOLDER_NAME", "CACHE_VERSION", "CachedChatLM", "ResponseCache", "default_cache_dir", "model_scope"]

log = logging.getLogger(__name__)

#: The cache's folder under the data dir.
CACHE_FOLDER_NAME = "chat-responses"
#: The entries' format version (an entry of another version is ignored).
CACHE_VERSION = 1
MSG_FROM_CACHE = "Reading answers from the response cache"


def default_cache_dir() -> Path:
    """The response cache's folder: ``chat-responses`` in the data dir (:func:`biastest.settings.data_dir`)."""
    return settings.data_dir() / CACHE_FOLDER_NAME


def model_scope(model: Any) -> dict[str, Any]:
    """Where a chat backend answers and which model it is: the key's first two parts (no credentials)."""
    where = getattr(model, "where", None)
    return {"endpoint": safe_base_url(where) if isinstance(where, str) and where else "process",
            "model": str(model.model_id), "revision": getattr(model, "revision", None)}


class ResponseCache:
    """Answered chat replies on local disk, one JSON file per (endpoint, model, request) (see the module).

    Parameters
    ----------
    folder : str or Path
        Created when the first entry is written.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.written = 0
        self.ignored = 0
        self._scopes: dict[int, tuple[dict[str, Any], str]] = {}  # a scope's canonical JSON, made once

    def key(self, scope: dict[str, Any], request: ChatRequest) -> str:
        """The entry's key: SHA-256 of the canonical JSON of the scope, a new line, and the request's digest."""
        text = self._scopes.get(id(scope))
        if text is None or text[0] is not scope:
            text = (scope, json.dumps(scope, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
            self._scopes[id(scope)] = text
        return hashlib.sha256((text[1] + "\n" + request.digest()).encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, scope: dict[str, Any], request: ChatRequest) -> ChatReply | None:
        """The answered reply stored for ``request`` (``cached=True``), or None (a miss; a bad entry is ignored)."""
        key = self.key(scope, request)
        path = os.path.join(self.folder, key[:2], key + ".json")  # str paths: a rerun reads thousands
        reply = None
        try:
            with open(path, "rb") as f:
                data = json.loads(f.read())
            if not (isinstance(data, dict) and data.get("version") == CACHE_VERSION
                    and data.get("scope") == scope and data.get("request") == request.as_dict()):
                raise ValueError("the entry holds another request")
            stored = data["reply"]
            if not isinstance(stored, dict) or stored.get("status") != REPLY_ANSWERED:
                raise ValueError("not an answer")
            reply = ChatReply.from_dict({**stored, "cached": True})
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("response cache: the entry %s is ignored (%s); the question is asked again", key,
                        type(exc).__name__)
            with self._lock:
                self.ignored += 1
        with self._lock:
            if reply is None:
                self.misses += 1
            else:
                self.hits += 1
        return reply

    def put(self, scope: dict[str, Any], request: ChatRequest, reply: ChatReply) -> bool:
        """Store an answered reply (atomically); a failed one is not stored. True when written."""
        if reply.status != REPLY_ANSWERED:
            return False
        path = self.path(self.key(scope, request))
        entry = {"version": CACHE_VERSION, "scope": scope, "request": request.as_dict(),
                 "reply": dataclasses.replace(reply, cached=False).as_dict()}
        text = json.dumps(entry, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:  # a full or read-only disk costs the cache, never the run
            log.warning("response cache: an answer could not be stored in %s (%s)", self.folder, type(exc).__name__)
            return False
        with self._lock:
            self.written += 1
        return True

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "written": self.written, "ignored": self.ignored}


class CachedChatLM:
    """A :class:`~biastest.models.protocols.ChatLM` that asks ``inner`` only what the response cache lacks.

    Parameters
    ----------
    inner : ChatLM
        The model asked on a miss.
    folder : str or Path
        The cache's folder (:func:`default_cache_dir` for the data dir).
    """

    def __init__(self, inner: ChatLM, folder: str | Path) -> None:
        self.inner = inner
        self.cache = ResponseCache(folder)
        self.model_id = inner.model_id
        self.kind = inner.kind
        self.scope = model_scope(inner)
        self._stop_message: str | None = None

    @property
    def stop_message(self) -> str | None:
        """Why the last :meth:`chat` stopped before every miss was answered (the inner model's words)."""
        return self._stop_message

    def chat(self, requests: Sequence[ChatRequest], *,
             progress: ProgressCallback | None = None) -> list[ChatReply | None]:
        """One reply per request, in order: read from the cache, else asked (None: not asked, the run stopped)."""
        requests = list(requests)
        self._stop_message = None
        replies: list[ChatReply | None] = [self.cache.get(self.scope, r) for r in requests]
        hits = sum(r is not None for r in replies)
        total = len(requests)
        if hits and progress is not None:
            progress(hits, total, MSG_FROM_CACHE)
        todo: dict[str, list[int]] = {}
        for i, (request, reply) in enumerate(zip(requests, replies, strict=True)):
            if reply is None:
                todo.setdefault(request.digest(), []).append(i)
        if not todo:
            return replies
        asked = [requests[positions[0]] for positions in todo.values()]

        def relay(done: int, _total: int, message: str) -> None:
            if progress is not None:
                progress(hits + done, total, message)

        try:
            answers = self.inner.chat(asked, progress=relay)
            self._stop_message = self.inner.stop_message
        except EndpointError as exc:  # stopped before any miss was answered: the hits are still answers
            if not hits or "stopped_because" not in exc.details:
                raise
            answers, self._stop_message = [None] * len(asked), exc.message
        for request, positions, answer in zip(asked, todo.values(), answers, strict=True):
            if answer is not None:
                self.cache.put(self.scope, request, answer)
            for i in positions:
                replies[i] = answer
        return replies

    def describe(self) -> dict[str, Any]:
        """The model's own provenance, with the cache's hits, misses, entries written and ignored."""
        return {**self.inner.describe(), "response_cache": self.cache.stats()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"
