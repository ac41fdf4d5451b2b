"""Benchmark of the 2AFC psychophysics test on the paper's grid (issue 9).

50 BLS occupations × the paper's 8 cue pairs × 32 replicate models on GloVe
6B 50d. The replicates are 32 seeded perturbed copies of GloVe restricted to
the needed words (Gaussian noise, SD 0.1 per coordinate) — a stand-in for the
paper's 32 bootstrapped embeddings that has the same shape of work.

Measured (medians over repeats):

* ``vectorised_s``: :func:`biastest.measures.twoafc.twoafc` — eq. 8 on the
  101-level α grid for every target × pair × replicate, closed-form PSEs,
  JNDs, and maximum-likelihood psychometric fits per target × pair and per
  target (no bootstrap). Goal: < 0.5 s.
* ``vectorised_bootstrap_s``: the same with 200-sample bootstrap intervals
  for the 50 per-target fits (what the app runs by default).
* ``naive_s``: a per-pair bisection loop like the original code's: for each
  replicate, target and pair, bisect α on [0, 1] to 1e-6 with the eq. 8
  scores from per-call cosine similarities (and the original's trap: 0.5 when
  the curve does not cross inside [0, 1]), then the SD across replicates.
  Goal: vectorised ≥ 100× faster.

Run: ``python -m benchmarks.bench_twoafc [--quick]``.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time

import numpy as np

GOAL_SECONDS = 0.5
GOAL_RATIO = 100.0
NOISE_SD = 0.1
SEED = 2020


def _setup(n_replicates: int):
    from biastest.measures.twoafc import PAPER_CUE_PAIRS, load_occupations_bls
    from biastest.models.embeddings import InMemoryEmbeddings, load_embeddings

    t0 = time.perf_counter()
    glove = load_embeddings("glove-6b-50d")
    load_s = time.perf_counter() - t0
    targets = [r["occupation"] for r in load_occupations_bls()][:50]
    words = targets + [c for p in PAPER_CUE_PAIRS for c in p]
    base = glove.restrict(words)
    rng = np.random.default_rng(SEED)
    reps = [
        InMemoryEmbeddings(
            f"glove-6b-50d+noise#{i}",
            list(base.vocabulary()),
            base.matrix() + rng.normal(0.0, NOISE_SD, base.matrix().shape).astype(np.float32),
        )
        for i in range(n_replicates)
    ]
    return glove, load_s, targets, list(PAPER_CUE_PAIRS), reps


def _naive(reps, targets, pairs) -> np.ndarray:
    """Per-pair bisection, one cosine at a time (like the original code)."""

    def sim(m, a, b):
        va, vb = m[a], m[b]
        return float(np.dot(va, vb) / (np.linalg.norm(va) * np.linalg.norm(vb)))

    out = np.zeros((len(reps), len(targets), len(pairs)))
    for r, rep in enumerate(reps):
        m = {w: rep.vectors([w])[0][0].astype(np.float64) for w in rep.vocabulary()}
        for t, w in enumerate(targets):
            for p, (c1, c2) in enumerate(pairs):

                def c2_wins(alpha, w=w, c1=c1, c2=c2, m=m):
                    s1 = (1 - alpha) * sim(m, c1, c1) + alpha * sim(m, c2, c1) + sim(m, w, c1)
                    s2 = (1 - alpha) * sim(m, c1, c2) + alpha * sim(m, c2, c2) + sim(m, w, c2)
                    return s2 > s1

                lo, hi = 0.0, 1.0
                if c2_wins(lo) == c2_wins(hi):
                    out[r, t, p] = 0.5  # the original's trap: no crossing inside [0, 1] → "neutral"
                    continue
                while hi - lo > 1e-6:
                    mid = (lo + hi) / 2
                    if c2_wins(mid):
                        hi = mid
                    else:
                        lo = mid
                out[r, t, p] = (lo + hi) / 2
    out.std(axis=0, ddof=1)  # the JND
    return out


def _time(fn, repeats: int) -> tuple[float, object]:
    times, value = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), value


def run(quick: bool = False) -> dict:
    """Time the vectorised 2AFC against a naive bisection loop; return JSON-able figures."""
    from biastest.measures.twoafc import twoafc

    n_rep = 32
    _glove, load_s, targets, pairs, reps = _setup(n_rep)
    repeats = 3 if quick else 7

    def vec(n_bootstrap: int = 0):
        return twoafc(reps, targets=targets, cue_pairs=pairs, seed=SEED, n_bootstrap=n_bootstrap)

    vec()  # warm-up
    vec_s, res = _time(vec, repeats)
    boot_s, _ = _time(lambda: vec(200), 1 if quick else 3)
    naive_reps = reps[:4] if quick else reps
    naive_s, naive_pse = _time(lambda: _naive(naive_reps, targets, pairs), 1)
    if quick:  # compare on the same 4-replicate grid
        vec4_s, _ = _time(lambda: twoafc(naive_reps, targets=targets, cue_pairs=pairs, seed=SEED, n_bootstrap=0), 3)
    else:
        vec4_s = vec_s
    ratio = naive_s / vec4_s
    # agreement where the crossing lies inside [0, 1] (elsewhere the naive loop reports 0.5)
    pse = np.array([[p.pse_replicates for p in res.pairs]]).reshape(len(targets), len(pairs), n_rep)
    pse = np.moveaxis(pse, 2, 0)[: len(naive_reps)]
    inside = (pse > 0) & (pse < 1)
    max_diff = float(np.max(np.abs(pse[inside] - naive_pse[inside])))
    n_fits_ok = sum(1 for p in res.pairs if p.fit is not None and p.fit.ok)
    out = {
        "benchmark": "twoafc",
        "grid": {"targets": len(targets), "cue_pairs": len(pairs), "replicates": n_rep, "alpha_levels": 101},
        "glove_load_s": round(load_s, 4),
        "vectorised_s": round(vec_s, 5),
        "vectorised_bootstrap200_s": round(boot_s, 5),
        "naive_bisection_s": round(naive_s, 4),
        "naive_replicates": len(naive_reps),
        "speedup": round(ratio, 1),
        "max_abs_pse_difference_vs_naive_inside_0_1": max_diff,
        "share_saturated_replicate_pses": float(np.mean(~inside)),
        "pair_fits_ok": n_fits_ok,
        "pair_fits_total": len(res.pairs),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "repeats": repeats,
        "quick": quick,
        "goal": f"PSE + JND + fits < {GOAL_SECONDS} s on 50×8×32, and ≥ {GOAL_RATIO:.0f}× the naive bisection loop",
        "meets_goal": bool(vec_s < GOAL_SECONDS and ratio >= GOAL_RATIO),
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
