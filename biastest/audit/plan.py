"""From a checked grid to the cells of an audit: test data frozen once, cells keyed by content.

:func:`make_plan` expands a :class:`~biastest.audit.grid.Grid` into cells (one
per model × specification × method × seed that applies) and freezes the test
data of every specification before any cell runs:

- language models: the sentence pairs, from files (the CLI's ``--pairs``
  import), the dataset store (the CLI's default), or generated once with a
  sentence generator;
- vision-language models: the image records (folder, manifest or store), with
  each image's SHA-256;
- embeddings: the words of the specification (nothing to freeze).

Frozen = written into ``DIR/items/`` once (``<spec>-<kind>-<config hash>.json``,
canonical JSON without timestamps) and read back on every later run of the
same grid into the same folder: every model, and every rerun, sees the same
items, however the store or the generator has changed since. Delete the file
to draw the items again.

A cell's **key** is a content hash (SHA-256, first 20 hex digits) of: the
model's identity (its id, revision and endpoint; a local folder's file names,
sizes and modification times — not its label), the specification's content,
the items' hash, the method, the seed, the cell's options (its measure's options
dump less the cell's own fields, so writing a default or leaving it out is the same cell),
the library versions (:func:`biastest.provenance.library_versions`) and a hash
of biastest's computing code (:func:`code_fingerprint`: :data:`COMPUTING_CODE`, the measures,
models, statistics …), so a changed measure never reuses an old cell.
The same key means the same computation: a rerun skips it.

Nothing here loads a model (the kind of a language model — masked or causal —
is read from its configuration, to leave out the methods that do not apply)
and nothing here imports ray.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from biastest import __version__, settings
from biastest.audit.grid import Grid, ModelEntry, SpecEntry
from biastest.audit.grid_options import cell_options, default_measure, measure_of, scope_of
from biastest.audit.uses import audit_measures, label_of, use_of, variants
from biastest.errors import BiastestError, DataError
from biastest.generate import SentenceSettings, generate_sentences, make_text_generator
from biastest.inputs import images_from_folder, images_from_store, pairs_from_files, pairs_from_store
from biastest.measures import MEASURES, Measure
from biastest.measures.stereotype.score import get_method, methods_for_kind
from biastest.models.lm import detect_model_kind
from biastest.options import DEFAULT_SEEDS
from biastest.provenance import library_versions
from biastest.remote import mask_secret, safe_base_url
from biastest.runner.services import TEXT_REQUEST_TIMEOUT, generation_limits
from biastest.spec import TwoAFCSpec
from biastest.store import default_store_dir

__all__ = [
    "Cell",
    "ITEMS_FORMAT",
    "Items",
    "MSG_GENERATED_NONE",
    "MSG_SKIP_BIAS_SPEC",
    "MSG_SKIP_ENDPOINT_MASKED",
    "MSG_SKIP_METHOD_KIND",
    "MSG_SKIP_TWOAFC_SPEC",
    "MSG_SKIP_TWO_GROUPS",
    "Plan",
    "canonical_json",
    "cell_key",
    "make_plan",
]

ITEMS_FORMAT = "biastest-audit-items"
KEY_LENGTH = 20

MSG_SKIP_METHOD_KIND = "{method} applies to {method_kinds} language models; '{model}' is a {kind} one."
MSG_SKIP_ENDPOINT_MASKED = "{method} needs a masked language model in this process; '{model}' is behind an endpoint."
MSG_SKIP_TWOAFC_SPEC = (
    "'{spec}' is a 2AFC specification (target words and cue pairs): only the 2afc test of embeddings runs it, or "
    "twoafc-chat for a chat model when the grid lists it in 'methods'."
)
MSG_SKIP_BIAS_SPEC = "2afc needs a 2AFC specification (target words and cue pairs); '{spec}' is a bias specification."
MSG_SKIP_WEAT_SPEC = "weat needs a bias specification (two groups, two attribute lists); '{spec}' is a 2AFC one."
MSG_SKIP_TWO_GROUPS = (
    "{method} compares two social groups; '{spec}' has {count}. Run MAC per group and the Bayesian estimate on it "
    "instead: python -m biastest run weat SPEC, python -m biastest run bayes SPEC."
)
MSG_GENERATED_NONE = (
    "No sentence pair was generated for '{spec}' ({message}). Check the generator, or take the test data from "
    "files or the store."
)
MSG_ITEMS_UNREADABLE = (
    "The frozen test data '{path}' cannot be read ({problem}). Delete it to draw the items again, then rerun."
)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces (the text a content hash is taken of)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")[:60] or "spec"


# --------------------------------------------------------------------------- items
@dataclass(frozen=True)
class Items:
    """The frozen test data of one specification for one kind of model.

    Attributes
    ----------
    kind : {"pairs", "images", "words"}
    file : str or None
        Path of the items file, relative to the audit folder (None for words).
    sha256 : str
        SHA-256 of the items file's bytes (of the specification for words).
    count : int
        Pairs, images or words.
    source : dict
        Where they came from (files, store, generator …).
    content : dict or None
        What a cell needs: ``{"pairs": rows}`` or ``{"image_root": str, "images": rows}``; None for words.
    error : str or None
        Why they could not be drawn (the cells that need them fail with this message).
    """

    kind: str
    file: str | None
    sha256: str
    count: int = 0
    source: dict[str, Any] = field(default_factory=dict)
    content: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    error: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "file": self.file, "sha256": self.sha256, "count": self.count,
                "source": self.source, "error": self.error}


def _row(record) -> dict[str, Any]:
    row = record.to_row()
    row.pop("created_at", None)  # not content: the same items frozen twice give the same bytes
    return row


def _write_once(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` atomically unless it exists (a concurrent freeze keeps the first file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            os.link(tmp, target)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def _draw_pairs(spec, conf: dict[str, Any]) -> tuple[list, dict[str, Any]]:
    if conf["from"] == "files":
        pairs, names = pairs_from_files(conf["files"], conf["format"], spec)
        return pairs, {"from": "files", "files": names, "format": conf["format"]}
    if conf["from"] == "store":
        return pairs_from_store(conf["store"], spec, conf["pairing"])
    options: dict[str, Any] = {"model": conf["model"]}
    if conf.get("base_url"):
        options["base_url"] = conf["base_url"]
    if conf.get("api_key_env"):
        options["api_key"] = settings.secret_from(conf["api_key_env"])
    generator = make_text_generator(conf["generator"], options)
    run = generate_sentences(spec, generator, SentenceSettings(
        seed=conf["seed"], target_per_attribute=conf["per_attribute"], prompt=conf["prompt"],
        limits=generation_limits(request_timeout=TEXT_REQUEST_TIMEOUT)))
    if not run.pairs:
        raise DataError(MSG_GENERATED_NONE.format(spec=spec.name, message=run.report.message))
    info = {"from": "generate", "generator": conf["generator"], "model": conf["model"], "seed": conf["seed"],
            "per_attribute": conf["per_attribute"], "prompt": conf["prompt"], "n_sentences": len(run.sentences),
            "report": run.report.message}
    if conf.get("base_url"):
        info["base_url"] = safe_base_url(conf["base_url"])
    if options.get("api_key"):
        info["api_key"] = mask_secret(options["api_key"])
    return list(run.pairs), info


def _draw_images(spec, conf: dict[str, Any]) -> tuple[list, Path, dict[str, Any]]:
    if conf["from"] == "images":
        images, root = images_from_folder(conf["images"])
        return images, root, {"from": "images", "images": conf["images"]}
    images, root = images_from_store(conf["store"], spec)
    return images, Path(root), {"from": "store", "store": conf["store"]}


def freeze_items(out: Path, kind: str, spec, conf: dict[str, Any]) -> Items:
    """The test data of ``spec`` for ``kind`` (lm or vlm), drawn once and written to ``out/items``.

    A file already there for the same specification and data configuration is
    read back instead (frozen). A mistake in the data (no pairs, a missing
    image …) is returned as :attr:`Items.error`, so the other specifications
    still run.
    """
    conf_hash = _sha256(canonical_json({"kind": kind, "spec": spec.to_dict(), "data": conf}))[:12]
    rel = f"items/{_slug(spec.name)}-{kind}-{conf_hash}.json"
    path = out / rel
    what = "pairs" if kind == "lm" else "images"
    if not path.is_file():
        try:
            if kind == "lm":
                pairs, info = _draw_pairs(spec, conf)
                body: dict[str, Any] = {"pairs": [_row(p) for p in pairs]}
            else:
                images, root, info = _draw_images(spec, conf)
                body = {"image_root": str(root), "images": [_row(i) for i in images]}
        except BiastestError as exc:
            return Items(kind=what, file=None, sha256=f"unavailable-{conf_hash}", source=dict(conf), error=exc.message)
        doc = {"format": ITEMS_FORMAT, "kind": what, "spec": spec.name, "data": info, **body}
        _write_once(path, json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
    raw = path.read_bytes()
    try:
        doc = json.loads(raw)
        content = {"pairs": doc["pairs"]} if what == "pairs" else {"image_root": doc["image_root"],
                                                                    "images": doc["images"]}
    except (ValueError, KeyError, TypeError) as exc:
        return Items(kind=what, file=rel, sha256=f"unreadable-{conf_hash}", source=dict(conf),
                     error=MSG_ITEMS_UNREADABLE.format(path=rel, problem=exc))
    return Items(kind=what, file=rel, sha256=_sha256(raw), count=len(content[what]), source=doc.get("data", {}),
                 content=content)


# --------------------------------------------------------------------------- cells
@dataclass(frozen=True)
class Cell:
    """One computation of the audit: a model, a specification, a method, a seed, options.

    :meth:`task` is what a worker needs to run it (plain JSON-able values, no key of any endpoint; the endpoint's
    address as given, which the cell's document leaves out).
    """

    key: str
    model: ModelEntry
    spec: Any
    measure: str
    method: str
    seed: int
    options: dict[str, Any]
    items: Items
    resources: dict[str, Any]

    @property
    def scope(self) -> str:
        """lm, lm-endpoint, vlm, vlm-endpoint by kind of model, else the measure's label (weat, 2afc …)."""
        return scope_of(MEASURES[self.measure], self.model.endpoint is not None)

    def describe(self) -> dict[str, Any]:
        """The cell as recorded in the plan and in its result file."""
        return {"key": self.key, "model": self.model.public_dict(), "spec_name": self.spec.name,
                "spec_sha256": _sha256(canonical_json(self.spec.to_dict())), "measure": self.measure,
                "method": self.method,
                "seed": self.seed, "scope": self.scope, "options": self.options,
                "items": {"file": self.items.file, "sha256": self.items.sha256, "kind": self.items.kind}}

    def task(self) -> dict[str, Any]:
        """The cell for :func:`biastest.audit.cells.run_cell`: its description plus the specification itself."""
        return {**self.describe(), "spec": self.spec.to_dict(), "spec_type": _spec_type(self.spec),
                "items_error": self.items.error, "endpoint_address": self.model.endpoint}


def _spec_type(spec) -> str:
    if isinstance(spec, BenchmarkSpec):
        return "none"
    return "twoafc" if isinstance(spec, TwoAFCSpec) else "bias"


#: The parts of biastest that compute a cell's result (their source is part of every key).
COMPUTING_CODE = ("measures", "models", "remote", "stats", "spec.py", "records.py", "options.py", "audit/cells.py",
                  "audit/uses.py")


@cache
def code_fingerprint() -> str:
    """SHA-256 (first 16 hex digits) of the source of :data:`COMPUTING_CODE`: a changed metric makes new cells.

    biastest's version number does not change with every change of its code; this does.
    """
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for part in COMPUTING_CODE:
        path = root / part
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cell_key(model: ModelEntry, spec, items: Items, method: str, seed: int, options: dict[str, Any]) -> str:
    """The content hash naming a cell (see the module docstring)."""
    doc = {"model": model.identity(), "spec": spec.to_dict(), "items": items.sha256, "method": method, "seed": seed,
           "options": options, "versions": library_versions(), "code": code_fingerprint()}
    return _sha256(canonical_json(doc))[:KEY_LENGTH]


@dataclass
class Plan:
    """The cells of an audit and what was left out, with the frozen items."""

    grid: Grid
    out: Path
    cells: list[Cell]
    items: list[Items]
    skipped: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"format": "biastest-audit-plan", "biastest_version": __version__, "name": self.grid.name,
                "grid": str(self.grid.path) if self.grid.path else None, "versions": library_versions(),
                "code": code_fingerprint(),
                "models": [m.public_dict() for m in self.grid.models],
                "specs": [s.spec.name for s in self.grid.specs],
                "cells": [c.describe() for c in self.cells], "items": [i.describe() for i in self.items],
                "skipped": self.skipped}


def _lm_kind(model: ModelEntry) -> str | None:
    """masked or causal, from the configuration (None when it cannot be read: the cells then say why)."""
    if model.endpoint is not None:
        return "causal"
    try:
        return detect_model_kind(model.ref, revision=model.revision)
    except BiastestError:
        return None


def _methods_for(grid: Grid, model: ModelEntry, spec_entry: SpecEntry, lm_kind: str | None,
                 skipped: list[dict[str, Any]]) -> list[tuple[Measure, str]]:
    """The (measure, method) pairs of one model on one specification; what does not apply goes to ``skipped``.

    A specification with three or more social groups (Manzini et al.'s religion and race lists) is skipped by
    every audited measure, each of which compares two groups (:data:`MSG_SKIP_TWO_GROUPS`).
    """
    pairs = _applicable_methods(grid, model, spec_entry, lm_kind, skipped)
    spec = spec_entry.spec
    if _spec_type(spec) != "bias" or spec.n_groups <= 2:
        return pairs
    for _, method in pairs:
        skipped.append({"model": model.name, "spec": spec.name, "method": method,
                        "reason": MSG_SKIP_TWO_GROUPS.format(method=method, spec=spec.name, count=spec.n_groups)})
    return []


def _applicable_methods(grid: Grid, model: ModelEntry, spec_entry: SpecEntry, lm_kind: str | None,
                        skipped: list[dict[str, Any]]) -> list[tuple[Measure, str]]:
    """The (measure, method) pairs that apply to the model and the kind of specification (see :func:`_methods_for`)."""
    spec = spec_entry.spec
    spec_type = _spec_type(spec)

    def skip(method: str, reason: str) -> None:
        skipped.append({"model": model.name, "spec": spec.name, "method": method, "reason": reason})

    given = model.methods if model.methods is not None else grid.methods
    of_kind = [x for x in (given or ()) if measure_of(x).kind == model.kind]
    listed = [x for x in of_kind if not _is_benchmark(measure_of(x))]
    if of_kind and not listed:  # only benchmarks listed: they run once per model (:func:`_benchmarks_for`)
        return []
    if not listed:
        measure = default_measure(model.kind, spec_type)
        if measure is None and _benchmarks_for(grid, model):  # the kind's benchmarks run; nothing per specification
            return []
        if measure is None:  # no measure of this kind takes such a specification
            shown = label_of(default_measure(model.kind, "bias")) if model.kind == "vlm" else "(default)"
            skip(shown, MSG_SKIP_TWOAFC_SPEC.format(spec=spec.name))
            return []
        return [(measure, _default_method(measure, model, lm_kind))]
    out = []
    for m in listed:
        measure = measure_of(m)
        if use_of(measure).spec_type != spec_type:
            if model.kind != "embeddings":
                reason = MSG_SKIP_TWOAFC_SPEC
            else:
                reason = MSG_SKIP_WEAT_SPEC if spec_type == "twoafc" else MSG_SKIP_BIAS_SPEC
            skip(m, reason.format(spec=spec.name))
        elif m in variants(measure) and (why := _variant_skip(m, model, lm_kind)):
            skip(m, why)
        else:
            out.append((measure, m))
    return out


def _is_benchmark(measure: Measure) -> bool:
    """A measure with its own items (``spec_type`` none): one cell per model and seed, whatever the specifications."""
    use = use_of(measure)
    return use is not None and use.spec_type == "none"


def _benchmarks_for(grid: Grid, model: ModelEntry) -> list[Measure]:
    """The benchmarks a model runs: those listed for its kind, or, when none of its kind is listed, all of them."""
    given = model.methods if model.methods is not None else grid.methods
    of_kind = [measure_of(x) for x in (given or ()) if measure_of(x).kind == model.kind]
    chosen = of_kind if of_kind else [m for m in audit_measures(model.kind)]
    return list({m.name: m for m in chosen if _is_benchmark(m)}.values())


@dataclass(frozen=True)
class BenchmarkSpec:
    """What stands for the specification in the cells of a benchmark (its name; the data is in the items)."""

    name: str
    measure: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "benchmark": self.measure}


def benchmark_items(measure: Measure, options: dict[str, Any]) -> Items:
    """The identity of a benchmark's data (its files' SHA-256), or an unavailable item set saying why."""
    use = use_of(measure)
    conf = {"benchmark": measure.name, **{k: v for k, v in options.items() if k.endswith("_dir")}}
    try:
        ident = use.data_identity(options) if use.data_identity is not None else {"sha256": "", "count": 0,
                                                                                    "source": {}}
    except BiastestError as exc:
        return Items(kind=measure.name, file=None, sha256=f"unavailable-{_sha256(canonical_json(conf))[:12]}",
                     source=conf, error=exc.message)
    return Items(kind=measure.name, file=None, sha256=ident["sha256"], count=ident["count"], source=ident["source"])


def _default_method(measure: Measure, model: ModelEntry, lm_kind: str | None) -> str:
    """The measure's label, or for a measure of scoring variants the one that suits the model (``auto``: read later)."""
    if not variants(measure):
        return label_of(measure)
    if lm_kind is None:
        return "causal-sum" if model.endpoint is not None else "auto"
    return methods_for_kind(lm_kind)[0]


def _variant_skip(method: str, model: ModelEntry, lm_kind: str | None) -> str | None:
    """Why a scoring variant does not suit the model (masked methods behind an endpoint, or the model's kind)."""
    meth = get_method(method)
    if model.endpoint is not None and "causal" not in meth.kinds:
        return MSG_SKIP_ENDPOINT_MASKED.format(method=method, model=model.name)
    if lm_kind is not None and lm_kind not in meth.kinds:
        return MSG_SKIP_METHOD_KIND.format(method=method, method_kinds=" or ".join(meth.kinds), model=model.name,
                                           kind=lm_kind)
    return None


def _options_for(grid: Grid, model: ModelEntry, measure: Measure, method: str, seed: int) -> dict[str, Any]:
    """The cell's options, checked by the measure's Options (``auto`` is checked as the measure's first variant)."""
    identity = {"model_id": model.ref, "source": model.ref, "revision": model.revision, "endpoint": model.endpoint,
                "tokenizer": model.tokenizer, "seed": seed,
                "method": variants(measure)[0] if method == "auto" else method}
    return cell_options(measure, {**grid.options, **model.options}, identity)


def make_plan(grid: Grid, out: str | Path) -> Plan:
    """The cells of ``grid``, with the test data frozen into ``out/items`` (see the module docstring).

    Cells come grouped by model (the grid's order), then specification, method and seed, so a process runs
    each model's cells one after another and loads it once.
    """
    out = Path(out)
    frozen: dict[tuple[str, int], Items] = {}
    spec_items: dict[int, Items] = {}
    skipped: list[dict[str, Any]] = []
    cells: list[Cell] = []
    bench: list[Items] = []
    for model in grid.models:
        lm_kind = _lm_kind(model) if model.kind == "lm" else None
        seeds: Sequence[int] = grid.seeds or (DEFAULT_SEEDS[model.kind],)
        resources = {**grid.resources, **model.resources}
        for index, entry in enumerate(grid.specs):
            methods = _methods_for(grid, model, entry, lm_kind, skipped)
            if not methods:
                continue
            if model.kind in ("embeddings", "classifier") or _spec_type(entry.spec) == "twoafc":
                # the questions are its words (a classifier's sentences come from its measure's templates)
                items = spec_items.setdefault(index, Items(
                    kind="words", file=None, sha256=_sha256(canonical_json(entry.spec.to_dict())),
                    count=_word_count(entry.spec), source={"from": "specification"}))
            else:
                if (model.kind, index) not in frozen:
                    conf = (entry.data or {}).get(model.kind) or grid.data.get(model.kind) or _default_data(
                        model.kind)
                    frozen[(model.kind, index)] = freeze_items(out, model.kind, entry.spec, conf)
                items = frozen[(model.kind, index)]
            for measure, method in methods:
                options = _options_for(grid, model, measure, method, seeds[0])
                for seed in seeds:
                    key = cell_key(model, entry.spec, items, method, seed, options)
                    cells.append(Cell(key=key, model=model, spec=entry.spec, measure=measure.name, method=method,
                                      seed=seed, options=options, items=items, resources=resources))
        for measure in _benchmarks_for(grid, model):
            method = label_of(measure)
            options = _options_for(grid, model, measure, method, seeds[0])
            items = benchmark_items(measure, options)
            bench.append(items)
            spec = BenchmarkSpec(name=measure.title, measure=measure.name)
            for seed in seeds:
                key = cell_key(model, spec, items, method, seed, options)
                cells.append(Cell(key=key, model=model, spec=spec, measure=measure.name, method=method, seed=seed,
                                  options=options, items=items, resources=resources))
    all_items = [*frozen.values(), *spec_items.values(), *{i.sha256: i for i in bench}.values()]
    return Plan(grid=grid, out=out, cells=cells, items=all_items, skipped=skipped)


def _default_data(kind: str) -> dict[str, Any]:
    return {"from": "store", "store": str(default_store_dir()), **({"pairing": "positional"} if kind == "lm" else {})}


def _word_count(spec) -> int:
    if _spec_type(spec) == "twoafc":
        return len(spec.targets) + 2 * len(spec.cue_pairs)
    return sum(len(terms) for _, terms in spec.social_groups[:2]) + sum(len(t) for _, t in spec.attributes[:2])

