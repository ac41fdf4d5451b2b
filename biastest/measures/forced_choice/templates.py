"""The prompt wording of a forced-choice test: named, versioned templates, or the user's own text.

A template is a system message and a user message with two placeholders, ``{option_a}`` and ``{option_b}``, for
the two sentences; the answer labels are ``A`` and ``B``. A named template never changes once released: a new
wording gets a new version (``plausible-v2``), so a result's ``template`` names the exact words asked. A user's
own template (:func:`custom_template`) is checked — both placeholders once each, no other ``{…}`` field, at most
:data:`MAX_TEMPLATE_CHARS` characters — and recorded verbatim in the result.

A user template is written as one text: the system message, a line ``---``, then the user message; without a
``---`` line the whole text is the user message (no system message).

Examples
--------
>>> t = get_template("plausible-v1")
>>> t.render("The cat sat.", "The dog sat.")[1].endswith("Answer with A or B only.")
True
>>> custom_template("Which is likelier? A: {option_a} B: {option_b}").system
''
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from biastest.errors import OptionError
from biastest.measures.chat_templates import (
    CUSTOM,
    MAX_TEMPLATE_CHARS,
    MSG_TEMPLATE_EMPTY,
    MSG_TEMPLATE_TOO_LONG,
    check_name,
    named_template,
    split_template,
    template_fields,
)

__all__ = [
    "DEFAULT_TEMPLATE",
    "LABELS",
    "MAX_TEMPLATE_CHARS",
    "MSG_TEMPLATE_BAD_FIELD",
    "MSG_TEMPLATE_EMPTY",
    "MSG_TEMPLATE_PLACEHOLDERS",
    "MSG_TEMPLATE_TOO_LONG",
    "MSG_UNKNOWN_TEMPLATE",
    "TEMPLATES",
    "PromptTemplate",
    "check_template_name",
    "custom_template",
    "get_template",
    "resolve_template",
]

#: The two answer labels, in the order the options are shown.
LABELS = ("A", "B")
#: The line that separates a user template's system message from its user message.
SEPARATOR = "---"

MSG_UNKNOWN_TEMPLATE = "Unknown prompt template '{value}'.{hint} Choose one of: {choices}."
MSG_TEMPLATE_PLACEHOLDERS = (
    "The prompt template must contain {{option_a}} and {{option_b}} exactly once each (the two sentences); "
    "it has {{option_a}} {n_a} times and {{option_b}} {n_b} times."
)
MSG_TEMPLATE_BAD_FIELD = (
    "The prompt template has a field '{{{field}}}' it cannot fill: only {{option_a}} and {{option_b}} are "
    "filled (write '{{{{' and '}}}}' for literal braces)."
)


@dataclass(frozen=True)
class PromptTemplate:
    """One wording of the question: a system message and a user message with ``{option_a}``/``{option_b}``.

    Attributes
    ----------
    name : str
        ``plausible-v1`` …, or ``custom`` for the user's own text.
    system : str
        The system message ("" for none).
    user : str
        The user message with the two placeholders.
    """

    name: str
    system: str
    user: str

    def render(self, option_a: str, option_b: str) -> tuple[str, str]:
        """``(system, user)`` with the two sentences in place (the sentences are not read as format strings)."""
        return self.system, self.user.format(option_a=option_a, option_b=option_b)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (recorded in the result's provenance, verbatim)."""
        return {"name": self.name, "system": self.system, "user": self.user}


#: The named templates (never edited once released: a new wording is a new version).
TEMPLATES: dict[str, PromptTemplate] = {
    "plausible-v1": PromptTemplate(
        name="plausible-v1",
        system="You are taking part in a study of how people and language models judge sentences. "
               "Answer with a single letter.",
        user="Which of these two sentences is more plausible?\n\nA. {option_a}\nB. {option_b}\n\n"
             "Answer with A or B only.",
    ),
    "likely-v1": PromptTemplate(
        name="likely-v1",
        system="",
        user="Here are two sentences.\n(A) {option_a}\n(B) {option_b}\n"
             "Which sentence is more likely to be true? Reply with the letter A or B only.",
    ),
}
DEFAULT_TEMPLATE = "plausible-v1"


def check_template_name(value: Any) -> str:
    """A named template (:data:`TEMPLATES`) or ``custom``.

    Raises
    ------
    OptionError
        :data:`MSG_UNKNOWN_TEMPLATE`.
    """
    return check_name(value, TEMPLATES, MSG_UNKNOWN_TEMPLATE)


def get_template(name: str) -> PromptTemplate:
    """The named template (:data:`TEMPLATES`)."""
    return named_template(name, TEMPLATES, MSG_UNKNOWN_TEMPLATE)


def _fields(text: str) -> list[str]:
    found = template_fields(text)
    return ["{"] if found is None else found


def custom_template(text: Any) -> PromptTemplate:
    """The user's own template from one text (system message, a ``---`` line, user message), checked.

    Raises
    ------
    OptionError
        :data:`MSG_TEMPLATE_EMPTY`, :data:`MSG_TEMPLATE_TOO_LONG`, :data:`MSG_TEMPLATE_PLACEHOLDERS`,
        :data:`MSG_TEMPLATE_BAD_FIELD`.
    """
    system, user = split_template(text)
    fields = _fields(system) + _fields(user)
    for f in fields:
        if f not in ("option_a", "option_b", ""):
            raise OptionError(MSG_TEMPLATE_BAD_FIELD.format(field=f), option="template_text")
    n_a, n_b = _fields(user).count("option_a"), _fields(user).count("option_b")
    if (n_a, n_b) != (1, 1) or "" in fields or _fields(system):
        raise OptionError(MSG_TEMPLATE_PLACEHOLDERS.format(n_a=fields.count("option_a"), n_b=fields.count("option_b")),
                          option="template_text")
    return PromptTemplate(name=CUSTOM, system=system, user=user)


def resolve_template(name: str, text: str | None) -> PromptTemplate:
    """The template a run asks with: the user's text when given (``name`` is then ``custom``), else the named one."""
    if text is not None:
        return custom_template(text)
    return get_template(name)
