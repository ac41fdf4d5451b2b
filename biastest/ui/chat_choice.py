"""What every app's "a chat model" choice shares: where the model runs, the model and address checks, the cost gate.

A chat model runs in this process (an instruct model with a chat template, from the Hub or a folder) or behind an
OpenAI-compatible chat endpoint (address, served name, a key for this session only: passed to the run and never
put in the session's state, a file or a log). :func:`model_and_endpoint` checks the typed model and address the way
every app does (public mode refuses addresses that are not public, and local model references it does not allow);
:func:`confirmation_needed` is the hosted-endpoint cost gate (the command line's ``--yes``). Used by the language-model
app's chat choice (:mod:`biastest.ui.gpt.chat`, :mod:`biastest.ui.gpt.bbq`) and the word-embedding app's 2AFC of a
chat model (:mod:`biastest.ui.psychophysics.chat`).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from biastest import public
from biastest.errors import DataError, OptionError
from biastest.models.endpoint_lm import MSG_NEED_ENDPOINT_URL, check_endpoint_url

__all__ = [
    "CHAT_ENDPOINT",
    "CHAT_HERE",
    "CHAT_WHERE_CHOICES",
    "MSG_CONFIRM_NEEDED",
    "MSG_NO_CHAT_MODEL",
    "chat_where_visibility",
    "confirmation_needed",
    "model_and_endpoint",
]

#: Where the chat model runs.
CHAT_HERE = "here"
CHAT_ENDPOINT = "endpoint"
CHAT_WHERE_CHOICES = [("An instruct model on this server (its chat template)", CHAT_HERE),
                      ("A model behind a chat endpoint (OpenAI chat protocol)", CHAT_ENDPOINT)]

MSG_NO_CHAT_MODEL = "Type the chat model to ask (a Hub id or folder; at an endpoint, the name it serves)."
MSG_CONFIRM_NEEDED = (
    "This run asks {requests:,} questions of a hosted endpoint, more than {limit:,}: tick 'I accept this cost' "
    "next to the button to run it."
)


def model_and_endpoint(chat_where: Any, model: Any, url: Any) -> tuple[str, str | None]:
    """The checked ``(model, endpoint)`` of a chat choice (endpoint None: the model runs in this process).

    Raises
    ------
    DataError
        No model typed (:data:`MSG_NO_CHAT_MODEL`).
    OptionError, PolicyError
        No endpoint address, or one refused (public mode: one that is not public); a local model reference that
        public mode refuses.
    """
    model = str(model or "").strip()
    if not model:
        raise DataError(MSG_NO_CHAT_MODEL)
    if chat_where == CHAT_ENDPOINT:
        url = str(url or "").strip()
        if not url:
            raise OptionError(MSG_NEED_ENDPOINT_URL)
        return model, check_endpoint_url(url)
    return public.check_model_reference(model), None


def confirmation_needed(cost: Any, confirmed: Any) -> bool:
    """Whether a run must wait for the user's confirmation: a hosted endpoint over the limit, the box unticked."""
    return bool(cost.needs_confirmation) and not bool(confirmed)


def chat_where_visibility(where: Any) -> Any:
    """The endpoint's address and key boxes show only for a model behind a chat endpoint."""
    return gr.Column(visible=where == CHAT_ENDPOINT)
