"""Benchmark of honest uncertainty (issue 17): coverage of cluster-aware intervals and error rate of the tests.

Simulated test data with planted cluster structure — templates (clusters) with their own random effect, so
pairs of one template lean together — and a known truth. For each setting, over ``n_sets`` datasets:

* ``coverage_cluster``: share of datasets whose 95 % cluster bootstrap interval
  (:func:`biastest.stats.clusters.cluster_bootstrap_ci`, widened by √(C/(C−1))·t(C−1)/z) covers the truth;
* ``coverage_cluster_plain``: the same without the widening (plain percentile cluster bootstrap);
* ``coverage_pairs``: the bootstrap over pairs as if they were independent
  (:func:`biastest.stats.bootstrap.bootstrap_mean_ci`, what the score showed before);
* ``false_positive_cluster_sign`` / ``false_positive_pair_sign`` (null settings only): share of datasets where
  the sign test on cluster means / on pairs gives p < 0.05 although there is no preference.

Settings: ``share`` (0/1 verdicts, logit P = μ + u_template, u ~ N(0, 1.5²); truth E[P], by quadrature),
``share_skewed`` (the same with μ = 1, truth ≈ 0.69), ``magnitude`` (Δ = 0.3 + u + ε, u ~ N(0, 1), ε ~ N(0, 1)),
``independent`` (no template effect), each with C = 3, 5, 10, 20, 40 templates of 2–18 pairs (mean 10). This is
what the widening and :data:`biastest.stats.clusters.MIN_CLUSTERS_FOR_INTERVAL` (5) rest on. Also timed: the
cluster bootstrap (10,000 resamples) of 5,000 pairs in 500 clusters next to the pair bootstrap.

Run: ``python -m benchmarks.bench_coverage [--quick]`` (quick: 200 datasets per setting instead of 1,000).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np

SEED = 17
CLUSTER_COUNTS = (3, 5, 10, 20, 40)
SETTINGS = {
    "share": {"kind": "binary", "mu": 0.0, "sd": 1.5},
    "share_skewed": {"kind": "binary", "mu": 1.0, "sd": 1.5},
    "magnitude": {"kind": "normal", "mu": 0.3, "sd": 1.0},
    "independent": {"kind": "binary", "mu": 0.0, "sd": 0.0},
}


def _truth(kind: str, mu: float, sd: float) -> float:
    if kind == "normal":
        return mu
    if sd == 0:
        return float(1 / (1 + np.exp(-mu)))
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)  # E[expit(mu + sd·Z)], Z ~ N(0, 1)
    return float(np.sum(weights / np.sqrt(2 * np.pi) / (1 + np.exp(-(mu + sd * nodes)))))


def _one_setting(kind: str, mu: float, sd: float, n_clusters: int, n_sets: int, n_resamples: int, seed: int) -> dict:
    from scipy.stats import binomtest

    from biastest.stats.bootstrap import bootstrap_mean_ci
    from biastest.stats.clusters import cluster_bootstrap_ci, cluster_sign_test

    rng = np.random.default_rng(seed)
    truth = _truth(kind, mu, sd)
    hits = {"cluster": 0, "cluster_plain": 0, "pairs": 0}
    fp_cluster = fp_pairs = 0
    for d in range(n_sets):
        sizes = rng.integers(2, 19, n_clusters)
        u = rng.normal(0.0, sd, n_clusters) if sd > 0 else np.zeros(n_clusters)
        labels = np.repeat(np.arange(n_clusters), sizes)
        if kind == "binary":
            values = (rng.random(labels.size) < 1 / (1 + np.exp(-(mu + u[labels])))).astype(float)
            signs = 2 * values - 1
        else:
            values = mu + u[labels] + rng.normal(0.0, 1.0, labels.size)
            signs = np.sign(values)
        c = cluster_bootstrap_ci(values, labels, seed=d, n_resamples=n_resamples)
        c0 = cluster_bootstrap_ci(values, labels, seed=d, n_resamples=n_resamples, small_cluster_correction=False)
        p = bootstrap_mean_ci(values, seed=d, n_resamples=n_resamples)
        hits["cluster"] += c.low <= truth <= c.high
        hits["cluster_plain"] += c0.low <= truth <= c0.high
        hits["pairs"] += p.low <= truth <= p.high
        if kind == "binary" and mu == 0.0:  # no preference: every rejection is a false positive
            p_cluster = cluster_sign_test(signs, labels)[0]
            fp_cluster += p_cluster is not None and p_cluster < 0.05
            k, n = int(np.sum(signs > 0)), int(np.sum(signs != 0))
            fp_pairs += n > 0 and binomtest(k, n, 0.5).pvalue < 0.05
    out = {f"coverage_{k}": round(v / n_sets, 4) for k, v in hits.items()}
    if kind == "binary" and mu == 0.0:
        out["false_positive_cluster_sign"] = round(fp_cluster / n_sets, 4)
        out["false_positive_pair_sign"] = round(fp_pairs / n_sets, 4)
    out["truth"] = round(truth, 6)
    return out


def _timing(n_resamples: int = 10_000) -> dict:
    from biastest.stats.bootstrap import bootstrap_mean_ci
    from biastest.stats.clusters import cluster_bootstrap_ci

    rng = np.random.default_rng(SEED)
    labels = np.repeat(np.arange(500), 10)
    values = (rng.random(labels.size) < 0.6).astype(float)
    out = {}
    for name, fn in (
        ("cluster_bootstrap_mean_5000_items_500_clusters_s", lambda: cluster_bootstrap_ci(values, labels, seed=1,
                                                                                          n_resamples=n_resamples)),
        ("cluster_bootstrap_median_5000_items_500_clusters_s",
         lambda: cluster_bootstrap_ci(values, labels, seed=1, n_resamples=n_resamples, statistic="median")),
        ("pair_bootstrap_mean_5000_items_s", lambda: bootstrap_mean_ci(values, seed=1, n_resamples=n_resamples)),
    ):
        fn()
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        out[name] = round(float(np.median(times)), 4)
    return out


def run(quick: bool = False) -> dict:
    n_sets = 200 if quick else 1000
    n_resamples = 500 if quick else 1000
    t0 = time.perf_counter()
    grid = {}
    for i, (name, setting) in enumerate(SETTINGS.items()):
        for j, n_clusters in enumerate(CLUSTER_COUNTS):
            grid[f"{name}/C={n_clusters}"] = _one_setting(setting["kind"], setting["mu"], setting["sd"], n_clusters,
                                                          n_sets, n_resamples, SEED + 100 * i + j)
    return {
        "benchmark": "coverage",
        "confidence": 0.95,
        "n_sets_per_setting": n_sets,
        "n_resamples": n_resamples,
        "pairs_per_template": "2-18 (uniform), mean 10",
        "grid": grid,
        "timing": _timing(),
        "wall_s": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
