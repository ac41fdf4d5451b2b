"""Benchmark of audits: a grid in this process against the same grid on a local 2-worker Ray instance.

Grid: 4 tiny GPT-2s (built from configs, seeds 0–3, saved to a temporary
folder) × 4 specifications (each with 48 planted pairs as a CrowS-Pairs file)
× 2 methods (causal-sum, causal-diff-span) = 32 cells, 1,000 bootstrap
resamples (``--quick``: 2 models × 2 specifications × 2 methods = 8 cells).
Figures (``python -m benchmarks.bench_audit [--quick]``):

* ``in_process``: wall time, cells per second, the runners' own time (sum of
  the cells' ``seconds``) and the audit's overhead per cell (wall time less
  the runners' time, per cell: planning, freezing, writing each cell, the
  table) — goal ≤ 50 ms per cell;
* ``ray_local``: the same grid with ``--ray local --ray-cpus 2`` (Ray started
  and stopped by the run, one actor per model): wall time, cells per second,
  the median time of each worker's first cell (the worker's imports and its
  model's load) and of the later cells; the two tables are checked equal;
* ``rerun_s``: a second run of the finished grid (every cell reused).

On a machine with two cores Ray cannot be faster than one process: the
workers share the cores the single process had, and Ray adds its start and a
model load per worker. The speed-up needs more cores (or GPUs, one model per
GPU) than cells of one model can use.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GOAL_OVERHEAD_MS = 50.0
SPECS = (
    "WEAT 6: Male vs female names, career vs family",
    "WEAT 7: Math vs arts, male vs female terms",
    "WEAT 8: Science vs arts, male vs female terms",
    "BiasTestGPT: Male vs female terms, male vs female professions",
)


def _grid(folder: Path, n_models: int, n_specs: int) -> Path:
    from tests.audit_helpers import write_crows
    from tests.lm_helpers import build_tiny_gpt2, planted_pairs

    pairs = planted_pairs()
    models = [{"name": f"tiny-{i}", "kind": "lm", "id": str(build_tiny_gpt2(folder / f"m{i}", seed=i))}
              for i in range(n_models)]
    specs = []
    for j, name in enumerate(SPECS[:n_specs]):
        write_crows(folder / f"s{j}.csv", pairs[48 * j: 48 * (j + 1)])
        specs.append({"spec": name, "data": {"lm": {"from": "files", "files": [f"s{j}.csv"]}}})
    grid = {"name": "bench", "models": models, "specs": specs, "methods": ["causal-sum", "causal-diff-span"],
            "seeds": [1], "options": {"n_resamples": 1000, "device": "cpu"}, "resources": {"num_cpus": 1}}
    path = folder / "grid.yaml"
    path.write_text(json.dumps(grid), encoding="utf-8")
    return path


def _timed_run(grid: Path, out: Path, **kw) -> tuple[float, object]:
    from biastest.audit import read_table, run_audit

    t = time.perf_counter()
    summary = run_audit(grid, out, progress=False, **kw)
    wall = time.perf_counter() - t
    assert summary.failed == 0
    return wall, read_table(out)


def _first_and_later(table) -> tuple[float, float]:
    """Median seconds of each worker's first cell (imports and model load included) and of the later cells."""
    first, later = [], []
    for _, group in table.groupby("worker"):
        group = group.sort_values("started_at", kind="stable")
        first.append(float(group.seconds.iloc[0]))
        later += [float(x) for x in group.seconds.iloc[1:]]
    return float(np.median(first)), float(np.median(later)) if later else float("nan")


def run(quick: bool = False) -> dict:
    """Run the benchmark; returns a JSON-able dict of figures (and prints it)."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local instance: no token written under ~/.ray
    n_models, n_specs = (2, 2) if quick else (4, 4)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        grid = _grid(tmp_path / "grid", n_models, n_specs)
        wall, here = _timed_run(grid, tmp_path / "here")
        n = len(here)
        compute = float(here.seconds.sum())
        rerun, _ = _timed_run(grid, tmp_path / "here")
        first, later = _first_and_later(here)
        in_process = {"cells": n, "wall_s": round(wall, 2), "cells_per_s": round(n / wall, 2),
                      "runner_s": round(compute, 2), "overhead_ms_per_cell": round(1000 * (wall - compute) / n, 1),
                      "first_cell_s": round(first, 2), "later_cell_median_s": round(later, 3)}
        ray: dict = {"available": True}
        try:
            import ray as _ray  # noqa: F401  (only to learn whether the extra is installed)
        except ImportError:
            ray = {"available": False, "note": "pip install -r requirements-ray.txt"}
        if ray["available"]:
            rwall, on_ray = _timed_run(grid, tmp_path / "ray", ray="local", ray_cpus=2)
            vol = ["started_at", "seconds", "worker"]
            same = on_ray.drop(columns=vol).sort_values("key").reset_index(drop=True).equals(
                here.drop(columns=vol).sort_values("key").reset_index(drop=True))
            first, later = _first_and_later(on_ray)
            ray.update({"cells": len(on_ray), "wall_s": round(rwall, 2), "cells_per_s": round(n / rwall, 2),
                        "workers": int(on_ray.worker.nunique()), "first_cell_per_worker_median_s": round(first, 2),
                        "later_cell_median_s": round(later, 3), "same_table_as_in_process": bool(same),
                        "speedup_vs_in_process": round(wall / rwall, 2)})
    out = {
        "in_process": in_process,
        "ray_local": ray,
        "rerun_s": round(rerun, 2),
        "cpu_count": os.cpu_count(),
        "goal": f"audit overhead in process <= {GOAL_OVERHEAD_MS:.0f} ms per cell (beyond the runners' own time)",
        "meets_goal": in_process["overhead_ms_per_cell"] <= GOAL_OVERHEAD_MS,
        "note": "Ray's speed-up needs more cores or GPUs than this machine has: its workers share the same cores "
                "and add Ray's start and one model load per worker.",
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "quick": quick,
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
