"""Posterior of embeddings given a classifier: AUC, tests, PCA, word tables, and exact Gaussian recovery."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

from biastest.errors import DataError, EmbeddingError
from biastest.measures.posterior import score as P
from biastest.measures.posterior import summary
from tests.bayes_helpers import glove

SEED = 11


def test_auc_equals_pairwise_count():
    rng = np.random.default_rng(SEED)
    y = rng.integers(0, 2, size=60)
    s = np.round(rng.normal(size=60) + y, 1)  # rounding creates ties
    pos, neg = s[y == 1], s[y == 0]
    naive = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg) / (len(pos) * len(neg))
    assert P.auc_score(y, s) == pytest.approx(naive, abs=1e-12)


def test_permutation_test_equals_bitmask_enumeration_and_welch_formula():
    rng = np.random.default_rng(SEED)
    a, b = rng.normal(0.1, 1, 6), rng.normal(0.8, 1, 5)
    p, exact, t, pw = P.group_distance_test(a, b, seed=0)
    pooled = np.concatenate([a, b])
    obs = abs(a.mean() - b.mean())
    hits = total = 0
    for mask in range(1 << 11):
        if bin(mask).count("1") != 6:
            continue
        sel = np.array([(mask >> i) & 1 for i in range(11)], dtype=bool)
        total += 1
        hits += abs(pooled[sel].mean() - pooled[~sel].mean()) >= obs - 1e-12
    assert exact and total == math.comb(11, 6)
    assert p == pytest.approx(hits / total, abs=1e-12)
    va, vb = a.var(ddof=1) / 6, b.var(ddof=1) / 5
    t_naive = (a.mean() - b.mean()) / math.sqrt(va + vb)
    assert t == pytest.approx(t_naive, rel=1e-10)
    assert 0 < pw < 1
    # the sampled (seeded) permutation test agrees with the exact one
    p_sampled, exact2, _, _ = P.group_distance_test(a, b, seed=5, max_exact=0, n_resamples=20000)
    assert not exact2 and p_sampled == pytest.approx(p, abs=0.015)
    assert P.group_distance_test(a, b, seed=5, max_exact=0)[0] == P.group_distance_test(a, b, seed=5, max_exact=0)[0]


def test_pca_matches_covariance_eigenvectors():
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(300, 4)) @ np.diag([3.0, 2.0, 1.0, 0.5])
    scores, comps, ratio = P.pca_projection(x)
    cov = np.cov(x.T)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1]
    for k in range(2):
        v = vecs[:, order[k]]
        assert abs(abs(v @ comps[k]) - 1) < 1e-9
    assert ratio == pytest.approx(vals[order[:2]] / vals.sum(), rel=1e-9)
    assert scores[:, 0] == pytest.approx((x - x.mean(0)) @ comps[0], abs=1e-9)


def test_nearest_words_equals_naive_loop():
    rng = np.random.default_rng(SEED)
    m = rng.normal(size=(40, 5))
    m[7] = 0.0  # a zero row is skipped
    words = [f"w{i}" for i in range(40)]
    v = rng.normal(size=5)
    near, far = P.nearest_words(v, m, words, k=3)
    cos = [(words[i], float(m[i] @ v / (np.linalg.norm(m[i]) * np.linalg.norm(v)))) for i in range(40) if i != 7]
    ranked = sorted(cos, key=lambda t: -t[1])
    assert [w for w, _ in near] == [w for w, _ in ranked[:3]]
    assert [w for w, _ in far] == [w for w, _ in ranked[::-1][:3]]
    assert near[0][1] == pytest.approx(ranked[0][1], abs=1e-5)


def _reference_logistic_posterior(w, b, sign):
    """Exact mean and covariance of p(s) ∝ σ(sign·(w·s + b)) N(s; 0, 10² I) by 1-D quadrature along w."""
    norm = np.linalg.norm(w)
    u = w / norm

    def dens(t):
        return expit(sign * (norm * t + b)) * math.exp(-0.5 * (t / P.PRIOR_SD) ** 2)

    z = integrate.quad(dens, -150, 150, limit=400)[0]
    m1 = integrate.quad(lambda t: t * dens(t), -150, 150, limit=400)[0] / z
    m2 = integrate.quad(lambda t: t * t * dens(t), -150, 150, limit=400)[0] / z
    var_t = m2 - m1**2
    d = len(w)
    cov = P.PRIOR_SD**2 * (np.eye(d) - np.outer(u, u)) + var_t * np.outer(u, u)
    return m1 * u, cov


def test_nuts_recovers_exact_posterior_of_a_logistic_classifier():
    rng = np.random.default_rng(SEED)
    d = 6
    w = rng.normal(size=d)
    w *= 0.4 / np.linalg.norm(w)
    b = 0.5
    clf = P.Classifier(layers=((w[:, None], np.array([b])),))
    samples, info = P.sample_embedding_posterior(clf, seed=SEED, draws=2000, tune=500, chains=2)
    assert info["divergences"] == 0 and info["divergences_per_chain"] == [0, 0]
    # the sampler's acceptance is reported per chain: step-size adaptation aims at the target 0.8, and the step it
    # keeps (the average of the log step sizes tried) is a little smaller, so acceptance ends near or above 0.8
    assert info["target_accept"] == 0.8 and len(info["mean_accept_prob_per_chain"]) == 2
    assert all(0.75 < a < 0.99 for a in info["mean_accept_prob_per_chain"])  # measured: 0.89, 0.91
    assert info["mean_accept_prob"] == pytest.approx(np.mean(info["mean_accept_prob_per_chain"]), abs=1e-4)
    assert len(info["step_size"]) == 2 and all(s > 0 for s in info["step_size"])
    for label, sign in (("+", 1.0), ("-", -1.0)):
        ref_mean, ref_cov = _reference_logistic_posterior(w, b, sign)
        x = samples[label].reshape(-1, d)
        ess = summary._diag(samples[label])["min_ess_bulk"]
        se = np.sqrt(np.diag(ref_cov) / ess)
        assert np.all(np.abs(x.mean(0) - ref_mean) < 5 * se), (label, x.mean(0), ref_mean)
        assert np.linalg.norm(ref_mean) > 10 * se.max()  # the shift is large against the Monte Carlo error
        cov = np.cov(x.T)
        assert np.max(np.abs(cov - ref_cov)) / P.PRIOR_SD**2 < 0.15, (label, cov, ref_cov)


@pytest.fixture(scope="module")
def glove_classifier():
    emb, index, _ = glove()
    lex = P.load_vader_lexicon()
    x, y, words = P.lexicon_training_data(vectors={w: emb[index[w]] for w in lex if w in index}, lexicon=lex)
    return P.train_classifier(x, y, seed=SEED), (x, y, words)


def test_lexicon_labels_and_classifier_auc(glove_classifier):
    clf, (x, y, words) = glove_classifier
    lab = dict(zip(words, y, strict=True))
    assert lab["good"] == 1 and lab["bad"] == 0 and lab["love"] == 1 and lab["hate"] == 0
    assert len(words) > 4000
    assert clf.test_auc > 0.85 and clf.n_test + clf.n_train == len(y)
    assert P.auc_score(y, clf.logit(x)) >= clf.test_auc - 0.05
    again = P.train_classifier(x[:400], y[:400], seed=SEED, epochs=5)
    again2 = P.train_classifier(x[:400], y[:400], seed=SEED, epochs=5)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(again.layers, again2.layers, strict=True))
    with pytest.raises(DataError) as e:
        P.lexicon_training_data(vectors={"good": x[0]}, lexicon={"good": 2.0, "bad": -2.0})
    assert e.value.message == P.MSG_TOO_FEW_LABELS.format(n_pos=1, n_neg=0, minimum=20)


def test_jax_logit_equals_numpy_logit(glove_classifier):
    import jax.numpy as jnp

    clf, (x, _, _) = glove_classifier
    np.testing.assert_allclose(np.asarray(clf.logit_jax()(jnp.asarray(x[:50]))), clf.logit(x[:50]), atol=1e-4)


def test_runner_posterior_on_glove():
    from biastest.measures.posterior import PosteriorItems, run

    seen = []
    res = run({"seed": SEED, "draws": 300, "tune": 300, "vocab_size": 20000, "k_words": 5, "epochs": 60},
              progress=lambda d, t, m: seen.append(d))
    d = json.loads(json.dumps(res.to_dict()))
    assert d["classifier"]["test_auc"] > 0.85
    for p in ("+", "-"):
        assert len(res.words[p]["nearest"]) == 5 and len(res.words[p]["farthest"]) == 5
        assert res.diagnostics[p]["max_rhat"] < 1.05
    acf0 = [r for r in res.autocorrelation if r["lag"] == 0]
    assert all(r["mean_acf"] == pytest.approx(1.0) for r in acf0)
    assert len(res.pca["points"]) == 2 * 500
    assert len(res.group_tests) == 2
    for t in res.group_tests:
        assert 0 < t["p_permutation"] <= 1 and 0 < t["p_welch"] <= 1
        assert t["mean_a"] - t["mean_b"] == pytest.approx(t["difference"], abs=2e-6)
        assert t["group_a"] == "female names" and len(t["words_a"]) == 8
    assert res.diagnostics["ess_per_second"] > 0
    assert res.diagnostics["converged"] == (res.diagnostics["problems"] == [])
    assert any(f"{res.diagnostics['divergences']} divergent transitions, mean acceptance probability" in line
               for line in res.reading)
    assert seen[-1] == 100
    assert {r["kind"] for r in res.word_records()} == {"nearest", "farthest"}
    with pytest.raises(EmbeddingError) as e:
        run({"seed": 0, "draws": 100, "tune": 100},
            PosteriorItems(groups={"a": ["zzqqx", "john"], "b": ["amy", "ann"]}))
    assert e.value.message == P.MSG_GROUP_TOO_SMALL.format(name="a", count=1)
