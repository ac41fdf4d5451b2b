"""The audit grid file: models × specifications × methods × seeds, read and checked before anything loads.

A grid is a YAML file (read as plain data only: no tags, no code, no anchors or aliases, no key twice; see
:mod:`biastest.audit.safe_yaml`)::

    name: gender-lms                      # optional, recorded
    models:
      - {name: small, kind: lm, id: ./models/small}          # a local folder (relative to this file)
      - {name: gpt2, kind: lm, id: gpt2, revision: main}     # a Hugging Face Hub id
      - {name: served, kind: lm, endpoint: http://127.0.0.1:8000/v1, model: meta-llama/Llama-3.1-8B,
         api_key_env: MY_KEY}                                # a model behind an endpoint (the key stays in the env)
      - {name: gpt-4o, kind: vlm, endpoint: https://api.openai.com/v1, model: gpt-4o-2024-08-06,
         api_key_env: OPENAI_API_KEY}                        # a vision-language model behind a chat endpoint
      - {name: glove, kind: embeddings, id: glove-6b-50d}    # an embedding source
    specs:
      - "WEAT 7: Math vs arts, male vs female terms"          # a library name (list-specs)
      - my_spec.json                                         # a specification file
      - {spec: "WEAT 8: Science vs arts, male vs female terms", data: {from: files, files: [crows.csv]}}
    data:                                 # test data per kind (default: the dataset store, as the CLI)
      lm: {from: files, files: [pairs.csv], format: auto}     # or {from: store, store: DIR, pairing: positional}
                                                             # or {from: generate, generator: ..., model: ...}
      vlm: {from: images, images: ./images}                  # or {from: store, store: DIR}
    methods: [causal-sum, causal-diff-span, weat, 2afc]      # default: the CLI's default per kind
    seeds: [42, 43]                                          # default: the apps' seed per kind
    options: {n_resamples: 2000, confidence: 0.95, n_permutations: 10000}
    resources: {num_cpus: 1, num_gpus: 0, memory: 4GB, max_retries: 2}   # per cell on Ray

Every field is checked here (:func:`load_grid`, :func:`parse_grid`), with the
numeric options going through :mod:`biastest.options` and model ids, files and
endpoint addresses through :mod:`biastest.public`, and every mistake raises a
:class:`~biastest.errors.BiastestError` with one of the ``MSG_*`` messages
below, which says where in the file the mistake is. Nothing is loaded, read
from the network or run here; the specifications are resolved (library or
file) because they are small and their mistakes are the user's.

This module never imports gradio or ray.
"""

from __future__ import annotations

import copy
import difflib
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from biastest import settings
from biastest.errors import BiastestError, OptionError
from biastest.inputs import embedding_source, load_spec
from biastest.options import DEFAULT_BOOTSTRAP, DEFAULT_NOISE_SIGMA, DEFAULT_PERMUTATIONS

__all__ = [
    "DATA_SOURCES",
    "EMBEDDING_METHODS",
    "Grid",
    "GridError",
    "KINDS",
    "ModelEntry",
    "OPTION_SCOPES",
    "SpecEntry",
    "load_grid",
    "method_kind",
    "option_defaults",
    "parse_grid",
    "parse_memory",
]


class GridError(BiastestError, ValueError):
    """The grid file cannot be used as written (a missing or unknown key, a bad value …)."""


KINDS = ("lm", "vlm", "embeddings")
#: Embedding tests an audit runs (the Bayesian model has no single score per cell: run it alone).
EMBEDDING_METHODS = ("weat", "2afc")
#: The method of a vision-language model follows from the model (CLIP-like, VQA classifier or generative).
VLM_METHOD = "vlm"
#: Where the test data of each kind can come from.
DATA_SOURCES = {"lm": ("files", "store", "generate"), "vlm": ("images", "store")}
TEXT_GENERATORS = ("openai", "openai-compatible", "local-transformers")

GRID_KEYS = ("name", "models", "specs", "data", "methods", "seeds", "options", "resources")
MODEL_KEYS = ("name", "kind", "id", "revision", "endpoint", "model", "api_key_env", "tokenizer", "methods", "options",
              "resources")
SPEC_KEYS = ("spec", "data")
RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "max_retries", "replicas")
DATA_KEYS = {
    "files": ("from", "files", "format"),
    "store": ("from", "store", "pairing"),
    "generate": ("from", "generator", "model", "base_url", "api_key_env", "per_attribute", "prompt", "seed"),
    "images": ("from", "images"),
}

#: The run options a grid may set and the cells they apply to (lm, lm-endpoint, vlm, vlm-endpoint, weat, 2afc);
#: their defaults are the command line's, which are the apps' (:func:`option_defaults`).
OPTION_SCOPES: dict[str, tuple[str, ...]] = {
    "batch_size": ("lm", "lm-endpoint", "vlm"),
    "n_resamples": ("lm", "lm-endpoint", "vlm", "vlm-endpoint"),
    "confidence": ("lm", "lm-endpoint", "vlm", "vlm-endpoint", "weat", "2afc"),
    "tie_tolerance": ("lm", "lm-endpoint"),
    "clusters": ("lm", "lm-endpoint", "vlm", "vlm-endpoint"),
    "device": ("lm", "vlm"),
    "dtype": ("lm", "vlm"),
    "concurrency": ("lm-endpoint", "vlm-endpoint"),
    "max_requests": ("lm-endpoint", "vlm-endpoint"),
    "time_limit": ("lm-endpoint", "vlm-endpoint"),
    "prompt_template": ("vlm",),
    "question": ("vlm", "vlm-endpoint"),
    "combine": ("vlm",),
    "max_new_tokens": ("vlm", "vlm-endpoint"),
    "n_permutations": ("weat",),
    "n_bootstrap": ("2afc",),
    "noise_sigma": ("2afc",),
    "sigmoid": ("2afc",),
    "lapse": ("2afc",),
}


@cache
def _defaults() -> dict[str, Any]:
    from biastest.measures.stereotype.clusters import DEFAULT_CLUSTERS
    from biastest.measures.stereotype.score import DEFAULT_BATCH_SIZE, DEFAULT_TIE_TOLERANCE
    from biastest.measures.vlm.options import COMBINE_CHOICES, DEFAULT_PROMPT_TEMPLATE, DEFAULT_QUESTION
    from biastest.measures.vlm.options import DEFAULT_BATCH_SIZE as VLM_BATCH_SIZE
    from biastest.measures.vlm.options import DEFAULT_CLUSTERS as VLM_CLUSTERS
    from biastest.models.endpoint_lm import DEFAULT_CONCURRENCY, DEFAULT_MAX_REQUESTS, DEFAULT_TIME_LIMIT

    return {
        "lm": {"batch_size": DEFAULT_BATCH_SIZE, "n_resamples": DEFAULT_BOOTSTRAP["lm"], "confidence": 0.95,
               "tie_tolerance": DEFAULT_TIE_TOLERANCE, "clusters": DEFAULT_CLUSTERS, "device": "auto", "dtype": "auto"},
        "lm-endpoint": {"batch_size": DEFAULT_BATCH_SIZE, "n_resamples": DEFAULT_BOOTSTRAP["lm"], "confidence": 0.95,
                        "tie_tolerance": DEFAULT_TIE_TOLERANCE, "clusters": DEFAULT_CLUSTERS,
                        "concurrency": DEFAULT_CONCURRENCY,
                        "max_requests": DEFAULT_MAX_REQUESTS, "time_limit": DEFAULT_TIME_LIMIT},
        "vlm": {"prompt_template": [DEFAULT_PROMPT_TEMPLATE], "question": DEFAULT_QUESTION,
                "combine": COMBINE_CHOICES[0], "clusters": VLM_CLUSTERS, "batch_size": VLM_BATCH_SIZE,
                "n_resamples": DEFAULT_BOOTSTRAP["vlm"], "confidence": 0.95, "max_new_tokens": 8, "device": "auto",
                "dtype": "auto"},
        "vlm-endpoint": {"question": DEFAULT_QUESTION, "n_resamples": DEFAULT_BOOTSTRAP["vlm"], "confidence": 0.95,
                         "clusters": VLM_CLUSTERS, "max_new_tokens": 8, "concurrency": DEFAULT_CONCURRENCY,
                         "max_requests": DEFAULT_MAX_REQUESTS, "time_limit": DEFAULT_TIME_LIMIT},
        "weat": {"n_permutations": DEFAULT_PERMUTATIONS, "confidence": 0.95},
        "2afc": {"noise_sigma": DEFAULT_NOISE_SIGMA, "sigmoid": "norm", "lapse": False,
                 "n_bootstrap": DEFAULT_BOOTSTRAP["2afc"], "confidence": 0.95},
    }


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
MSG_BAYES_NOT_IN_AUDIT = (
    "The bayes test ({where}) gives posterior contrasts per word, not one score per cell for an audit's table. "
    "Run it on its own: python -m biastest run SPEC --kind embeddings --test bayes."
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

_KEY_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_MAX_MEMORY = 2**80  # bytes: far above any machine, far below float overflow
_MEMORY_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
                 "t": 10**12, "tb": 10**12, "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30,
                 "gib": 2**30, "ti": 2**40, "tib": 2**40}


# --------------------------------------------------------------------------- the parsed grid
@dataclass(frozen=True)
class ModelEntry:
    """One model of the grid.

    Attributes
    ----------
    name : str
        The label in the results table (default: the id or the served model's name).
    kind : {"lm", "vlm", "embeddings"}
    ref : str
        What loads it: a resolved local folder or file, a Hub id, or an embedding source
        (:func:`biastest.inputs.embedding_source`); the served model's name for an endpoint.
    local : bool
        ``ref`` is a folder or file on this machine.
    revision : str or None
    endpoint : str or None
        The endpoint address as given (checked); the key is never here, only ``api_key_env``.
    api_key_env, tokenizer :
        Endpoint settings (the tokenizer: Hub id, folder, ``False`` for text prompts, None to try ``ref``).
    methods : tuple of str or None
        This model's methods (overrides the grid's).
    options, resources : dict
        This model's options and Ray resources (override the grid's).
    """

    name: str
    kind: str
    ref: str
    local: bool = False
    revision: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = None
    tokenizer: str | bool | None = None
    methods: tuple[str, ...] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)

    @property
    def scope(self) -> str:
        """``lm-endpoint`` or ``vlm-endpoint`` for a model behind an endpoint, else the kind."""
        return f"{self.kind}-endpoint" if self.endpoint is not None else self.kind

    def identity(self) -> dict[str, Any]:
        """What makes this model this model (its label excluded): the part of a cell's key that names it."""
        if self.endpoint is not None:
            from biastest.remote import safe_base_url

            return {"kind": self.kind, "endpoint": safe_base_url(self.endpoint), "model": self.ref,
                    "tokenizer": self.tokenizer, "revision": self.revision}
        out: dict[str, Any] = {"kind": self.kind, "ref": self.ref, "revision": self.revision}
        if self.local:
            out["fingerprint"] = _fingerprint(self.ref)
        return out

    def public_dict(self) -> dict[str, Any]:
        """The entry as recorded in the plan and every cell (no key: only the name of its variable)."""
        out = {"name": self.name, "kind": self.kind, "ref": self.ref, "local": self.local, "revision": self.revision}
        if self.endpoint is not None:
            from biastest.remote import safe_base_url

            out.update({"endpoint": safe_base_url(self.endpoint), "api_key_env": self.api_key_env,
                        "tokenizer": self.tokenizer})
        return out


@dataclass(frozen=True)
class SpecEntry:
    """One specification of the grid: the loaded spec, how it was named, and its own test data (if any)."""

    spec: Any
    given: str
    data: dict[str, dict[str, Any]] | None = None


@dataclass(frozen=True)
class Grid:
    """A checked grid (:func:`parse_grid`). Paths are absolute; options are canonical."""

    path: Path | None
    name: str
    models: tuple[ModelEntry, ...]
    specs: tuple[SpecEntry, ...]
    data: dict[str, dict[str, Any]]
    methods: tuple[str, ...] | None
    seeds: tuple[int, ...] | None
    options: dict[str, Any]
    resources: dict[str, Any]


# --------------------------------------------------------------------------- helpers
def _what(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the text {value[:60]!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {str(value)[:40]!r}"


def _hint(value: Any, choices: Sequence[str]) -> str:
    match = difflib.get_close_matches(str(value).strip().lower(), list(choices), n=1, cutoff=0.5)
    return MSG_DID_YOU_MEAN.format(suggestion=match[0]) if match else ""


def _check_keys(mapping: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise GridError(MSG_UNKNOWN_KEY.format(key=key, where=where, hint=_hint(key, allowed),
                                                   choices=", ".join(allowed)))


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise GridError(MSG_NOT_A_MAPPING.format(where=where, what=_what(value)))
    return value


def _list(value: Any, key: str, where: str, *, one_ok: bool = True) -> list[Any]:
    if one_ok and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise GridError(MSG_NOT_A_LIST.format(key=key, where=where, what=_what(value)))
    if not value:
        raise GridError(MSG_EMPTY_LIST.format(key=key, where=where))
    return value


def _text(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GridError(MSG_NOT_TEXT.format(key=key, where=where, what=_what(value)))
    return value.strip()


def _in_entry(where: str, exc: BiastestError) -> BiastestError:
    return type(exc)(MSG_IN_ENTRY.format(where=where, message=exc.message), **exc.details)


def _looks_like_path(value: str) -> bool:
    return value.startswith(("/", ".", "~")) or value.lower().endswith((".json", ".csv", ".yaml", ".yml"))


def _resolve_path(base: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return (p if p.is_absolute() else base / p).resolve()


def _file(base: Path, value: Any, key: str, where: str, what: str, *, folder_ok: bool = False) -> Path:
    from biastest import public

    text = _text(value, key, where)
    public.check_server_path()
    path = _resolve_path(base, text)
    if not (path.is_file() or (folder_ok and path.is_dir())):
        raise GridError(MSG_FILE_NOT_FOUND.format(what=what, path=text, where=where))
    return path


def _fingerprint(ref: str) -> str:
    """Names, sizes and modification times of a local model's files (a changed model gets new cells)."""
    import hashlib

    root = Path(ref)
    h = hashlib.sha256()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for f in files:
        st = f.stat()
        rel = f.name if root.is_file() else f.relative_to(root).as_posix()
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


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


# --------------------------------------------------------------------------- sections
def _resources(value: Any, where: str) -> dict[str, Any]:
    res = _mapping(value, where)
    _check_keys(res, RESOURCE_KEYS, where)
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


def _options(value: Any, where: str) -> dict[str, Any]:
    from biastest.measures.vlm.options import COMBINE_CHOICES
    from biastest.options import check_option

    opts = _mapping(value, where)
    out: dict[str, Any] = {}
    for name, v in opts.items():
        if name not in OPTION_SCOPES:
            raise GridError(MSG_UNKNOWN_OPTION.format(name=name, where=where, hint=_hint(name, list(OPTION_SCOPES)),
                                                      choices=", ".join(OPTION_SCOPES)))
        try:
            if name == "noise_sigma":
                if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) or v < 0:
                    raise GridError(MSG_BAD_SIGMA.format(where=where, value=v))
                out[name] = None if v == 0 else check_option("noise_sigma", v)
            elif name == "clusters":  # the choices differ by kind: checked for the models it applies to (_clusters)
                out[name] = _text(v, name, where).lower().replace(" ", "-").replace("_", "-")
            elif name in ("sigmoid", "combine", "dtype"):
                choices = {"sigmoid": ("norm", "logistic"), "combine": tuple(COMBINE_CHOICES),
                           "dtype": ("auto", "float32", "float16", "bfloat16")}[name]
                if v not in choices:
                    raise GridError(MSG_BAD_CHOICE.format(name=name, where=where, choices=", ".join(choices),
                                                          value=v))
                out[name] = v
            elif name == "lapse":
                if not isinstance(v, bool):
                    raise GridError(MSG_BAD_FLAG.format(name=name, where=where, value=v))
                out[name] = v
            elif name == "device":
                out[name] = _text(v, name, where)
            elif name == "question":
                from biastest.measures.vlm.options import check_question

                out[name] = check_question(_text(v, name, where))
            elif name == "prompt_template":
                from biastest.measures.vlm.options import check_prompt_template

                templates = [v] if isinstance(v, str) else v
                if not isinstance(templates, list) or not templates or not all(isinstance(t, str) for t in templates):
                    raise GridError(MSG_BAD_TEMPLATES.format(where=where, value=v))
                out[name] = [check_prompt_template(t) for t in templates]
            else:
                out[name] = check_option(name, v)
        except GridError:
            raise
        except BiastestError as exc:
            raise _in_entry(where, exc) from None
    return out


def _clusters(value: str, kinds: set[str], where: str) -> None:
    """Check a ``clusters`` option against the clusterings of each kind of model it applies to (lm, vlm)."""
    from biastest.measures.stereotype.clusters import check_clusters as check_lm_clusters
    from biastest.measures.vlm import options as vlm_options

    for kind, check, words in (("lm", check_lm_clusters, "the language models"),
                               ("vlm", vlm_options.check_clusters, "the vision-language models")):
        if kind in kinds:
            try:
                check(value)
            except BiastestError as exc:
                raise _in_entry(f"{where} (for {words})", exc) from None


def _methods(value: Any, where: str) -> tuple[str, ...]:
    from biastest.measures.stereotype.score import METHODS

    choices = [*METHODS, *EMBEDDING_METHODS]
    out: list[str] = []
    for v in _list(value, "methods", where):
        name = str(v).strip().lower()
        if name == "bayes":
            raise GridError(MSG_BAYES_NOT_IN_AUDIT.format(where=where))
        if name == VLM_METHOD:
            raise GridError(MSG_UNKNOWN_METHOD.format(
                value=v, where=where, hint="", choices=", ".join(choices)
                + " (a vision-language model's method follows from the model: list none for it)"))
        if name not in choices:
            raise GridError(MSG_UNKNOWN_METHOD.format(value=v, where=where, hint=_hint(v, choices),
                                                      choices=", ".join(choices)))
        if name in out:
            raise GridError(MSG_DUPLICATE_ITEM.format(value=name, key="methods", where=where))
        out.append(name)
    return tuple(out)


def method_kind(method: str) -> str:
    """``embeddings`` for weat and 2afc, ``lm`` for the language-model scoring methods."""
    return "embeddings" if method in EMBEDDING_METHODS else "lm"


def _model(value: Any, index: int, base: Path) -> ModelEntry:
    from biastest import public

    where = f"model {index}"
    m = _mapping(value, where)
    _check_keys(m, MODEL_KEYS, where)
    if isinstance(m.get("name"), str) and m["name"].strip():
        where = f"model {index} ('{m['name'].strip()}')"
    if "kind" not in m:
        raise GridError(MSG_MISSING_KEY.format(where=where, key="kind", what="lm, vlm or embeddings"))
    kind = str(m["kind"]).strip().lower()
    if kind not in KINDS:
        raise GridError(MSG_MODEL_KIND.format(where=where, value=m["kind"], hint=_hint(m["kind"], KINDS)))
    endpoint = m.get("endpoint")
    if endpoint is not None and "id" in m:
        raise GridError(MSG_MODEL_ID_AND_ENDPOINT.format(where=where))
    for key in ("model", "api_key_env", "tokenizer"):
        if key in m and endpoint is None:
            raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key=key, applies="a model behind an endpoint"))
    if "tokenizer" in m and kind != "lm":
        raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="tokenizer",
                                                     applies="a language model behind an endpoint"))
    if "revision" in m and kind == "embeddings":
        raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="revision", applies="lm and vlm models"))
    revision = _text(m["revision"], "revision", where) if m.get("revision") is not None else None
    local = False
    api_key_env = None
    tokenizer: str | bool | None = None
    if endpoint is not None:
        from biastest.models.endpoint_lm import check_endpoint_url

        if kind == "embeddings":
            raise GridError(MSG_ENDPOINT_NOT_EMBEDDINGS.format(where=where))
        try:
            endpoint = check_endpoint_url(endpoint)
        except BiastestError as exc:
            raise _in_entry(where, exc) from None
        if "model" not in m:
            raise GridError(MSG_MODEL_ENDPOINT_NEEDS_MODEL.format(where=where))
        ref = _text(m["model"], "model", where)
        if m.get("api_key_env") is not None:
            api_key_env = str(m["api_key_env"]).strip()
            if not _KEY_ENV.fullmatch(api_key_env):
                raise GridError(MSG_BAD_KEY_ENV.format(where=where))
            if not settings.secret_from(api_key_env):
                raise GridError(MSG_KEY_ENV_UNSET.format(var=api_key_env, where=where))
        t = m.get("tokenizer")
        if isinstance(t, bool) or t is None:
            tokenizer = False if t is False else None
        else:
            tokenizer = _text(t, "tokenizer", where)
            if tokenizer.lower() == "none":
                tokenizer = False
            elif (_resolve_path(base, tokenizer)).is_dir():
                tokenizer = str(_resolve_path(base, tokenizer))
    else:
        if "id" not in m:
            raise GridError(MSG_MODEL_NO_ID.format(where=where))
        given = _text(m["id"], "id", where)
        path = _resolve_path(base, given)
        if kind == "embeddings":
            ref, local = _embedding_ref(given, path, base, where)
        elif path.exists():
            try:
                public.check_model_reference(given)
            except BiastestError as exc:
                raise _in_entry(where, exc) from None
            ref, local = str(path), True
        elif _looks_like_path(given) or given.count("/") > 1:
            raise GridError(MSG_MODEL_FOLDER_MISSING.format(where=where, path=given))
        else:
            try:
                ref = public.check_model_reference(given)
            except BiastestError as exc:
                raise _in_entry(where, exc) from None
    name = _text(m["name"], "name", where) if "name" in m else ref
    methods = None
    if "methods" in m:
        methods = _methods(m["methods"], f"{where} methods")
        if kind == "vlm":
            raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="methods",
                                                         applies="lm and embeddings models (a vision-language "
                                                         "model's method follows from the model)"))
        for meth in methods:
            if method_kind(meth) != kind:
                raise GridError(MSG_METHOD_NOT_FOR_KIND.format(where=where, method=meth,
                                                               method_kind=method_kind(meth), kind=kind))
    options = _options(m["options"], f"{where} options") if "options" in m else {}
    scope = f"{kind}-endpoint" if endpoint is not None else kind
    for opt in options:
        scopes = OPTION_SCOPES[opt]
        if scope not in scopes and not (kind == "embeddings" and set(scopes) & set(EMBEDDING_METHODS)):
            raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=f"{where} options", key=opt,
                                                         applies=", ".join(_scope_words(scopes))))
    if "clusters" in options:
        _clusters(options["clusters"], {kind}, f"{where} options")
    resources = _resources(m["resources"], f"{where} resources") if "resources" in m else {}
    return ModelEntry(name=name, kind=kind, ref=ref, local=local, revision=revision, endpoint=endpoint,
                      api_key_env=api_key_env, tokenizer=tokenizer, methods=methods, options=options,
                      resources=resources)


def _embedding_ref(given: str, path: Path, base: Path, where: str) -> tuple[str, bool]:
    """The embedding source of ``id``: a registry name, or a file or sentence-encoder folder (read from ``base``)."""
    from biastest import public
    from biastest.models.embeddings import EMBEDDING_SOURCES, resolve_source

    low = given.lower()
    if low.startswith(("file:", "sentence-transformers:")):
        prefix, rest = given.split(":", 1)
        path = _resolve_path(base, rest.strip())
        if not path.exists():
            raise GridError(MSG_MODEL_FOLDER_MISSING.format(where=where, path=rest.strip()))
        public.check_server_path()
        return f"{prefix.lower()}:{path}", True
    if low in EMBEDDING_SOURCES or low.startswith("spacy:"):
        return resolve_source(given), False
    if path.exists():
        public.check_server_path()
        return embedding_source(str(path)), True
    if _looks_like_path(given) or "/" in given:
        raise GridError(MSG_MODEL_FOLDER_MISSING.format(where=where, path=given))
    try:
        return resolve_source(given), False  # an unknown name: the registry's message, with did-you-mean
    except BiastestError as exc:
        raise _in_entry(where, exc) from None


def _scope_words(scopes: Sequence[str]) -> list[str]:
    words = {"lm": "language models", "lm-endpoint": "language models behind an endpoint",
             "vlm": "vision-language models", "vlm-endpoint": "vision-language models behind an endpoint",
             "weat": "the weat test", "2afc": "the 2afc test"}
    return [words[s] for s in scopes]


def _data(value: Any, where: str, base: Path) -> dict[str, dict[str, Any]]:
    data = _mapping(value, where)
    out: dict[str, dict[str, Any]] = {}
    for kind, conf in data.items():
        if kind not in DATA_SOURCES:
            raise GridError(MSG_DATA_KIND.format(kind=kind, hint=_hint(kind, list(DATA_SOURCES))))
        out[kind] = _data_source(kind, conf, f"{where}.{kind}", base)
    return out


def _data_source(kind: str, value: Any, where: str, base: Path) -> dict[str, Any]:
    from biastest.options import check_option

    conf = _mapping(value, where)
    choices = DATA_SOURCES[kind]
    source = conf.get("from")
    if source not in choices:
        raise GridError(MSG_DATA_FROM.format(where=where, choices=", ".join(choices), value=source))
    _check_keys(conf, DATA_KEYS[source], where)
    out: dict[str, Any] = {"from": source}
    if source == "files":
        if "files" not in conf:
            raise GridError(MSG_DATA_NO_FILES.format(where=where))
        out["files"] = [str(_file(base, f, "files", where, "pairs file"))
                        for f in _list(conf["files"], "files", where)]
        from biastest.runner.services import IMPORT_FORMATS

        fmt = conf.get("format", "auto")
        if fmt not in IMPORT_FORMATS:
            raise GridError(MSG_BAD_CHOICE.format(name="format", where=where, choices=", ".join(IMPORT_FORMATS),
                                                  value=fmt))
        out["format"] = fmt
    elif source == "store":
        if conf.get("store") is not None:
            out["store"] = str(_file(base, conf["store"], "store", where, "store folder", folder_ok=True))
        else:
            from biastest.store import default_store_dir

            out["store"] = str(default_store_dir())
        if kind == "lm":
            pairing = conf.get("pairing", "positional")
            if pairing not in ("positional", "all"):
                raise GridError(MSG_BAD_CHOICE.format(name="pairing", where=where, choices="positional, all",
                                                      value=pairing))
            out["pairing"] = pairing
    elif source == "images":
        out["images"] = str(_file(base, conf.get("images"), "images", where, "image folder or manifest",
                                  folder_ok=True))
    else:  # generate
        from biastest.generate.prompts import SENTENCE_PROMPTS

        generator = conf.get("generator")
        if generator not in TEXT_GENERATORS:
            raise GridError(MSG_BAD_CHOICE.format(name="generator", where=where, choices=", ".join(TEXT_GENERATORS),
                                                  value=generator))
        out["generator"] = generator
        out["model"] = _text(conf.get("model"), "model", where)
        if generator == "openai-compatible":
            from biastest.models.endpoint_lm import check_endpoint_url

            try:
                out["base_url"] = check_endpoint_url(_text(conf.get("base_url"), "base_url", where))
            except BiastestError as exc:
                raise _in_entry(where, exc) from None
        elif "base_url" in conf:
            raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="base_url",
                                                         applies="the openai-compatible generator"))
        if generator == "local-transformers":
            from biastest import public

            if "api_key_env" in conf:
                raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="api_key_env",
                                                             applies="the openai and openai-compatible generators"))
            path = _resolve_path(base, out["model"])
            try:
                out["model"] = str(path) if path.exists() else public.check_model_reference(out["model"])
            except BiastestError as exc:
                raise _in_entry(where, exc) from None
        var = conf.get("api_key_env", "OPENAI_API_KEY" if generator == "openai" else None)
        if var is not None:
            var = str(var).strip()
            if not _KEY_ENV.fullmatch(var):
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
            raise _in_entry(where, exc) from None
    return out


def _spec(value: Any, index: int, base: Path) -> SpecEntry:
    where = f"specification {index}"
    data = None
    if isinstance(value, Mapping):
        _check_keys(value, SPEC_KEYS, where)
        if "spec" not in value:
            raise GridError(MSG_MISSING_KEY.format(where=where, key="spec", what="a library name or a file path"))
        given = value["spec"]
        if "data" in value:
            data = _data(value["data"], f"{where} data", base)
    else:
        given = value
    if not isinstance(given, str) or not given.strip():
        raise GridError(MSG_SPEC_ENTRY.format(where=where, what=_what(given)))
    return SpecEntry(spec=_load_spec(given.strip(), base, where), given=given.strip(), data=data)


def _load_spec(value: str, base: Path, where: str):
    """A library specification by name first (names may hold '/'), else a specification file."""
    from biastest.specs import get_twoafc_spec, list_specs

    folded = {n.casefold(): n for n in list_specs("twoafc")}
    try:
        if value.casefold() in folded:
            return get_twoafc_spec(folded[value.casefold()])
        path = _resolve_path(base, value)
        if path.is_file():
            from biastest import public

            public.check_server_path()
            return load_spec(str(path))
        if _looks_like_path(value):
            raise GridError(MSG_FILE_NOT_FOUND.format(what="specification file", path=value, where=where))
        return load_spec(value)
    except GridError:
        raise
    except BiastestError as exc:
        raise _in_entry(where, exc) from None


def _seeds(value: Any) -> tuple[int, ...]:
    from biastest.options import check_option

    out: list[int] = []
    for v in _list(value, "seeds", "the grid"):
        try:
            s = check_option("seed", v)
        except OptionError as exc:
            raise _in_entry("seeds", exc) from None
        if s in out:
            raise GridError(MSG_DUPLICATE_ITEM.format(value=s, key="seeds", where="the grid"))
        out.append(s)
    return tuple(out)


# --------------------------------------------------------------------------- entry points
def parse_grid(doc: Any, *, base: str | Path = ".", path: str | Path | None = None) -> Grid:
    """Check a grid document (the mapping a grid file holds) and return it parsed.

    Parameters
    ----------
    doc : Any
        What ``yaml.safe_load`` read.
    base : path
        The folder relative paths are read from (the grid file's).
    path : path, optional
        The grid file, for messages and the record.

    Returns
    -------
    Grid

    Raises
    ------
    GridError, SpecError, OptionError, PolicyError, EmbeddingError
        The first mistake found, in the file's order, with a ``MSG_*`` message naming where it is.
    """
    base = Path(base).resolve()
    shown = str(path) if path is not None else "(grid)"
    if not isinstance(doc, Mapping):
        raise GridError(MSG_GRID_NOT_MAPPING.format(path=shown, what=_what(doc)))
    _check_keys(doc, GRID_KEYS, "the grid")
    for key, what in (("models", "a list of the models to test"), ("specs", "a list of specifications")):
        if key not in doc:
            raise GridError(MSG_MISSING_KEY.format(where="The grid", key=key, what=what))
    name = _text(doc["name"], "name", "the grid") if "name" in doc else (Path(path).stem if path else "audit")
    models = tuple(_model(m, i, base) for i, m in enumerate(_list(doc["models"], "models", "the grid",
                                                                   one_ok=False), start=1))
    seen_names: dict[str, ModelEntry] = {}
    seen_ids: dict[str, ModelEntry] = {}
    for m in models:
        if m.name in seen_names:
            raise GridError(MSG_DUPLICATE_NAME.format(name=m.name))
        seen_names[m.name] = m
        ident = repr(sorted((k, v) for k, v in m.identity().items() if k != "fingerprint"))
        if ident in seen_ids:
            raise GridError(MSG_DUPLICATE_MODEL.format(first=seen_ids[ident].name, second=m.name,
                                                       identity=m.endpoint or m.ref))
        seen_ids[ident] = m
    specs = tuple(_spec(s, i, base) for i, s in enumerate(_list(doc["specs"], "specs", "the grid"), start=1))
    seen_specs: set[str] = set()
    for s in specs:
        if s.spec.name in seen_specs:
            raise GridError(MSG_DUPLICATE_SPEC.format(name=s.spec.name))
        seen_specs.add(s.spec.name)
    data = _data(doc["data"], "data", base) if "data" in doc else {}
    methods = _methods(doc["methods"], "the grid's methods") if "methods" in doc else None
    seeds = _seeds(doc["seeds"]) if "seeds" in doc else None
    options = _options(doc["options"], "options") if "options" in doc else {}
    scopes = {m.scope for m in models}
    if "embeddings" in scopes:
        scopes.update(EMBEDDING_METHODS)
    for opt in options:
        if not scopes & set(OPTION_SCOPES[opt]):
            raise GridError(MSG_OPTION_UNUSED.format(name=opt, where="options",
                                                     applies=", ".join(_scope_words(OPTION_SCOPES[opt]))))
    if "clusters" in options:
        _clusters(options["clusters"], {m.kind for m in models if "clusters" not in m.options}, "options")
    resources = _resources(doc["resources"], "resources") if "resources" in doc else {}
    return Grid(path=Path(path).resolve() if path is not None else None, name=name, models=models, specs=specs,
                data=data, methods=methods, seeds=seeds, options=options, resources=resources)


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid file (YAML, :func:`biastest.audit.safe_yaml.load_yaml`); relative paths in it are read
    from its folder.

    The file is refused when it is over :data:`MAX_GRID_BYTES`, uses YAML anchors or aliases, gives a key twice
    or holds an over-long integer; a message quotes at most the first 80 characters of a value.

    Raises
    ------
    GridError
        The file does not exist, cannot be read, is not YAML, or a field is wrong (:func:`parse_grid`).
    """
    import yaml

    from biastest.audit.safe_yaml import UnsafeYAMLError, load_yaml, shorten_quotes

    p = Path(path).expanduser()
    if not p.is_file():
        raise GridError(MSG_GRID_NOT_FOUND.format(path=path))
    try:
        size = p.stat().st_size
        if size > MAX_GRID_BYTES:
            raise GridError(MSG_GRID_TOO_LARGE.format(path=path, size=size, limit=MAX_GRID_BYTES))
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GridError(MSG_GRID_UNREADABLE.format(path=path, problem=getattr(exc, "strerror", None) or exc)) from None
    try:
        doc = load_yaml(text, path=str(path))
    except UnsafeYAMLError as exc:
        raise GridError(exc.message) from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise GridError(MSG_GRID_YAML.format(path=path, problem=problem[:300])) from None
    except RecursionError:
        from biastest.store.importers import MSG_TOO_DEEP

        raise GridError(MSG_GRID_YAML.format(path=path, problem=MSG_TOO_DEEP)) from None
    try:
        return parse_grid(doc, base=p.resolve().parent, path=p)
    except BiastestError as exc:
        short = shorten_quotes(exc.message, doc)
        if short == exc.message:
            raise
        raise type(exc)(short) from None


def option_defaults(scope: str) -> dict[str, Any]:
    """The default options of cells in ``scope`` (a value of :data:`OPTION_SCOPES`): the command line's."""
    return copy.deepcopy(_defaults()[scope])
