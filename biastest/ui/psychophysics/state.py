"""What every section of the word-embedding app shares: the per-user session and the section record.

All per-user data lives in one ``gr.State`` dictionary, the *session*
(:func:`new_session`); each section module builds its controls into a
:class:`Section`, which also remembers the value “New bias test” resets each
control to.
"""

from __future__ import annotations

from typing import Any

from biastest.errors import DataError

MSG_SPEC_FIRST = "Complete step 1 first: check the specification and press “Next: test data”."
MSG_RUN_FIRST = "Run the test in step 2 first."

#: What each button does, as its failure message names it (:func:`biastest.ui.common.inline_failures`: the reason
#: next to the button, in its message box, never only in a pop-up that vanishes).
ACTION_CONFIRM = "Checking the specification"
ACTION_TRAIN = "Training the replicate models"
ACTION_RUN = "The test"
ACTION_BAYES = "The Bayesian estimate"
ACTION_POSTERIOR = "Sampling the posteriors"
ACTION_CHAT = "Asking the chat model"
ACTION_CLASSIFIER = "Scoring with the classifier"
ACTION_CURVES = "Fitting the curves"

NO_RESET = object()
"""Marks a control that “New bias test” leaves as it is (see :meth:`Section.add`)."""


def new_session() -> dict[str, Any]:
    """A fresh per-user session (what ``gr.State`` holds)."""
    return {
        "kind": None,  # "twoafc" | "weat"
        "spec": None,  # TwoAFCSpec | BiasSpec
        "source": None,  # embedding source id
        "lookup": None,  # {role: LookupReport}
        "embedding_refused": None,  # why the embedding cannot test the 2AFC spec (a chat model or classifier can)
        "replicates": None,  # list[WordEmbeddings] trained on a corpus (restricted to the spec's words)
        "replicate_note": "",
        "result": None,
        "bayes": None,
        "posterior": None,
    }


def need_session(session: dict[str, Any] | None, *keys: str) -> dict[str, Any]:
    """The session, once step 1 is done (and every key in ``keys`` is set).

    Raises
    ------
    DataError
        Step 1 not done (:data:`MSG_SPEC_FIRST`) or a key not set yet (:data:`MSG_RUN_FIRST`).
    """
    if not session or session.get("spec") is None:
        raise DataError(MSG_SPEC_FIRST)
    for k in keys:
        if session.get(k) is None:
            raise DataError(MSG_RUN_FIRST)
    return session


def file_path(value: Any) -> str | None:
    """The local path of a ``gr.File`` value (a path, a file object, a dict or a one-item list), or None."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
        if value is None:
            return None
    if isinstance(value, dict):
        value = value.get("path") or value.get("name")
    return str(getattr(value, "name", value)) if value else None


class Section:
    """Components of one section of the app, by name, and the values that “New bias test” resets them to."""

    def __init__(self) -> None:
        self._resets: list[tuple[Any, Any]] = []

    def add(self, name: str, component: Any, reset: Any = NO_RESET) -> Any:
        """Keep ``component`` as attribute ``name``; reset it to ``reset`` on “New bias test” unless NO_RESET."""
        setattr(self, name, component)
        if reset is not NO_RESET:
            self._resets.append((component, reset))
        return component

    def resets(self) -> list[tuple[Any, Any]]:
        """``(component, value)`` pairs, in the order they were added."""
        return list(self._resets)
