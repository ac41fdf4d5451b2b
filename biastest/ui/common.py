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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from biastest import public, settings, workdir
from biastest.errors import (
    BiastestError,
    DataError,
    EmbeddingError,
    MethodError,
    ModelKindError,
    OptionError,
    PolicyError,
    SpecError,
)
from biastest.measures import MEASURES
from biastest.options import check_option
from biastest.report.text import md_escape
from biastest.runner.services import shared_dataset

__all__ = [
    "CSS",
    "INDEX_LINK",
    "DETAILS_LABEL",
    "MAX_UPLOAD",
    "MSG_ACTION_FAILED",
    "MSG_UNEXPECTED",
    "MSG_UNEXPECTED_REASON",
    "STEP_IDS",
    "THEME",
    "USER_MISTAKES",
    "current_session_id",
    "end_session_files_on_unload",
    "failure_message",
    "gated_tabs_reset",
    "gradio_cache_policy",
    "index_link",
    "inline_failures",
    "launch_kwargs",
    "measure_label",
    "offered",
    "option_value",
    "progress_callback",
    "session_export_dir",
    "unlock_step",
    "user_errors",
    "warn_inline",
]

log = logging.getLogger("biastest.ui")

#: A failure a handler did not expect, shown next to the button that started it (:func:`inline_failures`): what
#: failed, that the inputs are kept, then the project's own message (a :class:`BiastestError`'s) or
#: :data:`MSG_UNEXPECTED_REASON`.
MSG_ACTION_FAILED = "⛔ {action} did not work; your inputs are kept. {reason}"
MSG_UNEXPECTED_REASON = ("Something unexpected went wrong on the server: please try again, and if it happens again, "
                         "report the steps you took.")
MSG_UNEXPECTED = (
    "Something unexpected went wrong ({kind}). Your inputs are kept: please try again, "
    "and if it happens again, report it with the steps you took."
)

STEP_IDS = ("spec", "data", "results")

#: The closed section under a result's verdict and figures that holds its diagnostics (intervals and tests by
#: name, clusters and design effect, sampler diagnostics, how it was computed) — the same words in the three apps.
DETAILS_LABEL = "Details: every number, how it was computed, and its diagnostics"

#: Largest upload Gradio accepts before it reaches the disk.
MAX_UPLOAD = "50mb"

#: The apps' theme: Gradio's Soft with every text colour at WCAG AA contrast (≥ 4.5:1) on its background — labels
#: indigo-700 on indigo-50, helper text grey-600 on white, white on an indigo-600 primary button (Soft's own
#: indigo-500 labels read 3.6:1, its grey-400 helper text 2.5:1; tests/test_accessibility_browser.py measures it).
THEME = gr.themes.Soft(primary_hue="indigo", secondary_hue="slate").set(
    block_label_text_color="*primary_700",
    block_title_text_color="*primary_700",
    block_info_text_color="*neutral_600",
    body_text_color_subdued="*neutral_600",
    button_primary_background_fill="*primary_600",
    button_primary_background_fill_hover="*primary_700",
    checkbox_label_background_fill_selected="*primary_600",
    color_accent="*primary_600",
)

CSS = """
.bt-hint {font-size: 0.92em; color: #374151}
button[role="tab"]:disabled {opacity: 1; color: #6b7280; cursor: not-allowed}
#index-link {font-size: 0.92em}
.bt-score {font-size: 1.25em}
.bt-warn {color: #9a3412}
footer {display: none !important}
"""


#: The link back to the suite's index page, at the top of each app when the suite serves the three together
#: (``make run``, :func:`biastest.ui.serve.build_server`); an app running alone (a Space) has no index to go back to.
#: HTML, not Markdown: Gradio opens a Markdown link in a new tab, and going back to the index is leaving the app.
INDEX_LINK = '<a href="../" target="_self">← All biastest apps</a>'


def index_link(show: bool) -> None:
    """Place :data:`INDEX_LINK` (inside a Blocks) when ``show``."""
    if show:
        gr.HTML(INDEX_LINK, elem_id="index-link")


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


#: Typed errors the user fixes by changing their input (a term, a file, a number, a model id, an address). The
#: convention of the three apps: shown inline next to the control that caused it (:func:`warn_inline`) and as a
#: yellow toast — never as a red error, which :func:`user_errors` keeps for what editing cannot fix.
USER_MISTAKES = (SpecError, DataError, OptionError, PolicyError, MethodError, EmbeddingError, ModelKindError)


def warn_inline(exc: BiastestError) -> str:
    """Show a user's mistake as a yellow toast; return its inline form (``⚠️`` and the HTML-escaped message)."""
    gr.Warning(exc.message)
    return f"⚠️ {escape(exc.message)}"


def failure_message(action: str, exc: BaseException, *, markdown: bool = True) -> str:
    """:data:`MSG_ACTION_FAILED` for ``exc``: its own message when it is the project's, else a constant one.

    The exception's class name and text are no reason a user can act on: only a :class:`BiastestError`'s message
    (written for the user) is shown. ``markdown``: the reason escaped for a Markdown box (else plain, for a toast).
    """
    reason = exc.message if isinstance(exc, BiastestError) else MSG_UNEXPECTED_REASON
    return MSG_ACTION_FAILED.format(action=action, reason=md_escape(reason) if markdown else reason)


def inline_failures(action: str, n_outputs: int, at: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Show a failure the handler did not expect next to its button, not only in a pop-up that vanishes.

    The wrapped handler (of ``n_outputs`` outputs, its message box at position ``at``) answers an exception other
    than ``gr.Error`` with :func:`failure_message` in that box and leaves every other output as it was (the inputs
    are kept); the traceback goes to the server's log, and a toast repeats the message. Put it under
    :func:`~biastest.ui.common.user_errors`.
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as exc:
                if not isinstance(exc, BiastestError):
                    log.exception("unexpected error in %s", getattr(fn, "__name__", fn))
                message = failure_message(action, exc)
                gr.Warning(failure_message(action, exc, markdown=False))
                out: list[Any] = [gr.skip()] * n_outputs
                out[at] = message
                return tuple(out)

        return wrapper

    return wrap


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


def option_value(name: str, value: Any) -> int | float:
    """A number box's value checked by the one option validation (:func:`biastest.options.check_option`).

    Text is read as a number first; anything else (None, NaN, ±inf, out of bounds) gets the option's message.
    """
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            pass
    return check_option(name, value)


def measure_label(name: str) -> str:
    """How the apps name the measure ``name`` (or an alias) in lists and titles (its registry record's ``label``).

    >>> measure_label("2afc")
    '2AFC psychophysics'
    """
    return MEASURES.get_measure(name).label


def offered(name: str, option: str) -> tuple[str, ...]:
    """The values the apps offer for ``option`` of the measure ``name``, in order (its registry record's ``choices``).

    >>> offered("vlm", "combine")
    ('sum-prob', 'mean-embedding')
    """
    return tuple(MEASURES.get_measure(name).choices[option])


def escape(text: Any) -> str:
    """HTML-escape any value for Markdown/HTML components."""
    return html.escape("" if text is None else str(text), quote=True)


def launch_kwargs() -> dict[str, Any]:
    """Keyword arguments for ``Blocks.launch`` from the environment.

    The host and port of :func:`biastest.settings.bind_host` and
    :func:`biastest.settings.bind_port` (``BIASTEST_HOST``/``GRADIO_SERVER_NAME``,
    default 127.0.0.1; ``BIASTEST_PORT``/``GRADIO_SERVER_PORT``/``PORT``, default
    7860). Makes and prints the process's public-mode decision
    (:func:`biastest.public.configure`) for that host.
    """
    host, port = settings.bind_host(), settings.bind_port()
    policy = public.configure(host=host, quiet=True)
    print(policy.describe(), flush=True)
    workdir.remove_on_sigterm()
    print(shared_dataset().summary(), flush=True)  # pulls start in the background; nothing waits for them
    return {
        "server_name": host,
        "server_port": port,
        "theme": THEME,
        "css": CSS,
        "ssr_mode": False,
        "max_file_size": MAX_UPLOAD,
    }


# --------------------------------------------------------------------------- session files
def current_session_id() -> str | None:
    """The Gradio session id (``session_hash``) of the event being handled; None outside an event.

    Read from the request Gradio keeps for the running event (the same one a
    ``gr.Request`` parameter receives), so handlers need no extra parameter
    to put their files in the session's folder (:func:`biastest.workdir.session_dir`).
    """
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    session_hash = getattr(request, "session_hash", None)
    return str(session_hash) if session_hash else None


def session_export_dir(prefix: str = "biastest-") -> Path:
    """A fresh folder for one download, inside the current session's folder (see :func:`current_session_id`)."""
    return workdir.new_export_dir(current_session_id(), prefix=prefix)


def _end_session(request: gr.Request) -> None:
    """Gradio ``unload`` handler: remove the ending session's folder (its pictures and downloads)."""
    session_hash = getattr(request, "session_hash", None)
    if session_hash:
        workdir.remove_session(session_hash)


def end_session_files_on_unload(demo: gr.Blocks) -> gr.Blocks:
    """Remove a session's folder when its browser tab closes or reloads (Gradio's ``unload`` event).

    Sessions whose ``unload`` never comes (a server-side disconnect the
    heartbeat missed) are removed by the sweeper of :mod:`biastest.workdir`
    after ``BIASTEST_SESSION_MAX_AGE`` seconds without a change; the same
    sweeper tidies what Gradio's own cache clean-up leaves behind
    (:func:`biastest.workdir.tidy_cache_dir`).
    """
    from gradio.utils import get_upload_folder

    demo.unload(_end_session)
    workdir.watch_cache_dir(get_upload_folder())
    return demo


def gradio_cache_policy() -> tuple[int, int]:
    """``delete_cache=(frequency, age)`` for ``gr.Blocks``: Gradio's own cache keeps files for a session's age.

    Gradio copies every upload and every file it serves (downloads, pictures)
    into its cache (``GRADIO_TEMP_DIR``). With this, every ``frequency``
    seconds it deletes those of this app older than ``age`` seconds
    (``BIASTEST_SESSION_MAX_AGE``, default two hours), and all of them when the
    server shuts down.
    """
    age = workdir.session_max_age()
    return int(min(900, max(1, age // 4))), int(age)
