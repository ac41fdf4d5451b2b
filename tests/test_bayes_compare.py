"""The Bayesian estimate compared across two embeddings: the HDI of the difference of contrasts."""

from __future__ import annotations

import numpy as np
import pytest

from biastest.errors import DataError
from biastest.measures.bayes import compare as bcompare
from biastest.measures.bayes import fit, score
from biastest.measures.bayes.result import BayesResult

SEED = 11


def _rows(draws_by_word):
    return tuple({"protected_word": w, "group": "", "contrast": "associated − none", "draws": list(map(float, d))}
                 for w, d in draws_by_word.items())


def naive_difference(d1, d2, prob, seed):
    """The same pairing, written out: the shortest interval holding ⌊prob·n⌋ + 1 sorted differences."""
    rng = np.random.default_rng(seed)
    n = min(len(d1), len(d2))
    p2, p1 = rng.permutation(len(d2))[:n], rng.permutation(len(d1))[:n]
    diff = sorted(d2[p2[i]] - d1[p1[i]] for i in range(n))
    k = int(np.floor(prob * n))
    widths = [diff[i + k] - diff[i] for i in range(n - k)]
    i = int(np.argmin(widths))
    return sum(diff) / n, diff[i], diff[i + k]


def test_difference_equals_a_naive_reference():
    rng = np.random.default_rng(1)
    d1, d2 = rng.normal(-0.2, 0.05, 900), rng.gamma(2.0, 0.05, 1000) - 0.1
    got = bcompare.compare_draws(_rows({"w": d1}), _rows({"w": d2}), hdi_prob=0.89, seed=4)[0]
    mean, low, high = naive_difference(d1, d2, 0.89, 4)
    assert got["n_draws"] == 900
    assert got["difference"] == pytest.approx(mean, abs=1e-12)
    assert (got["hdi_low"], got["hdi_high"]) == pytest.approx((low, high), abs=1e-12)


def test_planted_differences_are_recovered_with_coverage():
    """Draws from known posteriors: the interval of the difference covers the true difference about 89 % of the
    time, and a planted shift of 0.2 (sd 0.03 each) is credible."""
    rng = np.random.default_rng(2)
    covered = 0
    trials = 1000
    for t in range(trials):
        truth = rng.normal(0, 0.1)
        # each posterior is centred on its own noisy estimate, as a real posterior is (sd 0.03)
        c1, c2 = rng.normal(0, 0.03), rng.normal(truth, 0.03)
        d1, d2 = rng.normal(c1, 0.03, 1000), rng.normal(c2, 0.03, 1000)
        row = bcompare.compare_draws(_rows({"w": d1}), _rows({"w": d2}), hdi_prob=0.89, seed=t)[0]
        covered += row["hdi_low"] <= truth <= row["hdi_high"]
    assert 0.85 <= covered / trials <= 0.93  # binomial sd 0.01 around 0.89
    d1, d2 = rng.normal(-0.2, 0.03, 1000), rng.normal(0.0, 0.03, 1000)
    row = bcompare.compare_draws(_rows({"w": d1}), _rows({"w": d2}), hdi_prob=0.89, seed=0)[0]
    assert row["verdict"] == "higher" and row["hdi_low"] <= 0.2 <= row["hdi_high"]


def test_seed_reproduces():
    rng = np.random.default_rng(3)
    a, b = _rows({"w": rng.normal(0, 1, 500)}), _rows({"w": rng.normal(0, 1, 700)})
    assert bcompare.compare_draws(a, b, hdi_prob=0.89, seed=5) == bcompare.compare_draws(a, b, hdi_prob=0.89, seed=5)


def test_kept_draws_thin_evenly():
    derived = {"associated-none": np.arange(2 * 3000 * 2, dtype=float).reshape(2, 3000, 2),
               "overall:associated-none": np.arange(6000, dtype=float).reshape(2, 3000)}
    contrasts = [{"protected_word": "(overall)", "group": "", "contrast": "associated − none"},
                 {"protected_word": "b", "group": "g2", "contrast": "associated − none"},
                 {"protected_word": "x", "group": "g2", "contrast": "associated − human"}]  # no draws: left out
    kept = bcompare.kept_draws(derived, contrasts, ["a", "b"], kept=1000)
    assert [r["protected_word"] for r in kept] == ["(overall)", "b"]
    assert len(kept[0]["draws"]) == 1000 and kept[0]["draws"][0] == 0 and kept[0]["draws"][-1] == 5999
    assert kept[1]["draws"][:2] == [1.0, 13.0]  # word b (odd entries), every 6th draw of 6000


# --------------------------------------------------------------------------- two real fits
def _planted(rng, *, bias):
    means = {"associated": 0.9 - bias, "different": 0.9, "human": 0.85, "none": 0.9}
    wi, ci, ys, att = [], [], [], []
    for w in range(4):
        for k, c in enumerate(score.CONNECTIONS):
            for r in range(12):
                wi.append(w)
                ci.append(k)
                ys.append(rng.normal(means[c], 0.1))
                att.append(f"{c}{r}")
    return score.DistanceData(
        protected_words=("w0", "w1", "w2", "w3"), word_groups=(1, 1, 2, 2), group_names=("g1", "g2"),
        attribute_names=("a1", "a2"), word_index=np.asarray(wi), connection_index=np.asarray(ci),
        attributes=tuple(att), distance=np.asarray(ys), missing=(), excluded_controls=(), control_source="simulated",
    )


@pytest.fixture(scope="module")
def fits():
    rng = np.random.default_rng(SEED)
    biased, unbiased = _planted(rng, bias=0.2), _planted(rng, bias=0.0)
    kw = {"model": "hierarchical", "draws": 400, "tune": 200, "time_limit": 3600, "max_attempts": 1}
    return (fit.fit_bayes(biased, seed=SEED, **kw), fit.fit_bayes(unbiased, seed=SEED, **kw),
            fit.fit_bayes(biased, seed=SEED + 1, **kw))


def test_a_planted_difference_between_two_fits_is_recovered(fits):
    biased, unbiased, _ = fits
    assert len(biased.contrast_draws) == len(biased.contrasts)
    cmp = bcompare.compare_bayes(biased, unbiased, labels=("original", "debiased"))
    overall = next(r for r in cmp.rows if r["protected_word"] == "(overall)" and r["contrast"] == "associated − none")
    assert overall["hdi_low"] <= 0.2 <= overall["hdi_high"] and overall["verdict"] == "higher"
    assert cmp.seed == SEED and cmp.provenance["seed"] == SEED and cmp.labels == ("original", "debiased")
    assert cmp.reading[1].startswith("Overall associated − none: difference +0.")
    again = BayesResult.from_dict(biased.to_dict())  # the draws survive the JSON
    assert again.contrast_draws == biased.contrast_draws
    assert len(bcompare.comparison_figure(cmp).data) == len({r["contrast"] for r in cmp.rows})


def test_the_same_data_twice_gives_intervals_holding_zero(fits):
    biased, _, again = fits
    cmp = bcompare.compare_bayes(biased, again)
    assert all(r["hdi_low"] <= 0 <= r["hdi_high"] for r in cmp.rows)
    assert {r["verdict"] for r in cmp.rows} == {"no credible change"}


def test_refusals(fits):
    biased, unbiased, _ = fits
    old = BayesResult.from_dict({**biased.to_dict(), "contrast_draws": []})
    with pytest.raises(DataError) as err:
        bcompare.compare_bayes(old, unbiased, labels=("old", "new"))
    assert str(err.value) == bcompare.MSG_NO_DRAWS.format(label="old")
    other = BayesResult.from_dict({**unbiased.to_dict(), "model": {**unbiased.model, "name": "additive"}})
    with pytest.raises(DataError) as err:
        bcompare.compare_bayes(biased, other)
    assert str(err.value) == bcompare.MSG_DIFFERENT_MODELS.format(first="hierarchical", second="additive")
    renamed = [{**r, "protected_word": "z" + r["protected_word"]} if r["protected_word"] != "(overall)" else r
               for r in unbiased.contrast_draws]
    with pytest.raises(DataError) as err:
        bcompare.compare_bayes(biased, BayesResult.from_dict({**unbiased.to_dict(), "contrast_draws": renamed}))
    assert str(err.value) == bcompare.MSG_NO_SHARED
