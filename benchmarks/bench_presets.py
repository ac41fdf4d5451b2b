"""Measure what the paper presets' run-time estimates scale (:mod:`biastest.measures.presets`).

``python -m benchmarks.bench_presets [--write]``: times, on this machine,

* the posterior sampler on GloVe 6B 50d (one chain) at two sizes of warm-up + draws, fitted as
  ``fixed + per_step · steps``;
* the Bayesian model (``additive``, one chain, one attempt) on WEAT 7's lists at two sizes, fitted as
  ``fixed + per_step_row · steps · rows``;
* training bootstrap replicate embeddings (gensim skip-gram) on a synthetic corpus at two sizes, fitted as
  ``fixed + per_token · tokens · replicates``.

Each size is run twice and the smaller CPU time of the process kept (CPU time, so that other work on a shared
machine does not inflate it; on an idle machine the wall time is at most about this). ``--write`` stores the fit
in ``biastest/data/preset_timings.json``
(the estimates the apps show before running). ``run(quick)`` is the benchmark suite's entry.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "biastest" / "data" / "preset_timings.json"


def _best(fn, repeats: int = 2) -> float:
    """The smallest CPU time of the process (all its threads) over ``repeats`` runs of ``fn``.

    CPU time, not wall time, so that other work on a shared machine does not inflate it; on an idle machine a
    single-threaded run's wall time equals it, a multi-threaded one's is shorter.
    """
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def _line(x1: float, t1: float, x2: float, t2: float) -> tuple[float, float]:
    slope = max((t2 - t1) / (x2 - x1), 1e-12)
    return max(t1 - slope * x1, 0.0), slope


def time_posterior(sizes=(300, 10_000)) -> dict:
    from biastest.measures.posterior import PosteriorOptions, run

    def once(n):
        return lambda: run(PosteriorOptions.parse(tune=n, draws=n, chains=1, seed=0))

    t = [_best(once(n)) for n in sizes]
    fixed, per = _line(2 * sizes[0], t[0], 2 * sizes[1], t[1])
    return {"fixed_seconds": round(fixed, 3), "seconds_per_step": per, "dim": 50, "measured": dict(zip(
        [f"{n}+{n}" for n in sizes], [round(x, 3) for x in t], strict=True))}


def time_bayes(sizes=(200, 2000)) -> dict:
    from biastest.measures.bayes import BayesItems, BayesOptions, run
    from biastest.measures.bayes.score import load_controls
    from biastest.specs import get_spec

    spec = get_spec("WEAT 7: Math vs arts, male vs female terms")
    items = BayesItems(groups={spec.group1_name: spec.group1, spec.group2_name: spec.group2},
                       attributes={spec.attribute1_name: spec.attributes1, spec.attribute2_name: spec.attributes2})
    controls = load_controls()
    rows = (len(spec.group1) + len(spec.group2)) * (len(spec.attributes1) + len(spec.attributes2)
                                                     + len(controls.human) + len(controls.none))

    def once(n):
        return lambda: run(BayesOptions.parse(model="additive", tune=n, draws=n, chains=1, seed=0, max_attempts=1),
                           items)

    t = [_best(once(n)) for n in sizes]
    fixed, per = _line(2 * sizes[0] * rows, t[0], 2 * sizes[1] * rows, t[1])
    return {"fixed_seconds": round(fixed, 3), "seconds_per_step_row": per, "rows": rows, "measured": dict(zip(
        [f"{n}+{n}" for n in sizes], [round(x, 3) for x in t], strict=True))}


def time_replicates(sizes=(20_000, 80_000), replicates: int = 2) -> dict:
    from biastest.models.embeddings.replicates import train_bootstrap_replicates

    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(2000)]

    def corpus(tokens):
        return [" ".join(rng.choice(vocab, 20)) for _ in range(tokens // 20)]

    def once(tokens):
        lines = corpus(tokens)
        return lambda: train_bootstrap_replicates(lines, n_replicates=replicates, seed=0)

    t = [_best(once(n)) for n in sizes]
    fixed, per = _line(sizes[0] * replicates, t[0], sizes[1] * replicates, t[1])
    return {"fixed_seconds": round(fixed, 3), "seconds_per_token": per, "measured": dict(zip(
        [f"{n} tokens x {replicates}" for n in sizes], [round(x, 3) for x in t], strict=True))}


def run(quick: bool = False) -> dict:
    """The three fits (smaller sizes when ``quick``)."""
    load = os.getloadavg()[0]
    return {
        "machine": f"{os.cpu_count()} CPU cores ({platform.machine()}, {platform.system()}; load average "
                   f"{load:.1f} when measured; CPU time of the process)",
        "measured_on": time.strftime("%Y-%m-%d"),
        "posterior": time_posterior((150, 1500) if quick else (300, 10_000)),
        "bayes": time_bayes((100, 1000) if quick else (200, 2000)),
        "twoafc": time_replicates(),
    }


if __name__ == "__main__":
    out = run(quick="--quick" in sys.argv)
    print(json.dumps(out, indent=2))
    if "--write" in sys.argv:
        OUT.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
