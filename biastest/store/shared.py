"""The shared dataset, live: pull in the background, push what users generate, say where things stand.

One :class:`SharedDataset` per process (the apps build it once beside the
shared store, :func:`biastest.runner.services.shared_dataset`) ties the local
:class:`~biastest.store.local.DatasetStore` to a Hugging Face dataset:

* **Which dataset.** With ``BIASTEST_HF_DATASET`` (and ``HF_TOKEN`` for
  writing) the configured dataset is pulled and everything users generate is
  pushed (:class:`~biastest.store.hub.HubSync`: journaled, append-only,
  retried). With a dataset but no token, it is pulled read-only. With none,
  the public BiasTestGPT sentences are pulled read-only
  (:func:`~biastest.store.importers.pull_public_biastestgpt`) and what users
  generate stays on this server.
* **Never in the way.** Pulls run in a background thread: at start, then every
  ``pull_interval_s`` (10 minutes), and on demand (:meth:`refresh`, the apps'
  "Refresh from the dataset" control, which also retries queued uploads).
  Retrieval never waits for the network; it reads whatever the store holds. Pushes run in HubSync's own thread, shortly
  after each write. A server restart resumes the push journal.
* **Said plainly.** :meth:`summary` is one Markdown paragraph for step 2 (which
  dataset, when it was last pulled, whether it can be reached, what is queued,
  how to turn sharing on); :meth:`item_state` says, per file a session wrote,
  whether it is saved locally, queued, pushed (with the commit id) or failed and
  waiting for the next try.

The token stays inside HubSync (memory only); nothing here stores or shows it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from biastest.store.hub import HubSync
from biastest.store.importers import PUBLIC_BIASTESTGPT_REPO, PULL_DONE, PULL_UP_TO_DATE, pull_public_biastestgpt
from biastest.store.local import LOCAL_ONLY_SUFFIX, DatasetStore

__all__ = [
    "ITEM_FAILED",
    "ITEM_LOCAL",
    "ITEM_PUSHED",
    "ITEM_QUEUED",
    "MODE_PUBLIC",
    "MODE_READ",
    "MODE_SYNC",
    "PULL_INTERVAL_S",
    "PullState",
    "SharedDataset",
]

log = logging.getLogger(__name__)

#: Seconds between background pulls.
PULL_INTERVAL_S = 600.0

MODE_SYNC = "sync"  # a configured dataset with a write token: pull and push
MODE_READ = "read"  # a configured dataset without a token: pull only
MODE_PUBLIC = "public"  # no dataset configured: the public BiasTestGPT sentences, read-only

ITEM_LOCAL = "saved locally"
ITEM_QUEUED = "queued"
ITEM_PUSHED = "pushed"
ITEM_FAILED = "failed, will retry"

MSG_NOT_CREATED = "The dataset {repo} does not exist yet: it is created with the first upload."
MSG_NOT_CREATED_READ = (
    "The dataset {repo} does not exist yet (or its name is mistyped): there is nothing to pull; it is created by "
    "the first upload of a server that shares it with a write token."
)
MSG_NOT_PULLED_YET = "not pulled yet (the first pull is under way)"
MSG_NEVER_PULLED = "not pulled yet: the last try was {ago}"
MSG_PULLED_AGO = "pulled {ago}"
MSG_SUMMARY_SYNC = (
    "Shared dataset **{repo}**: {pulled}. What users generate here is saved locally first and then shared "
    "({pending} file(s) queued, {pushed} pushed)."
)
MSG_SUMMARY_SYNC_ERROR = (
    "Shared dataset **{repo}**: {pulled}. The last upload failed ({problem}); {pending} file(s) are queued here and "
    "will be uploaded on the next try (on its own, or now with 'Refresh from the dataset') — nothing is lost."
)
MSG_SUMMARY_READ = (
    "Shared dataset **{repo}**: {pulled}, read-only (no write token is configured, so what users generate stays on "
    "this server; set HF_TOKEN to share it)."
)
MSG_SUMMARY_PUBLIC = (
    "No shared dataset of this server's own is configured: it reads the public BiasTestGPT sentences "
    "(**{repo}**, {pulled}) and keeps what its users generate on this server. To share test data, set "
    "BIASTEST_HF_DATASET (a dataset such as user/bias-test-data) and HF_TOKEN (a write token); on a Space, as a "
    "variable and a secret."
)
MSG_FOUND_LINE = "{n} {what} found: {parts}."
MSG_FROM_DATASET = "{n} from the shared dataset {repo} ({pulled})"
MSG_FROM_PUBLIC = "{n} from the public BiasTestGPT dataset {repo} ({pulled})"
MSG_FROM_HERE = "{n} made or imported on this server"
MSG_FROM_NOWHERE = "none stored yet"
MSG_UNREACHABLE = " The dataset cannot be reached right now ({problem}); retrieval uses what this server already has."


def _ago(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 60:
        return "just now"
    if s < 3600:
        m = s // 60
        return f"{m} min ago"
    h = s // 3600
    return f"{h} h ago"


@dataclass
class PullState:
    """The last pull: when it was tried, whether it reached the dataset, what it said, what it brought.

    ``ok_at`` is when a pull last reached the dataset: what the store holds from it is that recent.
    """

    at: float | None = None
    ok_at: float | None = None
    ok: bool | None = None
    message: str = ""
    files: int = 0
    problem: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "ok_at": self.ok_at, "ok": self.ok, "message": self.message, "files": self.files,
                "problem": self.problem}


class SharedDataset:
    """The process's link between the local store and the shared Hugging Face dataset.

    Parameters
    ----------
    store : DatasetStore
    repo_id, token, endpoint : str, optional
        Default ``$BIASTEST_HF_DATASET``, ``$HF_TOKEN``, ``$HF_ENDPOINT``.
    pull_interval_s : float
        Seconds between background pulls.
    public_repo : str, optional
        The public dataset pulled when none is configured (default BiasTestGPT's).
    clock : callable
        ``time.time``; tests pass their own.
    sync_options : mapping, optional
        Passed to :class:`~biastest.store.hub.HubSync` (batching, backoff …).
    """

    def __init__(
        self,
        store: DatasetStore,
        *,
        repo_id: str | None = None,
        token: str | None = None,
        endpoint: str | None = None,
        pull_interval_s: float = PULL_INTERVAL_S,
        public_repo: str | None = None,
        clock: Callable[[], float] = time.time,
        sync_options: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        # HubSync reads BIASTEST_HF_DATASET, HF_TOKEN and HF_ENDPOINT for what is not given
        self.sync = HubSync(store, repo_id=repo_id, token=token, endpoint=endpoint, **dict(sync_options or {}))
        self.endpoint = self.sync.endpoint
        self.public_repo = public_repo or PUBLIC_BIASTESTGPT_REPO
        self.pull_interval_s = float(pull_interval_s)
        self.clock = clock
        self.pulls = PullState()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:  # never shows the token
        return f"SharedDataset(mode={self.mode!r}, dataset={self.dataset!r})"

    # ------------------------------------------------------------ what it is
    @property
    def mode(self) -> str:
        """:data:`MODE_SYNC`, :data:`MODE_READ` or :data:`MODE_PUBLIC`."""
        if self.sync.enabled:
            return MODE_SYNC
        return MODE_READ if self.sync.repo_id else MODE_PUBLIC

    @property
    def dataset(self) -> str:
        """The dataset pulled from (the configured one, or the public BiasTestGPT one)."""
        return self.sync.repo_id or self.public_repo

    # ------------------------------------------------------------ pulling
    def pull_now(self) -> PullState:
        """Pull in the caller's thread (the background thread calls this); never raises."""
        with self._lock:
            self._idle.clear()
        try:
            if self.mode == MODE_PUBLIC:
                got = pull_public_biastestgpt(self.store, repo_id=self.public_repo, endpoint=self.endpoint,
                                              configured_dataset="")
                ok, files, message = got.status in (PULL_DONE, PULL_UP_TO_DATE), got.files_new, got.message
                problem = "" if ok else got.status
            else:
                report = self.sync.pull()
                ok, files, message = report.ok, len(report.downloaded), report.message
                problem = "" if ok else _problem_of(report.message)
                # A 404 reached the Hub: the dataset has no files yet (created by the first upload, here or on
                # another server sharing it), so the store is as recent as the dataset — not "cannot be reached".
                if not ok and self.mode in (MODE_SYNC, MODE_READ) and "404" in problem:
                    missing = MSG_NOT_CREATED if self.mode == MODE_SYNC else MSG_NOT_CREATED_READ
                    ok, message, problem = True, missing.format(repo=self.sync.repo_id), ""
        except Exception as exc:  # the thread and the app must survive anything
            log.exception("pull from %s failed", self.dataset)
            ok, files, message, problem = False, 0, "", type(exc).__name__
        with self._lock:
            self.pulls.at = self.clock()
            if ok:
                self.pulls.ok_at = self.pulls.at
            self.pulls.ok, self.pulls.files, self.pulls.message, self.pulls.problem = ok, files, message, problem
            self.pulls.history.append(self.pulls.to_dict())
            del self.pulls.history[:-20]
            self._idle.set()
        log.info("pull from %s: %s", self.dataset, message or problem)
        return self.pulls

    def _run(self) -> None:
        while not self._stop.is_set():
            self.pull_now()
            self._wake.wait(self.pull_interval_s)
            self._wake.clear()

    def start(self) -> SharedDataset:
        """Start pulling in the background (now, then every ``pull_interval_s``) and the pusher; returns self."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._idle.clear()
                self._thread = threading.Thread(target=self._run, name="biastest-dataset-pull", daemon=True)
                self._thread.start()
        self.sync.start()
        return self

    def refresh(self) -> None:
        """Ask for a pull now, and for the queued uploads to be tried again now (returns at once).

        :meth:`wait_pulled` waits for the pull. After an outage, the files that failed to upload go as soon as the
        pusher has gathered them (:meth:`~biastest.store.hub.HubSync.retry_now`), not at its next interval.
        """
        if self._thread is None or not self._thread.is_alive():
            self.start()
            return
        with self._lock:
            self._idle.clear()
        self._wake.set()
        self.sync.retry_now()

    def wait_pulled(self, timeout_s: float = 30.0) -> bool:
        """Wait until no pull is under way (bounded); True when idle."""
        return self._idle.wait(timeout_s)

    def stop(self, *, flush: bool = True, timeout_s: float = 30.0) -> None:
        """Stop pulling, push what is pending (by default) and stop the pusher."""
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)
        self.sync.stop(flush=flush, timeout_s=timeout_s)

    # ------------------------------------------------------------ telling
    def _pulled_text(self) -> str:
        """When the dataset was last pulled: the last pull that reached it (a failed try is not a pull)."""
        with self._lock:
            at, ok_at = self.pulls.at, self.pulls.ok_at
        if ok_at is not None:
            return MSG_PULLED_AGO.format(ago=_ago(self.clock() - ok_at))
        return MSG_NOT_PULLED_YET if at is None else MSG_NEVER_PULLED.format(ago=_ago(self.clock() - at))

    def summary(self) -> str:
        """One Markdown paragraph for step 2: which dataset, last pull, what is queued, how to share."""
        with self._lock:
            ok, problem, message = self.pulls.ok, self.pulls.problem, self.pulls.message
        pulled = self._pulled_text()
        mode = self.mode
        if mode == MODE_PUBLIC:
            text = MSG_SUMMARY_PUBLIC.format(repo=self.public_repo, pulled=pulled)
        elif mode == MODE_READ:
            text = MSG_SUMMARY_READ.format(repo=self.sync.repo_id, pulled=pulled)
        else:
            st = self.sync.status()
            if st.last_error:
                text = MSG_SUMMARY_SYNC_ERROR.format(repo=st.repo_id, pulled=pulled, problem=st.last_error,
                                                     pending=st.pending)
            else:
                text = MSG_SUMMARY_SYNC.format(repo=st.repo_id, pulled=pulled, pending=st.pending, pushed=st.pushed)
        if ok is False:
            text += MSG_UNREACHABLE.format(problem=problem or "no answer")
        elif mode == MODE_READ and ok and message.startswith(MSG_NOT_CREATED_READ.split("{repo}")[0]):
            text += " " + message  # read-only and the dataset is missing: perhaps a mistyped name
        return text

    def origins(self, table: str, ids: Iterable[str]) -> dict[str, int]:
        """How many of ``ids`` came from the shared dataset, from the public BiasTestGPT dataset, and from here.

        Returns
        -------
        dict
            ``{"dataset": n, "public": n, "here": n}`` (by the shard that holds each record's first copy).
        """
        shards = self.store.shards_of(table, ids)
        pulled = self.sync.pulled_files() if self.sync.repo_id else set()
        out = {"dataset": 0, "public": 0, "here": 0}
        for rel in shards.values():
            if rel in pulled:
                out["dataset"] += 1
            elif rel.rsplit("/", 1)[-1].removesuffix(".parquet").endswith(LOCAL_ONLY_SUFFIX):
                out["public"] += 1
            else:
                out["here"] += 1
        return out

    def found_line(self, table: str, ids: Iterable[str], *, what: str = "sentences") -> str:
        """'412 sentences found: 380 from the shared dataset org/name (pulled 3 min ago); 32 made on this server.'"""
        ids = list(dict.fromkeys(ids))
        counts = self.origins(table, ids)
        pulled = self._pulled_text()
        parts = []
        if counts["dataset"]:
            parts.append(MSG_FROM_DATASET.format(n=counts["dataset"], repo=self.sync.repo_id, pulled=pulled))
        if counts["public"]:
            parts.append(MSG_FROM_PUBLIC.format(n=counts["public"], repo=self.public_repo, pulled=pulled))
        if counts["here"]:
            parts.append(MSG_FROM_HERE.format(n=counts["here"]))
        return MSG_FOUND_LINE.format(n=len(ids), what=what, parts="; ".join(parts) or MSG_FROM_NOWHERE)

    def item_state(self, files: Iterable[str]) -> dict[str, tuple[str, str]]:
        """For files a session wrote (store-relative paths): ``(state, commit id)``.

        States: :data:`ITEM_LOCAL` (sharing is off, or the file is local-only), :data:`ITEM_QUEUED`,
        :data:`ITEM_FAILED` (the last upload failed; it is retried), :data:`ITEM_PUSHED` (with the commit
        that carried it, "" when it was found on the dataset already).
        """
        files = list(files)
        if self.mode != MODE_SYNC:
            return {f: (ITEM_LOCAL, "") for f in files}
        commits = self.sync.commits()
        failed = bool(self.sync.last_error)  # not status(): that lists every file, and the panel asks every 5 s
        out = {}
        for f in files:
            if f in commits:
                out[f] = (ITEM_PUSHED, commits[f])
            else:
                out[f] = (ITEM_FAILED if failed else ITEM_QUEUED, "")
        return out


def _problem_of(message: str) -> str:
    """The failure kind a pull report's message carries in parentheses (never a token or a path)."""
    if "(" in message and ")" in message:
        return message[message.index("(") + 1: message.index(")")]
    return "no answer"
