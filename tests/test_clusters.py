"""Cluster-aware uncertainty and multiple-comparison adjustments: naive references and planted cluster structure.

The coverage tests simulate data the way generated test sentences come: clusters (templates) with their own
random effect, so items of one cluster lean together. The cluster interval must cover the planted truth about as
often as asked (93–97 % for 95 %) where the bootstrap over items falls well below; with independent items both
must agree.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, false_discovery_control, norm, t

from biastest.errors import DataError
from biastest.stats import clusters as cl
from biastest.stats.bootstrap import bootstrap_mean_ci
from biastest.stats.multiple import MSG_BAD_P_VALUE, benjamini_hochberg, holm
from biastest.stats.proportion import binomial_p_value

# ----------------------------------------------------------------------------- naive references


def naive_cluster_bootstrap(values, labels, *, seed, n_resamples, confidence, statistic="mean"):
    """One resample at a time: draw C cluster labels, list their items, take the mean or the median."""
    rng = np.random.default_rng(seed)
    members: dict = {}
    for v, lab in zip(values, labels, strict=True):
        members.setdefault(lab, []).append(float(v))
    keys = list(members)
    c = len(keys)
    stats = []
    for _ in range(n_resamples):
        drawn = rng.integers(0, c, size=c)
        items = [v for k in drawn for v in members[keys[k]]]
        stats.append(sum(items) / len(items) if statistic == "mean" else float(np.median(items)))
    alpha = 1 - confidence
    low, high = float(np.quantile(stats, alpha / 2)), float(np.quantile(stats, 1 - alpha / 2))
    est = sum(values) / len(values) if statistic == "mean" else float(np.median(values))
    if statistic == "mean":
        f = math.sqrt(c / (c - 1)) * t.ppf(1 - alpha / 2, c - 1) / norm.ppf(1 - alpha / 2)
        low = max(min(values), est - f * (est - low))
        high = min(max(values), est + f * (high - est))
    return est, low, high


def naive_design_effect(values, labels):
    n = len(values)
    mean = sum(values) / n
    totals: dict = {}
    for v, lab in zip(values, labels, strict=True):
        totals[lab] = totals.get(lab, 0.0) + (v - mean)
    c = len(totals)
    v_cluster = c / (c - 1) * sum(e * e for e in totals.values()) / n**2
    s2 = sum((v - mean) ** 2 for v in values) / (n - 1)
    return v_cluster / (s2 / n)


def naive_cluster_sign(values, labels, null):
    members: dict = {}
    for v, lab in zip(values, labels, strict=True):
        members.setdefault(lab, []).append(v)
    means = [sum(m) / len(m) for m in members.values()]
    above = sum(m > null for m in means)
    below = sum(m < null for m in means)
    p = None if above + below == 0 else binomtest(above, above + below, 0.5).pvalue
    return p, above, below


def naive_holm(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def _clustered(rng, n_clusters, sizes, sigma, mu=0.0):
    u = rng.normal(mu, sigma, n_clusters)
    labels = np.repeat(np.arange(n_clusters), sizes)
    return u, labels


# ----------------------------------------------------------------------------- estimator = naive


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_cluster_bootstrap_equals_the_naive_loop(statistic):
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 6, 12)
    values = list(rng.normal(0.2, 1.0, int(sizes.sum())).round(3))
    labels = [f"template {k}" for k in np.repeat(np.arange(12), sizes)]
    ci = cl.cluster_bootstrap_ci(values, labels, seed=11, n_resamples=300, confidence=0.9, statistic=statistic)
    est, low, high = naive_cluster_bootstrap(values, labels, seed=11, n_resamples=300, confidence=0.9,
                                             statistic=statistic)
    assert ci.estimate == pytest.approx(est, abs=1e-12)
    assert ci.low == pytest.approx(low, abs=1e-12)
    assert ci.high == pytest.approx(high, abs=1e-12)
    assert (ci.n_items, ci.n_clusters) == (len(values), 12)
    assert ci.widening > 1.0 if statistic == "mean" else ci.widening == 1.0


def test_the_mean_chunks_give_the_same_interval(monkeypatch):
    rng = np.random.default_rng(2)
    values = rng.random(200)
    labels = np.repeat(np.arange(40), 5)
    whole = cl.cluster_bootstrap_ci(values, labels, seed=3, n_resamples=500)
    monkeypatch.setattr(cl, "_CHUNK_ELEMENTS", 40 * 7)  # 7 resamples per chunk
    chunked = cl.cluster_bootstrap_ci(values, labels, seed=3, n_resamples=500)
    assert (chunked.low, chunked.high) == (whole.low, whole.high)


def test_one_item_per_cluster_is_the_ordinary_bootstrap_up_to_the_widening():
    rng = np.random.default_rng(4)
    values = (rng.random(300) < 0.6).astype(float)
    ci = cl.cluster_bootstrap_ci(values, np.arange(300), seed=1, n_resamples=4000, small_cluster_correction=False)
    ref = bootstrap_mean_ci(values, seed=1, n_resamples=4000)
    assert ci.estimate == ref.estimate
    assert ci.low == pytest.approx(ref.low, abs=0.01) and ci.high == pytest.approx(ref.high, abs=0.01)
    assert cl.small_cluster_factor(300, 0.95) == pytest.approx(1.0, abs=0.01)


def test_design_effect_equals_the_naive_formula_and_kish():
    rng = np.random.default_rng(8)
    sizes = rng.integers(1, 9, 30)
    u, labels = _clustered(rng, 30, sizes, 1.0)
    values = list(u[labels] + rng.normal(0, 1, labels.size))
    assert cl.design_effect(values, labels) == pytest.approx(naive_design_effect(values, list(labels)), rel=1e-12)
    # one item per cluster: exactly 1
    assert cl.design_effect(values, np.arange(len(values))) == pytest.approx(1.0, abs=1e-12)
    # Kish: ≈ 1 + (m − 1)·ICC for equal clusters, ICC = σ_u² / (σ_u² + σ_e²) = 0.5 here
    u, labels = _clustered(rng, 2000, 6, 1.0)
    values = u[labels] + rng.normal(0, 1, labels.size)
    assert cl.design_effect(values, labels) == pytest.approx(1 + 5 * 0.5, rel=0.1)
    # undefined: no variance, or one cluster
    assert cl.design_effect([1.0, 1.0, 1.0], [0, 1, 2]) is None
    assert cl.design_effect([1.0, 0.0, 1.0], [0, 0, 0]) is None


def test_sign_test_on_cluster_means_equals_the_naive_one():
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 5, 25)
    labels = [f"t{k}" for k in np.repeat(np.arange(25), sizes)]
    signs = list(rng.choice([-1.0, 0.0, 1.0], size=len(labels), p=[0.3, 0.1, 0.6]))
    p, above, below, at_null = cl.cluster_sign_test(signs, labels, null=0.0)
    ref_p, ref_above, ref_below = naive_cluster_sign(signs, labels, 0.0)
    assert (above, below, above + below + at_null) == (ref_above, ref_below, 25)
    assert p == pytest.approx(ref_p, rel=1e-12)
    # with one pair per cluster it is the pair-level sign test
    p1, a1, b1, _ = cl.cluster_sign_test(signs, np.arange(len(signs)))
    assert p1 == pytest.approx(binomial_p_value(signs.count(1.0), signs.count(1.0) + signs.count(-1.0)))
    assert (a1, b1) == (signs.count(1.0), signs.count(-1.0))
    # every cluster at the null: nothing to test
    assert cl.cluster_sign_test([1.0, -1.0, 0.0], ["a", "a", "b"])[0] is None


# ----------------------------------------------------------------------------- planted cluster structure


def _coverage(*, n_sets, n_clusters, sigma, seed, binary, n_resamples=1000):
    """Share of simulated datasets whose 95 % interval covers the planted truth: (cluster, items)."""
    rng = np.random.default_rng(seed)
    hits_cluster = hits_items = 0
    for d in range(n_sets):
        sizes = rng.integers(2, 19, n_clusters)  # templates of unequal size, mean 10 pairs
        u, labels = _clustered(rng, n_clusters, sizes, sigma)
        if binary:  # stereotyped or not, logit P = u_cluster; truth E[P] = 0.5 by symmetry
            values = (rng.random(labels.size) < 1 / (1 + np.exp(-u[labels]))).astype(float)
            truth = 0.5
        else:  # log-probability differences: 0.3 + template effect + noise
            values = 0.3 + u[labels] + rng.normal(0, 1, labels.size)
            truth = 0.3
        c = cl.cluster_bootstrap_ci(values, labels, seed=d, n_resamples=n_resamples)
        i = bootstrap_mean_ci(values, seed=d, n_resamples=n_resamples)
        hits_cluster += c.low <= truth <= c.high
        hits_items += i.low <= truth <= i.high
    return hits_cluster / n_sets, hits_items / n_sets


@pytest.mark.parametrize("binary", [True, False], ids=["share", "magnitude"])
def test_cluster_interval_covers_the_planted_truth_where_the_pair_bootstrap_does_not(binary):
    cover_cluster, cover_items = _coverage(n_sets=1000, n_clusters=40, sigma=1.5 if binary else 1.0, seed=1,
                                           binary=binary)
    assert 0.93 <= cover_cluster <= 0.97, cover_cluster
    assert cover_items < 0.85, cover_items  # pairs treated as independent: far too narrow


def test_with_independent_pairs_both_intervals_agree():
    cover_cluster, cover_items = _coverage(n_sets=1000, n_clusters=40, sigma=0.0, seed=3, binary=True)
    assert 0.93 <= cover_cluster <= 0.97, cover_cluster
    assert 0.93 <= cover_items <= 0.97, cover_items
    assert abs(cover_cluster - cover_items) <= 0.03


def test_planted_template_effects_show_in_design_effect_and_test():
    rng = np.random.default_rng(31)
    u, labels = _clustered(rng, 40, 10, 2.0)
    values = (rng.random(labels.size) < 1 / (1 + np.exp(-u[labels]))).astype(float)
    s = cl.summarize_clusters(values, labels, seed=1, n_resamples=1000, cluster_by="template",
                              test_values=2 * values - 1)
    assert s.design_effect > 2.5  # ICC ≈ 0.3 on 10-item clusters
    assert s.effective_n == pytest.approx(s.n_items / s.design_effect)
    assert s.n_clusters_above + s.n_clusters_below + s.n_clusters_at_null == 40
    independent = cl.summarize_clusters(values, np.arange(values.size), seed=1, n_resamples=1000,
                                        test_values=2 * values - 1)
    assert independent.design_effect == pytest.approx(1.0)
    assert (s.high - s.low) > 1.4 * (independent.high - independent.low)


# ----------------------------------------------------------------------------- summary


def test_too_few_clusters_give_no_interval_and_say_why():
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    labels = ["a", "a", "b", "b", "c", "c", "d", "d"]
    s = cl.summarize_clusters(values, labels, seed=0, n_resamples=200, cluster_by="template",
                              test_values=[2 * v - 1 for v in values])
    assert not s.interval_shown and s.low is None and s.high is None
    assert s.reason == cl.MSG_TOO_FEW_CLUSTERS.format(items="8 items", clusters="4 independent clusters",
                                                      cluster_by="template", minimum=cl.MIN_CLUSTERS_FOR_INTERVAL)
    assert s.estimate == 0.75 and s.n_clusters == 4
    # signs per cluster: a (+1, −1) and c (−1, +1) sit at the null, b and d lean to the stereotype
    assert (s.n_clusters_above, s.n_clusters_below, s.n_clusters_at_null) == (2, 0, 2)
    assert s.p_value == pytest.approx(binomtest(2, 2, 0.5).pvalue)
    assert cl.MIN_CLUSTERS_FOR_INTERVAL == 5
    five = cl.summarize_clusters(list(range(10)), [k // 2 for k in range(10)], seed=0, n_resamples=200)
    assert five.n_clusters == 5 and five.interval_shown and five.reason is None
    assert five.low < five.estimate < five.high


@pytest.mark.parametrize("n_clusters", [4, 12])
def test_several_columns_in_one_pass_equal_one_at_a_time(n_clusters):
    rng = np.random.default_rng(n_clusters)
    labels = np.repeat(np.arange(n_clusters), 3)
    share = (rng.random(labels.size) < 0.6).astype(float)
    diffs = rng.normal(0.2, 1.0, labels.size)
    both = cl.summarize_cluster_means([share, diffs], labels, seed=5, n_resamples=300, cluster_by="template",
                                      test_values=[2 * share - 1, None], nulls=[0.0, 0.0])
    assert both[0] == cl.summarize_clusters(share, labels, seed=5, n_resamples=300, cluster_by="template",
                                            test_values=2 * share - 1)
    assert both[1] == cl.summarize_clusters(diffs, labels, seed=5, n_resamples=300, cluster_by="template")
    assert both[1].interval_shown == (n_clusters >= cl.MIN_CLUSTERS_FOR_INTERVAL)


def test_summary_round_trip_and_scaling():
    s = cl.summarize_clusters([0.0, 1.0] * 15, np.repeat(np.arange(15), 2), seed=3, n_resamples=200,
                              cluster_by="attribute term", null=0.5)
    again = cl.ClusterSummary.from_dict(s.to_dict() | {"added_later": 1})
    assert again == s
    pct = s.scaled(100)
    assert (pct.estimate, pct.low, pct.high) == (100 * s.estimate, 100 * s.low, 100 * s.high)
    assert pct.null_value == s.null_value and pct.p_value == s.p_value


def test_bad_inputs_raise_with_their_messages():
    with pytest.raises(DataError) as e:
        cl.cluster_bootstrap_ci([1.0, 2.0], ["a"], seed=0)
    assert str(e.value) == cl.MSG_BAD_CLUSTERS.format(n_values=2, n_labels=1)
    with pytest.raises(DataError) as e:
        cl.cluster_bootstrap_ci([1.0, 2.0], ["a", "b"], seed=0, statistic="mode")
    assert str(e.value) == cl.MSG_BAD_STATISTIC.format(value="mode")
    with pytest.raises(DataError) as e:
        cl.summarize_clusters([1.0, float("nan")], ["a", "b"], seed=0)
    assert str(e.value) == cl.MSG_NOT_FINITE.format(count=1)
    with pytest.raises(DataError) as e:
        cl.summarize_clusters([], [], seed=0)
    assert str(e.value) == cl.MSG_EMPTY


# ----------------------------------------------------------------------------- multiple comparisons


@pytest.mark.parametrize("m", [1, 2, 5, 17, 40])
def test_holm_and_bh_equal_references(m):
    rng = np.random.default_rng(m)
    p = list(np.concatenate([rng.random(m - m // 3), rng.random(m // 3) * 0.01]))
    p[0] = p[-1] if m > 1 else p[0]  # a tie
    assert holm(p) == pytest.approx(naive_holm(p), abs=1e-15)
    assert benjamini_hochberg(p) == pytest.approx(list(false_discovery_control(p, method="bh")), abs=1e-15)


def test_adjustments_keep_none_and_do_not_count_it():
    p = [0.01, None, 0.04, 0.03, None]
    assert holm(p) == pytest.approx([0.03, None, 0.06, 0.06, None])
    bh = benjamini_hochberg(p)
    assert bh[1] is None and bh[4] is None
    assert [bh[0], bh[2], bh[3]] == pytest.approx(list(false_discovery_control([0.01, 0.04, 0.03])))
    assert holm([None, None]) == [None, None] and benjamini_hochberg([]) == []
    with pytest.raises(DataError) as e:
        holm([0.2, float("nan")])
    assert str(e.value) == MSG_BAD_P_VALUE.format(value=float("nan"), index=1)
    with pytest.raises(DataError):
        benjamini_hochberg([1.5])
