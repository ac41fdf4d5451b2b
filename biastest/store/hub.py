"""Opt-in sync of the local store with a Hugging Face dataset repository.

Turned on when a dataset repository and a write token are configured — passed
explicitly, or from the environment (``BIASTEST_HF_DATASET`` and
``HF_TOKEN``; on a Space, secrets are environment variables). Without them the
product works fully locally and :meth:`HubSync.status` says that sync is off.

How it stays safe with many writers:

* **Local first.** Every row is written to the local store before anything is
  pushed; a failed or interrupted push loses nothing and is retried later.
* **Append-only.** The store's shard files are immutable and uniquely named
  (time, process, random); each push commits *new* files with
  ``HfApi.create_commit``. No shared file is ever read, modified and written
  back, so two users pushing at once never overwrite each other.
* **No duplicate rows on retry.** A local ledger
  (``.biastest/hub/<repo>/pushed.txt``) lists the files known to be on the
  Hub; before uploading, the remote listing is checked, so a commit that
  succeeded although its answer was lost is recognised and not sent again.
  And a file re-sent under the same name replaces itself with the same
  bytes: a row can never appear twice because of a retry.
* **Batched, in the background.** :meth:`HubSync.start` runs a thread that
  pushes shortly after new files appear (and every ``interval_s``), in
  commits of at most ``batch_files`` files, with bounded retries and
  exponential backoff. :meth:`HubSync.flush` pushes now; :meth:`HubSync.stop`
  flushes and ends the thread.
* **Pull = refresh a local cache.** :meth:`HubSync.pull` lists the remote
  shards and downloads only those not present locally (images referenced by
  new image rows first, then the shard, each moved into place atomically);
  retrieval then reads them through the store's indexes, never a download
  per click.

The token lives only in memory (this object and the ``huggingface_hub``
client calls); it is never written to disk, logs, rows or exports, and error
messages name only the kind of failure.

The real Hub uploads Parquet and image files through its LFS/Xet storage
(``uploadMode: "lfs"`` in the pre-upload answer); ``huggingface_hub`` does
that inside ``create_commit``, so this code takes the same path there.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from biastest import settings
from biastest.errors import SyncError
from biastest.paths import UnsafeNameError, resolve_under
from biastest.store.local import LOCAL_ONLY_SUFFIX, TABLES, DatasetStore
from biastest.store.schema import SCHEMAS

__all__ = [
    "DATASET_ENV",
    "TOKEN_ENV",
    "ENDPOINT_ENV",
    "HubSync",
    "SyncStatus",
    "PushReport",
    "PullReport",
    "dataset_card",
    "hub_api",
    "is_network_error",
    "write_card",
]

log = logging.getLogger(__name__)

DATASET_ENV = "BIASTEST_HF_DATASET"
TOKEN_ENV = "HF_TOKEN"
ENDPOINT_ENV = "HF_ENDPOINT"

MSG_SYNC_OFF = (
    "Sync with a Hugging Face dataset is off: everything is kept in the local store only. To share test data, "
    "set BIASTEST_HF_DATASET (a dataset repository such as user/bias-test-data) and HF_TOKEN (a write token); "
    "on a Space, add them as secrets."
)
MSG_SYNC_NO_TOKEN = (
    "Sync with the Hugging Face dataset {repo_id} is off because no write token is configured: everything is kept "
    "in the local store only. Set HF_TOKEN (on a Space, as a secret) to share test data."
)
MSG_SYNC_NO_REPO = (
    "Sync with a Hugging Face dataset is off because no dataset repository is configured: everything is kept in "
    "the local store only. Set BIASTEST_HF_DATASET (for example user/bias-test-data) to share test data."
)
MSG_SYNC_ON = "Syncing with the Hugging Face dataset {repo_id}: {pending} file(s) waiting, {pushed} pushed."
MSG_SYNC_ERROR = (
    "Syncing with the Hugging Face dataset {repo_id}: the last push failed ({problem}); {pending} file(s) are "
    "kept in the local store and will be pushed again."
)
MSG_PUSH_NOTHING = "Nothing new to push to {repo_id}."
MSG_PUSH_DONE = "Pushed {files} new file(s) to {repo_id} in {commits} commit(s)."
MSG_PUSH_FAILED = (
    "Could not push to the Hugging Face dataset {repo_id} ({problem}). Nothing is lost: {pending} file(s) stay in "
    "the local store and will be pushed on the next try."
)
MSG_PUSH_AUTH = (
    "The Hugging Face Hub refused the token for {repo_id} (HTTP {status}). Check that HF_TOKEN is a write token "
    "with access to that dataset. Nothing is lost: the rows stay in the local store."
)
MSG_PULL_DONE = "Downloaded {files} new file(s) from {repo_id}; the local store is up to date."
MSG_PULL_NOTHING = "The local store already has every file of {repo_id}."
MSG_PULL_SKIPPED = " {n} file(s) of the dataset were skipped: {why}"
MSG_SHARD_UNREADABLE = "The image shard {path} cannot be read as Parquet; it was not used."
MSG_PULL_FAILED = "Could not read the Hugging Face dataset {repo_id} ({problem}); the local store is unchanged."
MSG_BAD_REPO_ID = "'{repo_id}' is not a dataset repository name; write it as owner/name (for example user/bias-data)."


def hub_api(*, endpoint: str | None = None, token: str | bool | None = None):
    """A ``huggingface_hub.HfApi`` client (``endpoint`` defaults to ``$HF_ENDPOINT`` or the Hub)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint or None, token=token, library_name="biastest")


def is_network_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the Hub could not be reached (worth retrying later)."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    if isinstance(exc, OfflineModeIsEnabled | ConnectionError | TimeoutError):
        return True
    try:
        import httpx2

        if isinstance(exc, httpx2.TransportError):
            return True
    except ImportError:  # pragma: no cover
        pass
    try:
        import httpx

        if isinstance(exc, httpx.TransportError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return False


def _status_code(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _is_transient(exc: BaseException) -> bool:
    if is_network_error(exc):
        return True
    code = _status_code(exc)
    return code is not None and (code == 429 or code >= 500)


def _problem(exc: BaseException) -> str:
    code = _status_code(exc)
    return f"{type(exc).__name__}, HTTP {code}" if code else type(exc).__name__


# ---------------------------------------------------------------- dataset card
_TABLE_DOC = {
    "sentences": "test sentences (generated, imported or typed), one group term and one attribute term each",
    "pairs": "stereotyped / anti-stereotyped sentence pairs",
    "images": "metadata of the image files under images/ (path, sha256, the term, prompt, generator)",
    "specs": "bias specifications in the BiasTestGPT JSON form",
    "results": "test results in their JSON form",
}


#: What each column holds (the same name means the same thing in every table).
_COLUMN_DOC = {
    "id": "content hash of the record (16 hex digits); the key rows are deduplicated on",
    "text": "the test sentence",
    "group_term": "the social-group term the sentence is about (e.g. 'woman')",
    "attribute_term": "the attribute term it pairs with the group (e.g. 'math')",
    "template": "the sentence with the group term replaced by [T] (and the attribute by [A] where known)",
    "source": "where the record came from: generated, upload, imported:<dataset or file>, typed …",
    "generator": "what made it: openai, openai-compatible, local, upload …",
    "model": "the model that generated it, or that a result is about",
    "prompt": "the prompt (name or text) it was generated with",
    "spec_name": "the bias specification it was made for",
    "seed": "the random seed of its generation (empty when none was used)",
    "created_at": "when it was made (UTC, ISO 8601)",
    "provenance": "JSON: who or what made the row and when (stored_at, stored_by, versions, generator settings …)",
    "stereotyped": "the sentence of the pair that follows the stereotype",
    "anti_stereotyped": "the same sentence with the other group's term",
    "group_term_stereotyped": "the group term of the stereotyped sentence",
    "group_term_anti": "the group term of the anti-stereotyped sentence",
    "category": "the attribute list the attribute term belongs to",
    "path": "the image file, relative to the repository root (images/<sha256>.<ext>)",
    "sha256": "SHA-256 of the image file's bytes",
    "image_term": "the term the picture shows (a group term of the specification)",
    "width": "image width in pixels",
    "height": "image height in pixels",
    "name": "the specification's name",
    "spec_json": "the specification in the BiasTestGPT JSON form",
    "kind": "the kind of test: lm, vlm or embeddings",
    "method": "the scoring method or test",
    "result_json": "the full result as JSON, with its own provenance (seed, model revision, versions)",
    "schema_version": "version of this layout (1); readers refuse newer versions instead of misreading them",
}


def dataset_card(repo_id: str = "") -> str:
    """README.md for the dataset repository: YAML front matter plus the schema of each table."""
    lines = ["---", "license: apache-2.0", "pretty_name: biastest test data", "tags:", "- bias", "- fairness",
             "- biastest", "configs:"]
    for t in TABLES:
        lines += [f"- config_name: {t}", "  data_files:", "  - split: train", f"    path: data/{t}/*.parquet"]
    lines += ["---", "", f"# biastest test data{f' ({repo_id})' if repo_id else ''}", "",
              "Test sentences, sentence pairs, images, bias specifications and results written by the biastest "
              "apps. Every table is a folder of **append-only Parquet shards**: each writer adds new, uniquely "
              "named files and never rewrites one, so several users can write at once. Records have content-hash "
              "`id`s; read all shards of a table and keep the first row of each `id` (shards sort by the UTC time "
              "that starts their names).", "",
              "`provenance` is a JSON string (who or what made the row, when, with which versions). No key or "
              "token is ever stored.", ""]
    for t in TABLES:
        lines += [f"## `{t}` — {_TABLE_DOC[t]}", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{f.name}` | {f.type} | {_COLUMN_DOC[f.name]} |" for f in SCHEMAS[t]]
        lines.append("")
    lines += ["Images: `images/<sha256>.<ext>`, referenced by the `path` column of `images`.", "",
              "## Provenance", "",
              "Every row's `provenance` JSON has at least `stored_at` (UTC time the row was stored) and `stored_by` "
              "(the writer: an app, the command line, or an import); generated rows add the generator, its model and "
              "settings, the prompt and the seed; imported rows name their source file or dataset. No API key or "
              "token is ever stored.", "",
              "## Licence", "",
              "Licence: Apache-2.0 for what biastest users generate here. Rows imported from other datasets keep "
              "their own licence (their `source` names them; the public BiasTestGPT sentences are Apache-2.0).", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- reports
@dataclass(frozen=True)
class SyncStatus:
    """What :meth:`HubSync.status` reports."""

    enabled: bool
    repo_id: str
    message: str
    pending: int
    pushed: int
    running: bool
    last_push_at: str
    last_error: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PushReport:
    """What one push did.

    Attributes
    ----------
    ok : bool
        Every pending file is on the Hub now.
    pushed : tuple of str
        Files committed by this push.
    already_remote : tuple of str
        Pending files found on the Hub already (e.g. a commit whose answer
        was lost); recorded, not sent again.
    commits, attempts : int
    pending : int
        Files still waiting.
    message : str
    """

    ok: bool
    pushed: tuple[str, ...]
    already_remote: tuple[str, ...]
    commits: int
    attempts: int
    pending: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "pushed": list(self.pushed), "already_remote": list(self.already_remote)}


@dataclass(frozen=True)
class PullReport:
    """What one pull did."""

    ok: bool
    downloaded: tuple[str, ...]
    message: str
    skipped: tuple[str, ...] = ()  # why each file that cannot be used was left out (it names the file)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "downloaded": list(self.downloaded), "message": self.message,
                "skipped": list(self.skipped)}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------- sync
class HubSync:
    """Background, append-only sync between a :class:`DatasetStore` and a Hub dataset.

    Parameters
    ----------
    store : DatasetStore
    repo_id : str, optional
        ``owner/name`` of the dataset; default ``$BIASTEST_HF_DATASET``.
    token : str, optional
        A write token; default ``$HF_TOKEN``. Kept in memory only.
    endpoint : str, optional
        Hub URL; default ``$HF_ENDPOINT`` or https://huggingface.co.
    private : bool
        Visibility if the repository has to be created.
    batch_files : int
        At most this many files per commit.
    interval_s : float
        The background thread pushes at least this often.
    batch_delay_s : float
        After a new file appears, wait this long to batch further writes.
    max_attempts : int
        Attempts per push (transient failures only); then the files stay
        pending for the next push.
    backoff_s, max_backoff_s : float
        Exponential backoff between attempts: ``backoff_s * 2**k``, capped.
    """

    def __init__(
        self,
        store: DatasetStore,
        *,
        repo_id: str | None = None,
        token: str | None = None,
        endpoint: str | None = None,
        private: bool = True,
        batch_files: int = 200,
        interval_s: float = 60.0,
        batch_delay_s: float = 5.0,
        max_attempts: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
    ) -> None:
        self.store = store
        self.repo_id = (repo_id if repo_id is not None else settings.hf_dataset()).strip()
        self.__token = (token if token is not None else settings.hf_token() or "").strip()
        if self.repo_id and self.repo_id.count("/") != 1:
            raise SyncError(MSG_BAD_REPO_ID.format(repo_id=self.repo_id))
        self.endpoint = endpoint or settings.hf_endpoint()
        self.private = private
        self.batch_files = max(1, int(batch_files))
        self.interval_s = float(interval_s)
        self.batch_delay_s = float(batch_delay_s)
        self.max_attempts = max(1, int(max_attempts))
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.probe_timeout_s = 15.0
        self._push_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._repo_ready = False
        self._last_push_at = ""
        self._last_error = ""

    def __repr__(self) -> str:  # never shows the token
        return f"HubSync(repo_id={self.repo_id!r}, enabled={self.enabled})"

    # ------------------------------------------------------------ config
    @property
    def enabled(self) -> bool:
        """Both a repository and a token are configured."""
        return bool(self.repo_id and self.__token)

    @property
    def last_error(self) -> str:
        """The failure kind of the last push ("" when it succeeded or none was tried)."""
        return self._last_error

    def _api(self):
        return hub_api(endpoint=self.endpoint, token=self.__token)

    @property
    def ledger_path(self) -> Path:
        safe = self.repo_id.replace("/", "--") or "none"
        return self.store.state_dir / "hub" / safe / "pushed.txt"

    def _ledger_lines(self) -> list[tuple[str, str]]:
        try:
            text = self.ledger_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out = []
        for ln in text.splitlines():
            path, _, commit = ln.strip().partition("\t")
            if path:
                out.append((path, commit))
        return out

    def _ledger(self) -> set[str]:
        return {path for path, _ in self._ledger_lines()}

    @property
    def pulled_path(self) -> Path:
        return self.ledger_path.parent / "pulled.txt"

    def pulled_files(self) -> set[str]:
        """Store files that came from the dataset by :meth:`pull` (in this process or an earlier one)."""
        try:
            return {ln.strip() for ln in self.pulled_path.read_text(encoding="utf-8").splitlines() if ln.strip()}
        except FileNotFoundError:
            return set()

    def _record_pulled(self, path: str) -> None:
        self.pulled_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.pulled_path, "a", encoding="utf-8") as fh:
            fh.write(path + "\n")

    def commits(self) -> dict[str, str]:
        """File → id of the commit that pushed it ("" when it was found on the Hub or pulled from it)."""
        out: dict[str, str] = {}
        for path, commit in self._ledger_lines():
            if commit or path not in out:
                out[path] = commit
        return out

    def _record(self, paths: Iterable[str], *, commit: str = "") -> None:
        paths = list(paths)
        if not paths:
            return
        self.ledger_path.parent.mkdir(parents=True, exist_ok=True)
        suffix = f"\t{commit}" if commit else ""
        with open(self.ledger_path, "a", encoding="utf-8") as fh:
            fh.write("".join(p + suffix + "\n" for p in paths))
            fh.flush()
            os.fsync(fh.fileno())

    def local_files(self) -> list[str]:
        """Files of the store that belong on the Hub (images first, then shards by table and name)."""
        root = self.store.root
        images = sorted(p.relative_to(root).as_posix() for p in (root / "images").glob("*") if p.is_file())
        shards = [p.relative_to(root).as_posix() for p in self.store.shard_files()
                  if not p.stem.endswith(LOCAL_ONLY_SUFFIX)]
        return images + shards

    def pending(self) -> list[str]:
        """Local files not yet known to be on the Hub."""
        done = self._ledger()
        return [p for p in self.local_files() if p not in done]

    # ------------------------------------------------------------ status
    def status(self) -> SyncStatus:
        """Whether sync is on, and what is waiting."""
        if not self.enabled:
            if self.repo_id and not self.__token:
                msg = MSG_SYNC_NO_TOKEN.format(repo_id=self.repo_id)
            elif self.__token and not self.repo_id:
                msg = MSG_SYNC_NO_REPO
            else:
                msg = MSG_SYNC_OFF
            return SyncStatus(False, self.repo_id, msg, 0, 0, False, "", "")
        pending = len(self.pending())
        pushed = len(self._ledger())
        if self._last_error:
            msg = MSG_SYNC_ERROR.format(repo_id=self.repo_id, problem=self._last_error, pending=pending)
        else:
            msg = MSG_SYNC_ON.format(repo_id=self.repo_id, pending=pending, pushed=pushed)
        running = self._thread is not None and self._thread.is_alive()
        return SyncStatus(True, self.repo_id, msg, pending, pushed, running, self._last_push_at, self._last_error)

    # ------------------------------------------------------------ push
    def _remote_files(self, api) -> set[str]:
        from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError

        try:
            return {f.path for f in api.list_repo_tree(self.repo_id, repo_type="dataset", recursive=True)
                    if hasattr(f, "size")}
        except (EntryNotFoundError, RemoteEntryNotFoundError):
            return set()

    def _ensure_repo(self, api) -> None:
        if not self._repo_ready:
            api.create_repo(self.repo_id, repo_type="dataset", private=self.private, exist_ok=True)
            self._repo_ready = True
        else:
            self._probe(api)

    def _probe(self, api) -> None:
        """One quick request (no client-side retries) so an unreachable Hub fails fast.

        ``huggingface_hub`` retries listings on connection errors with waits
        of up to half a minute; this probe keeps a push or pull against an
        unreachable Hub from blocking that long.
        """
        api.dataset_info(self.repo_id, timeout=self.probe_timeout_s)

    def _push_batches(self, api, todo: Sequence[str], remote: set[str], pushed: list[str], tally: list[int]) -> None:
        """Commit ``todo`` in batches; committed files go to ``pushed`` and ``tally[0]`` counts commits.

        Both are updated as each commit succeeds, so they stay right when a later batch fails.
        """
        from huggingface_hub import CommitOperationAdd

        root = self.store.root
        card_needed = "README.md" not in remote
        for start in range(0, len(todo), self.batch_files):
            batch = list(todo[start:start + self.batch_files])
            ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(root / p)) for p in batch]
            if card_needed:
                ops.append(CommitOperationAdd(path_in_repo="README.md",
                                              path_or_fileobj=dataset_card(self.repo_id).encode("utf-8")))
            info = api.create_commit(self.repo_id, ops, repo_type="dataset",
                                     commit_message=f"biastest: add {len(batch)} file(s)",
                                     commit_description="Append-only shards written by biastest.")
            card_needed = False
            tally[0] += 1
            self._record(batch, commit=str(getattr(info, "oid", "") or ""))
            pushed.extend(batch)

    def push_now(self) -> PushReport:
        """Push every pending file now, in the caller's thread (bounded retries).

        Never raises for Hub or network failures: the report says what
        happened and the files stay pending.
        """
        if not self.enabled:
            return PushReport(False, (), (), 0, 0, 0, self.status().message)
        with self._push_lock:
            pushed: list[str] = []
            already: list[str] = []
            tally = [0]
            attempts = 0
            error: BaseException | None = None
            while attempts < self.max_attempts and not (attempts and self._stop.is_set()):
                attempts += 1
                todo = self.pending()
                if not todo:
                    error = None
                    break
                try:
                    api = self._api()
                    self._ensure_repo(api)
                    remote = self._remote_files(api)
                    found = [p for p in todo if p in remote]
                    self._record(found)
                    already.extend(found)
                    todo = [p for p in todo if p not in remote]
                    self._push_batches(api, todo, remote, pushed, tally)
                    error = None
                    break
                except Exception as exc:
                    error = exc
                    log.warning("push to %s failed (attempt %d of %d): %s", self.repo_id, attempts,
                                self.max_attempts, _problem(exc))
                    if not _is_transient(exc):
                        break
                    if attempts < self.max_attempts:
                        self._stop.wait(min(self.max_backoff_s, self.backoff_s * 2 ** (attempts - 1)))
            pending = len(self.pending())
            commits = tally[0]
            if error is None:
                self._last_error = ""
                self._last_push_at = _now()
                msg = (MSG_PUSH_DONE.format(files=len(pushed), repo_id=self.repo_id, commits=commits)
                       if pushed or already else MSG_PUSH_NOTHING.format(repo_id=self.repo_id))
                log.info("push to %s: %d file(s) in %d commit(s)", self.repo_id, len(pushed), commits)
                return PushReport(pending == 0, tuple(pushed), tuple(already), commits, attempts, pending, msg)
            code = _status_code(error)
            if code in (401, 403):
                msg = MSG_PUSH_AUTH.format(repo_id=self.repo_id, status=code)
            else:
                msg = MSG_PUSH_FAILED.format(repo_id=self.repo_id, problem=_problem(error), pending=pending)
            self._last_error = _problem(error)
            return PushReport(False, tuple(pushed), tuple(already), commits, attempts, pending, msg)

    # ------------------------------------------------------------ pull
    def pull(self) -> PullReport:
        """Download the remote shards (and their images) that the local store lacks.

        Works with a read-only token or none for a public dataset (only the
        repository must be configured). Never raises for Hub or network
        failures.
        """
        if not self.repo_id:
            return PullReport(False, (), MSG_SYNC_NO_REPO)
        from huggingface_hub import hf_hub_download

        api = hub_api(endpoint=self.endpoint, token=self.__token or False)
        root = self.store.root
        tmp_dir = self.store.state_dir / "hub" / self.repo_id.replace("/", "--") / "download"
        downloaded: list[str] = []

        def fetch(path: str) -> Path:
            return Path(hf_hub_download(self.repo_id, path, repo_type="dataset", endpoint=api.endpoint,
                                        token=self.__token or False, local_dir=tmp_dir))

        skipped: list[str] = []
        source = f"the file list of {self.repo_id}"
        try:
            self._probe(api)
            remote = self._remote_files(api)
            wanted = sorted(p for p in remote if p.startswith("data/") and p.endswith(".parquet")
                            and p.split("/")[1] in TABLES and not (root / p).exists())
            for path in wanted:
                try:  # a name that would leave the store: skip that shard, name it, pull the others
                    resolve_under(root, path, source=source)
                    resolve_under(tmp_dir, path, source=source)
                except UnsafeNameError as exc:
                    skipped.append(exc.message)
                    continue
                got = fetch(path)
                if path.startswith("data/images/"):
                    try:
                        rels = pq.read_table(got, columns=["path"]).column("path").to_pylist()
                    except (pa.ArrowException, OSError, KeyError):
                        skipped.append(MSG_SHARD_UNREADABLE.format(path=path))
                        continue
                    for rel in rels:
                        if rel and rel in remote and not (root / rel).exists():
                            try:
                                resolve_under(root, rel, source=f"the image shard {path}")
                                resolve_under(tmp_dir, rel, source=f"the image shard {path}")
                            except UnsafeNameError as exc:
                                skipped.append(exc.message)
                                continue
                            img = fetch(rel)
                            os.replace(img, root / rel)
                            downloaded.append(rel)
                os.replace(got, root / path)
                downloaded.append(path)
                self._record_pulled(path)
                if self.enabled:
                    self._record([path])
        except Exception as exc:
            if downloaded:
                self.store.refresh()
            return PullReport(False, tuple(downloaded),
                              MSG_PULL_FAILED.format(repo_id=self.repo_id, problem=_problem(exc)), tuple(skipped))
        self.store.refresh()
        if self.enabled:
            self._record([p for p in downloaded if p.startswith("images/")])
        msg = (MSG_PULL_DONE.format(files=len(downloaded), repo_id=self.repo_id) if downloaded
               else MSG_PULL_NOTHING.format(repo_id=self.repo_id))
        if skipped:
            msg += MSG_PULL_SKIPPED.format(n=len(skipped), why=" ".join(skipped))
        return PullReport(True, tuple(downloaded), msg, tuple(skipped))

    # ------------------------------------------------------------ background
    def _on_write(self, rel: str) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            woke = self._wake.wait(self.interval_s)
            if self._stop.is_set():
                break
            if woke:
                self._stop.wait(self.batch_delay_s)  # gather further writes into the same commit
                self._wake.clear()
            if self._stop.is_set():
                break
            try:
                if self.pending():
                    self.push_now()
            except Exception:  # the thread must survive anything
                log.exception("background push failed")

    def start(self) -> SyncStatus:
        """Start the background pusher (no-op when sync is off); returns the status."""
        if not self.enabled:
            return self.status()
        with self._state_lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self.store.add_listener(self._on_write)
                self._thread = threading.Thread(target=self._run, name="biastest-hub-sync", daemon=True)
                self._thread.start()
                if self.pending():
                    self._wake.set()
        return self.status()

    def retry_now(self) -> None:
        """Ask the background pusher to try the pending files now, not at its next interval (returns at once).

        A no-op while the pusher is not running (sync off, or not started).
        """
        if self._thread is not None and self._thread.is_alive():
            self._wake.set()

    def flush(self) -> PushReport:
        """Push everything pending now and wait for it (bounded by the retry settings)."""
        return self.push_now()

    def stop(self, *, flush: bool = True, timeout_s: float = 30.0) -> PushReport | None:
        """Stop the background thread; by default push what is pending first."""
        report = self.push_now() if flush and self.enabled else None
        with self._state_lock:
            self._stop.set()
            self._wake.set()
            thread, self._thread = self._thread, None
            self.store.remove_listener(self._on_write)
        if thread is not None:
            thread.join(timeout_s)
        return report

    def wait_idle(self, timeout_s: float = 30.0) -> bool:
        """Wait until nothing is pending (or ``timeout_s`` passes); True if idle."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.pending():
                return True
            time.sleep(0.05)
        return not self.pending()


def write_card(store: DatasetStore, repo_id: str = "") -> Path:
    """Write the dataset card into the store folder (as the Hub dataset's README.md)."""
    path = store.root / "README.md"
    path.write_text(dataset_card(repo_id), encoding="utf-8")
    return path

