"""Escaping user text for Markdown/HTML components."""

from __future__ import annotations

import html
import re

__all__ = ["md_escape"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~])")


def md_escape(value: object) -> str:
    """Escape text so Markdown shows it literally and no HTML in it renders.

    Quotes stay as they are: an entity such as ``&#x27;`` would have its ``#`` escaped below and show as typed.
    """
    text = html.escape("" if value is None else str(value), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", text)
