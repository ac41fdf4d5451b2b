"""What the prompt templates of the chat measures share: names, the user's own text, the fields it may hold.

Each chat measure (forced-choice, twoafc-chat, psychometric-chat) keeps its own named, versioned templates and its
own rule for which ``{…}`` fields its wording must hold (with its own messages); the rest is here once: a name
checked against the measure's templates (or ``custom``), the named template looked up, a user's text split into a
system message and a user message (a line ``---`` between them; without one the whole text is the user message)
after the length check, and the ``{…}`` fields of a text read as :class:`string.Formatter` reads them.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any, TypeVar

from biastest.errors import OptionError
from biastest.measures.base import did_you_mean

__all__ = [
    "CUSTOM",
    "MAX_TEMPLATE_CHARS",
    "MSG_TEMPLATE_EMPTY",
    "MSG_TEMPLATE_TOO_LONG",
    "check_name",
    "named_template",
    "split_template",
    "template_fields",
]

#: The template name of a user's own text.
CUSTOM = "custom"
#: Longest user template (system and user message together), in characters.
MAX_TEMPLATE_CHARS = 4000

MSG_TEMPLATE_TOO_LONG = "The prompt template is {n:,} characters long; at most {limit:,} are allowed."
MSG_TEMPLATE_EMPTY = "The prompt template is empty."

T = TypeVar("T")


def template_fields(text: str) -> list[str] | None:
    """The ``{…}`` field names of ``text`` in order (``""`` for ``{}``), or None when a brace stands alone."""
    try:
        return [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError:  # a lone brace
        return None


def check_name(value: Any, templates: Mapping[str, Any], message: str) -> str:
    """``value`` as a name of ``templates`` or :data:`CUSTOM` (case and spaces aside).

    Raises
    ------
    OptionError
        ``message`` (with ``value``, ``hint`` and ``choices``) for any other value.
    """
    name = str(value).strip().lower() if isinstance(value, str) else value
    choices = [*templates, CUSTOM]
    if name not in choices:
        raise OptionError(message.format(value=value, hint=did_you_mean(str(value), choices),
                                         choices=", ".join(choices)), option="template", value=value)
    return name


def named_template(name: Any, templates: Mapping[str, T], message: str) -> T:
    """The template of ``templates`` called ``name`` (``custom`` is not one: it needs the user's text)."""
    name = check_name(name, templates, message)
    if name == CUSTOM:
        raise OptionError(message.format(value=name, hint="", choices=", ".join(templates)))
    return templates[name]


def split_template(text: Any, *, empty: str = MSG_TEMPLATE_EMPTY, too_long: str = MSG_TEMPLATE_TOO_LONG,
                   ) -> tuple[str, str]:
    """``(system, user)`` of a user's template text, checked for emptiness and length.

    Raises
    ------
    OptionError
        ``empty`` (default :data:`MSG_TEMPLATE_EMPTY`), ``too_long`` (default :data:`MSG_TEMPLATE_TOO_LONG`, with
        ``n`` and ``limit``): a measure may word them its own way.
    """
    if not isinstance(text, str) or not text.strip():
        raise OptionError(empty, option="template_text")
    if len(text) > MAX_TEMPLATE_CHARS:
        raise OptionError(too_long.format(n=len(text), limit=MAX_TEMPLATE_CHARS), option="template_text")
    parts = re.split(r"(?m)^[ \t]*---[ \t]*$", text, maxsplit=1)
    return (parts[0].strip(), parts[1].strip()) if len(parts) == 2 else ("", text.strip())
