"""Stereotype-score statistics: bootstrap intervals and the exact sign test against naive versions and planted rates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biastest.errors import DataError
from biastest.stats import bootstrap as bs
from biastest.stats import proportion as pr


def naive_bootstrap(values, *, seed, n_resamples, confidence, strata=None, average="micro"):
    """One resample at a time, drawn group after group from one seeded generator."""
    rng = np.random.default_rng(seed)
    x = np.asarray(values, dtype=float)
    if strata is None:
        groups = [x]
    else:
        labels = list(dict.fromkeys(strata))
        groups = [x[[i for i, s in enumerate(strata) if s == lab]] for lab in labels]
    totals = [[0.0] * n_resamples for _ in groups]
    for gi, g in enumerate(groups):
        for b in range(n_resamples):
            idx = rng.integers(0, len(g), size=len(g))
            totals[gi][b] = float(sum(g[i] for i in idx))
    stats = []
    for b in range(n_resamples):
        if average == "macro" and strata is not None:
            stats.append(sum(totals[gi][b] / len(g) for gi, g in enumerate(groups)) / len(groups))
        else:
            stats.append(sum(totals[gi][b] for gi in range(len(groups))) / len(x))
    alpha = 1 - confidence
    return float(np.quantile(stats, alpha / 2)), float(np.quantile(stats, 1 - alpha / 2))


def naive_sign_test(k: int, n: int) -> float:
    """Two-sided exact binomial p at 1/2: sum of the probabilities no larger than P(k)."""
    pk = math.comb(n, k) / 2**n
    return min(1.0, sum(math.comb(n, i) / 2**n for i in range(n + 1) if math.comb(n, i) / 2**n <= pk * (1 + 1e-7)))


@pytest.mark.parametrize(
    ("strata", "average"),
    [(None, "micro"), (list("aabbbcccca") * 3, "micro"), (list("aabbbcccca") * 3, "macro")],
)
def test_bootstrap_equals_a_one_resample_at_a_time_loop(strata, average):
    values = np.random.default_rng(3).random(30)
    ci = bs.bootstrap_mean_ci(values, seed=11, n_resamples=400, confidence=0.9, strata=strata, average=average)
    low, high = naive_bootstrap(values, seed=11, n_resamples=400, confidence=0.9, strata=strata, average=average)
    assert ci.low == pytest.approx(low, abs=1e-12)
    assert ci.high == pytest.approx(high, abs=1e-12)
    if average == "macro":
        means = [values[[i for i, s in enumerate(strata) if s == lab]].mean() for lab in "abc"]
        assert ci.estimate == pytest.approx(np.mean(means))
    else:
        assert ci.estimate == pytest.approx(values.mean())
    # seeded: the same seed gives the same interval, another seed another one
    again = bs.bootstrap_mean_ci(values, seed=11, n_resamples=400, confidence=0.9, strata=strata, average=average)
    other = bs.bootstrap_mean_ci(values, seed=12, n_resamples=400, confidence=0.9, strata=strata, average=average)
    assert (again.low, again.high) == (ci.low, ci.high)
    assert (other.low, other.high) != (ci.low, ci.high)


def test_interval_covers_a_planted_rate_about_as_often_as_it_says():
    """95% intervals around simulated verdicts with a true 30% stereotype rate cover 30% in ~95% of runs."""
    rng = np.random.default_rng(2026)
    hits = 0
    runs = 200
    for r in range(runs):
        st = rng.random(150) < 0.30
        verdicts = [pr.STEREOTYPED if s else pr.ANTI for s in st]
        s = pr.summarize_verdicts(verdicts, seed=r, n_resamples=1000)
        hits += s.ci_low <= 30.0 <= s.ci_high
    assert 0.89 <= hits / runs <= 0.99


def test_sign_test_is_exact_and_ties_stay_in_the_denominator():
    verdicts = [pr.STEREOTYPED] * 9 + [pr.ANTI] * 3 + [pr.TIE] * 4
    s = pr.summarize_verdicts(verdicts, seed=0, n_resamples=500)
    assert (s.n, s.n_stereotyped, s.n_anti, s.n_ties) == (16, 9, 3, 4)
    assert s.score == pytest.approx(100 * 9 / 16)  # ties count as "not stereotyped", never as a side
    assert s.p_value == pytest.approx(naive_sign_test(9, 12), rel=1e-9)  # ties excluded from the test
    assert s.test == pr.TEST_SIGN and s.score_definition == pr.SCORE_VERDICTS
    for k, n in [(0, 5), (5, 5), (7, 20), (10, 20), (31, 50)]:
        assert pr.binomial_p_value(k, n) == pytest.approx(naive_sign_test(k, n), rel=1e-9)
    assert pr.binomial_p_value(0, 0) is None


def test_macro_is_the_mean_of_group_scores_without_an_exact_test():
    verdicts = [pr.STEREOTYPED, pr.STEREOTYPED, pr.ANTI] + [pr.ANTI] * 7 + [pr.STEREOTYPED]
    groups = ["nurse"] * 3 + ["engineer"] * 8
    s = pr.summarize_verdicts(verdicts, seed=1, n_resamples=500, strata=groups, average="macro")
    assert s.score == pytest.approx(100 * (2 / 3 + 1 / 8) / 2)
    assert s.p_value is None and s.test == pr.TEST_NONE_MACRO and s.n_groups == 2
    micro = pr.summarize_verdicts(verdicts, seed=1, n_resamples=500, strata=groups)
    assert micro.score == pytest.approx(100 * 3 / 11) and micro.p_value is not None


def test_all_ties_have_no_test_and_no_nan():
    s = pr.summarize_verdicts([pr.TIE] * 5, seed=0, n_resamples=200)
    assert s.score == 0.0 and s.p_value is None and s.test == pr.TEST_NONE_ALL_TIES


def test_probabilities_score_is_the_mean_and_the_test_counts_sides():
    p = [0.9, 0.8, 0.5, 0.52, 0.1, 0.7]
    s = pr.summarize_probabilities(p, seed=0, n_resamples=500, tie_tolerance=0.05)
    assert s.score == pytest.approx(100 * np.mean(p))
    assert (s.n_stereotyped, s.n_anti, s.n_ties) == (3, 1, 2)
    assert s.p_value == pytest.approx(naive_sign_test(3, 4))
    assert pr.ProportionSummary.from_dict(s.to_dict()) == s


def test_bad_inputs_have_clear_messages():
    with pytest.raises(DataError) as e:
        pr.summarize_verdicts(["stereotyped", "maybe"], seed=0)
    assert str(e.value) == pr.MSG_BAD_VERDICT.format(value="maybe", index=1, choices=", ".join(pr.VERDICTS))
    with pytest.raises(DataError) as e:
        pr.summarize_probabilities([0.2, float("nan")], seed=0)
    assert str(e.value) == pr.MSG_BAD_PROBABILITY.format(value=float("nan"), index=1)
    with pytest.raises(DataError) as e:
        pr.summarize_probabilities([], seed=0)
    assert str(e.value) == pr.MSG_EMPTY
    with pytest.raises(DataError) as e:
        bs.bootstrap_mean_ci([1.0, 2.0], seed=0, confidence=95)
    assert str(e.value) == bs.MSG_BAD_CONFIDENCE.format(value=95)
    with pytest.raises(DataError) as e:
        bs.bootstrap_mean_ci([1.0, 2.0], seed=0, n_resamples=10)
    assert str(e.value) == bs.MSG_BAD_RESAMPLES.format(value=10)
    with pytest.raises(DataError) as e:
        bs.bootstrap_mean_ci([1.0, 2.0], seed=0.5)
    assert str(e.value) == bs.MSG_BAD_SEED.format(value=0.5)
    with pytest.raises(DataError) as e:
        bs.bootstrap_mean_ci([1.0, 2.0], seed=0, strata=["a"])
    assert str(e.value) == bs.MSG_BAD_STRATA.format(n_values=2, n_strata=1)
    with pytest.raises(DataError) as e:
        bs.bootstrap_mean_ci([1.0, 2.0], seed=0, average="mean")
    assert str(e.value) == bs.MSG_BAD_AVERAGE.format(value="mean")
    with pytest.raises(DataError) as e:
        bs.bootstrap_mean_ci([1.0, float("inf")], seed=0)
    assert str(e.value) == bs.MSG_NOT_FINITE.format(count=1)


def naive_clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Invert the two one-sided exact binomial tests by bisection on p (the definition, not the Beta form)."""
    alpha = 1 - confidence

    def upper_tail(p):  # P(X >= k | p), increasing in p
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))

    def lower_tail(p):  # P(X <= k | p), decreasing in p
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(0, k + 1))

    def solve(f, target, increasing):
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            if (f(mid) < target) == increasing:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if k == 0 else solve(upper_tail, alpha / 2, True)
    high = 1.0 if k == n else solve(lower_tail, alpha / 2, False)
    return low, high


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 4), (4, 4), (2, 4), (3, 10), (17, 40), (100, 100)])
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_exact_interval_is_the_inverted_binomial_test(k, n, confidence):
    got = pr.exact_interval(k, n, confidence=confidence)
    want = naive_clopper_pearson(k, n, confidence)
    assert got == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("n", [1, 3, 8, 25])
@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.8, 0.97])
def test_exact_interval_covers_every_planted_rate_at_least_as_often_as_it_says(n, p):
    """Exact coverage (summed over every possible count), where the percentile bootstrap falls short at small n."""
    coverage = sum(math.comb(n, k) * p**k * (1 - p) ** (n - k)
                   for k in range(n + 1) if pr.exact_interval(k, n)[0] <= p <= pr.exact_interval(k, n)[1])
    assert coverage >= 0.95 - 1e-12


def test_summaries_carry_the_exact_interval_and_a_degenerate_bootstrap_shows_why():
    s = pr.summarize_verdicts([pr.STEREOTYPED] * 4, seed=0, n_resamples=500)
    assert (s.ci_low, s.ci_high) == (100.0, 100.0)  # resampling four alike verdicts cannot vary them
    assert s.exact_ci_low == pytest.approx(100 * naive_clopper_pearson(4, 4, 0.95)[0])
    assert s.exact_ci_high == 100.0 and s.exact_ci_low < 50 < s.exact_ci_high  # consistent with the sign test
    assert s.p_value > 0.05
    verdicts = [pr.STEREOTYPED, pr.TIE, pr.ANTI, pr.STEREOTYPED, pr.STEREOTYPED]
    s = pr.summarize_verdicts(verdicts, seed=0, n_resamples=500, confidence=0.9)
    assert (s.exact_ci_low, s.exact_ci_high) == pytest.approx(
        tuple(100 * v for v in naive_clopper_pearson(3, 5, 0.9)))  # ties stay in n, as in the score
    macro = pr.summarize_verdicts(verdicts, seed=0, n_resamples=500, strata=list("aabbb"), average="macro")
    assert macro.exact_ci_low is None and macro.exact_ci_high is None
    soft = pr.summarize_probabilities([0.2, 0.9], seed=0, n_resamples=500)
    assert soft.exact_ci_low is None
    old = s.to_dict()
    del old["exact_ci_low"], old["exact_ci_high"]  # a result saved before the field existed still loads
    assert pr.ProportionSummary.from_dict(old).exact_ci_low is None
    with pytest.raises(DataError) as e:
        pr.exact_interval(0, 0)
    assert str(e.value) == pr.MSG_EMPTY
