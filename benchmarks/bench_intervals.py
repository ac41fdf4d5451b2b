"""Benchmark of issue 28's intervals: coverage of the chosen method for each statistic, beside its candidates.

Two parts, each over ``n_sets`` planted datasets per setting (95 % intervals):

* ``weat``: the WEAT effect size d of word lists drawn from populations of 400 words (20-dimensional vectors
  with a planted association along one axis: X and A on +, Y and B on −; ``shift`` sets d), 8, 12 or 25 words
  per list; the truth is d of the whole populations. Candidates from the same seeded word bootstrap (X, Y, A, B
  resampled independently, :func:`biastest.measures.weat.score.weat_effect_size_bootstrap`): ``percentile``
  (the method before issue 28), ``bca`` (bias-corrected and accelerated, acceleration from the
  leave-one-word-out jackknife of each list, :func:`~biastest.measures.weat.score.bca_interval`) and
  ``jackknife_normal`` (d ± z·SE with the multi-sample jackknife SE
  ``√(Σ_k (n_k − 1)/n_k · Σ_j (d_(kj) − mean_j d_(kj))²)``). Also the median width of each.
* ``stratified``: shares of 0/1 verdicts in H fixed strata (image terms, attribute terms) with their own
  planted rates, units within them: single pictures (``upload``: two image terms, no shared prompt), prompts
  with a random effect (``prompts``: two image terms, 2–18 pictures per prompt) or templates (``templates``:
  8 attribute terms, 2–4 templates each, 2–18 pairs per template). Truth: the expected share (each stratum's
  expected item count is the same, so the mean over strata of its expected rate). Methods: ``stratified``
  (clusters resampled within strata, :mod:`biastest.stats.strata`, the chosen one), ``unstratified`` (the same
  clusters, strata ignored) and ``strata_as_clusters`` (the old image-term / attribute-term clustering: no
  interval below 5 strata, counted as a miss in ``coverage`` and reported as ``shown``).

Run: ``python -m benchmarks.bench_intervals [--quick]`` (quick: 100 datasets per setting and 500 resamples,
well under a minute; full: 400 and 1,000, about 9 minutes on 2 loaded cores). Results:
benchmarks/results/intervals.json (docs/testing.md has the table).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np

SEED = 28
WEAT_SIZES = (8, 12, 25)
WEAT_SHIFTS = {"d≈0": 0.0, "d≈0.8": 0.35, "d≈1.5": 1.0, "d≈1.7": 1.5, "d≈1.8": 2.0}
STRATIFIED = {
    "upload_5_per_term": {"strata": (-0.5, 1.0), "clusters": 5, "sd": 0.0, "sizes": (1, 1)},
    "upload_10_per_term": {"strata": (-0.5, 1.0), "clusters": 10, "sd": 0.0, "sizes": (1, 1)},
    "upload_25_per_term": {"strata": (-0.5, 1.0), "clusters": 25, "sd": 0.0, "sizes": (1, 1)},
    "prompts_3_per_term": {"strata": (-0.5, 1.0), "clusters": 3, "sd": 1.0, "sizes": (2, 18)},
    "prompts_8_per_term": {"strata": (-0.5, 1.0), "clusters": 8, "sd": 1.0, "sizes": (2, 18)},
    "templates_8_terms": {"strata": (-1.0, -0.5, 0.0, 0.0, 0.5, 0.5, 1.0, 1.5), "clusters": (2, 4), "sd": 1.0,
                          "sizes": (2, 18)},
}


def _cos(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (u / np.linalg.norm(u, axis=1, keepdims=True)) @ (v / np.linalg.norm(v, axis=1, keepdims=True)).T


def _pools(rng: np.random.Generator, shift: float, size: int = 400, dim: int = 20) -> list[np.ndarray]:
    out = []
    for sign, s in ((1, shift), (-1, shift), (1, 1.5), (-1, 1.5)):
        v = rng.normal(size=(size, dim))
        v[:, 0] += sign * s
        out.append(v)
    return out


def _d(x, y, a, b) -> float:
    from biastest.measures.weat.score import weat_effect_size

    return weat_effect_size(_cos(x, a).mean(1) - _cos(x, b).mean(1), _cos(y, a).mean(1) - _cos(y, b).mean(1))


def _weat_setting(shift: float, n_words: int, n_sets: int, n_resamples: int, seed: int) -> dict:
    from scipy.stats import norm

    from biastest.measures.weat.score import bca_interval, weat_effect_size_bootstrap, weat_jackknife

    rng = np.random.default_rng(seed)
    pools = _pools(rng, shift)
    truth = _d(*pools)
    hits = {"percentile": 0, "bca": 0, "jackknife_normal": 0, "jackknife_atanh": 0}
    widths: dict[str, list[float]] = {k: [] for k in hits}
    z = norm.ppf(0.975)
    for s in range(n_sets):
        x, y, a, b = (p[rng.choice(len(p), n_words, replace=False)] for p in pools)
        cs = (_cos(x, a), _cos(x, b), _cos(y, a), _cos(y, b))
        boot = weat_effect_size_bootstrap(*cs, n_bootstrap=n_resamples, seed=s)
        est = _d(x, y, a, b)
        jk = weat_jackknife(*cs)
        se = np.sqrt(sum((len(v) - 1) / len(v) * np.nansum((v - np.nanmean(v)) ** 2) for v in jk))
        cis = {"percentile": boot.ci, "bca": bca_interval(boot.draws, est, jk, 0.95),
               "jackknife_normal": (est - z * se, est + z * se), "jackknife_atanh": _atanh_ci(est, jk, 2 * n_words, z)}
        for k, ci in cis.items():
            if ci is not None:
                hits[k] += ci[0] <= truth <= ci[1]
                widths[k].append(ci[1] - ci[0])
    return {"truth_d": round(truth, 3), **{f"coverage_{k}": round(v / n_sets, 4) for k, v in hits.items()},
            **{f"median_width_{k}": round(float(np.median(v)), 3) for k, v in widths.items()}}


def _atanh_ci(est: float, jk: list[np.ndarray], n: int, z: float) -> tuple[float, float]:
    """Jackknife-normal interval on the scale ``atanh(d / d_max)``, ``d_max = 2·√((n − 1)/n)`` (n = |X| + |Y|)."""
    d_max = 2 * np.sqrt((n - 1) / n)
    f = np.arctanh(np.clip(est / d_max, -0.999999, 0.999999))
    var = 0.0
    for v in jk:
        t = np.arctanh(np.clip(v[np.isfinite(v)] / d_max, -0.999999, 0.999999))
        var += (len(t) - 1) / len(t) * float(np.sum((t - t.mean()) ** 2))
    se = np.sqrt(var)
    return float(d_max * np.tanh(f - z * se)), float(d_max * np.tanh(f + z * se))


def _stratified_setting(cfg: dict, n_sets: int, n_resamples: int, seed: int) -> dict:
    from biastest.stats.clusters import MIN_CLUSTERS_FOR_INTERVAL, cluster_bootstrap_ci

    rng = np.random.default_rng(seed)
    mus = np.array(cfg["strata"], dtype=float)
    sd = cfg["sd"]
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    rates = [float(np.sum(weights / np.sqrt(2 * np.pi) / (1 + np.exp(-(m + sd * nodes))))) for m in mus]
    truth = float(np.mean(rates))
    hits = {"stratified": 0, "unstratified": 0, "strata_as_clusters": 0}
    shown_old = 0
    for s in range(n_sets):
        per = cfg["clusters"]
        counts = [per] * len(mus) if isinstance(per, int) else list(rng.integers(per[0], per[1] + 1, len(mus)))
        stratum = np.repeat(np.arange(len(mus)), counts)
        n_c = stratum.size
        sizes = rng.integers(cfg["sizes"][0], cfg["sizes"][1] + 1, n_c)
        u = rng.normal(0.0, sd, n_c) if sd > 0 else np.zeros(n_c)
        labels = np.repeat(np.arange(n_c), sizes)
        strata = stratum[labels]
        y = (rng.random(labels.size) < 1 / (1 + np.exp(-(mus[strata] + u[labels])))).astype(float)
        st = cluster_bootstrap_ci(y, labels, seed=s, n_resamples=n_resamples, strata=strata)
        un = cluster_bootstrap_ci(y, labels, seed=s, n_resamples=n_resamples)
        hits["stratified"] += st.low <= truth <= st.high
        hits["unstratified"] += un.low <= truth <= un.high
        if len(mus) >= MIN_CLUSTERS_FOR_INTERVAL:
            old = cluster_bootstrap_ci(y, strata, seed=s, n_resamples=n_resamples)
            hits["strata_as_clusters"] += old.low <= truth <= old.high
            shown_old += 1
    return {"truth": round(truth, 4), **{f"coverage_{k}": round(v / n_sets, 4) for k, v in hits.items()},
            "strata_as_clusters_shown": round(shown_old / n_sets, 4)}


def run(quick: bool = False) -> dict:
    n_sets = 100 if quick else 400
    n_resamples = 500 if quick else 1000
    t0 = time.perf_counter()
    weat = {}
    for i, (label, shift) in enumerate(WEAT_SHIFTS.items()):
        for j, n in enumerate(WEAT_SIZES):
            weat[f"{label}/n={n}"] = _weat_setting(shift, n, n_sets, n_resamples, SEED + 10 * i + j)
    strat = {name: _stratified_setting(cfg, n_sets, n_resamples, SEED + 1000 + k)
             for k, (name, cfg) in enumerate(STRATIFIED.items())}
    return {
        "benchmark": "intervals",
        "confidence": 0.95,
        "quick": quick,
        "n_sets_per_setting": n_sets,
        "n_resamples": n_resamples,
        "weat": weat,
        "stratified": strat,
        "wall_s": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
