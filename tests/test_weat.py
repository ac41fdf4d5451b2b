"""WEAT, MAC and the partition permutation test against naive re-implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biastest.errors import DataError, EmbeddingError, MethodError
from biastest.measures.weat.score import (
    MSG_WEAT_BOOTSTRAP_SEED,
    MSG_WEAT_NO_SPREAD,
    WEATSettings,
    mac,
    weat,
    weat_effect_size,
    weat_effect_size_bootstrap,
    weat_jackknife_interval,
)
from biastest.models.embeddings import MSG_MOSTLY_MISSING, InMemoryEmbeddings, cosine_matrix
from biastest.stats.permutation import count_partitions, partition_permutation_test
from tests.embedding_runs import run_mac, run_weat
from tests.embeddings_helpers import (
    WEAT_TESTS,
    glove_vec,
    load_weat_lists,
    naive_mac,
    naive_partition_pvalue,
    naive_weat,
)

SEED = 20260501


@pytest.mark.parametrize("number", sorted(WEAT_TESTS))
def test_weat_1_to_10_on_glove_equal_naive_loops(number, shared_data):
    lists = load_weat_lists(shared_data)
    xn, yn, an, bn = WEAT_TESTS[number]
    X, Y, A, B = lists[xn], lists[yn], lists[an], lists[bn]
    res = run_weat(X=X, Y=Y, A=A, B=B, source="glove-6b-50d", seed=SEED, n_permutations=2000)
    # naive: look every word up in the raw package files, drop the missing ones, loop
    vx = [glove_vec(w) for w in X if glove_vec(w) is not None]
    vy = [glove_vec(w) for w in Y if glove_vec(w) is not None]
    va = [glove_vec(w) for w in A if glove_vec(w) is not None]
    vb = [glove_vec(w) for w in B if glove_vec(w) is not None]
    d, stat = naive_weat(vx, vy, va, vb)
    print(f"WEAT {number}: d={res.effect_size:.4f} (naive {d:.4f}), p={res.p_value:.4g}, seed={SEED}")
    assert res.effect_size == pytest.approx(d, abs=1e-9)
    assert res.test_statistic == pytest.approx(stat, abs=1e-9)
    assert len(res.x) == len(vx) and len(res.y) == len(vy)
    assert set(res.missing["X"]) == {w for w in X if glove_vec(w) is None}
    assert res.provenance["seed"] == SEED and res.provenance["model_id"] == "glove-6b-50d"
    # per-word breakdown matches the naive s(w, A, B)
    row = res.word_scores[0]
    assert row["s"] == pytest.approx(
        sum(_cos(vx[0], a) for a in va) / len(va) - sum(_cos(vx[0], b) for b in vb) / len(vb), abs=1e-9
    )


def _cos(u, v):
    return sum(a * b for a, b in zip(u, v, strict=True)) / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))


def test_weat_glove_directions_are_the_published_ones(shared_data):
    # published d on GloVe 840B are all positive (1.06 – 1.81); the small GloVe should agree in sign for the
    # clear-cut tests 1, 2 and 6
    lists = load_weat_lists(shared_data)
    for number in (1, 2, 6):
        xn, yn, an, bn = WEAT_TESTS[number]
        r = run_weat(X=lists[xn], Y=lists[yn], A=lists[an], B=lists[bn], seed=SEED, n_permutations=1000)
        assert r.effect_size > 0.5, number


def test_permutation_p_exact_on_a_case_enumerated_by_hand():
    # X = {x1, x2}, Y = {y1, y2} with s(w, A, B) = 0.9, 0.4, 0.1, -0.2.
    # The 6 first groups and T = Σ_first − Σ_second (total 1.2):
    #   {x1,x2}: 1.3-(-0.1)=1.4   {x1,y1}: 1.0-0.2=0.8   {x1,y2}: 0.7-0.5=0.2
    #   {x2,y1}: 0.5-0.7=-0.2     {x2,y2}: 0.2-1.0=-0.8  {y1,y2}: -0.1-1.3=-1.4
    # observed T = 1.4, the largest of 6: one-sided p = 1/6; two-sided |T| ≥ 1.4: 2/6.
    r = partition_permutation_test([0.9, 0.4, 0.1, -0.2], n_first=2, alternative="greater")
    assert r.exact and r.n_partitions == 6 and r.n_evaluated == 6
    assert r.observed == pytest.approx(1.4)
    assert r.p_value == pytest.approx(1 / 6)
    assert r.p_two_sided == pytest.approx(2 / 6)
    assert r.p_less == pytest.approx(1.0)
    # observed in the middle: X = {x1, y2}-like ordering (0.9, -0.2 | 0.4, 0.1): T = 0.7-0.5 = 0.2
    r2 = partition_permutation_test([0.9, -0.2, 0.4, 0.1], n_first=2)
    assert r2.observed == pytest.approx(0.2)
    assert r2.p_greater == pytest.approx(3 / 6)  # 1.4, 0.8, 0.2
    assert r2.p_less == pytest.approx(4 / 6)  # 0.2, -0.2, -0.8, -1.4
    # |T| over the six partitions: 1.4, 0.8, 0.2, 0.2, 0.8, 1.4 — all six are ≥ |0.2|
    assert r2.p_two_sided == pytest.approx(6 / 6)


def test_permutation_matches_naive_enumeration_random_cases():
    rng = np.random.default_rng(SEED)
    for n_first, n_second in ((3, 3), (4, 5), (2, 6), (5, 5)):
        v = rng.normal(size=n_first + n_second).round(3).tolist()
        r = partition_permutation_test(v, n_first=n_first)
        g, two = naive_partition_pvalue(v, n_first)
        assert r.exact and r.n_partitions == math.comb(n_first + n_second, n_first)
        assert r.p_greater == pytest.approx(g)
        assert r.p_two_sided == pytest.approx(two)


def test_permutation_sampled_without_replacement_is_seeded_and_close_to_exact():
    rng = np.random.default_rng(1)
    v = rng.normal(size=16) + np.r_[np.full(8, 0.5), np.zeros(8)]
    exact = partition_permutation_test(v, n_first=8)
    assert exact.exact and exact.n_partitions == count_partitions(8, 8) == 12870
    s1 = partition_permutation_test(v, n_first=8, exact_limit=100, n_samples=5000, seed=7)
    s2 = partition_permutation_test(v, n_first=8, exact_limit=100, n_samples=5000, seed=7)
    s3 = partition_permutation_test(v, n_first=8, exact_limit=100, n_samples=5000, seed=8)
    assert not s1.exact and s1.n_evaluated == 5001 and s1.seed == 7
    assert s1.p_value == s2.p_value
    assert s1.p_value != s3.p_value or s1.p_two_sided != s3.p_two_sided
    assert s1.p_value == pytest.approx(exact.p_value, abs=0.03)
    # asking for more samples than other partitions exist: all of them, each once → the exact p (with the +1 rule)
    small = [0.9, 0.4, 0.1, -0.2]
    all_drawn = partition_permutation_test(small, n_first=2, exact_limit=1, n_samples=50, seed=3)
    assert all_drawn.n_evaluated == 6 and all_drawn.p_value == pytest.approx(1 / 6)


def test_sampled_partitions_are_distinct():
    from biastest.stats.permutation import _sample_first_groups

    masks = _sample_first_groups(10, 5, 251, np.random.default_rng(0))  # 252 partitions − the observed one
    keys = {m.tobytes() for m in masks}
    assert len(keys) == 251 and all(m.sum() == 5 for m in masks)
    observed = np.r_[np.ones(5, bool), np.zeros(5, bool)]
    assert observed.tobytes() not in keys


def test_permutation_errors():
    with pytest.raises(MethodError):
        partition_permutation_test([1.0, 2.0], n_first=1, alternative="bigger")
    with pytest.raises(DataError):
        partition_permutation_test([1.0, 2.0], n_first=2)
    with pytest.raises(MethodError):
        partition_permutation_test(np.arange(40.0), n_first=20, exact_limit=10, seed=None)


def test_weat_small_and_errors():
    X = np.array([[1.0, 0.1], [0.9, 0.2]])
    Y = np.array([[0.1, 1.0], [0.2, 0.9]])
    A, B = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    r = weat(X, Y, A, B, x_words=["x1", "x2"], y_words=["y1", "y2"], a_words=["a"], b_words=["b"],
             settings=WEATSettings(seed=0))
    d, stat = naive_weat(X.tolist(), Y.tolist(), A.tolist(), B.tolist())
    assert r.effect_size == pytest.approx(d) and r.test_statistic == pytest.approx(stat)
    assert r.p_one_sided == pytest.approx(1 / 6) and r.permutation.exact
    same = np.array([[1.0, 0.0], [1.0, 0.0]])
    with pytest.raises(DataError) as e:
        weat(same, same, A, B, x_words=["a", "b"], y_words=["c", "d"], a_words=["a"], b_words=["b"],
             settings=WEATSettings(seed=0))
    assert e.value.message == MSG_WEAT_NO_SPREAD


def test_mac_equals_naive_on_glove():
    T = ["he", "she", "man", "woman"]
    classes = {"career": ["executive", "salary", "office"], "family": ["home", "children", "wedding"]}
    r = run_mac(words=T, attribute_classes=classes, source="glove-6b-50d")
    value, table = naive_mac([glove_vec(t) for t in T], [[glove_vec(a) for a in v] for v in classes.values()])
    assert r.mac == pytest.approx(value, abs=1e-9)
    cells = {(row["word"], row["class"]): row["mean_distance"] for row in r.per_word_class}
    for i, t in enumerate(T):
        for j, c in enumerate(classes):
            assert cells[(t, c)] == pytest.approx(table[i][j], abs=1e-9)
    assert len(r.distances) == len(T) * 6
    assert r.per_word[0]["mean_distance"] == pytest.approx(sum(table[0]) / 2, abs=1e-9)
    assert "created_at" in r.provenance


def test_mac_direct_and_empty():
    emb = InMemoryEmbeddings("toy", ["a", "b", "c"], np.array([[1.0, 0], [0, 1.0], [1.0, 1.0]]))
    v, _ = emb.vectors(["a"])
    cv, _ = emb.vectors(["b", "c"])
    r = mac(v, {"k": cv}, words=["a"], class_words={"k": ["b", "c"]})
    assert r.mac == pytest.approx(((1 - 0.0) + (1 - 1 / math.sqrt(2))) / 2)
    with pytest.raises(DataError):
        mac(v[:0], {"k": cv}, words=[], class_words={"k": ["b", "c"]})


def test_run_weat_refuses_mostly_missing_lists():
    with pytest.raises(EmbeddingError) as e:
        run_weat(X=["qqxxzz1", "qqxxzz2", "flower"], Y=["bee", "ant"], A=["good"], B=["bad"], seed=SEED)
    assert e.value.message == MSG_MOSTLY_MISSING.format(
        n_missing=2, n_terms=3, role="words of 'X'", source="glove-6b-50d", limit=0.5, missing="qqxxzz1, qqxxzz2"
    )


def test_run_weat_from_a_bias_spec():
    from biastest.spec import BiasSpec

    spec = BiasSpec.from_dict(
        {
            "name": "toy",
            "social_groups": {"male": ["he", "man", "boy"], "female": ["she", "woman", "girl"]},
            "attributes": {"career": ["office", "salary"], "family": ["home", "children"]},
        }
    )
    r = run_weat(spec=spec, seed=SEED)
    assert r.names["X"] == "male" and r.x == ("he", "man", "boy") and r.permutation.n_partitions == 20
    assert r.records()[0]["set"] == "X"
    assert r.to_dict()["provenance"]["spec"]["name"] == "toy"


# --------------------------------------------------------------------------- the interval of d (issue 17)
def _pools(rng, *, shift_targets, shift_attributes, size=400, dim=20):
    """Word populations with a planted association along the first axis: X, A on +, Y, B on −."""
    def make(shift):
        v = rng.normal(size=(size, dim))
        v[:, 0] += shift
        return v

    return (make(shift_targets), make(-shift_targets), make(shift_attributes), make(-shift_attributes))


def _d(x, y, a, b):
    s_x = cosine_matrix(x, a).mean(1) - cosine_matrix(x, b).mean(1)
    s_y = cosine_matrix(y, a).mean(1) - cosine_matrix(y, b).mean(1)
    return weat_effect_size(s_x, s_y)


def _boot(x, y, a, b, *, seed, n_bootstrap=1000, ci_level=0.95):
    return weat_effect_size_bootstrap(cosine_matrix(x, a), cosine_matrix(x, b), cosine_matrix(y, a),
                                      cosine_matrix(y, b), n_bootstrap=n_bootstrap, seed=seed, ci_level=ci_level)


def test_bootstrap_of_d_resamples_every_list_and_equals_naive_loops():
    rng = np.random.default_rng(SEED)
    X, Y, A, B = (p[:n] for p, n in zip(_pools(rng, shift_targets=1.0, shift_attributes=1.5), (7, 6, 5, 8),
                                          strict=True))
    bs = _boot(X, Y, A, B, seed=SEED, n_bootstrap=150, ci_level=0.9)
    # the documented draws: X, Y, A, B in that order, each from itself with replacement
    draws = np.random.default_rng(SEED)
    idx = [draws.integers(0, len(v), size=(150, len(v))) for v in (X, Y, A, B)]
    naive = []
    for b in range(150):
        lists = [[v[i].tolist() for i in ix[b]] for v, ix in zip((X, Y, A, B), idx, strict=True)]
        naive.append(naive_weat(*lists)[0])
    assert bs.n_valid == 150 and bs.draws == pytest.approx(naive, abs=1e-12)
    assert bs.ci == pytest.approx(tuple(np.quantile(naive, [0.05, 0.95])), abs=1e-12)
    assert bs.ci[0] < _d(X, Y, A, B) < bs.ci[1]
    again = _boot(X, Y, A, B, seed=SEED, n_bootstrap=150, ci_level=0.9)
    other = _boot(X, Y, A, B, seed=SEED + 1, n_bootstrap=150, ci_level=0.9)
    assert again.ci == bs.ci and other.ci != bs.ci
    with pytest.raises(MethodError) as e:
        _boot(X, Y, A, B, seed=None)
    assert e.value.message == MSG_WEAT_BOOTSTRAP_SEED


def test_interval_of_d_covers_the_planted_effect_and_is_not_degenerate():
    """250 data sets of 12 words per list drawn from populations of 400: coverage of the population's d."""
    rng = np.random.default_rng(SEED)
    out = {}
    for label, shift in (("planted", 1.0), ("none", 0.0)):
        pools = _pools(rng, shift_targets=shift, shift_attributes=1.5)
        truth = _d(*pools)
        hits, widths, above_zero, sims = 0, [], 0, 250
        for s in range(sims):
            sample = [p[rng.choice(len(p), 12, replace=False)] for p in pools]
            lo, hi = _boot(*sample, seed=s).ci
            hits += lo <= truth <= hi
            widths.append(hi - lo)
            above_zero += lo > 0
        out[label] = (truth, hits / sims, float(np.median(widths)), above_zero / sims)
    print(f"seed={SEED} (population d, coverage of 95 %, median width, share excluding 0): {out}")
    truth, cover, width, power = out["planted"]
    assert truth > 1.2 and 0.90 <= cover <= 0.99  # percentile interval of a bounded statistic: ~94 % measured
    assert 0.3 < width < 1.6 and power >= 0.85  # informative, not everything or nothing
    truth, cover, width, false_alarms = out["none"]
    assert abs(truth) < 0.2 and cover >= 0.93 and false_alarms <= 0.05  # over words and attributes: conservative


def test_run_weat_reports_the_interval_of_d_with_its_level_and_seed():
    from biastest.spec import BiasSpec

    spec = BiasSpec.from_dict(
        {
            "name": "toy",
            "social_groups": {"male": ["he", "man", "boy", "father"], "female": ["she", "woman", "girl", "mother"]},
            "attributes": {"career": ["office", "salary", "business"], "family": ["home", "children", "family"]},
        }
    )
    r = run_weat(spec=spec, seed=SEED, n_bootstrap=500, confidence=0.8)
    assert r.n_bootstrap == 500 and r.ci_level == 0.8 and r.effect_size_ci[0] < r.effect_size_ci[1]
    d = r.to_dict()
    assert d["effect_size_ci"] == list(r.effect_size_ci) and d["interval_method"].startswith("jackknife interval")
    assert d["interval_kind"] == "jackknife"
    assert d["provenance"]["n_bootstrap"] == 500 and d["provenance"]["confidence"] == 0.8
    X, Y, A, B = ([list(glove_vec(w)) for w in ws] for ws in (r.x, r.y, r.a, r.b))
    assert r.effect_size_ci == pytest.approx(naive_jackknife_interval(X, Y, A, B, 0.8), abs=1e-6)
    # a result saved before issue 28 (no interval_kind) reads as the percentile bootstrap it was made with
    old = {k: v for k, v in d.items() if k not in ("interval_kind", "interval_method")}
    again = type(r).from_dict(old)
    assert again.interval_kind == "percentile" and again.interval_method.startswith("percentile bootstrap")


def naive_jackknife_interval(X, Y, A, B, level):
    """d ± z·SE with SE² = Σ over the four lists of (n − 1)/n · Σ_j (d_(j) − mean)², in loops; clipped to ±2."""
    from scipy.stats import norm

    d = naive_weat(X, Y, A, B)[0]
    var = 0.0
    for k in range(4):
        lists = [X, Y, A, B]
        values = []
        for j in range(len(lists[k])):
            cut = list(lists)
            cut[k] = lists[k][:j] + lists[k][j + 1:]
            values.append(naive_weat(*cut)[0])
        m = sum(values) / len(values)
        var += (len(values) - 1) / len(values) * sum((v - m) ** 2 for v in values)
    half = norm.ppf(1 - (1 - level) / 2) * math.sqrt(var)
    return max(-2.0, d - half), min(2.0, d + half)


def test_jackknife_interval_equals_naive_loops_and_needs_two_words_per_list():
    rng = np.random.default_rng(SEED)
    X, Y, A, B = (p[:n] for p, n in zip(_pools(rng, shift_targets=0.6, shift_attributes=1.5), (7, 6, 5, 8),
                                          strict=True))
    cos = (cosine_matrix(X, A), cosine_matrix(X, B), cosine_matrix(Y, A), cosine_matrix(Y, B))
    assert weat_jackknife_interval(*cos, ci_level=0.9) == pytest.approx(
        naive_jackknife_interval(X.tolist(), Y.tolist(), A.tolist(), B.tolist(), 0.9), abs=1e-10)
    assert weat_jackknife_interval(cosine_matrix(X, A[:1]), cosine_matrix(X, B), cosine_matrix(Y, A[:1]),
                                   cosine_matrix(Y, B)) is None  # one attribute word: no leave-one-out value


@pytest.mark.parametrize("shift", [0.35, 2.0])
def test_jackknife_interval_covers_a_planted_d_where_the_percentile_bootstrap_falls_short(shift):
    """150 data sets of 12 words per list from populations of 400 (d ≈ 0.56 and ≈ 1.8): coverage of the population's d.

    Measured (benchmarks/bench_intervals.py, 400 sets): jackknife 93.8 % / 99.5 %, percentile 97.5 % / 86.5 %.
    The bounds fail for an interval that is too narrow (< 88 %) or everything (a width above 2.5).
    """
    rng = np.random.default_rng(SEED + int(10 * shift))
    pools = _pools(rng, shift_targets=shift, shift_attributes=1.5)
    truth = _d(*pools)
    hits, widths, sims = 0, [], 150
    for _ in range(sims):
        x, y, a, b = (p[rng.choice(len(p), 12, replace=False)] for p in pools)
        lo, hi = weat_jackknife_interval(cosine_matrix(x, a), cosine_matrix(x, b), cosine_matrix(y, a),
                                         cosine_matrix(y, b))
        hits += lo <= truth <= hi
        widths.append(hi - lo)
    print(f"seed={SEED} shift={shift}: population d {truth:.3f}, coverage {hits}/{sims}, median width "
          f"{np.median(widths):.3f}")
    assert hits / sims >= 0.88 and np.median(widths) < (2.5 if shift < 1 else 1.0)
