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

A ``methods`` entry is a measure of :data:`biastest.measures.MEASURES` or one of its named variants, and
``options`` are the fields of the measures' ``Options`` (:mod:`biastest.audit.grid_options`); each cell's
options are checked by its measure's Options here, before any model loads.

Every field is checked here (:func:`load_grid`, :func:`parse_grid`): the models in
:mod:`biastest.audit.grid_models`, the test data and specifications in :mod:`biastest.audit.grid_data`,
the methods and options in :mod:`biastest.audit.grid_options`; model ids, files and endpoint addresses go
through :mod:`biastest.public`, and every mistake raises a :class:`~biastest.errors.BiastestError` with one
of the ``MSG_*`` messages of :mod:`biastest.audit.grid_common`, which says where in the file the mistake is.
Nothing is loaded, read from the network or run here; the specifications are resolved (library or file)
because they are small and their mistakes are the user's.

This module never imports gradio or ray.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from biastest.audit.grid_common import (  # noqa: F401  (the messages are the grid's: tests and callers read them here)
    MAX_GRID_BYTES,
    MSG_BAD_CHOICE,
    MSG_BAD_FLAG,
    MSG_BAD_KEY_ENV,
    MSG_BAD_MEMORY,
    MSG_BAD_RESOURCE,
    MSG_BAD_SIGMA,
    MSG_BAD_TEMPLATES,
    MSG_BAD_WHOLE_RESOURCE,
    MSG_DATA_FROM,
    MSG_DATA_KIND,
    MSG_DATA_NO_FILES,
    MSG_DUPLICATE_ITEM,
    MSG_DUPLICATE_MODEL,
    MSG_DUPLICATE_NAME,
    MSG_DUPLICATE_SPEC,
    MSG_EMPTY_LIST,
    MSG_ENDPOINT_NOT_EMBEDDINGS,
    MSG_FILE_NOT_FOUND,
    MSG_GRID_NOT_FOUND,
    MSG_GRID_NOT_MAPPING,
    MSG_GRID_TOO_LARGE,
    MSG_GRID_UNREADABLE,
    MSG_GRID_YAML,
    MSG_IN_ENTRY,
    MSG_KEY_ENV_UNSET,
    MSG_KEY_NOT_FOR_MODEL,
    MSG_METHOD_NOT_FOR_KIND,
    MSG_MISSING_KEY,
    MSG_MODEL_ENDPOINT_NEEDS_MODEL,
    MSG_MODEL_FOLDER_MISSING,
    MSG_MODEL_ID_AND_ENDPOINT,
    MSG_MODEL_KIND,
    MSG_MODEL_NO_ID,
    MSG_NO_CELLS,
    MSG_NOT_A_LIST,
    MSG_NOT_A_MAPPING,
    MSG_NOT_IN_AUDIT,
    MSG_NOT_TEXT,
    MSG_OPTION_UNUSED,
    MSG_SPEC_ENTRY,
    MSG_UNKNOWN_KEY,
    MSG_UNKNOWN_METHOD,
    MSG_UNKNOWN_OPTION,
    GridError,
    as_list,
    as_text,
    check_keys,
    in_entry,
    parse_memory,
    parse_resources,
    what_of,
)
from biastest.audit.grid_data import DATA_SOURCES, SpecEntry, parse_data, parse_spec
from biastest.audit.grid_models import ModelEntry, parse_model
from biastest.audit.grid_options import (
    applies_words,
    cell_options,
    model_measures,
    option_names,
    parse_methods,
    parse_options,
    scope_defaults,
)
from biastest.audit.safe_yaml import UnsafeYAMLError, load_yaml, shorten_quotes
from biastest.audit.uses import grid_fields
from biastest.errors import BiastestError, OptionError
from biastest.measures.base import KINDS
from biastest.measures.bayes import MSG_BAYES_NOT_IN_AUDIT  # noqa: F401  (a grid's message: the measure's words)
from biastest.options import DEFAULT_SEEDS, check_option
from biastest.store.importers import MSG_TOO_DEEP

__all__ = [
    "DATA_SOURCES",
    "GRID_KEYS",
    "Grid",
    "GridError",
    "KINDS",
    "ModelEntry",
    "SpecEntry",
    "load_grid",
    "option_defaults",
    "option_names",
    "parse_grid",
    "parse_memory",
]

GRID_KEYS = ("name", "models", "specs", "data", "methods", "seeds", "options", "resources")


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


def _seeds(value: Any) -> tuple[int, ...]:
    out: list[int] = []
    for v in as_list(value, "seeds", "the grid"):
        try:
            s = check_option("seed", v)
        except OptionError as exc:
            raise in_entry("seeds", exc) from None
        if s in out:
            raise GridError(MSG_DUPLICATE_ITEM.format(value=s, key="seeds", where="the grid"))
        out.append(s)
    return tuple(out)


def _listed(methods: tuple[str, ...] | None, model: ModelEntry) -> tuple[str, ...] | None:
    return model.methods if model.methods is not None else methods


def _grid_options(value: Any, models: tuple[ModelEntry, ...], methods: tuple[str, ...] | None) -> dict[str, Any]:
    """The grid's ``options``: each checked by the measures of the models it reaches; none unused."""
    given = value if isinstance(value, Mapping) else {}
    reach = {name: [m for model in models if name not in model.options
                    for m in model_measures(model.kind, _listed(methods, model))] for name in given}
    options = parse_options(value, "options", reach)
    runs = [m for model in models for m in model_measures(model.kind, _listed(methods, model))]
    for name in options:
        if not any(name in grid_fields(m) for m in runs):
            raise GridError(MSG_OPTION_UNUSED.format(name=name, where="options", applies=applies_words(name)))
    return options


def _check_cells(grid: Grid) -> None:
    """Every (model, measure) pair of the grid, its options checked whole by the measure's Options."""
    for index, model in enumerate(grid.models, start=1):
        for measure in model_measures(model.kind, _listed(grid.methods, model)):
            identity = {"model_id": model.ref, "source": model.ref, "revision": model.revision,
                        "endpoint": model.endpoint, "seed": (grid.seeds or (DEFAULT_SEEDS[model.kind],))[0]}
            listed = [x for x in (_listed(grid.methods, model) or ()) if x in measure.extra.get("methods", ())]
            if "method" in measure.Options.model_fields:
                identity["method"] = (listed or list(measure.extra.get("methods", ())) or [measure.name])[0]
            try:
                cell_options(measure, {**grid.options, **model.options}, identity)
            except BiastestError as exc:
                raise in_entry(f"model {index} ('{model.name}') options", exc) from None


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
        raise GridError(MSG_GRID_NOT_MAPPING.format(path=shown, what=what_of(doc)))
    check_keys(doc, GRID_KEYS, "the grid")
    for key, what in (("models", "a list of the models to test"), ("specs", "a list of specifications")):
        if key not in doc:
            raise GridError(MSG_MISSING_KEY.format(where="The grid", key=key, what=what))
    name = as_text(doc["name"], "name", "the grid") if "name" in doc else (Path(path).stem if path else "audit")
    models = tuple(parse_model(m, i, base) for i, m in enumerate(as_list(doc["models"], "models", "the grid",
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
    specs = tuple(parse_spec(s, i, base) for i, s in enumerate(as_list(doc["specs"], "specs", "the grid"), start=1))
    seen_specs: set[str] = set()
    for s in specs:
        if s.spec.name in seen_specs:
            raise GridError(MSG_DUPLICATE_SPEC.format(name=s.spec.name))
        seen_specs.add(s.spec.name)
    data = parse_data(doc["data"], "data", base) if "data" in doc else {}
    methods = parse_methods(doc["methods"], "the grid's methods") if "methods" in doc else None
    seeds = _seeds(doc["seeds"]) if "seeds" in doc else None
    options = _grid_options(doc["options"], models, methods) if "options" in doc else {}
    resources = parse_resources(doc["resources"], "resources") if "resources" in doc else {}
    grid = Grid(path=Path(path).resolve() if path is not None else None, name=name, models=models, specs=specs,
                data=data, methods=methods, seeds=seeds, options=options, resources=resources)
    _check_cells(grid)
    return grid


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
        raise GridError(MSG_GRID_YAML.format(path=path, problem=MSG_TOO_DEEP)) from None
    try:
        return parse_grid(doc, base=p.resolve().parent, path=p)
    except BiastestError as exc:
        short = shorten_quotes(exc.message, doc)
        if short == exc.message:
            raise
        raise type(exc)(short) from None


def option_defaults() -> dict[str, dict[str, Any]]:
    """The options of a cell left at its defaults, per scope (lm, lm-endpoint, vlm, vlm-endpoint, weat, 2afc).

    They are the measures' Options defaults (:func:`biastest.audit.grid_options.scope_defaults`).
    """
    return scope_defaults()
