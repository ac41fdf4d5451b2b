"""A YAML reader for files a user hands us: plain data only, bounded, every refusal a short message.

:func:`load_yaml` reads like ``yaml.safe_load`` (no tags, no code) and refuses more:

- **anchors and aliases** (``&a`` / ``*a``): a ~700-byte file of nested aliases expands to billions of nodes
  (the "billion laughs"); a grid never needs them;
- **a key given twice** in one mapping (``yaml.safe_load`` keeps the last one silently);
- **an integer of more than** :data:`MAX_DIGITS` **digits** (Python refuses to print integers over 4,300 digits,
  and no grid number needs 20).

:func:`shorten_quotes` cuts, in a message, every long text of the document to :data:`QUOTE_CHARS` characters,
so a 5 MB value is never echoed as 5 MB of output.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from biastest.errors import BiastestError

__all__ = ["MAX_DIGITS", "MSG_YAML_ALIAS", "MSG_YAML_DUPLICATE_KEY", "MSG_YAML_NUMBER", "QUOTE_CHARS",
           "UnsafeYAMLError", "load_yaml", "shorten_quotes"]

MAX_DIGITS = 20
QUOTE_CHARS = 80
#: A message longer than this is cut (after the quotes are shortened) whatever it holds.
MAX_MESSAGE_CHARS = 2000

MSG_YAML_ALIAS = (
    "The file '{path}' uses a YAML anchor or alias (&name or *name, line {line}). Write each value out in full; "
    "anchors and aliases are not read."
)
MSG_YAML_DUPLICATE_KEY = "The file '{path}' gives the key '{key}' twice in one mapping (line {line}). Give it once."
MSG_YAML_NUMBER = (
    "The file '{path}' holds a number too long to use (line {line}: {value}). Numbers here have at most "
    f"{MAX_DIGITS} digits."
)


class UnsafeYAMLError(BiastestError, ValueError):
    """The YAML text uses something :func:`load_yaml` does not read (the ``MSG_YAML_*`` messages)."""


def _quote(value: Any) -> str:
    text = str(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "…"


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without aliases, duplicate keys or unbounded integers."""

    path = ""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise UnsafeYAMLError(MSG_YAML_ALIAS.format(path=self.path, line=event.start_mark.line + 1))
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base class says so
                break
            if duplicate:
                raise UnsafeYAMLError(MSG_YAML_DUPLICATE_KEY.format(path=self.path, key=_quote(key),
                                                                    line=key_node.start_mark.line + 1))
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        digits = re.sub(r"[^0-9a-fA-F]", "", str(node.value).removeprefix("0x").removeprefix("0o"))
        if len(digits) > MAX_DIGITS:
            raise UnsafeYAMLError(MSG_YAML_NUMBER.format(path=self.path, line=node.start_mark.line + 1,
                                                         value=_quote(node.value)))
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def load_yaml(text: str, *, path: str = "") -> Any:
    """The document ``text`` holds, read as plain data (see the module docstring).

    Raises
    ------
    UnsafeYAMLError
        An anchor or alias, a duplicate key, an over-long integer.
    yaml.YAMLError
        Text that is not YAML.
    """
    loader = _Loader(text)
    loader.path = str(path)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _texts(doc: Any, out: set[str], depth: int = 0) -> None:
    if depth > 100:
        return
    if isinstance(doc, str):
        if len(doc) > QUOTE_CHARS:
            out.add(doc)
    elif isinstance(doc, dict):
        for k, v in doc.items():
            _texts(k, out, depth + 1)
            _texts(v, out, depth + 1)
    elif isinstance(doc, list | tuple):
        for v in doc:
            _texts(v, out, depth + 1)


def shorten_quotes(message: str, doc: Any) -> str:
    """``message`` with every text of ``doc`` longer than :data:`QUOTE_CHARS` quoted by its start only."""
    if len(message) <= QUOTE_CHARS:
        return message
    long_texts: set[str] = set()
    _texts(doc, long_texts)
    for text in sorted(long_texts, key=len, reverse=True):
        for form in (repr(text), text):
            if form in message:
                message = message.replace(form, _quote(form))
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + "…"
    return message
