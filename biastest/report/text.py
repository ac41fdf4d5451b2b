"""Escaping user text for Markdown/HTML components, and the number formats every report shares."""

from __future__ import annotations

import html
import math
import re
from typing import Any

from biastest.words import plural, plural_word

__all__ = ["esc", "fmt", "fmt_p", "level_label", "level_percent", "md_escape", "plural", "plural_word"]


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

