"""Escaping user text for Markdown/HTML components, and the number formats every report shares."""

from __future__ import annotations

import html
import math
import re
from typing import Any

__all__ = ["esc", "fmt", "fmt_p", "level_label", "level_percent", "md_escape", "plural", "plural_word"]

#: Plurals that do not add "s" (every other word of a count takes "s").
IRREGULAR_PLURALS = {"analysis": "analyses", "child": "children", "person": "people",
                     "family": "families", "category": "categories", "this": "these", "is": "are", "was": "were",
                     "has": "have"}

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~])")


def md_escape(value: object) -> str:
    """Escape text so Markdown shows it literally and no HTML in it renders.

    Quotes stay as they are: an entity such as ``&#x27;`` would have its ``#`` escaped below and show as typed.
    """
    text = html.escape("" if value is None else str(value), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", text)


def fmt(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals for tables and readings; "—" for a missing or non-finite one.

    >>> fmt(0.12345), fmt(None), fmt(float("nan")), fmt(3)
    ('0.123', '—', '—', '3')
    """
    if value is None:
        return "—"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        return f"{value:.{digits}f}"
    return str(value)


def fmt_p(value: float | None) -> str:
    """A p-value: two significant digits below 0.001, else three decimals; "—" when missing.

    >>> fmt_p(0.00012), fmt_p(0.0312), fmt_p(None)
    ('0.00012', '0.031', '—')
    """
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def esc(text: Any) -> str:
    """``text`` HTML-escaped (quotes too); ``None`` is the empty string."""
    return html.escape("" if text is None else str(text), quote=True)


def level_percent(prob: float) -> str:
    """The mass of an interval as its labels print it.

    >>> level_percent(0.89), level_percent(0.975)
    ('89%', '97.5%')
    """
    return f"{round(float(prob) * 100, 1):g}%"


def level_label(confidence: float, *, space: bool = True) -> str:
    """A confidence level as a reader sees it: 0.95 → ``"95 %"`` (``"95%"`` without the space)."""
    text = f"{100 * confidence:.4g}"
    return f"{text} %" if space else f"{text}%"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, the word in the plural unless ``n`` is 1: ``"1 cluster"``, ``"2 clusters"``, ``"0 pairs"``.

    ``many`` gives the plural form; else :data:`IRREGULAR_PLURALS`, else ``word + "s"`` (``"es"`` after s, x,
    z, ch, sh). The count is written with thousands separators.

    >>> plural(1, "cluster"), plural(2, "cluster"), plural(0, "pair"), plural(1500, "pair"), plural(3, "analysis")
    ('1 cluster', '2 clusters', '0 pairs', '1,500 pairs', '3 analyses')
    """
    return f"{n:,} {plural_word(n, word, many)}"


def plural_word(n: int, word: str, many: str | None = None) -> str:
    """The form of ``word`` that goes with ``n`` (see :func:`plural`), without the number."""
    if n == 1:
        return word
    if many is not None:
        return many
    if word in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[word]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"
