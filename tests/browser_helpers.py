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
import threading
import time
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

#: Every Playwright wait of the browser tests (default timeouts and the ``timeout=`` of a wait for something to
#: appear) is multiplied by this: the tests must pass on a loaded machine (``make test`` beside another job on two
#: cores), where a step that takes 3 s on an idle machine can take 60. A longer wait costs nothing when the page is
#: quick: it only bounds how long a broken page is waited for. ``BIASTEST_BROWSER_WAIT_SCALE`` overrides it.
WAIT_SCALE = float(os.environ.get("BIASTEST_BROWSER_WAIT_SCALE") or 4)
#: Waits that are pauses, not bounds (``page.wait_for_timeout``), are not scaled.
_SCALED = {
    "Page": ("set_default_timeout", "wait_for_function", "wait_for_selector", "wait_for_url", "expect_download",
             "click", "goto"),
    "BrowserContext": ("set_default_timeout",),
    "Locator": ("wait_for", "click", "fill"),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(demo) -> Iterator[str]:
    """Launch a Gradio Blocks on 127.0.0.1 in this process, with the apps' theme and CSS (as users see them and the
    screenshots show them); yield its URL."""
    from biastest.ui.common import CSS, THEME

    port = free_port()
    demo.queue(default_concurrency_limit=2)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, ssr_mode=False,
                theme=THEME, css=CSS)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@contextmanager
def served_apps(keys: tuple[str, ...] | None = None) -> Iterator[str]:
    """The suite's server (:func:`biastest.ui.serve.build_server`: the index page and the apps ``keys``, default all,
    each mounted at ``/<key>``, with the suite's theme and CSS) on 127.0.0.1 in a thread of this process; yields its
    address (ending in ``/``)."""
    import uvicorn

    from biastest.ui import serve

    app = serve.build_server([e for e in serve.APPS if keys is None or e.key in keys])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60 * WAIT_SCALE
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the suite's server did not start"
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@contextmanager
def chromium_browser():
    """A Playwright Chromium browser (Debian's binary)."""
    if os.environ.get("BIASTEST_SKIP_BROWSER") == "1":
        pytest.skip("browser tests skipped on request (BIASTEST_SKIP_BROWSER=1)")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `make test` (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright  # the browser tests' own dependency: loaded only here

    with sync_playwright() as p, _scaled_waits():
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _scaled(method):
    def wrapper(self, *args, **kwargs):
        if method.__name__ == "set_default_timeout" and args:
            args = (args[0] * WAIT_SCALE, *args[1:])
        elif kwargs.get("timeout"):
            kwargs["timeout"] = kwargs["timeout"] * WAIT_SCALE
        return method(self, *args, **kwargs)

    wrapper.__wrapped__ = method
    return wrapper


def _with_default_timeout(new_context):
    def wrapper(self, *args, **kwargs):
        context = new_context(self, *args, **kwargs)
        context.set_default_timeout(PLAYWRIGHT_DEFAULT_TIMEOUT)  # scaled like every other bound
        return context

    return wrapper


#: Playwright's own default bound of a wait (ms), before :data:`WAIT_SCALE`.
PLAYWRIGHT_DEFAULT_TIMEOUT = 30_000


@contextmanager
def _scaled_waits() -> Iterator[None]:
    """Multiply Playwright's default timeouts and explicit wait bounds by :data:`WAIT_SCALE` while a browser runs."""
    from playwright.sync_api import Browser, BrowserContext, Locator, Page  # loaded only by browser tests

    classes = {"Page": Page, "BrowserContext": BrowserContext, "Locator": Locator}
    saved = [(cls, name, getattr(cls, name)) for key, cls in classes.items() for name in _SCALED[key]]
    saved.append((Browser, "new_context", Browser.new_context))
    for cls, name, method in saved:
        setattr(cls, name, _with_default_timeout(method) if name == "new_context" else _scaled(method))
    try:
        yield
    finally:
        for cls, name, method in saved:
            setattr(cls, name, method)


def hover_text(page, plot_locator, *, fx: float = 0.5, fy: float = 0.5) -> list[str]:
    """Move the mouse over a plotly plot at a fraction of its drag area; return the hover label lines."""
    drag = plot_locator.locator(".nsewdrag").first
    drag.wait_for(state="visible", timeout=20_000)
    drag.scroll_into_view_if_needed()  # as a user scrolls to it: a mouse outside the viewport hovers nothing
    box = drag.bounding_box()
    page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)
    page.wait_for_selector(".hovertext", timeout=10_000)
    return page.locator(".hovertext tspan").all_text_contents()


def open_details(page, elem_id: str) -> None:
    """Open a closed accordion (a result's "Details", issue 28) by clicking its label, as a user does; leave an open
    one open. Its content is then visible to waits and reads."""
    label = page.locator(f"#{elem_id} > button.label-wrap").first
    label.wait_for(state="visible")
    if "open" not in (label.get_attribute("class") or "").split():
        label.click()
    page.locator(f"#{elem_id} > button.label-wrap.open").first.wait_for(state="visible")


def first_line(page, selector: str) -> str:
    """The first non-empty line of an element's rendered text (a result's reading: its verdict sentence)."""
    text = page.locator(selector).first.inner_text()
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
