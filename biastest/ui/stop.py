"""A Stop button for generation runs that keeps what was generated.

Gradio's own ``cancels=[event]`` drops the cancelled event's outputs (and its
Python thread runs on), so the sentences or images made before the stop
would be lost. Instead, the Stop button sets the stop signal of its own
session (:class:`~biastest.runner.services.StopSignals`, keyed by Gradio's
session id); the generation handler hands that signal to the library, which
ends the run within a fraction of a second — even while a request hangs —
and returns what it made, and the handler stores and shows it like any
finished run, with the report's message ("Stopped on request. 3 new
sentences were kept; …").

:meth:`StopControl.wire` connects the buttons: pressing Generate first
*arms* the session's signal and swaps Generate for Stop (unqueued, so at
once), then runs the generation (queued, in its concurrency group), then
swaps the buttons back. Stop is unqueued too, so it never waits behind the
run it stops, nor behind other users' runs; a Stop pressed while the run
still waits in the queue is honoured as soon as it starts. Closing the page
stops the session's run. Every run also has an overall time limit
(:data:`~biastest.runner.services.GENERATION_MAX_SECONDS`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import gradio as gr

from biastest.runner.services import StopSignals

__all__ = [
    "MSG_TIME_LIMIT_HINT",
    "STOPPING_LABEL",
    "STOP_LABEL",
    "StopControl",
    "session_key",
    "time_limit_hint",
]

STOP_LABEL = "■ Stop"
STOPPING_LABEL = "Stopping… (what was generated so far is kept)"
MSG_TIME_LIMIT_HINT = (
    "A run stops by itself after {limit}; press **{stop}** to end it sooner. What was generated until then is kept."
)


def time_limit_hint(seconds: float) -> str:
    """:data:`MSG_TIME_LIMIT_HINT` for a time limit of ``seconds`` (in minutes from one minute up)."""
    value, unit = (seconds / 60, "minute") if seconds >= 60 else (seconds, "second")
    limit = f"{value:g} {unit}" + ("" if value == 1 else "s")
    return MSG_TIME_LIMIT_HINT.format(limit=limit, stop=STOP_LABEL)


def session_key(request: gr.Request | None) -> str:
    """Gradio's id of the user session that sent ``request`` (empty when called outside Gradio)."""
    return str(getattr(request, "session_hash", None) or "")


class StopControl:
    """The Stop button of one app's generation runs, for every session.

    Parameters
    ----------
    signals : StopSignals, optional
        The registry of stop signals (default: a new one for this app).
    """

    def __init__(self, signals: StopSignals | None = None) -> None:
        self.signals = signals if signals is not None else StopSignals()

    @contextlib.contextmanager
    def running(self, request: gr.Request | None) -> Iterator[threading.Event]:
        """The stop signal of a generation run of the session of ``request`` (released when the run ends)."""
        key = session_key(request)
        if not key:  # called directly (tests, scripts): a signal nobody else can reach
            yield threading.Event()
            return
        with self.signals.running(key) as event:
            yield event

    # ------------------------------------------------------------ handlers
    def arm(self, request: gr.Request):
        """Generate was pressed: prepare the session's signal; Generate off, Stop on."""
        self.signals.arm(session_key(request))
        return gr.Button(interactive=False), gr.Button(value=STOP_LABEL, visible=True, interactive=True)

    def stop(self, request: gr.Request):
        """Stop was pressed: signal the session's run (it ends soon and keeps what it made)."""
        self.signals.stop(session_key(request))
        return gr.Button(value=STOPPING_LABEL, interactive=False)

    def finish(self, request: gr.Request):
        """The run ended (finished, stopped or failed): Generate on, Stop hidden."""
        self.signals.disarm(session_key(request))
        return gr.Button(interactive=True), gr.Button(value=STOP_LABEL, visible=False, interactive=True)

    def forget(self, request: gr.Request) -> None:
        """The page was closed: stop the session's run and drop its signal."""
        self.signals.forget(session_key(request))

    # ------------------------------------------------------------ layout
    @staticmethod
    def button(elem_id: str) -> gr.Button:
        """The Stop button (hidden until a run starts)."""
        return gr.Button(STOP_LABEL, variant="stop", visible=False, elem_id=elem_id)

    def wire(
        self,
        demo: gr.Blocks,
        *,
        generate_btn: gr.Button,
        stop_btn: gr.Button,
        fn: Callable[..., Any],
        inputs: Sequence[Any],
        outputs: Sequence[Any],
        api_name: str,
        stop_api_name: str = "stop_generation",
        concurrency_id: str | None = None,
        concurrency_limit: int | Literal["default"] | None = "default",
    ):
        """Connect Generate → (arm) → ``fn`` → (finish), Stop, and the page's unload; return ``fn``'s event.

        ``fn`` must run under the signal from :meth:`running`;
        ``concurrency_id`` and ``concurrency_limit`` go to its (queued)
        event. Stop is callable as ``/<stop_api_name>`` (it stops the
        caller's own session only).
        """
        buttons = [generate_btn, stop_btn]
        started = generate_btn.click(self.arm, None, buttons, queue=False, show_progress="hidden",
                                     api_visibility="private")
        run = started.then(fn, list(inputs), list(outputs), api_name=api_name, concurrency_id=concurrency_id,
                           concurrency_limit=concurrency_limit)
        # Gradio 6.31's page fires only ``.failure`` listeners after an error (``.then`` after success or a
        # cancel), so both give the buttons back (finishing twice is harmless)
        for after in (run.then, run.failure):
            after(self.finish, None, buttons, queue=False, show_progress="hidden", api_visibility="private")
        stop_btn.click(self.stop, None, stop_btn, queue=False, show_progress="hidden", api_name=stop_api_name)
        demo.unload(self.forget)
        return run
