"""The "Shared dataset" panel of step 2, shared by the apps that store what their users generate.

The panel says which dataset the server pulls from and pushes to
(:meth:`~biastest.store.shared.SharedDataset.summary`) and, for the items one
session saved to the shared store, their sync state (saved locally, queued,
pushed with the commit id, failed and will retry). It reads local state only
(the last pull, the push journal), so it never waits for the network; a
"Refresh from the dataset" button asks for a pull and returns at once, and a
timer redraws the panel every few seconds.

Each app says what one of its items is (a picture, a generation run of
sentences) with its own messages; the rendering and the layout are here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gradio as gr

from biastest.store.shared import ITEM_FAILED, ITEM_LOCAL, ITEM_PUSHED, ITEM_QUEUED
from biastest.ui.common import escape

__all__ = [
    "MSG_PANEL_COMMIT",
    "MSG_PANEL_MORE",
    "PANEL_MAX_ITEMS",
    "PANEL_TICK_S",
    "PanelItem",
    "build_dataset_panel",
    "panel_markdown",
]

MSG_PANEL_COMMIT = " in commit {commit}"
MSG_PANEL_MORE = "… and {n} more."
#: Items listed one by one in the panel (the rest are counted).
PANEL_MAX_ITEMS = 12
#: Seconds between refreshes of the panel (it reads local state only; never the network).
PANEL_TICK_S = 5.0

PanelItem = tuple[Sequence[str], Mapping[str, Any]]
"""One item a session saved: its store-relative files and the fields of the app's item message."""


def panel_markdown(dataset, items: Sequence[PanelItem], *, none_saved: str, head: str, item: str) -> str:
    """The panel's Markdown: the dataset's summary, then this session's items and their sync state.

    Parameters
    ----------
    dataset : SharedDataset or None
        None: no panel ("").
    items : sequence of (files, fields)
        The session's saved items: the store-relative files that hold each, and the fields of ``item``.
    none_saved : str
        Said when the session saved nothing yet.
    head : str
        The list's headline, with ``{n}`` (items) and ``{counts}`` ("3 pushed, 1 queued").
    item : str
        One item's line, with its ``fields`` and ``{state}``.
    """
    if dataset is None:
        return ""
    text = escape(dataset.summary())
    if not items:
        return text + "\n\n" + escape(none_saved)
    states = dataset.item_state([f for files, _ in items for f in files])
    lines, counts = [], {}
    for files, fields in items:
        got = [states.get(f, (ITEM_QUEUED, "")) for f in files] or [(ITEM_LOCAL, "")]
        kinds = {k for k, _ in got}
        state = next(k for k in (ITEM_LOCAL, ITEM_FAILED, ITEM_QUEUED, ITEM_PUSHED) if k in kinds)
        counts[state] = counts.get(state, 0) + 1
        line = item.format(**fields, state=state)
        commit = got[-1][1] if state == ITEM_PUSHED else ""
        if commit:
            line += MSG_PANEL_COMMIT.format(commit=commit[:10])
        lines.append(f"- {escape(line)}")
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    out = [text, "", escape(head.format(n=len(items), counts=summary)), *lines[:PANEL_MAX_ITEMS]]
    if len(lines) > PANEL_MAX_ITEMS:
        out.append(escape(MSG_PANEL_MORE.format(n=len(lines) - PANEL_MAX_ITEMS)))
    return "\n".join(out)


def build_dataset_panel(*, visible: bool, session: Any, panel_fn: Callable, refresh_fn: Callable):
    """Lay out the "Shared dataset" accordion (panel, "Refresh from the dataset", a timer); build inside a Blocks.

    Parameters
    ----------
    visible : bool
        Whether the app has a shared dataset (no panel and no timer otherwise).
    session : gr.State
        The session whose items the panel lists (the input of both handlers).
    panel_fn, refresh_fn : callable
        ``fn(session) -> Markdown``: redraw the panel; ask for a pull (returning at once) and redraw it.

    Returns
    -------
    show_panel : callable
        ``show_panel(event)`` redraws the panel after ``event`` (one that changed the session).
    resets : list of (component, value)
        What "New bias test" puts back.
    wire : callable
        ``wire()`` connects the button and the timer (call it once the layout is built).
    """
    with gr.Accordion("Shared dataset", open=True, visible=visible, elem_id="dataset-section"):
        panel = gr.Markdown("", elem_id="dataset-panel")
        refresh_btn = gr.Button("Refresh from the dataset", size="sm", elem_id="dataset-refresh")
    timer = gr.Timer(PANEL_TICK_S, active=visible)

    def show_panel(event) -> None:
        event.then(panel_fn, session, panel, queue=False, show_progress="hidden", api_visibility="private")

    def wire(*_: Any) -> None:
        refresh_btn.click(refresh_fn, session, panel, queue=False, show_progress="hidden",
                          api_name="refresh_dataset")
        timer.tick(panel_fn, session, panel, queue=False, show_progress="hidden", api_visibility="private")

    return show_panel, [(panel, "")], wire
