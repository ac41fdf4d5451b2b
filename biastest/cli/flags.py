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

__all__ = ["Flag", "add_flags", "flags_of", "given_values"]

#: The keys of a field's ``json_schema_extra`` (written by :func:`biastest.measures.base.cli_flag`).
FLAG_KEY = "flag"
HELP_KEY = "help"
METAVAR_KEY = "metavar"
ENDPOINT_KEY = "endpoint"


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
                kw["type"] = int if f.kind == "int" else float
        parser.add_argument(f.flag, **kw)


def given_values(args: argparse.Namespace, flags: list[Flag]) -> dict[str, Any]:
    """The options the user gave (flags left out are not in the mapping)."""
    return {f.option: getattr(args, f.option) for f in flags if getattr(args, f.option, None) is not None}
