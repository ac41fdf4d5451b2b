"""The predefined library of bias specifications, resolved through a registry.

The specifications are data files in this folder:

- ``biastestgpt_core.json`` — the 15 core specifications of BiasTestGPT,
  unchanged (Apache-2.0, Kaminari84/BiasTestGPT);
- ``selections.json`` — for the originals with more than two social groups or
  attribute lists, named two-list selections (so nothing is silently dropped:
  the dropped list is named by the selection);
- ``weat.json`` — WEAT 1–10 (Caliskan et al. 2017; word lists via WEFE, MIT);
- ``psychophysics.json`` — 2AFC specifications: occupations × gender cue
  pairs and occupations × love/hate (Liang & Acuna 2020).

Names resolve through :func:`get_spec`; a typo gets "did you mean …".
Dropdowns are filled from :func:`list_specs`, never typed by hand.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from typing import Literal

from biastest.errors import SpecError
from biastest.spec import BiasSpec, TwoAFCSpec

__all__ = ["SpecKind", "get_document", "get_spec", "get_twoafc_spec", "list_specs"]

SpecKind = Literal["bias", "weat", "twoafc"]

MSG_UNKNOWN_SPEC = "There is no predefined specification called '{name}'.{hint}"
MSG_DID_YOU_MEAN = " Did you mean '{suggestion}'?"
MSG_NO_SUGGESTION = " Choose one from the list of predefined specifications."
MSG_NOT_TESTABLE_ORIGINAL = (
    "The original specification '{name}' has more than two lists; choose one of its named selections: {choices}."
)


def _read(name: str) -> list[dict]:
    text = resources.files("biastest.specs").joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _library() -> dict[str, tuple[SpecKind, BiasSpec | TwoAFCSpec]]:
    lib: dict[str, tuple[SpecKind, BiasSpec | TwoAFCSpec]] = {}
    originals = {d["name"]: BiasSpec.from_dict(d) for d in _read("biastestgpt_core.json")}
    selections = _read("selections.json")
    selected_from = {s["from"] for s in selections}
    for name, spec in originals.items():
        if name not in selected_from:
            lib[name] = ("bias", spec)
        # originals with extra lists are reachable only through a named selection
    for s in selections:
        spec = originals[s["from"]].select(groups=s["groups"], attributes=s["attributes"], name=s["name"])
        lib[s["name"]] = ("bias", spec)
    for d in _read("weat.json"):
        lib[d["name"]] = ("weat", BiasSpec.from_dict(d))
    for d in _read("psychophysics.json"):
        lib[d["name"]] = ("twoafc", TwoAFCSpec.from_dict(d))
    return lib


@cache
def _documents() -> dict[str, BiasSpec]:
    return {d["name"]: BiasSpec.from_dict(d) for d in _read("biastestgpt_core.json")}


def list_specs(kind: SpecKind | tuple[SpecKind, ...] | None = None) -> list[str]:
    """Names of the predefined specifications, in library order.

    Parameters
    ----------
    kind : {"bias", "weat", "twoafc"} or tuple of them, optional
        ``bias`` — BiasTestGPT specifications (language and vision tests);
        ``weat`` — WEAT 1–10 (testable as bias specs too);
        ``twoafc`` — psychophysics target/cue-pair specifications.
    """
    kinds = (kind,) if isinstance(kind, str) else kind
    return [n for n, (k, _) in _library().items() if kinds is None or k in kinds]


def _resolve(name: str) -> tuple[SpecKind, BiasSpec | TwoAFCSpec]:
    lib = _library()
    if name in lib:
        return lib[name]
    folded = {n.casefold(): n for n in lib}
    if isinstance(name, str) and name.strip().casefold() in folded:
        return lib[folded[name.strip().casefold()]]
    if isinstance(name, str) and name in _documents():
        choices = [s for s in lib if s.startswith(name + " (")]
        raise SpecError(MSG_NOT_TESTABLE_ORIGINAL.format(name=name, choices="; ".join(choices)))
    match = difflib.get_close_matches(str(name), list(lib), n=1, cutoff=0.5)
    if not match:
        match = [n for n in lib if str(name).casefold() in n.casefold()][:1]
    hint = MSG_DID_YOU_MEAN.format(suggestion=match[0]) if match else MSG_NO_SUGGESTION
    raise SpecError(MSG_UNKNOWN_SPEC.format(name=name, hint=hint), suggestion=match[0] if match else None)


def get_spec(name: str) -> BiasSpec:
    """A predefined, testable bias specification (BiasTestGPT or WEAT) by name.

    Raises
    ------
    SpecError
        Unknown name (with "did you mean"), or a 2AFC specification.
    """
    _, spec = _resolve(name)
    if not isinstance(spec, BiasSpec):
        raise SpecError(MSG_UNKNOWN_SPEC.format(name=name, hint=MSG_NO_SUGGESTION))
    return spec


def get_twoafc_spec(name: str) -> TwoAFCSpec:
    """A predefined psychophysics (2AFC) specification by name."""
    _, spec = _resolve(name)
    if not isinstance(spec, TwoAFCSpec):
        raise SpecError(MSG_UNKNOWN_SPEC.format(name=name, hint=MSG_NO_SUGGESTION))
    return spec


def get_document(name: str) -> BiasSpec:
    """An original BiasTestGPT specification exactly as published (may have extra lists)."""
    docs = _documents()
    if name not in docs:
        match = difflib.get_close_matches(name, list(docs), n=1, cutoff=0.5)
        hint = MSG_DID_YOU_MEAN.format(suggestion=match[0]) if match else MSG_NO_SUGGESTION
        raise SpecError(MSG_UNKNOWN_SPEC.format(name=name, hint=hint))
    return docs[name]
