"""Builders for the audit tests: tiny language models, pairs files and a grid file, all under a temp folder.

The two models are tiny random GPT-2s (:func:`tests.lm_helpers.build_tiny_gpt2`, seeds 0 and 1); the pairs are
the planted pairs of :mod:`tests.lm_helpers`, written as CrowS-Pairs CSV files (one file per specification), so
the grid exercises the CLI's ``--pairs`` import.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from tests.lm_helpers import build_tiny_gpt2, planted_pairs

SPEC_A = "WEAT 7: Math vs arts, male vs female terms"
SPEC_B = "WEAT 8: Science vs arts, male vs female terms"
METHODS = ("causal-sum", "causal-diff-span")
VOLATILE = ["started_at", "seconds", "worker"]


def write_crows(path: Path, pairs) -> Path:
    """A CrowS-Pairs CSV of ``pairs`` (``sent_more`` = the stereotyped sentence)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["", "sent_more", "sent_less", "stereo_antistereo", "bias_type"])
        for i, p in enumerate(pairs):
            w.writerow([i, p.stereotyped, p.anti_stereotyped, "stereo", p.category])
    return path


def write_biastestgpt_pairs(path: Path, pairs) -> Path:
    """A BiasTestGPT ``*_pairs.csv`` of ``pairs`` (with their templates and attribute terms)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["group_term", "template", "sent_att_1", "sent_att_2", "att_term_1", "att_term_2", "label_1",
                    "label_2"])
        for p in pairs:
            w.writerow([p.attribute_term, p.template, p.stereotyped, p.anti_stereotyped, p.group_term_stereotyped,
                        p.group_term_anti, "stereotype", "anti-stereotype"])
    return path


def build_models(folder: Path) -> dict[str, Path]:
    """Two tiny GPT-2 folders, ``a`` (seed 0) and ``b`` (seed 1)."""
    return {name: build_tiny_gpt2(folder / name, seed=seed) for name, seed in (("a", 0), ("b", 1))}


def write_lm_grid(folder: Path, models: dict[str, Path], *, n_pairs: int = 24, n_resamples: int = 200,
                  seeds: tuple[int, ...] = (1,), extra: dict[str, Any] | None = None) -> Path:
    """A grid of the two models × two specifications (each with its own pairs file) × :data:`METHODS` × seeds."""
    folder.mkdir(parents=True, exist_ok=True)
    pairs = planted_pairs()
    write_crows(folder / "a.csv", pairs[:n_pairs])
    write_crows(folder / "b.csv", pairs[-n_pairs:])
    grid = {
        "name": "tiny-lms",
        "models": [{"name": "tiny-a", "kind": "lm", "id": str(models["a"])},
                   {"name": "tiny-b", "kind": "lm", "id": str(models["b"])}],
        "specs": [{"spec": SPEC_A, "data": {"lm": {"from": "files", "files": ["a.csv"]}}},
                  {"spec": SPEC_B, "data": {"lm": {"from": "files", "files": ["b.csv"], "format": "crows-pairs"}}}],
        "methods": list(METHODS),
        "seeds": list(seeds),
        "options": {"n_resamples": n_resamples, "batch_size": 16},
        **(extra or {}),
    }
    path = folder / "grid.yaml"
    path.write_text(json.dumps(grid, indent=1), encoding="utf-8")  # JSON is YAML
    return path


def without_time(result: dict[str, Any]) -> dict[str, Any]:
    """A result's ``to_dict()`` without the time it was made (``provenance.created_at``)."""
    from biastest.report.export import _jsonable

    out = json.loads(json.dumps(_jsonable(result)))  # as written: tuples as lists, NaN as null
    out.get("provenance", {}).pop("created_at", None)
    return out
