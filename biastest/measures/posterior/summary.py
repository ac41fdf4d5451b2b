"""The posterior sampler's read-outs: sample both posteriors, then diagnostics, ACF, PCA, word tables and tests.

:func:`run_embedding_posterior` samples ``p(s | +)`` and ``p(s | −)`` for a trained classifier
(:func:`~biastest.measures.posterior.score.sample_embedding_posterior`) and summarises them into a
:class:`~biastest.measures.posterior.result.PosteriorResult`, with a plain-language reading.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from biastest.errors import DataError, EmbeddingError
from biastest.measures.bayes.sampler import convergence_problems
from biastest.measures.posterior.options import PosteriorOptions
from biastest.measures.posterior.result import PosteriorResult
from biastest.measures.posterior.score import (
    MSG_GROUP_TOO_SMALL,
    MSG_POSTERIOR_NOT_CONVERGED,
    PRIOR_SD,
    Classifier,
    GroupTest,
    autocorrelation,
    group_distance_test,
    nearest_words,
    pca_projection,
    sample_embedding_posterior,
)
from biastest.provenance import provenance

__all__ = ["MAX_LAG", "PCA_POINTS", "run_embedding_posterior"]

#: Lags of the autocorrelation table.
MAX_LAG = 50
MSG_READING_CV = (
    "The classifier was learned from {n_texts:,} labelled texts (averaged word vectors): cross-validated AUC "
    "{pooled_auc:.3f} over {folds} folds (fold mean {mean_auc:.3f} ± {sd_auc:.3f})."
)
#: Draws of each posterior shown in the PCA view (a seeded subsample).
PCA_POINTS = 500


def _diag(samples: np.ndarray) -> dict[str, float]:
    import arviz as az

    ds = az.convert_to_dataset({"s": samples})
    rhat = np.asarray(az.rhat(ds)["s"].values)
    bulk = np.asarray(az.ess(ds, method="bulk")["s"].values)
    tail = np.asarray(az.ess(ds, method="tail")["s"].values)
    return {
        "max_rhat": round(float(rhat.max()), 4),
        "min_ess_bulk": round(float(bulk.min()), 1),
        "median_ess_bulk": round(float(np.median(bulk)), 1),
        "min_ess_tail": round(float(tail.min()), 1),
    }


def run_embedding_posterior(
    classifier: Classifier,
    groups: Mapping[str, Sequence[str]],
    vectors: Mapping[str, np.ndarray],
    options: PosteriorOptions,
    *,
    vocab_matrix: np.ndarray,
    vocab_words: Sequence[str],
    progress: Callable[[float, str], None] | None = None,
    provenance_fields: Mapping[str, Any] | None = None,
    cross_validation: Mapping[str, Any] | None = None,
) -> PosteriorResult:
    """Sample both posteriors and compute every read-out.

    Parameters
    ----------
    classifier : Classifier
        From :func:`train_classifier`.
    groups : mapping name -> words
        Exactly two word groups (e.g. female and male names).
    vectors : mapping str -> ndarray
        Vectors of the group words.
    options : PosteriorOptions
        ``seed`` (the sampler, the PCA subsample and the permutation test), ``draws``, ``tune`` and ``chains``
        (per chain), ``k_words`` (table length).
    vocab_matrix, vocab_words : ndarray (n, d), sequence of str
        The vocabulary searched for nearest / farthest words.
    progress : callable(fraction, message), optional
    provenance_fields : mapping, optional
        Recorded in the provenance.
    cross_validation : mapping, optional
        The cross-validated AUC of a classifier learned from labelled texts
        (:meth:`~biastest.measures.posterior.texts.CrossValidation.to_dict`), recorded in ``classifier``.
    """
    names, group_words = _group_words(groups, vectors)
    seed, chains = options.seed, options.chains
    if progress:
        progress(0.1, "Sampling the two posteriors with NUTS")
    samples, info = sample_embedding_posterior(classifier, seed=seed, draws=options.draws, tune=options.tune,
                                               chains=chains)
    if progress:
        progress(0.7, "Diagnostics, PCA, word tables and group tests")
    diagnostics = _diagnostics(samples, info, chains=chains)
    acf_rows = [row for p in ("+", "-") for row in _acf_rows(p, samples[p])]
    flat = {p: samples[p].reshape(-1, samples[p].shape[-1]) for p in ("+", "-")}
    pca = _pca(flat, seed=seed)
    words = {p: _word_table(flat[p], vocab_matrix, vocab_words, k=options.k_words) for p in ("+", "-")}
    tests = [_group_test(p, flat[p], names, group_words, vectors, seed=seed) for p in ("+", "-")]
    reading = _reading(classifier, diagnostics, info, tests, options)
    prov = provenance(method="embedding-posterior-nuts", seed=seed, draws=options.draws, tune=options.tune,
                      chains=chains, prior=f"N(0, {PRIOR_SD:g}^2 I)", sampler="numpyro NUTS",
                      **dict(provenance_fields or {}))
    if progress:
        progress(1.0, "Done")
    recorded = classifier.to_dict()
    if cross_validation is not None:
        recorded["cross_validation"] = dict(cross_validation)
        reading = [MSG_READING_CV.format(**cross_validation), *reading]
    return PosteriorResult(
        classifier=recorded, diagnostics=diagnostics, autocorrelation=tuple(acf_rows), pca=pca,
        words=words, group_tests=tuple(tests), reading=tuple(reading), seed=seed, draws=options.draws,
        tune=options.tune, chains=chains, provenance=prov,
    )


def _group_words(groups: Mapping[str, Sequence[str]],
                 vectors: Mapping[str, np.ndarray]) -> tuple[list[str], dict[str, list[str]]]:
    """The two groups' names and their words with a vector (at least two each)."""
    names = list(groups)
    if len(names) != 2:
        raise DataError(MSG_GROUP_TOO_SMALL.format(name=", ".join(names) or "(none)", count=len(names)))
    group_words: dict[str, list[str]] = {}
    for name in names:
        kept = [w for w in groups[name] if vectors.get(w) is not None]
        if len(kept) < 2:
            raise EmbeddingError(MSG_GROUP_TOO_SMALL.format(name=name, count=len(kept)), group=name)
        group_words[name] = kept
    return names, group_words


def _diagnostics(samples: Mapping[str, np.ndarray], info: Mapping[str, Any], *, chains: int) -> dict[str, Any]:
    """R-hat and ESS of each posterior, the sampler's figures, and whether both converged."""
    diagnostics: dict[str, Any] = {p: _diag(samples[p]) for p in ("+", "-")}
    diagnostics.update(info)
    min_ess = min(diagnostics[p]["min_ess_bulk"] for p in ("+", "-"))
    diagnostics["ess_per_second"] = round(min_ess / max(info["seconds"], 1e-9), 1)
    # the Bayesian estimate's criteria, over both posteriors (R-hat ≤ 1.01, ESS ≥ 100 per chain, no divergence)
    both = {"max_rhat": max(diagnostics[p]["max_rhat"] for p in ("+", "-")),
            "min_ess_bulk": min_ess, "min_ess_tail": min(diagnostics[p]["min_ess_tail"] for p in ("+", "-")),
            "divergences": info["divergences"]}
    diagnostics["problems"] = convergence_problems(both, chains=chains)
    diagnostics["converged"] = not diagnostics["problems"]
    return diagnostics


def _acf_rows(posterior: str, samples: np.ndarray) -> list[dict[str, Any]]:
    """The mean and largest absolute autocorrelation of one posterior's chains, lag by lag."""
    acf = autocorrelation(samples, max_lag=MAX_LAG)
    return [{"posterior": posterior, "lag": lag, "mean_acf": round(float(acf[lag].mean()), 5),
             "max_abs_acf": round(float(np.abs(acf[lag]).max()), 5)} for lag in range(acf.shape[0])]


def _pca(flat: Mapping[str, np.ndarray], *, seed: int) -> dict[str, Any]:
    """Both posteriors' draws (a seeded subsample of :data:`PCA_POINTS` each) on their first two components."""
    rng = np.random.default_rng(seed)
    picks = {p: np.sort(rng.choice(flat[p].shape[0], size=min(PCA_POINTS, flat[p].shape[0]), replace=False))
             for p in ("+", "-")}
    both = np.concatenate([flat["+"][picks["+"]], flat["-"][picks["-"]]])
    scores, _, ratio = pca_projection(both)
    labels = ["+"] * picks["+"].size + ["-"] * picks["-"].size
    return {
        "explained_ratio": [round(float(r), 5) for r in ratio],
        "points": [{"posterior": lab, "pc1": round(float(a), 4), "pc2": round(float(b), 4)}
                   for lab, (a, b) in zip(labels, scores, strict=True)],
    }


def _word_table(flat: np.ndarray, vocab_matrix: np.ndarray, vocab_words: Sequence[str], *, k: int) -> dict[str, Any]:
    """The words nearest to and farthest from a posterior's mean."""
    mean = flat.mean(axis=0)
    near, far = nearest_words(mean, vocab_matrix, vocab_words, k=k)
    return {"nearest": near, "farthest": far, "mean_norm": round(float(np.linalg.norm(mean)), 4)}


def _group_test(posterior: str, flat: np.ndarray, names: list[str], group_words: Mapping[str, list[str]],
                vectors: Mapping[str, np.ndarray], *, seed: int) -> dict[str, Any]:
    """Which group's words are closer to a posterior's draws (mean cosine distance), with its tests."""
    s = flat / np.linalg.norm(flat, axis=1, keepdims=True)
    sc = {}
    for name in names:
        m = np.stack([np.asarray(vectors[w], dtype=np.float64) for w in group_words[name]])
        m = m / np.linalg.norm(m, axis=1, keepdims=True)
        sc[name] = 1.0 - (m @ s.T).mean(axis=1)
    pp, exact, t, pw = group_distance_test(sc[names[0]], sc[names[1]], seed=seed)
    return GroupTest(
        posterior=posterior, group_a=names[0], group_b=names[1],
        words_a=tuple(group_words[names[0]]), words_b=tuple(group_words[names[1]]),
        scores_a=tuple(round(float(v), 6) for v in sc[names[0]]),
        scores_b=tuple(round(float(v), 6) for v in sc[names[1]]),
        mean_a=round(float(sc[names[0]].mean()), 6), mean_b=round(float(sc[names[1]].mean()), 6),
        difference=round(float(sc[names[0]].mean() - sc[names[1]].mean()), 6),
        p_permutation=round(pp, 6), permutation_exact=exact, t_welch=round(t, 4), p_welch=round(pw, 6),
        seed=seed,
    ).model_dump(mode="json")


def _reading(classifier: Classifier, diagnostics: Mapping[str, Any], info: Mapping[str, Any],
             tests: Sequence[Mapping[str, Any]], options: PosteriorOptions) -> list[str]:
    """The plain-language reading: the classifier, the sampling, then each posterior's group test."""
    min_ess = min(diagnostics[p]["min_ess_bulk"] for p in ("+", "-"))
    reading = [
        f"Classifier: {classifier.description}; held-out AUC {classifier.test_auc:.3f} on {classifier.n_test} words.",
        f"Sampling: {options.chains} chains × {options.draws} draws per posterior in {info['seconds']:.1f} s; "
        f"smallest bulk ESS {min_ess:.0f} ({diagnostics['ess_per_second']:.0f} effective samples per second), "
        f"largest R-hat {max(diagnostics[p]['max_rhat'] for p in ('+', '-')):.3f}, {info['divergences']} divergent "
        f"transitions, mean acceptance probability {info['mean_accept_prob']:.3f} (target {info['target_accept']}).",
    ]
    if diagnostics["problems"]:
        reading.insert(0, MSG_POSTERIOR_NOT_CONVERGED.format(problems="; ".join(diagnostics["problems"])))
    for t in tests:
        closer = t["group_a"] if t["difference"] < 0 else t["group_b"]
        # a sampler that did not converge claims nothing: the numbers are given, not read (issue 28)
        sig = "" if diagnostics["problems"] else (
            " (significant at 0.05)" if t["p_permutation"] < 0.05 else " (not significant at 0.05)")
        reading.append(
            f"Posterior '{t['posterior']}': the words of '{closer}' are closer on average (difference of mean cosine "
            f"distance {t['difference']:+.4f}); permutation test p = {t['p_permutation']:.4f}{sig}, "
            f"Welch t = {t['t_welch']:.2f}, p = {t['p_welch']:.4f}."
        )
    return reading
