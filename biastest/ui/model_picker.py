"""The honest model picker of the apps: a model list labelled by where each model comes from, and a line that says
whether the Hugging Face Hub can be reached.

The list comes from :func:`biastest.models.catalog.suggestions` — models on this machine first (the Hugging Face
cache, ``$BIASTEST_MODELS_DIR``), then embedded defaults, then Hub ids marked "downloads when online". The page
builds with the list as the server found it at start, without asking the network; when a page loads, the list is
read again and the Hub probed (:func:`biastest.models.catalog.hub_status`: at most 2 s, the answer kept a minute),
so that offline the Hub ids say they need the internet and the line under the list says what works. The value the
user chose or typed is never changed by that refresh.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from biastest.models import catalog
from biastest.report.text import md_escape

__all__ = ["ModelPicker", "build_model_picker", "picker_choices", "picker_update"]

log = logging.getLogger("biastest.ui.model_picker")


def picker_choices(app: str, *, hub: catalog.HubStatus | None = None) -> list[tuple[str, str]]:
    """(label, value) of the app's model list (labels say where each model comes from)."""
    return [(s.label, s.value) for s in catalog.suggestions(app, hub=hub)]


def note_markdown(app: str, entries: list[catalog.Suggestion], hub: catalog.HubStatus | None) -> str:
    """The line under the list, escaped for Markdown."""
    return md_escape(catalog.picker_note(app, entries, hub))


def picker_update(app: str) -> tuple[Any, str]:
    """The list and its line as they are now: read the machine again and probe the Hub (at most 2 s).

    Returns a ``gr.Dropdown`` update (choices only: the value is left as the user set it) and the line's Markdown.
    Never raises: a failure leaves the list as it was and logs why.
    """
    try:
        hub = catalog.hub_status()
        entries = catalog.suggestions(app, hub=hub)
    except Exception:  # the picker must never break the page
        log.exception("the model list could not be refreshed")
        return gr.skip(), gr.skip()
    return gr.Dropdown(choices=[(s.label, s.value) for s in entries]), note_markdown(app, entries, hub)


@dataclass
class ModelPicker:
    """The model list, the line under it, and the value it starts with."""

    dropdown: Any
    note: Any
    default: str
    app: str

    def wire(self) -> None:
        """Refresh the list and the line when a page loads (see the module docstring); inside the Blocks."""
        gr.on(None, lambda: picker_update(self.app), None, [self.dropdown, self.note], show_progress="hidden",
              concurrency_limit=None)


def build_model_picker(app: str, *, label: str, info: str, elem_id: str, note_id: str | None = None,
                       value: str | None = None) -> ModelPicker:
    """Lay out the model list (a dropdown that also takes a typed id or folder) and the line under it.

    Called inside the app's ``gr.Blocks``; the list and the line are refreshed when a page loads.

    Parameters
    ----------
    app : {"lm", "vlm", "embeddings"}
        Whose models (:data:`biastest.models.catalog.CATALOGS`).
    label, info, elem_id :
        The dropdown's.
    note_id : str, optional
        The line's ``elem_id`` (default ``elem_id + "-note"``).
    value : str, optional
        The starting value (default :func:`biastest.models.catalog.default_reference`: the first model that needs no
        download, else the first Hub id).
    """
    entries = catalog.suggestions(app)
    default = value if value is not None else catalog.default_reference(app)
    dropdown = gr.Dropdown(choices=[(s.label, s.value) for s in entries], value=default, allow_custom_value=True,
                           label=label, info=info, elem_id=elem_id)
    note = gr.Markdown(note_markdown(app, entries, None), elem_id=note_id or f"{elem_id}-note",
                       elem_classes=["bt-hint"])
    picker = ModelPicker(dropdown=dropdown, note=note, default=default, app=app)
    picker.wire()
    return picker
