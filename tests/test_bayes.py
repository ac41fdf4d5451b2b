"""Bayesian cosine model with control groups: data rows, likelihood, HPDI, recovery, calibration."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from biastest.errors import DataError, EmbeddingError, MethodError, SpecError
from biastest.metrics import bayes
from tests.bayes_helpers import glove_vectors, hdi_coverage, simulate_hierarchical

SEED = 20240607


def _toy_vectors(words, *, seed):
    rng = np.random.default_rng(seed)
    return {w: rng.normal(size=5) for w in words}


# --------------------------------------------------------------------------- data rows


def test_controls_are_shipped_with_provenance():
    c = bayes.load_controls()
    assert len(c.human) == 85 and len(c.none) == 226
    assert "eat" in c.human and "clock" in c.none
    assert "efemeryds/Bayesian-analysis-for-NLP-bias" in c.source


def test_rows_equal_naive_loop():
    g1, g2 = ["he", "man"], ["she", "woman"]
    a1, a2 = ["strong", "career"], ["gentle", "family", "nowhere"]
    human, none = ["eat", "sleep", "career"], ["clock", "soup"]
    vec = _toy_vectors(g1 + g2 + a1 + a2[:2] + human + none, seed=1)  # "nowhere" has no vector
    data = bayes.build_distance_data(group1=g1, group2=g2, attributes1=a1, attributes2=a2, vectors=vec,
                                     human=human, none=none, group_names=("men", "women"),
                                     attribute_names=("male", "female"))
    assert data.missing == ("nowhere",)
    assert data.excluded_controls == ("career",)  # a control word that is also a spec attribute
    expected = []
    for t in g1 + g2:
        grp = 1 if t in g1 else 2
        for a in ["strong", "career", "gentle", "family", "eat", "sleep", "clock", "soup"]:
            u, v = vec[t], vec[a]
            d = 1 - sum(x * y for x, y in zip(u, v, strict=True)) / (math.sqrt(sum(x * x for x in u)) *
                                                                     math.sqrt(sum(y * y for y in v)))
            if a in a1:
                conn = "associated" if grp == 1 else "different"
            elif a in a2:
                conn = "associated" if grp == 2 else "different"
            elif a in human:
                conn = "human"
            else:
                conn = "none"
            expected.append((t, a, conn, d))
    got = [(r["protected_word"], r["attribute"], r["connection"], r["distance"]) for r in data.records()]
    assert [g[:3] for g in got] == [e[:3] for e in expected]
    np.testing.assert_allclose([g[3] for g in got], [e[3] for e in expected], rtol=0, atol=1e-12)
    assert data.counts() == {"associated": 8, "different": 8, "human": 8, "none": 8}
    assert data.records()[0]["group"] == "men"
    json.dumps(data.summary())


def test_row_errors_have_exact_messages():
    vec = _toy_vectors(["a", "b", "x", "y", "h", "n"], seed=2)
    kw = {"group1": ["a"], "group2": ["b"], "attributes1": ["x"], "attributes2": ["y"], "vectors": vec}
    with pytest.raises(DataError) as e:
        bayes.build_distance_data(**kw, human=[], none=["n"])
    assert e.value.message == bayes.MSG_EMPTY_CONTROL.format(list_name="neutral human attributes")
    with pytest.raises(DataError) as e:
        bayes.build_distance_data(**{**kw, "attributes1": ["x", "a"]}, human=["h"], none=["n"])
    assert e.value.message == bayes.MSG_WORD_IN_TWO_ROLES.format(word="a")
    with pytest.raises(EmbeddingError) as e:
        bayes.build_distance_data(**{**kw, "group2": ["zz", "qq"]}, human=["h"], none=["n"])
    assert e.value.message == bayes.MSG_NO_VECTOR_LIST.format(list_name="group 2", missing="zz, qq")
    with pytest.raises(EmbeddingError) as e:
        bayes.build_distance_data(**{**kw, "vectors": {**vec, "x": np.zeros(5)}}, human=["h"], none=["n"])
    assert e.value.message == bayes.MSG_ZERO_VECTOR.format(word="x")


def test_sampler_setting_errors():
    data = _planted_data(np.random.default_rng(0), n_words=2, rows=3, bias=0.0)
    with pytest.raises(MethodError) as e:
        bayes.fit_bayes(data, model="nope", seed=0)
    assert e.value.message == bayes.MSG_UNKNOWN_MODEL.format(name="nope", choices="additive, hierarchical")
    with pytest.raises(MethodError) as e:
        bayes.fit_bayes(data, seed=0, draws=10)
    assert e.value.message == bayes.MSG_BAD_SAMPLER_SETTINGS.format(draws=10, tune=1000, chains=2)


def test_models_are_named_with_printable_priors():
    assert set(bayes.BAYES_MODELS) == {"additive", "hierarchical"}
    add = bayes.BAYES_MODELS["additive"].describe()
    for s in ("Normal(1, 0.5)", "Normal(0, 1)", "HalfCauchy(0, 1)", "m[word_i] + co[connection_i]"):
        assert s in add
    hier = bayes.BAYES_MODELS["hierarchical"].describe()
    for s in ("Normal(M[connection], tau[connection])", "Normal(1, 0.3)", "Exponential(2)", "sigma[connection]"):
        assert s in hier
    json.dumps([m.to_dict() for m in bayes.BAYES_MODELS.values()])


# --------------------------------------------------------------------------- likelihood


def test_sufficient_statistics_likelihood_equals_row_likelihood():
    import jax.numpy as jnp

    rng = np.random.default_rng(SEED)
    wi = rng.integers(0, 5, size=300)
    ci = rng.integers(0, 4, size=300)
    y = rng.normal(0.9, 0.2, size=300)
    n, mean, ss = bayes.cell_statistics(wi, ci, y, n_words=6)  # word 5 has no rows
    assert n[5].sum() == 0
    mu = rng.normal(1.0, 0.3, size=(6, 4))
    sigma = rng.uniform(0.1, 0.5, size=4)
    naive = sum(
        -math.log(sigma[c]) - 0.5 * math.log(2 * math.pi) - 0.5 * ((yy - mu[w, c]) / sigma[c]) ** 2
        for w, c, yy in zip(wi, ci, y, strict=True)
    )
    assert bayes.sufficient_log_likelihood(n, mean, ss, mu, sigma[None, :]) == pytest.approx(naive, rel=1e-12)
    assert bayes.row_log_likelihood(y, mu[wi, ci], sigma[ci]) == pytest.approx(naive, rel=1e-12)
    jx = float(bayes.sufficient_log_likelihood(jnp.asarray(n), jnp.asarray(mean), jnp.asarray(ss), jnp.asarray(mu),
                                               jnp.asarray(sigma)[None, :], xp=jnp))
    assert jx == pytest.approx(naive, rel=1e-5)


def test_centering_weights_in_unit_interval():
    rng = np.random.default_rng(1)
    _, wi, ci, y = simulate_hierarchical(rng=rng, n_sets=1, n_words=5, rows_per_cell=4)
    n, mean, ss = bayes.cell_statistics(wi, ci, y[0], n_words=5)
    k = bayes.centering_weights(n, mean, ss)
    assert k.shape == (5, 4) and np.all((k >= 0) & (k <= 1))


# --------------------------------------------------------------------------- HPDI


def _naive_shortest_interval(x, prob):
    x = np.sort(x)
    m = math.floor(prob * len(x))
    widths = [x[i + m] - x[i] for i in range(len(x) - m)]
    i = int(np.argmin(widths))
    return x[i], x[i + m]


def test_hdi_is_arviz_hdi_and_not_the_percentile_interval():
    import arviz as az

    rng = np.random.default_rng(SEED)
    draws = rng.gamma(shape=1.5, scale=1.0, size=(2, 2000))  # right-skewed
    stats = bayes._summaries({"x": draws}, bayes.HDI_PROB)["x"]
    ref = az.hdi(draws.ravel(), hdi_prob=0.89)
    assert (stats["hdi_low"], stats["hdi_high"]) == pytest.approx(tuple(ref), abs=1e-12)
    lo, hi = _naive_shortest_interval(draws.ravel(), 0.89)
    assert (stats["hdi_low"], stats["hdi_high"]) == pytest.approx((lo, hi), abs=1e-12)
    p_lo, p_hi = np.percentile(draws.ravel(), [5.5, 94.5])
    assert stats["hdi_low"] < p_lo - 0.05  # the HDI is shifted toward the mode of a right-skewed sample
    assert stats["hdi_high"] < p_hi - 0.1
    assert stats["hdi_high"] - stats["hdi_low"] < p_hi - p_lo


# --------------------------------------------------------------------------- fitting


def _planted_data(rng, *, n_words, rows, bias):
    """DistanceData with known cell means: associated sits `bias` below the controls."""
    means = {"associated": 0.9 - bias, "different": 0.9, "human": 0.85, "none": 0.9}
    wi, ci, ys, att = [], [], [], []
    for w in range(n_words):
        for k, c in enumerate(bayes.CONNECTIONS):
            for r in range(rows):
                wi.append(w)
                ci.append(k)
                ys.append(rng.normal(means[c], 0.1))
                att.append(f"{c}{r}")
    words = tuple(f"w{i}" for i in range(n_words))
    return bayes.DistanceData(
        protected_words=words, word_groups=tuple(1 if i < n_words // 2 else 2 for i in range(n_words)),
        group_names=("g1", "g2"), attribute_names=("a1", "a2"), word_index=np.asarray(wi),
        connection_index=np.asarray(ci), attributes=tuple(att), distance=np.asarray(ys), missing=(),
        excluded_controls=(), control_source="simulated",
    )


@pytest.fixture(scope="module")
def planted():
    data = _planted_data(np.random.default_rng(SEED), n_words=6, rows=12, bias=0.2)
    return data, bayes.fit_bayes(data, model="hierarchical", seed=SEED, draws=600, tune=300)


def test_hierarchical_recovers_planted_bias(planted):
    _, res = planted
    overall = {r["contrast"]: r for r in res.contrasts if r["protected_word"] == "(overall)"}
    an = overall["associated − none"]
    assert an["hdi_low"] <= -0.2 <= an["hdi_high"] and an["verdict"] == "closer"
    assert overall["associated − human"]["verdict"] == "closer"
    per_word = [r for r in res.contrasts if r["contrast"] == "associated − none" and r["protected_word"] != "(overall)"]
    assert len(per_word) == 6 and all(r["verdict"] == "closer" for r in per_word)
    assert sum(r["hdi_low"] <= -0.2 <= r["hdi_high"] for r in per_word) >= 4
    # cell means recover the observed cell means (data dominate the prior)
    for c in res.cells:
        assert c["mean"] == pytest.approx(c["observed_mean"], abs=0.05)
        assert c["n_rows"] == 12
    assert res.diagnostics["divergences"] == 0 and res.diagnostics["max_rhat"] <= 1.02
    assert {"max_rhat", "min_ess_bulk", "min_ess_tail", "converged"} <= set(res.diagnostics)
    assert any("credibly closer than neutral words" in line for line in res.reading)
    assert res.provenance["seed"] == SEED and res.provenance["method"] == "bayes-hierarchical"


def test_result_is_json_and_tidy(planted):
    _, res = planted
    d = json.loads(json.dumps(res.to_dict()))
    assert d["hdi_prob"] == 0.89 and d["model"]["name"] == "hierarchical"
    assert len(d["rows"]) == 6 * 4 * 12 and d["rows"][0]["connection"] == "associated"
    rec = res.interval_records()
    assert {r["panel"] for r in rec} == {"cells", "levels", "contrasts"}
    assert sum(r["panel"] == "cells" for r in rec) == 6 * 4
    assert all(r["hdi_low"] <= r["mean"] <= r["hdi_high"] for r in rec)
    with pytest.raises(AttributeError):
        res.seed = 1  # frozen


def test_interval_coverage_is_calibrated():
    """Truths drawn from the prior: pooled 89% HDI coverage over 12 simulated datasets lies in 85–93%."""
    rng = np.random.default_rng(SEED)
    k, w = 12, 6
    truth, wi, ci, y = simulate_hierarchical(rng=rng, n_sets=k, n_words=w, rows_per_cell=10)
    stats = [bayes.cell_statistics(wi, ci, y[i], n_words=w) for i in range(k)]
    n, mean, ss = (np.stack([s[j] for s in stats]) for j in range(3))
    samples, _, _ = bayes.sample_cell_posterior(n, mean, ss, model="hierarchical", seed=SEED, draws=500, tune=300,
                                                chains=2)
    inside, total = hdi_coverage(samples, truth)
    print(f"coverage {inside}/{total} = {inside / total:.3f} (seed {SEED})")
    assert total == k * (4 + 4 + 4 + w * 4)
    assert 0.85 <= inside / total <= 0.93


# --------------------------------------------------------------------------- runner on GloVe


def test_runner_on_glove_weat7_like_spec():
    from biastest.runner.bayes import MSG_TWO_LISTS, available_models, run_bayes

    seen = []
    groups = {"math": ["math", "algebra", "geometry", "calculus"], "arts": ["poetry", "art", "dance", "novel"]}
    attributes = {"male": ["male", "man", "boy", "brother"], "female": ["female", "woman", "girl", "sister"]}
    vec_all = glove_vectors([w for ws in (*groups.values(), *attributes.values()) for w in ws]
                            + list(bayes.load_controls().human) + list(bayes.load_controls().none))
    rows = bayes.build_distance_data(group1=groups["math"], group2=groups["arts"], attributes1=attributes["male"],
                                     attributes2=attributes["female"], vectors=vec_all).records()
    res = run_bayes(
        spec_groups=groups,
        spec_attributes=attributes,
        model="additive", seed=SEED, draws=500, tune=300, progress=lambda d, t, m: seen.append((d, t, m)),
    )
    assert res.data["n_rows"] == 8 * (8 + 85 + 225)  # 'literaly' is not in GloVe
    assert res.data["missing"] == ["literaly"]
    assert res.provenance["model_id"] == "glove-6b-50d" and res.provenance["spec"]["social_groups"]["math"]
    assert seen[-1][0] == seen[-1][1] == 100
    # spot-check one cell mean against a direct computation from the GloVe vectors
    vec = glove_vectors(["math", "male", "man", "boy", "brother"])
    u = vec["math"] / np.linalg.norm(vec["math"])
    direct = np.mean([1 - u @ (vec[a] / np.linalg.norm(vec[a])) for a in ["male", "man", "boy", "brother"]])
    cell = next(c for c in res.cells if c["protected_word"] == "math" and c["connection"] == "associated")
    assert cell["observed_mean"] == pytest.approx(direct, abs=1e-5)
    # additive model, balanced design (every protected word meets the same attributes): the contrast
    # co[associated] − co[none] ≈ difference of the row means ± σ·√(1/n_a + 1/n_none) under a flat-ish prior
    y = np.array([r["distance"] for r in rows])
    conn = np.array([r["connection"] for r in rows])
    diff = y[conn == "associated"].mean() - y[conn == "none"].mean()
    word = np.array([r["protected_word"] for r in rows])
    # least-squares additive fit; cell counts are proportional (same per word), so it is word mean +
    # connection mean − grand mean
    fitted = (np.array([y[word == w].mean() for w in word]) + np.array([y[conn == c].mean() for c in conn])
              - y.mean())
    sigma = math.sqrt(np.sum((y - fitted) ** 2) / (len(y) - 8 - 3))
    se = sigma * math.sqrt(1 / 32 + 1 / (8 * 225))
    overall = {r["contrast"]: r for r in res.contrasts if r["protected_word"] == "(overall)"}
    an = overall["associated − none"]
    assert an["mean"] == pytest.approx(diff, abs=0.25 * se)
    assert an["hdi_high"] - an["hdi_low"] == pytest.approx(2 * 1.598 * se, rel=0.2)  # z(0.945) = 1.598
    assert an["verdict"] == bayes._interval_verdict(an["hdi_low"], an["hdi_high"])
    per = [r["mean"] for r in res.contrasts if r["contrast"] == "associated − none"]
    assert max(per) - min(per) < 1e-9  # additive: per-word contrasts equal the overall one
    assert res.diagnostics["max_rhat"] <= 1.02
    assert any("shared by all the words of math and arts" in line for line in res.reading)  # the lists' names
    assert not any("protected" in line for line in res.reading)
    assert len(available_models()) == 2
    with pytest.raises(SpecError) as e:
        run_bayes(spec_groups={"a": ["he"]}, spec_attributes={"x": ["y"], "z": ["w"]}, seed=0)
    assert e.value.message == MSG_TWO_LISTS.format(kind="social groups", count=1, names="a", kind_one="group")


def test_parallel_chains_are_configured_safely():
    import os
    import subprocess
    import sys

    import jax

    # the child processes must start clean: an earlier sampling run in this process may have set XLA_FLAGS
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    # in this process JAX is initialised by now: more chains than devices fall back to sequential
    assert bayes.configure_parallel_chains(jax.local_device_count() + 1) == "sequential"
    # a process that initialised JAX before asking keeps its single device and samples sequentially
    code = (
        "import jax; jax.devices(); from biastest.metrics.bayes import configure_parallel_chains as c; "
        "print(c(2), jax.local_device_count())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True, env=env)
    assert out.stdout.split() == ["sequential", "1"]
    # a fresh process gets one device per chain, even with torch imported first
    code = (
        "import torch; from biastest.metrics.bayes import configure_parallel_chains as c; import jax; "
        "print(c(2), jax.local_device_count() >= 2)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True, env=env)
    assert out.stdout.split() == ["parallel", "True"]
