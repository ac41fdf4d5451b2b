"""Leftovers: the per-process working folder, session folders, Gradio's cache policy and the store's temp files.

Each test that looks into the working folder gets one of its own under
``tmp_path`` (the ``own_workdir`` fixture points the system temp dir there
and gives the process a fresh folder, then puts the old one back), so the
sweeps here never touch the folders of other tests. Servers bind 127.0.0.1
on a free port; child processes are ended by their own pid.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from biastest import settings, workdir
from biastest.measures.stereotype import report as gpt_report
from biastest.report.export import private_dir
from biastest.store.local import STALE_TMP_SECONDS, DatasetStore

ROOT = Path(__file__).resolve().parents[1]
HOUR = 3600.0


@pytest.fixture
def own_workdir(tmp_path, monkeypatch):
    """A fresh working folder for this test, under ``tmp_path``; the process's own one is restored after."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    saved = dict(workdir._state)
    workdir._state.update(dir=None, pid=os.getpid(), caches=set())
    try:
        yield workdir.process_dir()
    finally:
        workdir.remove_process_dir()
        workdir._state.update(dir=saved["dir"], pid=saved["pid"], caches=saved["caches"])


def _age(path: Path, seconds: float) -> None:
    """Make ``path`` and everything in it look unchanged for ``seconds``."""
    then = time.time() - seconds
    for p in [path, *path.rglob("*")]:
        os.utime(p, (then, then), follow_symlinks=False)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(TMPDIR=str(tmp_path), GRADIO_ANALYTICS_ENABLED="False", HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_OFFLINE="1")
    return env


# --------------------------------------------------------------------------- where files go
def test_process_dir_is_private_and_names_its_process(own_workdir, tmp_path):
    assert own_workdir.parent == tmp_path / "tmp"
    assert own_workdir.name.startswith(f"biastest-{os.getpid()}-")
    assert own_workdir.stat().st_mode & 0o777 == 0o700
    assert (own_workdir / "owner").read_text().split() == [socket.gethostname(), str(os.getpid())]
    assert workdir.process_dir() == own_workdir


def test_exports_land_under_the_process_dir_and_in_the_session_folder(own_workdir):
    loose = private_dir("biastest-lm-")
    assert loose.parent == own_workdir / "exports" and loose.name.startswith("biastest-lm-")
    assert private_dir() != private_dir()
    mine = private_dir(session_id="session-a")
    assert mine.parent == workdir.session_dir("session-a") / "exports"
    assert workdir.new_export_dir("session-a") != mine


def test_report_export_writes_into_the_folder_it_is_given(own_workdir):
    from tests.test_report import _lm_result  # a small real result

    folder = workdir.new_export_dir("session-b")
    result = _lm_result(["stereotyped", "tie"], ["math", "art"])
    csv_path, json_path = gpt_report.export_files(result, directory=folder)
    assert csv_path.parent == folder == json_path.parent
    assert workdir.remove_session("session-b") and not csv_path.exists()


def test_a_client_chosen_session_id_never_names_a_path(own_workdir):
    for hostile in ("../../etc", "/etc/passwd", "a/../../b", "..", "\x00", "ü" * 300):
        folder = workdir.session_dir(hostile)
        assert folder.parent == own_workdir / "sessions" and len(folder.name) == 32
        assert set(folder.name) <= set("0123456789abcdef")
    assert workdir.session_dir("x") == workdir.session_dir("x") != workdir.session_dir("y")


def test_vqa_session_pictures_live_in_the_session_folder(own_workdir):
    from biastest.ui import vqa

    session = vqa.new_session()
    root = vqa.session_root(session)
    assert root.name.startswith(vqa.SESSION_PREFIX) and root.parent.parent == own_workdir / "sessions"
    vqa.discard_session(session)
    assert not root.exists()


def test_outside_an_event_there_is_no_gradio_session(own_workdir):
    from biastest.ui.common import current_session_id, session_export_dir

    assert current_session_id() is None
    assert session_export_dir("biastest-x-").parent == own_workdir / "exports"


# --------------------------------------------------------------------------- a session ends
def test_the_unload_handler_removes_the_session_folder(own_workdir):
    from biastest.ui.common import _end_session

    export = workdir.new_export_dir("tab-1")
    (export / "result.csv").write_text("a,b\n")
    other = workdir.new_export_dir("tab-2")
    _end_session(SimpleNamespace(session_hash="tab-1"))
    assert not workdir.session_dir("tab-1", create=False).exists()
    assert other.is_dir()
    _end_session(SimpleNamespace(session_hash="tab-1"))  # twice is harmless
    _end_session(SimpleNamespace(session_hash=None))
    assert not workdir.remove_session("never-opened")


def test_every_app_cleans_up_after_its_sessions(monkeypatch):
    from biastest.ui import gpt, psychophysics, vqa
    from biastest.ui.common import _end_session, gradio_cache_policy

    monkeypatch.setenv(settings.SESSION_MAX_AGE_ENV, "600")
    assert gradio_cache_policy() == (150, 600)
    for demo in (gpt.build_demo(), vqa.build_demo(use_store=False), psychophysics.build_demo()):
        assert demo.delete_cache == (150, 600)
        unload = [fn for fn in demo.fns.values() if any(t[1] == "unload" for t in fn.targets)]
        assert _end_session in [fn.fn for fn in unload]


def test_a_launched_app_removes_the_folder_when_its_client_closes(own_workdir, tmp_path, monkeypatch):
    from gradio_client import Client, handle_file
    from PIL import Image

    from biastest.ui import vqa
    from biastest.ui.spec_step import CUSTOM
    from tests.browser_helpers import served

    monkeypatch.setenv("GRADIO_HEARTBEAT_INTERVAL", "0.5")  # the server notices a closed client within a second
    files = []
    for colour in ("red", "blue"):
        Image.new("RGB", (16, 16), colour).save(tmp_path / f"{colour}.png")
        files.append(handle_file(str(tmp_path / f"{colour}.png")))
    with served(vqa.build_demo(use_store=False)) as url:
        alice, bob = Client(url, verbose=False), Client(url, verbose=False)
        try:
            for client in (alice, bob):
                client.predict(CUSTOM, "man", "woman", "doctor", "nurse", api_name="/confirm_handler")
                msg = client.predict(files, "man", api_name="/upload_handler")[0]
                assert "Added 2 image(s)" in msg
            folders = {c: workdir.session_dir(c.session_hash, create=False) for c in (alice, bob)}
            for folder in folders.values():
                assert len([p for p in folder.rglob("*.png")]) == 2
            alice.close()
            deadline = time.monotonic() + 30
            while folders[alice].exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not folders[alice].exists(), "the closed session's pictures are still there"
            assert len(list(folders[bob].rglob("*.png"))) == 2, "another session's pictures were removed"
        finally:
            alice.close()
            bob.close()


# --------------------------------------------------------------------------- sessions that never said goodbye
def test_the_sweeper_removes_old_folders_but_not_fresh_ones(own_workdir):
    old = workdir.session_dir("old")
    (old / "exports").mkdir()
    (old / "exports" / "x.csv").write_text("x")
    busy = workdir.session_dir("busy")  # an old folder with one file written just now
    (busy / "pictures").mkdir()
    (busy / "pictures" / "a.png").write_bytes(b"png")
    fresh = workdir.session_dir("fresh")
    loose_old, loose_fresh = workdir.new_export_dir(), workdir.new_export_dir()
    _age(old, 3 * HOUR)
    _age(loose_old, 3 * HOUR)
    _age(busy, 3 * HOUR)
    os.utime(busy / "pictures" / "a.png")
    removed = workdir.sweep(2 * HOUR)
    assert set(removed) == {old, loose_old}
    assert not old.exists() and not loose_old.exists()
    assert busy.is_dir() and fresh.is_dir() and loose_fresh.is_dir()
    assert workdir.sweep(2 * HOUR, now=time.time() + 3 * HOUR)  # later, the rest goes too
    assert not any((own_workdir / "sessions").iterdir())


def test_the_sweeper_tidies_only_what_gradios_cache_leaves_behind(own_workdir, tmp_path):
    cache = tmp_path / "gradio"
    cache.mkdir()
    h = "ab" * 32
    leaked = cache / "tmpa1b2_c3d"  # gr.File(type="filepath") leaves one empty file like this per upload
    emptied = cache / h  # a <sha256> folder whose file Gradio's delete_cache removed
    kept = {
        "upload": cache / ("cd" * 32) / "picture.png",  # a file with content: Gradio's own business
        "named": cache / "notes",  # empty, but not a name tempfile makes
        "other_dir": cache / "vibe_edit_history",  # empty, but not a hash
        "fresh": cache / "tmpzzzzzzzz",  # empty but recent
    }
    kept["upload"].parent.mkdir()
    kept["upload"].write_bytes(b"png")
    kept["other_dir"].mkdir()
    emptied.mkdir()
    for path in (leaked, kept["named"]):
        path.write_bytes(b"")
    for path in (leaked, emptied, kept["named"], kept["other_dir"], kept["upload"].parent, kept["upload"]):
        _age(path, 3 * HOUR)
    kept["fresh"].write_bytes(b"")
    workdir.watch_cache_dir(cache)
    assert sorted(workdir.sweep(2 * HOUR)) == sorted([leaked, emptied])
    assert all(p.exists() for p in kept.values())


def test_using_a_session_marks_it_as_used(own_workdir):
    folder = workdir.session_dir("reader")
    _age(folder, 3 * HOUR)
    workdir.session_dir("reader")
    assert workdir.sweep(2 * HOUR) == []


def test_session_max_age_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(settings.SESSION_MAX_AGE_ENV, "90")
    assert workdir.session_max_age() == 90
    for bad in ("", "soon", "-5"):
        monkeypatch.setenv(settings.SESSION_MAX_AGE_ENV, bad)
        assert workdir.session_max_age() == (1.0 if bad == "-5" else settings.DEFAULT_SESSION_MAX_AGE)


# --------------------------------------------------------------------------- the process ends
def test_the_process_dir_is_removed_at_exit(tmp_path):
    code = "from biastest import workdir; d = workdir.process_dir(); " \
           "(workdir.new_export_dir('s') / 'f.csv').write_text('x'); print(d)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                         text=True, timeout=120, check=True)
    folder = Path(out.stdout.strip())
    assert folder.parent == tmp_path and folder.name.startswith("biastest-")
    assert not folder.exists()


def test_the_process_dir_is_removed_on_sigterm(tmp_path):
    code = textwrap.dedent("""
        import sys, time
        from biastest import workdir
        assert workdir.remove_on_sigterm()
        d = workdir.process_dir()
        (workdir.new_export_dir('s') / 'f.csv').write_text('x')
        print(d, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE,
                            text=True)
    try:
        folder = Path(proc.stdout.readline().strip())
        assert folder.is_dir()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM  # still ends as SIGTERM says
        assert not folder.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()


def test_sigterm_handler_is_not_forced_over_another(tmp_path):
    code = textwrap.dedent("""
        import signal
        from biastest import workdir
        signal.signal(signal.SIGTERM, lambda *a: None)
        print(workdir.remove_on_sigterm())
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def _fake_process_dir(base: Path, pid: int, *, host: str | None = None, age: float = HOUR) -> Path:
    folder = base / f"biastest-{pid}-abcd1234"
    (folder / "sessions" / "k").mkdir(parents=True)
    (folder / "owner").write_text(f"{host or socket.gethostname()} {pid}\n")
    _age(folder, age)
    return folder


def test_folders_of_crashed_processes_are_removed_but_no_others(tmp_path):
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(timeout=60)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = _fake_process_dir(tmp_path, ended.pid)
        live = _fake_process_dir(tmp_path, alive.pid)
        unrelated = tmp_path / "biastest-space-xyz"  # made by someone else with the same prefix
        unrelated.mkdir()
        _age(unrelated, HOUR)
        assert workdir.remove_dead_process_dirs(tmp_path) == [dead]
        assert not dead.exists() and live.is_dir() and unrelated.is_dir()
        for name, kwargs in (("other-host", {"host": "elsewhere"}), ("just-died", {"age": 0})):
            (tmp_path / name).mkdir()
            kept = _fake_process_dir(tmp_path / name, ended.pid, **kwargs)
            assert workdir.remove_dead_process_dirs(tmp_path / name) == [] and kept.is_dir()
    finally:
        alive.kill()
        alive.wait(timeout=30)


# --------------------------------------------------------------------------- the dataset store
def test_the_store_removes_orphaned_temp_files_when_it_opens(tmp_path):
    DatasetStore(tmp_path / "store")
    tmp_dir = tmp_path / "store" / ".biastest" / "tmp"
    stale = tmp_dir / "20260101T000000Z-123-abc.parquet.1a2b3c4d.tmp"
    fresh = tmp_dir / "deadbeef.png.5e6f7a8b.tmp"  # as a writer in another process would have it right now
    other = tmp_dir / "notes.txt"
    for path in (stale, fresh, other):
        path.write_bytes(b"half")
    old = time.time() - STALE_TMP_SECONDS - 60
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    store = DatasetStore(tmp_path / "store")
    assert not stale.exists() and fresh.exists() and other.exists()
    assert store.remove_stale_temp_files(now=time.time() + STALE_TMP_SECONDS + 60) == [fresh.name]
    assert store.remove_stale_temp_files() == []
