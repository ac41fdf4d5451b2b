"""One private working folder per process for everything the server writes for a while.

Downloads (CSV/JSON exports) and a session's own files (the pictures of a
vision-language test) live under one folder per process, never loose in the
system temp dir::

    <tmp>/biastest-<pid>-<random>/        process_dir(): mode 0700, removed at exit and on SIGTERM
      owner                              "<host> <pid>": who made it (for crash leftovers)
      sessions/<key>/                    session_dir(id): one per user session (key = sha256 of the id)
        exports/<random>/                new_export_dir(id): one per download
        biastest-vqa-session-<random>/   a VQA test's pictures
      exports/<random>/                  new_export_dir(): downloads made outside a session (CLI, library)

How it is cleaned up:

* **a session ends** — the apps call :func:`remove_session` from Gradio's
  ``unload`` event (the browser tab closed or reloaded), so the session's
  pictures and downloads go with it;
* **a session that never said goodbye** — a sweeper thread removes session
  and export folders in which nothing changed for ``BIASTEST_SESSION_MAX_AGE``
  seconds (default two hours; the newest modification time of the folder or
  anything in it counts, and every :func:`session_dir` call touches it);
* **the process ends** — ``atexit`` removes the whole folder; the servers
  also remove it on SIGTERM (:func:`remove_on_sigterm`);
* **a process that crashed** — when a process makes its folder it removes
  the folders of earlier processes of the same user on the same host whose
  process is gone (see :func:`remove_dead_process_dirs`);
* **a cache someone else fills** — the same sweeper tidies the folders given
  to :func:`watch_cache_dir` (the apps give it Gradio's cache): see
  :func:`tidy_cache_dir` for what it removes there.

Nothing here imports gradio; the folder names hold no user data (session
ids are hashed, so a client-chosen id can never name a path).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import signal
import socket
import stat
import tempfile
import threading
import time
from pathlib import Path

from biastest import settings

__all__ = [
    "PREFIX",
    "last_activity",
    "new_export_dir",
    "process_dir",
    "remove_dead_process_dirs",
    "remove_on_sigterm",
    "remove_process_dir",
    "remove_session",
    "session_dir",
    "session_key",
    "session_max_age",
    "sweep",
    "tidy_cache_dir",
    "watch_cache_dir",
]

PREFIX = "biastest-"
#: A dead process's folder is left alone until nothing in it changed for this long.
DEAD_PROCESS_GRACE = 60.0
_OWNER = "owner"

# Process-wide bookkeeping (no user data): the folder this process made, and its sweeper.
_lock = threading.RLock()  # re-entrant: the SIGTERM handler may run while the main thread holds it
_state: dict[str, object] = {"dir": None, "pid": None, "sweeper": None, "caches": set()}
#: How the ``tempfile`` module names a file it makes (``tmp`` and eight characters).
_TEMPFILE_NAME = re.compile(r"tmp[a-z0-9_]{8}")
#: How Gradio names a folder of its cache (the SHA-256 of the file's content or address).
_HASH_NAME = re.compile(r"[0-9a-f]{64}")


def session_max_age() -> float:
    """``$BIASTEST_SESSION_MAX_AGE`` in seconds (:func:`biastest.settings.session_max_age`: default two hours;
    at least one second)."""
    return settings.session_max_age()


def process_dir() -> Path:
    """This process's private working folder, made on first use (mode 0700).

    ``<system temp dir>/biastest-<pid>-<random>``; removed at interpreter exit,
    with a sweeper thread (daemon) that removes stale sessions while it lives.
    A forked child gets a folder of its own.
    """
    with _lock:
        current, pid = _state["dir"], _state["pid"]
        if isinstance(current, Path) and pid == os.getpid() and current.is_dir():
            return current
        base = Path(tempfile.gettempdir())
        remove_dead_process_dirs(base)
        folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))
        (folder / _OWNER).write_text(f"{socket.gethostname()} {os.getpid()}\n", encoding="utf-8")
        first = _state["pid"] is None
        _state.update(dir=folder, pid=os.getpid())
        if first:
            atexit.register(remove_process_dir)
        _start_sweeper()
        return folder


def remove_process_dir() -> None:
    """Remove this process's working folder (idempotent; a forked child never removes its parent's)."""
    with _lock:
        folder, pid = _state["dir"], _state["pid"]
        if isinstance(folder, Path) and pid == os.getpid():
            shutil.rmtree(folder, ignore_errors=True)
            _state["dir"] = None


def session_key(session_id: str) -> str:
    """The folder name of a session: the first 32 hex digits of the SHA-256 of its id."""
    return hashlib.sha256(str(session_id).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def session_dir(session_id: str, *, create: bool = True) -> Path:
    """The folder of one user session (created, and marked as used now, unless ``create`` is False)."""
    folder = process_dir() / "sessions" / session_key(session_id)
    if create:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)
    return folder


def new_export_dir(session_id: str | None = None, *, prefix: str = "") -> Path:
    """A fresh folder for one download: inside the session's folder when there is a session."""
    parent = session_dir(session_id) / "exports" if session_id else process_dir() / "exports"
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def remove_session(session_id: str) -> bool:
    """Remove a session's folder and everything in it; True when there was one."""
    folder = session_dir(session_id, create=False)
    if not folder.is_dir():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


def last_activity(path: Path) -> float:
    """The newest modification time of ``path`` and everything under it (symbolic links not followed)."""
    newest = 0.0
    stack = [path]
    while stack:
        p = stack.pop()
        try:
            st = p.lstat()
        except OSError:
            continue
        newest = max(newest, st.st_mtime)
        if p.is_dir() and not p.is_symlink():
            try:
                stack.extend(p.iterdir())
            except OSError:
                continue
    return newest


def sweep(max_age: float | None = None, *, now: float | None = None) -> list[Path]:
    """Remove session and export folders of this process unchanged for more than ``max_age`` seconds.

    Parameters
    ----------
    max_age : float, optional
        Seconds (default :func:`session_max_age`).
    now : float, optional
        The current time (``time.time()``), for tests.

    Returns
    -------
    list of Path
        The folders removed.
    """
    max_age = session_max_age() if max_age is None else float(max_age)
    now = time.time() if now is None else float(now)
    with _lock:
        root = _state["dir"] if _state["pid"] == os.getpid() else None
        caches = sorted(_state["caches"])
    removed = []
    for cache in caches:
        removed.extend(tidy_cache_dir(cache, max_age, now=now))
    if not isinstance(root, Path):
        return removed
    for parent in (root / "sessions", root / "exports"):
        try:
            children = list(parent.iterdir())
        except OSError:
            continue
        for child in children:
            if now - last_activity(child) > max_age:
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child)
    return removed


def watch_cache_dir(path: str | Path) -> None:
    """Have the sweeper tidy ``path`` too (see :func:`tidy_cache_dir`); starts the sweeper."""
    with _lock:
        _state["caches"].add(Path(path))
        _start_sweeper()


def tidy_cache_dir(path: str | Path, max_age: float, *, now: float | None = None) -> list[Path]:
    """Remove what a file cache leaves behind, and nothing else, directly inside ``path``.

    Gradio's cache (``GRADIO_TEMP_DIR``) is tidied by Gradio's own
    ``delete_cache`` for the files it tracks, which leaves two things behind:
    the emptied ``<sha256>`` folders, and one empty ``tmpXXXXXXXX`` file for
    each file passed through a ``gr.File(type="filepath")`` (Gradio 6.31 makes
    it and never uses it). Removed here, when unchanged for ``max_age``
    seconds and owned by this user: **empty** folders named by a SHA-256 and
    **zero-byte** files with such a name, directly in ``path``. Files with
    content, non-empty folders and anything named otherwise are never touched
    (the cache may be shared by other Gradio servers).
    """
    now = time.time() if now is None else float(now)
    uid, removed = os.getuid(), []
    try:
        entries = list(Path(path).iterdir())
    except OSError:
        return removed
    for entry in entries:
        try:
            st = entry.lstat()
            if st.st_uid != uid or now - st.st_mtime <= max_age:
                continue
            if stat.S_ISDIR(st.st_mode) and _HASH_NAME.fullmatch(entry.name):
                entry.rmdir()  # only when empty: OSError otherwise
            elif stat.S_ISREG(st.st_mode) and st.st_size == 0 and _TEMPFILE_NAME.fullmatch(entry.name):
                entry.unlink()
            else:
                continue
        except OSError:
            continue
        removed.append(entry)
    return removed


def _sweeper(stop: threading.Event) -> None:
    while not stop.wait(min(600.0, max(1.0, session_max_age() / 4))):
        try:
            sweep()
        except Exception:  # a failed sweep must never end the sweeper; the next one tries again
            pass


def _start_sweeper() -> None:
    thread = _state["sweeper"]
    if isinstance(thread, threading.Thread) and thread.is_alive():
        return
    thread = threading.Thread(target=_sweeper, args=(threading.Event(),), name="biastest-sweeper", daemon=True)
    thread.start()
    _state["sweeper"] = thread


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except OSError:
        return True
    return True


def remove_dead_process_dirs(base: str | Path | None = None, *, grace: float = DEAD_PROCESS_GRACE) -> list[Path]:
    """Remove working folders left by processes that died without cleaning up (a crash, SIGKILL).

    A folder ``biastest-<pid>-*`` in ``base`` (default: the system temp dir)
    is removed only when all of these hold: it belongs to this user; its
    ``owner`` file names this host; that pid is not running here (or is this
    process, which has not made it); and nothing in it changed for ``grace``
    seconds. Folders of other users, other hosts or containers sharing the
    temp dir, and of live processes are never touched.
    """
    base = Path(tempfile.gettempdir() if base is None else base)
    host, me, uid, now = socket.gethostname(), os.getpid(), os.getuid(), time.time()
    removed = []
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for folder in candidates:
        parts = folder.name[len(PREFIX):].split("-", 1)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != uid:
                continue
            owner = (folder / _OWNER).read_text(encoding="utf-8").split()
        except (OSError, UnicodeDecodeError):
            continue
        if len(owner) != 2 or owner[0] != host or owner[1] != parts[0]:
            continue
        pid = int(parts[0])
        if (pid != me and _pid_alive(pid)) or folder == _state["dir"]:
            continue
        if now - last_activity(folder) <= grace:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def remove_on_sigterm() -> bool:
    """On SIGTERM, remove the working folder, then end as SIGTERM would have.

    Installed only from the main thread and only where SIGTERM still has its
    default action (a handler someone else installed is left alone; uvicorn,
    which takes SIGTERM over while it serves, gives it back and raises it
    again after its graceful shutdown, which then lands here). Returns True
    when the handler was installed (or already is).
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGTERM)
    if current is _on_sigterm:
        return True
    if current is not signal.SIG_DFL:
        return False
    signal.signal(signal.SIGTERM, _on_sigterm)
    return True


def _on_sigterm(signum, frame) -> None:
    remove_process_dir()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
