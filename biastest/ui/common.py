"""Gradio building blocks shared by the three apps.

This package is the only one (besides the app files) that imports gradio.
The apps stay thin: each builds its three gated tabs from these blocks and
calls one runner function per test kind. Per-user data lives in
``gr.State``; the model cache and the store are shared services built once
and passed in; progress reaches the library as a plain callback.
"""

from __future__ import annotations

import functools
import html
import logging
import os
from collections.abc import Callable
from typing import Any

import gradio as gr

from biastest.errors import BiastestError

__all__ = [
    "CSS",
    "MAX_UPLOAD",
    "MSG_UNEXPECTED",
    "STEP_IDS",
    "THEME",
    "gated_tabs_reset",
    "launch_kwargs",
    "progress_callback",
    "unlock_step",
    "user_errors",
]

log = logging.getLogger("biastest.ui")

MSG_UNEXPECTED = (
    "Something unexpected went wrong ({kind}). Your inputs are kept: please try again, "
    "and if it happens again, report it with the steps you took."
)

STEP_IDS = ("spec", "data", "results")

#: Largest upload Gradio accepts before it reaches the disk.
MAX_UPLOAD = "50mb"

THEME = gr.themes.Soft(primary_hue="indigo", secondary_hue="slate")

CSS = """
.bt-hint {font-size: 0.92em; opacity: 0.85}
.bt-score {font-size: 1.25em}
.bt-warn {color: #9a3412}
footer {display: none !important}
"""


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn typed errors into ``gr.Error`` with the user's message.

    :class:`~biastest.errors.BiastestError` messages are shown as written;
    anything else is logged with its traceback on the server and shown as
    :data:`MSG_UNEXPECTED` — never a traceback in the UI. The wrapped
    function keeps its signature (so ``gr.Progress`` defaults still work).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except BiastestError as exc:
            raise gr.Error(exc.message, print_exception=False) from None
        except Exception as exc:
            log.exception("unexpected error in %s", getattr(fn, "__name__", fn))
            raise gr.Error(MSG_UNEXPECTED.format(kind=type(exc).__name__), print_exception=False) from None

    return wrapper


def progress_callback(progress: gr.Progress | None) -> Callable[[int, int, str], None]:
    """Adapt ``gr.Progress`` to the library's plain ``progress(done, total, message)``."""

    def report(done: int, total: int, message: str = "") -> None:
        if progress is None:
            return
        try:
            progress((int(done), int(total) if total else None), desc=message or None)
        except Exception:
            log.debug("progress update failed", exc_info=True)

    return report


def unlock_step(step: str) -> tuple[Any, Any]:
    """Updates that enable the tab ``step`` and switch to it: ``(tabs, tab)``."""
    return gr.Tabs(selected=step), gr.Tab(interactive=True)


def gated_tabs_reset() -> tuple[Any, Any, Any]:
    """Updates that go back to step 1 and lock steps 2 and 3: ``(tabs, tab2, tab3)``."""
    return gr.Tabs(selected="spec"), gr.Tab(interactive=False), gr.Tab(interactive=False)


def escape(text: Any) -> str:
    """HTML-escape any value for Markdown/HTML components."""
    return html.escape("" if text is None else str(text), quote=True)


def launch_kwargs() -> dict[str, Any]:
    """Keyword arguments for ``Blocks.launch`` from the environment.

    ``BIASTEST_HOST`` (default 127.0.0.1) and ``BIASTEST_PORT`` (default 7860,
    or ``PORT``/``GRADIO_SERVER_PORT`` as a Space sets them).
    """
    host = os.environ.get("BIASTEST_HOST") or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
    port = os.environ.get("BIASTEST_PORT") or os.environ.get("GRADIO_SERVER_PORT") or os.environ.get("PORT") or "7860"
    return {
        "server_name": host,
        "server_port": int(port),
        "theme": THEME,
        "css": CSS,
        "ssr_mode": False,
        "max_file_size": MAX_UPLOAD,
    }
