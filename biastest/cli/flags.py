"""Command-line flags made from a measure's options (no hand-written table of which option applies where).

A field of a measure's :class:`~biastest.measures.base.OptionsBase` is on the command line when it declares its
flag in ``json_schema_extra``::

    n_resamples: int = Field(10_000, json_schema_extra=cli_flag("--bootstrap", "bootstrap resamples"))

(:func:`biastest.measures.base.cli_flag`).

:func:`flags_of` lists the flags of an options class; :func:`add_flags` puts them on an ``argparse`` parser (the
``dest`` is the option's name, so two measures may map one flag onto different options: ``--bootstrap`` is
``n_resamples`` of the stereotype score and ``n_bootstrap`` of 2AFC); :func:`given_values` reads back what the user
typed. A flag's type follows the field's annotation: whole numbers, numbers, switches (``bool``), repeatable
(``tuple``/``list``) or text. Values are checked by the options class itself (``Options.parse``), before any model
loads, with the measure's own messages.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from biastest.measures.base import OptionsBase

__all__ = ["MAX_NUMBER_CHARS", "MSG_FLAG_NOT_NUMBER", "MSG_FLAG_NOT_WHOLE", "Flag", "add_flags", "flags_of",
           "given_values", "number", "whole_number"]

#: The keys of a field's ``json_schema_extra`` (written by :func:`biastest.measures.base.cli_flag`).
FLAG_KEY = "flag"
HELP_KEY = "help"
METAVAR_KEY = "metavar"
ENDPOINT_KEY = "endpoint"

#: The longest number a flag reads (more characters are refused before they are read, and never echoed in full).
MAX_NUMBER_CHARS = 40
#: How many characters of a refused value a message quotes.
QUOTED_CHARS = 80
MSG_FLAG_NOT_WHOLE = "expects a whole number (such as 42), got {value!r}."
MSG_FLAG_NOT_NUMBER = "expects a number (such as 0.95), got {value!r}."


def _quoted(text: str) -> str:
    return text if len(text) <= QUOTED_CHARS else text[:QUOTED_CHARS] + "…"


def whole_number(text: str) -> int:
    """A whole-number flag's value: digits with an optional sign, at most :data:`MAX_NUMBER_CHARS` characters.

    ``2.5``, ``1e400``, ``2.0`` and a 5,000-digit number are refused (argparse exits 2 with the message); the
    option's own bounds are checked afterwards by its measure.

    Raises
    ------
    argparse.ArgumentTypeError
        :data:`MSG_FLAG_NOT_WHOLE` (quoting at most :data:`QUOTED_CHARS` characters).
    """
    value = str(text).strip()
    digits = value[1:] if value[:1] in "+-" else value
    if len(value) > MAX_NUMBER_CHARS or not digits.isascii() or not digits.isdigit():
        raise argparse.ArgumentTypeError(MSG_FLAG_NOT_WHOLE.format(value=_quoted(str(text))))
    return int(value)


def number(text: str) -> float:
    """A number flag's value (``nan`` and ``inf`` are read, and refused by the option's bounds).

    Raises
    ------
    argparse.ArgumentTypeError
        :data:`MSG_FLAG_NOT_NUMBER`: not a number, or longer than :data:`MAX_NUMBER_CHARS` characters.
    """
    value = str(text).strip()
    try:
        if len(value) > MAX_NUMBER_CHARS:
            raise ValueError(value)
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(MSG_FLAG_NOT_NUMBER.format(value=_quoted(str(text)))) from None


@dataclass(frozen=True)
class Flag:
    """One command-line flag of a measure: the option it sets and how argparse reads it."""

    option: str
    flag: str
    kind: str  # "int", "float", "bool", "many", "text"
    help: str
    metavar: str | None = None
    endpoint: str | None = None


def _kind(annotation: Any) -> str:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        kinds = {_kind(a) for a in args}
        if "many" in kinds:
            return "many"
        if str in args:  # text that may also be a switch value (a tokenizer name, or False)
            return "text"
        for k in ("bool", "float", "int"):
            if k in kinds:
                return k
        return "text"
    if origin in (tuple, list):
        return "many"
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    return "text"


def flags_of(options: type[OptionsBase]) -> list[Flag]:
    """The command-line flags an options class declares, in field order."""
    out = []
    for name, field in options.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, Mapping) else {}
        if FLAG_KEY not in extra:
            continue
        out.append(Flag(name, str(extra[FLAG_KEY]), _kind(field.annotation), str(extra.get(HELP_KEY, "")),
                        extra.get(METAVAR_KEY), extra.get(ENDPOINT_KEY)))
    return out


def add_flags(parser: argparse.ArgumentParser | Any, flags: list[Flag]) -> None:
    """Add ``flags`` to ``parser`` (default ``None``: an option left out keeps its measure's default)."""
    for f in flags:
        kw: dict[str, Any] = {"dest": f.option, "help": f.help, "default": None}
        if f.kind == "bool":
            kw["action"] = "store_true"
        else:
            if f.metavar:
                kw["metavar"] = f.metavar
            if f.kind == "many":
                kw["action"] = "append"
            elif f.kind in ("int", "float"):
                kw["type"] = whole_number if f.kind == "int" else number
        parser.add_argument(f.flag, **kw)


def given_values(args: argparse.Namespace, flags: list[Flag]) -> dict[str, Any]:
    """The options the user gave (flags left out are not in the mapping)."""
    return {f.option: getattr(args, f.option) for f in flags if getattr(args, f.option, None) is not None}
