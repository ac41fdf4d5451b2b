"""The counterfactual sentences: templates (shipped or the user's, checked), emotion words, and the sentence pairs.

A template is one line with exactly one ``{person}`` slot and at most one ``{word}`` slot (no other braces). The
shipped set (``biastest/data/classifier_templates.txt``, 12 templates) and the emotion words
(``biastest/data/emotion_words.csv``, 20 words of joy, sadness, anger and fear) were written for biastest; the
Equity Evaluation Corpus itself is not redistributed (``biastest/data/README.md``).

Examples
--------
>>> parse_templates("{person} feels {word}.\\n# a comment\\nI met {person}.")
('{person} feels {word}.', 'I met {person}.')
>>> fill("{person} feels {word}.", "she", "happy")
'She feels happy.'
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from importlib import resources

from biastest.errors import DataError

__all__ = [
    "MAX_TEMPLATES",
    "MAX_TEMPLATE_CHARS",
    "MSG_BAD_TEMPLATE",
    "MSG_NO_TEMPLATES",
    "MSG_TOO_MANY_TEMPLATES",
    "Sentence",
    "emotion_words",
    "fill",
    "parse_templates",
    "shipped_templates",
]

MAX_TEMPLATES = 200
MAX_TEMPLATE_CHARS = 300
MSG_NO_TEMPLATES = (
    "The templates hold no template (one a line, each with {person}; lines starting with # are comments)."
)
MSG_TOO_MANY_TEMPLATES = "There are {count} templates; at most {limit} are allowed."
MSG_BAD_TEMPLATE = (
    "Template {line} is not usable: {problem}. A template has exactly one {{person}} slot, at most one {{word}} slot, "
    "no other braces, and at most {limit} characters."
)

_SLOT = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Sentence:
    """One template filled with a word (the two sentences of a pair differ only in the person)."""

    template: str
    word: str
    emotion: str


def _check(template: str, line: int, required: tuple[str, ...], optional: tuple[str, ...],
           message: str) -> str:
    slots = tuple(f"{{{name}}}" for name in (*required, *optional))
    problem = None
    if len(template) > MAX_TEMPLATE_CHARS:
        problem = "too long"
    elif any(template.count(f"{{{name}}}") != 1 for name in required):
        problem = "it needs exactly one " + " and one ".join(f"{{{name}}}" for name in required)
    elif any(template.count(f"{{{name}}}") > 1 for name in optional):
        problem = "it has more than one " + next(f"{{{n}}}" for n in optional if template.count(f"{{{n}}}") > 1)
    elif any(x not in slots for x in _SLOT.findall(template)) or \
            _SLOT.sub("", template).count("{") or _SLOT.sub("", template).count("}"):
        problem = "it has braces other than " + " and ".join(slots)
    elif any(ord(c) < 32 for c in template):
        problem = "it has control characters"
    if problem:
        raise DataError(message.format(line=line, problem=problem, limit=MAX_TEMPLATE_CHARS))
    return template


def parse_templates(text: str, *, required: tuple[str, ...] = ("person",), optional: tuple[str, ...] = ("word",),
                    message: str = MSG_BAD_TEMPLATE, empty: str = MSG_NO_TEMPLATES) -> tuple[str, ...]:
    """The templates of ``text`` (one a line; blank lines and ``#`` comments skipped), each checked.

    ``required`` slots appear exactly once, ``optional`` ones at most once, no other braces (the defaults are this
    measure's ``{person}`` and ``{word}``; the classifier's occupations design passes its own slots and messages).

    Raises
    ------
    DataError
        ``empty`` (:data:`MSG_NO_TEMPLATES`), :data:`MSG_TOO_MANY_TEMPLATES` or ``message``
        (:data:`MSG_BAD_TEMPLATE`, with its line).
    """
    if not isinstance(text, str):
        raise DataError(empty)
    out: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = " ".join(raw.split())
        if not line or line.startswith("#"):
            continue
        out.append(_check(line, number, required, optional, message))
        if len(out) > MAX_TEMPLATES:
            raise DataError(MSG_TOO_MANY_TEMPLATES.format(count=f"more than {MAX_TEMPLATES}", limit=MAX_TEMPLATES))
    if not out:
        raise DataError(empty)
    return tuple(dict.fromkeys(out))


def shipped_templates() -> tuple[str, ...]:
    """The 12 templates written for biastest (``biastest/data/classifier_templates.txt``)."""
    text = resources.files("biastest").joinpath("data/classifier_templates.txt").read_text(encoding="utf-8")
    return parse_templates(text)


def emotion_words() -> tuple[tuple[str, str], ...]:
    """``(emotion, word)`` of ``biastest/data/emotion_words.csv`` (20 words, written for biastest)."""
    text = resources.files("biastest").joinpath("data/emotion_words.csv").read_text(encoding="utf-8")
    return tuple((row["emotion"], row["word"]) for row in csv.DictReader(text.splitlines()))


def fill(template: str, person: str, word: str = "") -> str:
    """The template with its slots filled; the first letter upper-cased when the person starts the sentence."""
    text = template.replace("{person}", person).replace("{word}", word)
    if template.startswith("{person}") and text:
        text = text[0].upper() + text[1:]
    return text
