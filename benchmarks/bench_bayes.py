"""Benchmark of the Bayesian cosine model and the embedding-posterior sampler.

Figures (``python -m benchmarks.bench_bayes [--quick]``):

* ``seconds_to_rhat``: wall seconds of ``fit_bayes`` (compilation, sampling and
  ArviZ summaries) on a ~5,000-row dataset (WEAT 7 lists on GloVe 6B 50d: 16
  math/arts protected words × (16 gender terms + 85 human + 225 neutral
  controls), 5,216 rows), per model, with the largest R-hat reached; goal ≤ 30 s
  with R-hat ≤ 1.01 on 2 CPU cores.
* ``ess_per_second``: smallest bulk ESS over all 2 × 50 dimensions of the two
  embedding posteriors divided by the wall seconds of sampling (incl.
  compilation); goal ≥ 100.
* ``coverage``: pooled coverage of the 89% HDIs over parameters of datasets
  simulated from the hierarchical model's prior (simulation-based calibration);
  goal 85–93%.
* ``peak_rss_mb``: peak resident memory of the process.

The WEAT 7 lists are written out here (Caliskan et al. 2017) so the benchmark
needs no ``../shared``.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from statistics import median

import numpy as np

MATH = ["math", "algebra", "geometry", "calculus", "equations", "computation", "numbers", "addition"]
ARTS = ["poetry", "art", "dance", "literature", "novel", "symphony", "drama", "sculpture"]
MALE = ["male", "man", "boy", "brother", "he", "him", "his", "son"]
FEMALE = ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _bayes_data():
    from biastest.metrics.bayes import build_distance_data, load_controls
    from biastest.models.embeddings import load_embeddings
    from biastest.runner.bayes import word_vectors

    emb = load_embeddings("glove-6b-50d")
    c = load_controls()
    vec = word_vectors(emb, MATH + ARTS + MALE + FEMALE + list(c.human) + list(c.none))
    return build_distance_data(group1=MATH, group2=ARTS, attributes1=MALE, attributes2=FEMALE, vectors=vec)


def bench_seconds_to_rhat(repeats: int) -> dict:
    from biastest.metrics.bayes import fit_bayes

    data = _bayes_data()
    out = {"n_rows": data.n_rows}
    for model in ("hierarchical", "additive"):
        times, rhats, ess, divs = [], [], [], []
        for r in range(repeats):
            t0 = time.perf_counter()
            res = fit_bayes(data, model=model, seed=100 + r, draws=2000, tune=1000, chains=2)
            times.append(time.perf_counter() - t0)
            rhats.append(res.diagnostics["max_rhat"])
            ess.append(res.diagnostics["min_ess_bulk"])
            divs.append(res.diagnostics["divergences"])
        out[model] = {
            "median_seconds": round(median(times), 2),
            "seconds": [round(t, 2) for t in times],
            "max_rhat": max(rhats),
            "min_ess_bulk": min(ess),
            "divergences": divs,
            "settings": "2 chains x (1000 tuning + 2000 draws)",
            "meets_goal": bool(median(times) <= 30 and max(rhats) <= 1.01),
        }
    return out


def bench_posterior_ess(repeats: int, draws: int) -> dict:
    from biastest.metrics.posterior import (
        _diag,
        lexicon_training_data,
        load_vader_lexicon,
        sample_embedding_posterior,
        train_classifier,
    )
    from biastest.models.embeddings import load_embeddings
    from biastest.runner.bayes import word_vectors

    emb = load_embeddings("glove-6b-50d")
    lex = load_vader_lexicon()
    x, y, _ = lexicon_training_data(vectors=word_vectors(emb, [w for w in lex if w.isalpha()]), lexicon=lex)
    t0 = time.perf_counter()
    clf = train_classifier(x, y, seed=0)
    train_s = time.perf_counter() - t0
    rates, secs, mins, rh = [], [], [], []
    for r in range(repeats):
        samples, info = sample_embedding_posterior(clf, seed=r, draws=draws, tune=1000, chains=2)
        m = min(_diag(samples[p])["min_ess_bulk"] for p in ("+", "-"))
        rh.append(max(_diag(samples[p])["max_rhat"] for p in ("+", "-")))
        rates.append(m / info["seconds"])
        secs.append(info["seconds"])
        mins.append(m)
    return {
        "classifier": clf.description,
        "classifier_test_auc": clf.test_auc,
        "classifier_train_seconds": round(train_s, 2),
        "draws_per_chain": draws,
        "median_ess_per_second": round(median(rates), 1),
        "ess_per_second": [round(v, 1) for v in rates],
        "seconds": [round(v, 2) for v in secs],
        "min_ess_bulk": mins,
        "max_rhat": max(rh),
        "goal": ">= 100 effective samples per second (smallest bulk ESS over 100 dimensions / wall seconds)",
        "meets_goal": bool(median(rates) >= 100),
    }


def bench_coverage(batches: int, sets_per_batch: int) -> dict:
    sys.path.insert(0, ".")
    from biastest.metrics.bayes import cell_statistics, sample_cell_posterior
    from tests.bayes_helpers import hdi_coverage, simulate_hierarchical

    inside = total = 0
    per_batch = []
    for b in range(batches):
        rng = np.random.default_rng(1000 + b)
        w = 6
        truth, wi, ci, y = simulate_hierarchical(rng=rng, n_sets=sets_per_batch, n_words=w, rows_per_cell=10)
        stats = [cell_statistics(wi, ci, y[i], n_words=w) for i in range(sets_per_batch)]
        n, mean, ss = (np.stack([s[j] for s in stats]) for j in range(3))
        samples, _, _ = sample_cell_posterior(n, mean, ss, model="hierarchical", seed=1000 + b, draws=1000, tune=500,
                                              chains=2)
        i, t = hdi_coverage(samples, truth)
        inside += i
        total += t
        per_batch.append(round(i / t, 3))
    cov = inside / total
    return {
        "datasets": batches * sets_per_batch,
        "parameters": total,
        "coverage": round(cov, 4),
        "per_batch": per_batch,
        "goal": "0.85 <= coverage <= 0.93 (89% HDI)",
        "meets_goal": bool(0.85 <= cov <= 0.93),
    }


def run(quick: bool = False) -> dict:
    """Run the benchmark and return its figures (also printed as JSON)."""
    t0 = time.perf_counter()
    out = {
        "seconds_to_rhat": bench_seconds_to_rhat(1 if quick else 3),
        "posterior_sampler": bench_posterior_ess(1 if quick else 3, 2000 if quick else 3000),
        "coverage": bench_coverage(1 if quick else 2, 12 if quick else 16),
    }
    out["peak_rss_mb"] = _peak_mb()
    out["total_seconds"] = round(time.perf_counter() - t0, 1)
    out["meets_goal"] = bool(
        out["seconds_to_rhat"]["hierarchical"]["meets_goal"]
        and out["seconds_to_rhat"]["additive"]["meets_goal"]
        and out["posterior_sampler"]["meets_goal"]
        and out["coverage"]["meets_goal"]
    )
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
