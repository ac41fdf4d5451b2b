"""The predefined library of bias specifications, resolved through a registry.

The specifications are data files in this folder:

- ``biastestgpt_core.json`` — the 15 core specifications of BiasTestGPT,
  unchanged (Apache-2.0, Kaminari84/BiasTestGPT);
- ``selections.json`` — for the originals with more than two social groups or
  attribute lists, named two-list selections (so nothing is silently dropped:
  the dropped list is named by the selection);
- ``weat.json`` — WEAT 1–10 (Caliskan et al. 2017; word lists via WEFE, MIT);
- ``manzini.json`` — Manzini et al. (2019)'s religion (Jewish, Christian,
  Muslim terms), race (Black, Caucasian, Asian) and gender vocabularies, each
  group with its own stereotype list (a group spec: MAC per group and the
  Bayesian estimate take all groups; WEAT only the two-group gender one);
- ``psychophysics.json`` — 2AFC specifications: occupations × gender cue
  pairs and occupations × love/hate (Liang & Acuna 2020);
- ``images.json`` — specifications for pictures (the vision-language app): image terms a picture can show
  (men and women, occupations, age and race groups) and targets a picture can be classified into;
- ``names.json`` — the readable names the library gives the BiasTestGPT
  specifications and selections, in the style of the WEAT ones
  (``"<source>: <group 1> vs <group 2>, <attribute 1> vs <attribute 2>"``),
  each marking how it relates to a WEAT test with the same or nearly the
  same words ("same words as WEAT 1", "WEAT 7's words, groups and attributes
  swapped", "like WEAT 3, 50 names each").

Names resolve through :func:`get_spec`; a typo gets "did you mean …". The
original BiasTestGPT names (``Math_Arts_vs_Male_Female``) stay valid as
aliases, so saved references and scripts keep working; a specification
carries its readable name. Dropdowns are filled from :func:`list_specs`,
never typed by hand.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Literal

from biastest.errors import SpecError
from biastest.spec import BiasSpec, TwoAFCSpec

__all__ = ["SpecKind", "aliases", "get_document", "get_spec", "get_twoafc_spec", "list_specs"]

SpecKind = Literal["bias", "weat", "groups", "twoafc", "image"]

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
def aliases() -> dict[str, str]:
    """Earlier names (the original BiasTestGPT ones) → the library's readable name (``names.json``)."""
    return {d["from"]: d["name"] for d in _read("names.json")}


@cache
def _library() -> dict[str, tuple[SpecKind, BiasSpec | TwoAFCSpec]]:
    lib: dict[str, tuple[SpecKind, BiasSpec | TwoAFCSpec]] = {}
    originals = {d["name"]: BiasSpec.from_dict(d) for d in _read("biastestgpt_core.json")}
    selections = _read("selections.json")
    selected_from = {s["from"] for s in selections}
    readable = aliases()
    for name, spec in originals.items():
        if name not in selected_from:
            lib[readable[name]] = ("bias", replace(spec, name=readable[name]))
        # originals with extra lists are reachable only through a named selection
    for s in selections:
        spec = originals[s["from"]].select(groups=s["groups"], attributes=s["attributes"], name=readable[s["name"]])
        lib[readable[s["name"]]] = ("bias", spec)
    for d in _read("weat.json"):
        lib[d["name"]] = ("weat", BiasSpec.from_dict(d))
    for d in _read("manzini.json"):
        lib[d["name"]] = ("groups", BiasSpec.from_dict(d).check_group_spec())
    for d in _read("psychophysics.json"):
        lib[d["name"]] = ("twoafc", TwoAFCSpec.from_dict(d))
    for d in _read("images.json"):
        lib[d["name"]] = ("image", BiasSpec.from_dict(d))
    return lib


@cache
def _documents() -> dict[str, BiasSpec]:
    return {d["name"]: BiasSpec.from_dict(d) for d in _read("biastestgpt_core.json")}


def list_specs(kind: SpecKind | tuple[SpecKind, ...] | None = None) -> list[str]:
    """Names of the predefined specifications: kind by kind in the order ``kind`` names them, in library order within
    a kind (all of them in library order when ``kind`` is None).

    Parameters
    ----------
    kind : {"bias", "weat", "groups", "twoafc", "image"} or tuple of them, optional
        ``bias`` — BiasTestGPT specifications (sentence tests);
        ``weat`` — WEAT 1–10 (testable as bias specs too);
        ``groups`` — group specs with one stereotype list per group, some with three groups (Manzini et al.
        2019; for MAC per group and the Bayesian estimate);
        ``twoafc`` — psychophysics target/cue-pair specifications;
        ``image`` — picture specifications for the vision-language test: the social groups are what a picture
        shows (people, occupations), the attribute lists what it is classified into.
    """
    if kind is None:
        return list(_library())
    kinds = (kind,) if isinstance(kind, str) else kind
    return [n for wanted in kinds for n, (k, _) in _library().items() if k == wanted]


def _resolve(name: str) -> tuple[SpecKind, BiasSpec | TwoAFCSpec]:
    lib = _library()
    if name in lib:
        return lib[name]
    known = {**{n: n for n in lib}, **aliases()}  # every accepted name → the library's name
    folded = {n.casefold(): target for n, target in known.items()}
    if isinstance(name, str) and name.strip().casefold() in folded:
        return lib[folded[name.strip().casefold()]]
    if isinstance(name, str) and name in _documents():
        choices = [aliases()[s["name"]] for s in _read("selections.json") if s["from"] == name]
        raise SpecError(MSG_NOT_TESTABLE_ORIGINAL.format(name=name, choices="; ".join(choices)))
    match = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.5)
    if not match:
        match = [n for n in known if str(name).casefold() in n.casefold()][:1]
    suggestion = known[match[0]] if match else None
    hint = MSG_DID_YOU_MEAN.format(suggestion=suggestion) if suggestion else MSG_NO_SUGGESTION
    raise SpecError(MSG_UNKNOWN_SPEC.format(name=name, hint=hint), suggestion=suggestion)


def get_spec(name: str) -> BiasSpec:
    """A predefined bias specification (BiasTestGPT, WEAT, or a group spec of Manzini et al.) by name.

    The group specs may have three groups: WEAT and the stereotype score refuse those
    (:meth:`~biastest.spec.BiasSpec.check_two_groups`).

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
