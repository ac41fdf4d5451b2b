"""The test data and specifications of a grid: ``data`` per kind of model, and each entry of ``specs``.

Test data of language models come from files, the dataset store or a sentence generator; those of
vision-language models from an image folder or manifest, or the store (embeddings use the words of the
specification). Paths are read from the grid file's folder; nothing is drawn here (see
:func:`biastest.audit.plan.freeze_items`). Specifications are resolved here — a library name first, else a
file — because they are small and their mistakes are the user's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest import public, settings
from biastest.audit.grid_common import (
    KEY_ENV,
    MSG_BAD_CHOICE,
    MSG_BAD_KEY_ENV,
    MSG_DATA_FROM,
    MSG_DATA_KIND,
    MSG_DATA_NO_FILES,
    MSG_FILE_NOT_FOUND,
    MSG_KEY_ENV_UNSET,
    MSG_KEY_NOT_FOR_MODEL,
    MSG_MISSING_KEY,
    MSG_SPEC_ENTRY,
    GridError,
    as_list,
    as_mapping,
    as_text,
    check_keys,
    existing_path,
    hint,
    in_entry,
    looks_like_path,
    resolve_path,
    what_of,
)
from biastest.errors import BiastestError
from biastest.generate.prompts import SENTENCE_PROMPTS
from biastest.inputs import load_spec
from biastest.models.endpoint_lm import check_endpoint_url
from biastest.options import check_option
from biastest.runner.services import IMPORT_FORMATS
from biastest.specs import get_twoafc_spec, list_specs
from biastest.store import default_store_dir

#: Where the test data of each kind can come from.
DATA_SOURCES = {"lm": ("files", "store", "generate"), "vlm": ("images", "store")}
TEXT_GENERATORS = ("openai", "openai-compatible", "local-transformers")

SPEC_KEYS = ("spec", "data")
DATA_KEYS = {
    "files": ("from", "files", "format"),
    "store": ("from", "store", "pairing"),
    "generate": ("from", "generator", "model", "base_url", "api_key_env", "per_attribute", "prompt", "seed"),
    "images": ("from", "images"),
}


@dataclass(frozen=True)
class SpecEntry:
    """One specification of the grid: the loaded spec, how it was named, and its own test data (if any)."""

    spec: Any
    given: str
    data: dict[str, dict[str, Any]] | None = None


def parse_data(value: Any, where: str, base: Path) -> dict[str, dict[str, Any]]:
    data = as_mapping(value, where)
    out: dict[str, dict[str, Any]] = {}
    for kind, conf in data.items():
        if kind not in DATA_SOURCES:
            raise GridError(MSG_DATA_KIND.format(kind=kind, hint=hint(kind, list(DATA_SOURCES))))
        out[kind] = _data_source(kind, conf, f"{where}.{kind}", base)
    return out


def _data_source(kind: str, value: Any, where: str, base: Path) -> dict[str, Any]:
    conf = as_mapping(value, where)
    choices = DATA_SOURCES[kind]
    source = conf.get("from")
    if source not in choices:
        raise GridError(MSG_DATA_FROM.format(where=where, choices=", ".join(choices), value=source))
    check_keys(conf, DATA_KEYS[source], where)
    out: dict[str, Any] = {"from": source}
    if source == "files":
        if "files" not in conf:
            raise GridError(MSG_DATA_NO_FILES.format(where=where))
        out["files"] = [str(existing_path(base, f, "files", where, "pairs file"))
                        for f in as_list(conf["files"], "files", where)]
        fmt = conf.get("format", "auto")
        if fmt not in IMPORT_FORMATS:
            raise GridError(MSG_BAD_CHOICE.format(name="format", where=where, choices=", ".join(IMPORT_FORMATS),
                                                  value=fmt))
        out["format"] = fmt
    elif source == "store":
        if conf.get("store") is not None:
            out["store"] = str(existing_path(base, conf["store"], "store", where, "store folder", folder_ok=True))
        else:
            out["store"] = str(default_store_dir())
        if kind == "lm":
            pairing = conf.get("pairing", "positional")
            if pairing not in ("positional", "all"):
                raise GridError(MSG_BAD_CHOICE.format(name="pairing", where=where, choices="positional, all",
                                                      value=pairing))
            out["pairing"] = pairing
    elif source == "images":
        out["images"] = str(existing_path(base, conf.get("images"), "images", where, "image folder or manifest",
                                  folder_ok=True))
    else:  # generate
        generator = conf.get("generator")
        if generator not in TEXT_GENERATORS:
            raise GridError(MSG_BAD_CHOICE.format(name="generator", where=where, choices=", ".join(TEXT_GENERATORS),
                                                  value=generator))
        out["generator"] = generator
        out["model"] = as_text(conf.get("model"), "model", where)
        if generator == "openai-compatible":
            try:
                out["base_url"] = check_endpoint_url(as_text(conf.get("base_url"), "base_url", where))
            except BiastestError as exc:
                raise in_entry(where, exc) from None
        elif "base_url" in conf:
            raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="base_url",
                                                         applies="the openai-compatible generator"))
        if generator == "local-transformers":
            if "api_key_env" in conf:
                raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="api_key_env",
                                                             applies="the openai and openai-compatible generators"))
            path = resolve_path(base, out["model"])
            try:
                out["model"] = str(path) if path.exists() else public.check_model_reference(out["model"])
            except BiastestError as exc:
                raise in_entry(where, exc) from None
        var = conf.get("api_key_env", "OPENAI_API_KEY" if generator == "openai" else None)
        if var is not None:
            var = str(var).strip()
            if not KEY_ENV.fullmatch(var):
                raise GridError(MSG_BAD_KEY_ENV.format(where=where))
            if not settings.secret_from(var):
                raise GridError(MSG_KEY_ENV_UNSET.format(var=var, where=where))
        out["api_key_env"] = var
        prompt = conf.get("prompt", "with-context")
        if prompt not in SENTENCE_PROMPTS:
            raise GridError(MSG_BAD_CHOICE.format(name="prompt", where=where, choices=", ".join(SENTENCE_PROMPTS),
                                                  value=prompt))
        out["prompt"] = prompt
        try:
            out["per_attribute"] = check_option("per_attribute", conf.get("per_attribute", 2))
            out["seed"] = check_option("seed", conf.get("seed", 42))
        except BiastestError as exc:
            raise in_entry(where, exc) from None
    return out


def parse_spec(value: Any, index: int, base: Path) -> SpecEntry:
    where = f"specification {index}"
    data = None
    if isinstance(value, Mapping):
        check_keys(value, SPEC_KEYS, where)
        if "spec" not in value:
            raise GridError(MSG_MISSING_KEY.format(where=where, key="spec", what="a library name or a file path"))
        given = value["spec"]
        if "data" in value:
            data = parse_data(value["data"], f"{where} data", base)
    else:
        given = value
    if not isinstance(given, str) or not given.strip():
        raise GridError(MSG_SPEC_ENTRY.format(where=where, what=what_of(given)))
    return SpecEntry(spec=resolve_spec(given.strip(), base, where), given=given.strip(), data=data)


def resolve_spec(value: str, base: Path, where: str):
    """A library specification by name first (names may hold '/'), else a specification file."""
    folded = {n.casefold(): n for n in list_specs("twoafc")}
    try:
        if value.casefold() in folded:
            return get_twoafc_spec(folded[value.casefold()])
        path = resolve_path(base, value)
        if path.is_file():
            public.check_server_path()
            return load_spec(str(path))
        if looks_like_path(value):
            raise GridError(MSG_FILE_NOT_FOUND.format(what="specification file", path=value, where=where))
        return load_spec(value)
    except GridError:
        raise
    except BiastestError as exc:
        raise in_entry(where, exc) from None
