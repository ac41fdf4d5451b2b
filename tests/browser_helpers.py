"""Real headless Chromium (Debian's) driven by Playwright, and app launching.

Playwright's own browser download cannot work offline, so the tests drive
``/usr/bin/chromium`` (installed by ``make test``). Servers bind 127.0.0.1 on
a free port. Set ``BIASTEST_SKIP_BROWSER=1`` to skip browser tests
explicitly; a missing Chromium otherwise fails loudly.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("BIASTEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Where the browser tests save their screenshots: a temporary folder, so that ``make test`` leaves the
#: checkout clean; ``make screenshots`` sets ``BIASTEST_SCREENSHOTS=docs/screenshots`` to refresh the docs' ones.
SCREENSHOTS = Path(os.environ.get("BIASTEST_SCREENSHOTS") or tempfile.mkdtemp(prefix="biastest-screenshots-"))
SCREENSHOTS.mkdir(parents=True, exist_ok=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(demo) -> Iterator[str]:
    """Launch a Gradio Blocks on 127.0.0.1 in this process; yield its URL."""
    port = free_port()
    demo.queue(default_concurrency_limit=2)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, ssr_mode=False)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@contextmanager
def chromium_browser():
    """A Playwright Chromium browser (Debian's binary)."""
    if os.environ.get("BIASTEST_SKIP_BROWSER") == "1":
        pytest.skip("browser tests skipped on request (BIASTEST_SKIP_BROWSER=1)")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `make test` (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def hover_text(page, plot_locator, *, fx: float = 0.5, fy: float = 0.5) -> list[str]:
    """Move the mouse over a plotly plot at a fraction of its drag area; return the hover label lines."""
    drag = plot_locator.locator(".nsewdrag").first
    drag.wait_for(state="visible", timeout=20_000)
    drag.scroll_into_view_if_needed()  # as a user scrolls to it: a mouse outside the viewport hovers nothing
    box = drag.bounding_box()
    page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)
    page.wait_for_selector(".hovertext", timeout=10_000)
    return page.locator(".hovertext tspan").all_text_contents()
