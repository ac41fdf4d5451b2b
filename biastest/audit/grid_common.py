"""What the grid's readers share: the error, the messages, and small checks that say where a mistake is.

Each message names the place in the grid file (``model 2 ('gpt2')``, ``data.lm``, ``options`` …) so a
user can find the mistake; :func:`in_entry` puts that place before a library's own message.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biastest import public
from biastest.errors import BiastestError


class GridError(BiastestError, ValueError):
    """The grid file cannot be used as written (a missing or unknown key, a bad value …)."""



MSG_GRID_NOT_FOUND = "The grid file '{path}' does not exist. Check the path."
MSG_GRID_UNREADABLE = "The grid file '{path}' cannot be read ({problem})."
MSG_GRID_YAML = "The grid file '{path}' is not valid YAML: {problem}"
MSG_GRID_TOO_LARGE = "The grid file '{path}' is {size:,} bytes; a grid file may be at most {limit:,} bytes."
#: The largest grid file read (a grid lists models and specifications; 1 MiB is far more than any needs).
MAX_GRID_BYTES = 1 << 20
MSG_GRID_NOT_MAPPING = (
    "The grid file '{path}' must hold a mapping with the keys models and specs (and optionally data, methods, "
    "seeds, options, resources); it holds {what}."
)
MSG_UNKNOWN_KEY = "Unknown key '{key}' in {where}.{hint} Allowed: {choices}."
MSG_MISSING_KEY = "{where} needs '{key}': {what}."
MSG_NOT_A_LIST = "'{key}' in {where} must be a list, got {what}."
MSG_EMPTY_LIST = "'{key}' in {where} lists nothing. Give at least one."
MSG_NOT_A_MAPPING = "{where} must be a mapping (key: value), got {what}."
MSG_NOT_TEXT = "'{key}' in {where} must be text, got {what}."
MSG_DID_YOU_MEAN = " Did you mean '{suggestion}'?"
MSG_MODEL_KIND = "{where} has the unknown kind '{value}'.{hint} Choose one of: lm, vlm, embeddings."
MSG_MODEL_NO_ID = (
    "{where} names no model: give 'id' (a local folder or a Hugging Face Hub id; for embeddings a source such as "
    "glove-6b-50d), or 'endpoint' and 'model' for a language model behind an endpoint."
)
MSG_MODEL_ID_AND_ENDPOINT = (
    "{where} gives both 'id' and 'endpoint'. A model is either loaded here ('id') or served behind an endpoint "
    "('endpoint' and 'model'); give one of the two."
)
MSG_MODEL_ENDPOINT_NEEDS_MODEL = (
    "{where} gives an endpoint but no 'model': the name of the model the endpoint serves (for example "
    "meta-llama/Llama-3.1-8B; the server's model list shows it)."
)
MSG_ENDPOINT_NOT_EMBEDDINGS = (
    "{where}: only language and vision-language models (kind lm or vlm) can be tested behind an endpoint."
)
MSG_KEY_NOT_FOR_MODEL = "{where}: '{key}' applies only to {applies}. Leave it out."
MSG_MODEL_FOLDER_MISSING = (
    "{where}: the model folder '{path}' does not exist. Check the path (relative paths are read from the grid "
    "file's folder), or give a Hugging Face Hub id."
)
MSG_DUPLICATE_NAME = "Two models are named '{name}'. Give each model its own name."
MSG_DUPLICATE_MODEL = "The models '{first}' and '{second}' are the same model ({identity}). List each model once."
MSG_BAD_KEY_ENV = (
    "{where}: api_key_env takes the name of an environment variable that holds the key (such as MY_ENDPOINT_KEY), "
    "not the key itself: keys never go in a grid file."
)
MSG_KEY_ENV_UNSET = (
    "The environment variable {var} named by api_key_env ({where}) is not set or is empty. Set it to the key first "
    "(export {var}=…), then run again."
)
MSG_IN_ENTRY = "{where}: {message}"
MSG_SPEC_ENTRY = "{where} must be a specification name, a file path, or a mapping with 'spec' (and 'data'); got {what}."
MSG_DUPLICATE_SPEC = "The specification '{name}' is listed twice. List each specification once."
MSG_UNKNOWN_METHOD = "Unknown method '{value}' in {where}.{hint} Choose from: {choices}."
#: A measure that gives no single score per cell (``MEASURE.extra["audit"] = False`` without its own words).
MSG_NOT_IN_AUDIT = (
    "The {name} test ({where}) gives no single score per cell for an audit's table. Run it on its own with the "
    "command line's run {name}."
)
MSG_METHOD_NOT_FOR_KIND = "{where} lists '{method}', a method for {method_kind} models, but the model is {kind}."
MSG_DUPLICATE_ITEM = "'{value}' is listed twice in '{key}' of {where}. List it once."
MSG_UNKNOWN_OPTION = "Unknown option '{name}' in {where}.{hint} Allowed: {choices}."
MSG_OPTION_UNUSED = (
    "The option '{name}' in {where} applies to {applies}, and no cell of this grid runs that. Leave it out."
)
MSG_BAD_CHOICE = "'{name}' in {where} must be one of: {choices}; got {value!r}."
MSG_BAD_FLAG = "'{name}' in {where} must be true or false, got {value!r}."
MSG_BAD_TEMPLATES = (
    "'prompt_template' in {where} must be a template or a list of templates with {{term}}, got {value!r}."
)
MSG_BAD_SIGMA = (
    "'noise_sigma' in {where} must be 0 (no noise: a deterministic step) or a number greater than 0 and at most 1, "
    "got {value!r}."
)
MSG_BAD_RESOURCE = "'{name}' in {where} must be a number from 0 to {high:g}, got {value!r}."
MSG_BAD_WHOLE_RESOURCE = "'{name}' in {where} must be a whole number from {low} to {high}, got {value!r}."
MSG_BAD_MEMORY = "'memory' in {where} must be a size such as 4GB, 512MB or 2GiB, or a number of bytes; got {value!r}."
MSG_DATA_KIND = (
    "Unknown kind '{kind}' in data.{hint} Test data is given for: lm, vlm (embeddings use the words of the "
    "specification)."
)
MSG_DATA_FROM = "'from' in {where} must be one of: {choices}; got {value!r}."
MSG_DATA_NO_FILES = "{where} takes its sentence pairs from files but lists none: give 'files' (a list of paths)."
MSG_FILE_NOT_FOUND = (
    "The {what} '{path}' ({where}) does not exist. Check the path (relative paths are read from the grid file's "
    "folder)."
)
MSG_NO_CELLS = (
    "The grid gives no cell to run: no method applies to any model and specification. Check 'methods' and 'specs' "
    "({skipped})."
)

RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "max_retries", "replicas")
KEY_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_MAX_MEMORY = 2**80  # bytes: far above any machine, far below float overflow
_MEMORY_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
                 "t": 10**12, "tb": 10**12, "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30,
                 "gib": 2**30, "ti": 2**40, "tib": 2**40}


def what_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the text {value[:60]!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {str(value)[:40]!r}"


def hint(value: Any, choices: Sequence[str]) -> str:
    match = difflib.get_close_matches(str(value).strip().lower(), list(choices), n=1, cutoff=0.5)
    return MSG_DID_YOU_MEAN.format(suggestion=match[0]) if match else ""


def check_keys(mapping: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise GridError(MSG_UNKNOWN_KEY.format(key=key, where=where, hint=hint(key, allowed),
                                                   choices=", ".join(allowed)))


def as_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise GridError(MSG_NOT_A_MAPPING.format(where=where, what=what_of(value)))
    return value


def as_list(value: Any, key: str, where: str, *, one_ok: bool = True) -> list[Any]:
    if one_ok and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise GridError(MSG_NOT_A_LIST.format(key=key, where=where, what=what_of(value)))
    if not value:
        raise GridError(MSG_EMPTY_LIST.format(key=key, where=where))
    return value


def as_text(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GridError(MSG_NOT_TEXT.format(key=key, where=where, what=what_of(value)))
    return value.strip()


def in_entry(where: str, exc: BiastestError) -> BiastestError:
    return type(exc)(MSG_IN_ENTRY.format(where=where, message=exc.message), **exc.details)


def looks_like_path(value: str) -> bool:
    return value.startswith(("/", ".", "~")) or value.lower().endswith((".json", ".csv", ".yaml", ".yml"))


def resolve_path(base: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return (p if p.is_absolute() else base / p).resolve()


def existing_path(base: Path, value: Any, key: str, where: str, what: str, *, folder_ok: bool = False) -> Path:
    text = as_text(value, key, where)
    public.check_server_path()
    path = resolve_path(base, text)
    if not (path.is_file() or (folder_ok and path.is_dir())):
        raise GridError(MSG_FILE_NOT_FOUND.format(what=what, path=text, where=where))
    return path


def parse_memory(value: Any, where: str = "resources") -> int:
    """Bytes of a memory size (``4GB``, ``512MB``, ``2GiB`` or a number of bytes).

    Raises
    ------
    GridError
        :data:`MSG_BAD_MEMORY`.
    """
    if isinstance(value, bool):
        raise GridError(MSG_BAD_MEMORY.format(where=where, value=value))
    if isinstance(value, numbers.Real):
        if not 0 < value < _MAX_MEMORY or not math.isfinite(value):
            raise GridError(MSG_BAD_MEMORY.format(where=where, value=value))
        return int(value)
    m = _MEMORY.match(value) if isinstance(value, str) else None
    size = float(m.group(1)) * _MEMORY_UNITS[(m.group(2) or "").lower()] if m is not None else 0.0
    if not 0 < size < _MAX_MEMORY:  # a 5,000-digit size is a mistake, not a number to round
        raise GridError(MSG_BAD_MEMORY.format(where=where, value=value))
    return int(size)




def parse_resources(value: Any, where: str) -> dict[str, Any]:
    res = as_mapping(value, where)
    check_keys(res, RESOURCE_KEYS, where)
    out: dict[str, Any] = {}
    for name, high in (("num_cpus", 1024.0), ("num_gpus", 64.0)):
        if name in res:
            v = res[name]
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (0 <= float(v) <= high):
                raise GridError(MSG_BAD_RESOURCE.format(name=name, where=where, high=high, value=v))
            out[name] = int(v) if float(v).is_integer() else float(v)
    for name, low, high in (("max_retries", 0, 100), ("replicas", 1, 64)):
        if name in res:
            v = res[name]
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not low <= int(v) <= high:
                raise GridError(MSG_BAD_WHOLE_RESOURCE.format(name=name, where=where, low=low, high=high, value=v))
            out[name] = int(v)
    if "memory" in res:
        out["memory"] = parse_memory(res["memory"], where)
    return out
