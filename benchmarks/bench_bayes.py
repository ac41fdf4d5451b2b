"""Benchmark of the Bayesian cosine model and the embedding-posterior sampler.

Figures (``python -m benchmarks.bench_bayes [--quick]``):

* ``seconds_to_rhat``: wall seconds of ``fit_bayes`` with the production defaults
  (compilation, sampling, summaries, and any further attempt the adaptive
  sampler makes) on a ~5,000-row dataset (WEAT 7 lists on GloVe 6B 50d: 16
  math/arts protected words × (16 gender terms + 85 human + 225 neutral
  controls), 5,216 rows), per model, with the largest R-hat reached, the
  attempts and the divergent transitions; goal ≤ 30 s, converged (R-hat ≤ 1.01,
  ESS ≥ 100 per chain, no divergence) on 2 CPU cores.
* ``weat_defaults``: the production defaults on each library spec WEAT 1–10 on
  GloVe 6B 50d: attempts, largest R-hat, smallest ESS, divergences, seconds;
  goal: every one converged.
* ``ess_per_second``: smallest bulk ESS over all 2 × 50 dimensions of the two
  embedding posteriors divided by the wall seconds of sampling (incl.
  compilation); goal ≥ 100.
* ``coverage``: pooled coverage of the 89% HDIs over parameters of datasets
  simulated from the hierarchical model's prior (simulation-based calibration),
  each batch sampled again with more tuning while R-hat > 1.01, ESS is short or
  more than 0.5% of transitions diverge (at most 3 runs); every run's
  divergent transitions, R-hat and ESS are reported, and a batch that never
  got there leaves the goal unmet; goal 85–93%.
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
    from biastest.measures.bayes.run import word_vectors
    from biastest.measures.bayes.score import build_distance_data, load_controls
    from biastest.models.embeddings import load_embeddings

    emb = load_embeddings("glove-6b-50d")
    c = load_controls()
    vec = word_vectors(emb, MATH + ARTS + MALE + FEMALE + list(c.human) + list(c.none))
    return build_distance_data(group1=MATH, group2=ARTS, attributes1=MALE, attributes2=FEMALE, vectors=vec)


def bench_seconds_to_rhat(repeats: int) -> dict:
    from biastest.measures.bayes.fit import fit_bayes
    from biastest.measures.bayes.score import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_TUNE

    data = _bayes_data()
    out = {"n_rows": data.n_rows}
    for model in ("hierarchical", "additive"):
        times, rhats, ess, divs, attempts, converged = [], [], [], [], [], []
        for r in range(repeats):
            t0 = time.perf_counter()
            res = fit_bayes(data, model=model, seed=100 + r)  # the production defaults, adaptive
            times.append(time.perf_counter() - t0)
            rhats.append(res.diagnostics["max_rhat"])
            ess.append(res.diagnostics["min_ess_bulk"])
            divs.append(res.diagnostics["divergences_all_attempts"])
            attempts.append(res.diagnostics["attempts"])
            converged.append(res.diagnostics["converged"])
        out[model] = {
            "median_seconds": round(median(times), 2),
            "seconds": [round(t, 2) for t in times],
            "max_rhat": max(rhats),
            "min_ess_bulk": min(ess),
            "divergences": divs,
            "attempts": attempts,
            "converged": converged,
            "settings": f"defaults: {DEFAULT_CHAINS} chains x ({DEFAULT_TUNE} tuning + {DEFAULT_DRAWS} draws), "
                        "adaptive",
            "meets_goal": bool(median(times) <= 30 and all(converged)),
        }
    return out


def bench_weat_defaults() -> dict:
    """The production defaults on the library's WEAT 1–10 on GloVe 6B 50d (what a user gets by default)."""
    from biastest.measures.bayes import BayesItems, run
    from biastest.specs import get_spec, list_specs

    rows = []
    t0 = time.perf_counter()
    for name in list_specs("weat"):
        spec = get_spec(name)
        res = run({"seed": 0}, BayesItems.from_spec(spec))
        d = res.diagnostics
        rows.append({"spec": name.split(":")[0], "rows": res.data["n_rows"], "attempts": d["attempts"],
                     "max_rhat": d["max_rhat"], "min_ess_bulk": d["min_ess_bulk"], "min_ess_tail": d["min_ess_tail"],
                     "divergences": d["divergences_all_attempts"], "converged": d["converged"],
                     "seconds": res.seconds})
    return {"specs": rows, "total_seconds": round(time.perf_counter() - t0, 1),
            "meets_goal": all(r["converged"] for r in rows)}


def bench_posterior_ess(repeats: int, draws: int) -> dict:
    from biastest.measures.bayes.run import word_vectors
    from biastest.measures.posterior.score import (
        lexicon_training_data,
        load_vader_lexicon,
        sample_embedding_posterior,
        train_classifier,
    )
    from biastest.measures.posterior.summary import _diag
    from biastest.models.embeddings import load_embeddings

    emb = load_embeddings("glove-6b-50d")
    lex = load_vader_lexicon()
    x, y, _ = lexicon_training_data(vectors=word_vectors(emb, [w for w in lex if w.isalpha()]), lexicon=lex)
    t0 = time.perf_counter()
    clf = train_classifier(x, y, seed=0)
    train_s = time.perf_counter() - t0
    rates, secs, mins, rh, divs, accept = [], [], [], [], [], []
    for r in range(repeats):
        samples, info = sample_embedding_posterior(clf, seed=r, draws=draws, tune=1000, chains=2)
        divs.append(info["divergences"])
        accept.append(info["mean_accept_prob"])
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
        "divergences": divs,
        "mean_accept_prob": accept,
        "goal": ">= 100 effective samples per second (smallest bulk ESS over 100 dimensions / wall seconds)",
        "meets_goal": bool(median(rates) >= 100),
    }


#: A coverage batch counts as sampled well enough when R-hat <= 1.01, ESS >= 100 per chain and at most this share
#: of its transitions diverged: datasets drawn from the prior include funnels (tau or sigma near 0) where NUTS
#: diverges now and then even at target acceptance 0.99 (measured: 0.1-0.25% of transitions), and a joint run of
#: 16 datasets rarely has none.
COVERAGE_MAX_DIVERGENT_SHARE = 0.005


def bench_coverage(batches: int, sets_per_batch: int) -> dict:
    """89% HDI coverage of prior-drawn truths, each batch sampled by the product's adaptive rule.

    A batch whose run has R-hat > 1.01, too little ESS or more than :data:`COVERAGE_MAX_DIVERGENT_SHARE`
    divergent transitions is sampled again with ``next_attempt_settings`` (at most 3 runs); the coverage is
    that of each batch's last run, and every run's diagnostics are reported.
    """
    sys.path.insert(0, ".")
    from biastest.measures.bayes.sampler import (
        _attempt_diagnostics,
        _summaries,
        convergence_problems,
        next_attempt_settings,
        run_cell_sampler,
    )
    from biastest.measures.bayes.score import cell_statistics
    from tests.bayes_helpers import hdi_coverage, simulate_hierarchical

    inside = total = 0
    per_batch, batch_runs, converged = [], [], []
    for b in range(batches):
        rng = np.random.default_rng(1000 + b)
        w = 6
        truth, wi, ci, y = simulate_hierarchical(rng=rng, n_sets=sets_per_batch, n_words=w, rows_per_cell=10)
        stats = [cell_statistics(wi, ci, y[i], n_words=w) for i in range(sets_per_batch)]
        n, mean, ss = (np.stack([s[j] for s in stats]) for j in range(3))
        settings, runs = (1000, 500, 0.95), []
        for k in range(3):
            run = run_cell_sampler(n, mean, ss, model="hierarchical", seed=1000 + b + k, draws=settings[0],
                                   tune=settings[1], chains=2, target_accept=settings[2])
            diag = _attempt_diagnostics(_summaries(run.samples, 0.89), run)
            share = diag["divergences"] / run.diverging.size
            problems = [p for p in convergence_problems(diag, chains=2)
                        if share > COVERAGE_MAX_DIVERGENT_SHARE or "divergent" not in p]
            runs.append({"draws": settings[0], "tune": settings[1], "target_accept": settings[2],
                         **{key: diag[key] for key in ("max_rhat", "min_ess_bulk", "min_ess_tail", "divergences",
                                                       "mean_accept_prob")},
                         "transitions": int(run.diverging.size), "seconds": run.seconds, "problems": problems})
            if not problems:
                break
            settings = next_attempt_settings(*settings, diverged=diag["divergences"] > 0)
        i, t = hdi_coverage(run.samples, truth)
        inside += i
        total += t
        per_batch.append(round(i / t, 3))
        batch_runs.append(runs)
        converged.append(not runs[-1]["problems"])
    cov = inside / total
    return {
        "datasets": batches * sets_per_batch,
        "parameters": total,
        "coverage": round(cov, 4),
        "per_batch": per_batch,
        "per_batch_runs": batch_runs,
        "divergences_last_runs": sum(r[-1]["divergences"] for r in batch_runs),
        "divergences_all_runs": sum(x["divergences"] for r in batch_runs for x in r),
        "settings": "2 chains x (500 tuning + 1000 draws), target acceptance 0.95; adaptive (at most 3 runs)",
        "all_batches_converged": all(converged),
        "goal": "0.85 <= coverage <= 0.93 (89% HDI); every batch's last run R-hat <= 1.01, ESS >= 200 and "
                f"divergent transitions <= {COVERAGE_MAX_DIVERGENT_SHARE:.1%}",
        "meets_goal": bool(0.85 <= cov <= 0.93 and all(converged)),
    }


def run(quick: bool = False) -> dict:
    """Run the benchmark and return its figures (also printed as JSON)."""
    t0 = time.perf_counter()
    out = {
        "seconds_to_rhat": bench_seconds_to_rhat(1 if quick else 3),
        "weat_defaults": bench_weat_defaults(),
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
        and out["weat_defaults"]["meets_goal"]
    )
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
