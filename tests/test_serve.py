"""The suite launcher (what ``make run`` starts) and a single app launched alone, as real processes.

Each server is a child process started here, bound to 127.0.0.1 on a free port, polled with a
bounded loop and ended by its own pid.
"""

from __future__ import annotations

import html
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from biastest.ui import serve
from tests.browser_helpers import chromium_browser, free_port

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 180


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(
        GRADIO_ANALYTICS_ENABLED="False",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_OFFLINE="1",
        BIASTEST_DATA_DIR=str(tmp_path / "store"),
        **extra,
    )
    return env


@contextmanager
def running(cmd: list[str], env: dict[str, str], url: str, log: Path):
    """Start ``cmd``; yield once ``url`` answers 200; always end the process by its pid."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"server did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        return r.read().decode()


def test_the_index_says_what_needs_the_internet(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    page = serve._index_html(list(serve.APPS))
    assert "Works offline" in page and page.count("Needs the internet") == 2
    assert html.escape(serve.MSG_OFFLINE_SERVER) not in page
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert html.escape(serve.MSG_OFFLINE_SERVER) in serve._index_html(list(serve.APPS))


def test_make_run_serves_the_three_apps_on_one_server(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "biastest.ui.serve", "--host", "127.0.0.1", "--port", str(port)]
    with running(cmd, _env(tmp_path), base + "/", tmp_path / "serve.log"):
        index = _get(base + "/")
        assert html.escape(serve.MSG_OFFLINE_SERVER) in index  # _env sets HF_HUB_OFFLINE=1
        for entry in serve.APPS:  # each app says what needs the internet
            assert html.escape(entry.internet) in index and entry.internet
        for key in ("gpt", "vqa", "psychophysics"):
            assert f'href="/{key}/"' in index
            # each mounted app answers with its Gradio config (title and the three step tabs)
            config = _get(f"{base}/{key}/config")
            assert '"1 \\u00b7 ' in config or '"1 · ' in config
        # the one public-mode decision, printed at start: private on 127.0.0.1, server paths offered
        assert "biastest: private mode (bound to 127.0.0.1)" in (tmp_path / "serve.log").read_text()
        assert "A file on this server" in _get(f"{base}/psychophysics/config")
        with chromium_browser() as browser:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(base + "/")
            page.get_by_role("heading", name="Word embeddings", exact=True).click()
            page.wait_for_url(f"{base}/psychophysics/", timeout=30_000)
            page.get_by_role("tab", name="1 · Bias specification").wait_for(timeout=60_000)
            page.go_back()
            page.get_by_role("heading", name="Language models", exact=True).click()
            page.wait_for_url(f"{base}/gpt/", timeout=30_000)
            page.get_by_role("tab", name="1 · Bias specification").wait_for(timeout=60_000)
            assert page.get_by_role("tab", name="3 · Results").is_disabled()


@pytest.mark.parametrize(("extra", "reason"), [
    ({"BIASTEST_PUBLIC": "1"}, "BIASTEST_PUBLIC=1"),
    ({"SPACE_ID": "someone/biastest"}, "running as the Hugging Face Space someone/biastest"),
])
def test_a_public_server_says_so_at_start_and_offers_no_server_paths(tmp_path, extra, reason):
    """Behind a reverse proxy (BIASTEST_PUBLIC=1) or as a Space, 127.0.0.1 is public: no server paths."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    if "SPACE_ID" in extra:  # a Space runs one app file
        cmd = [sys.executable, "app_psychophysics.py"]
        env, page = _env(tmp_path, PORT=str(port), BIASTEST_HOST="127.0.0.1", **extra), base + "/"
    else:
        cmd = [sys.executable, "-m", "biastest.ui.serve", "--host", "127.0.0.1", "--port", str(port)]
        env, page = _env(tmp_path, **extra), base + "/psychophysics/"
    with running(cmd, env, page, tmp_path / "serve.log"):
        config = _get(page + "config")
        assert "Upload an embedding file" in config and "A file on this server" not in config
        assert f"biastest: PUBLIC mode ({reason})" in (tmp_path / "serve.log").read_text()


def test_an_app_alone_launches_as_a_space_does(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    # a Space sets PORT; the app file reads it and binds where BIASTEST_HOST says
    env = _env(tmp_path, PORT=str(port), BIASTEST_HOST="127.0.0.1")
    with running([sys.executable, "app_vqa.py"], env, url, tmp_path / "vqa.log"):
        config = _get(url + "config")
        assert "Vision-language" in config or "vision-language" in config
