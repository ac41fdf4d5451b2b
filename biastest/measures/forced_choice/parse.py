"""A strict reading of a chat model's answer to a forced choice: label ``A``/``B``, refused, or unparseable.

The model was shown two sentences labelled ``A`` and ``B`` and asked which is more plausible. Its answer is read
by these rules, in order; nothing else counts as a choice, and nothing is guessed:

1. **Empty** (only whitespace or markup): *unparseable*.
2. **Markup and a lead-in are set aside**: markdown emphasis (``**``, ``__``, ``*``, `````), surrounding quotes,
   and one lead-in — ``Answer:``, ``The answer is``, ``Final answer:``, ``Option``, ``Choice``, ``Sentence``
   (case aside).
3. **The sentence itself**: the rest equals option A's or option B's sentence, case, surrounding quotes,
   whitespace and final punctuation (``.``, ``!``, ``?``) aside → that option.
4. **A label**: ``A``, ``(A)``, ``[A]``, ``A.``, ``A)``, ``A:`` (alone, or after a lead-in, also ``a``) → that
   label, when
   nothing follows, or what follows (after ``.``, ``:``, ``)``, ``-`` or a line break) is the same option's
   sentence, or an explanation that names neither the other label (a stand-alone ``B``, ``(B)``, ``option B``),
   nor the other sentence, nor a refusal word. A bare capital ``A`` followed by a space and more words is the
   article, not a label (``A man is …``), and is not read as one.
5. **A refusal**: an answer that chose nothing and says ``I can't``/``I cannot``/``I won't``/``I will not``,
   ``I'm (not) able``/``unable``, ``I must decline``, ``I refuse``, ``both``, ``neither``, ``it depends``,
   ``as an AI`` … (:data:`REFUSAL`) → *refused*.
6. Anything else — both labels, both sentences, a label contradicted by the other sentence, a label with a
   refusal word, no label at all — *unparseable*.

The outcome keeps which rule decided (``rule``), so a table can show why an answer counted as it did; the raw
text is kept by the caller.

Examples
--------
>>> parse_answer("**B**", "The cat sat.", "The dog sat.").label
'B'
>>> parse_answer('"the dog sat"', "The cat sat.", "The dog sat.").label
'B'
>>> parse_answer("A or B", "x", "y").outcome
'unparseable'
>>> parse_answer("I cannot choose between them.", "x", "y").outcome
'refused'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from biastest.models.answers import LEAD_IN, REFUSAL, REFUSED, UNPARSEABLE

__all__ = [
    "CHOICE",
    "PARSE_OUTCOMES",
    "REFUSAL",
    "REFUSED",
    "UNPARSEABLE",
    "Parsed",
    "normalise_sentence",
    "parse_answer",
]

CHOICE = "choice"
#: What :func:`parse_answer` can say.
PARSE_OUTCOMES = (CHOICE, REFUSED, UNPARSEABLE)

_MARKUP = re.compile(r"(\*\*|__|\*|`)")
_QUOTES = "\"'“”‘’«»"
_LEAD_IN = LEAD_IN
_LABEL = re.compile(r"^[\(\[]?([AB])[\)\]]?(?=$|[\s.:)\]\-–,!])", re.IGNORECASE)
_SEPARATOR = re.compile(r"^\s*(?:[.:)\]\-–,!]+\s*|\n\s*)")


@dataclass(frozen=True)
class Parsed:
    """How one answer was read.

    Attributes
    ----------
    outcome : {"choice", "refused", "unparseable"}
    label : {"A", "B"} or None
        The label chosen (None unless ``outcome`` is ``choice``).
    rule : str
        Which rule decided (``label``, ``sentence``, ``label+sentence``, ``label+explanation``, ``refusal``,
        ``empty``, ``both-labels``, ``contradiction``, ``label+refusal``, ``no-label``).
    """

    outcome: str
    label: str | None
    rule: str


def normalise_sentence(text: str) -> str:
    """A sentence as compared: case folded, whitespace collapsed, surrounding quotes and final ``.!?`` removed.

    >>> normalise_sentence('  "The Cat  sat!" ')
    'the cat sat'
    """
    t = " ".join(str(text).split()).strip()
    prev = None
    while prev != t:
        prev = t
        t = t.strip().strip(_QUOTES).strip().rstrip(".!?").strip()
    return t.casefold()


def _strip_markup(text: str) -> str:
    return _MARKUP.sub("", text).strip().strip(_QUOTES).strip()


def _names_label(text: str, label: str) -> bool:
    """Whether ``text`` names ``label`` on its own: ``B``, ``(B)``, ``option b``, ``answer: b``."""
    stand_alone = re.search(rf"(?<![\w'’]){label}(?![\w'’])", text)
    spelled = re.search(rf"\b(?:option|answer|choice|sentence)\s*[:\-]?\s*\(?{label}\b", text, re.IGNORECASE)
    return bool(stand_alone or spelled)


def _contains(text: str, sentence: str) -> bool:
    s = normalise_sentence(sentence)
    return bool(s) and re.search(rf"(?<!\w){re.escape(s)}(?!\w)", " ".join(text.split()).casefold()) is not None


def _after_label(label: str, rest: str, options: dict[str, str]) -> Parsed:
    """A label was read; judge what follows it."""
    other = "B" if label == "A" else "A"
    if not rest.strip():
        return Parsed(CHOICE, label, "label")
    if normalise_sentence(rest) == normalise_sentence(options[label]):
        return Parsed(CHOICE, label, "label+sentence")
    if normalise_sentence(rest) == normalise_sentence(options[other]) or _contains(rest, options[other]):
        return Parsed(UNPARSEABLE, None, "contradiction")
    if _names_label(rest, other):
        return Parsed(UNPARSEABLE, None, "both-labels")
    if REFUSAL.search(rest):
        return Parsed(UNPARSEABLE, None, "label+refusal")
    return Parsed(CHOICE, label, "label+explanation")


def parse_answer(text: str | None, option_a: str, option_b: str) -> Parsed:
    """Read an answer to "A or B?" strictly (see the module docstring for the rules).

    Parameters
    ----------
    text : str or None
        The model's raw answer.
    option_a, option_b : str
        The sentences shown as A and B.

    Returns
    -------
    Parsed
    """
    options = {"A": option_a, "B": option_b}
    body = _strip_markup(text or "")
    if not body:
        return Parsed(UNPARSEABLE, None, "empty")
    lead = _LEAD_IN.match(body)
    core = body[lead.end():].strip().strip(_QUOTES).strip() if lead else body
    n_core = normalise_sentence(core)
    a_same, b_same = n_core == normalise_sentence(option_a), n_core == normalise_sentence(option_b)
    if a_same != b_same:
        return Parsed(CHOICE, "A" if a_same else "B", "sentence")
    m = _LABEL.match(core)
    if m is not None:
        letter = m.group(1)
        bare = lead is None and not core.startswith(("(", "["))
        rest = core[m.end():]
        separated = _SEPARATOR.match(rest)
        closed = m.group(0).endswith((")", "]"))
        if not rest.strip(" .:!\n") or ((letter.isupper() or not bare) and (separated or closed or not bare)):
            return _after_label(letter.upper(), rest[separated.end():] if separated else rest, options)
    if REFUSAL.search(body):
        return Parsed(REFUSED, None, "refusal")
    if _names_label(body, "A") and _names_label(body, "B"):
        return Parsed(UNPARSEABLE, None, "both-labels")
    return Parsed(UNPARSEABLE, None, "no-label")
