"""The one verdict sentence every measure's reading opens with (biastest/measures/verdict.py, issue 28 item 4).

The builder's decision is checked against a naive restatement of its rules over a grid of intervals, tests and
standings; every measure's reading is checked to start with it; a run that cannot be read (not converged, partial,
not comparable) gives no verdict and no claim of significance.
"""

from __future__ import annotations

import html
import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from biastest.measures.verdict import (
    MSG_NOT_COMPARABLE,
    MSG_NOT_CONVERGED,
    MSG_PARTIAL,
    PREFIX,
    Claim,
    Standing,
    count_verdict,
    run_standing,
    size_word,
    verdict,
)


def _claim(**kw) -> Claim:
    base = {"what": "stereotype score", "estimate": 62.0, "low": 55.0, "high": 69.0, "null": 50, "unit": "%",
            "above": "towards the stereotype", "below": "against the stereotype", "size": "moderate"}
    return Claim(**{**base, **kw})


def _naive(est, low, high, p, null=50.0, alpha=0.05, standing=Standing.OK) -> str:
    """The rules written out again, plainly: which kind of verdict a claim gets."""
    if standing is not Standing.OK:
        return "none"
    if est == null:
        return "exact"
    if low is not None and high is not None:
        if low <= null <= high:
            return "includes"
        if p is not None and p >= alpha:
            return "unconfirmed"
        return "lean"
    if p is None:
        return "undecided"
    return "test-lean" if p < alpha else "test-none"


def _kind(text: str) -> str:
    for key, marker in (("none", "no verdict"), ("exact", "no lean either way"), ("includes", "which includes"),
                        ("unconfirmed", "does not confirm"), ("undecided", "undecided"),
                        ("test-lean", "the test tells it apart"), ("test-none", "the test gives p"),
                        ("lean", "distinguishable from no bias (")):
        if marker in text:
            return key
    return "?"


@pytest.mark.parametrize(("est", "interval", "p", "standing"), list(itertools.product(
    (30.0, 50.0, 62.0), ((55.0, 69.0), (45.0, 69.0), (20.0, 40.0), (None, None)), (None, 0.01, 0.2),
    (Standing.OK, Standing.NOT_CONVERGED, Standing.PARTIAL))))
def test_the_verdict_follows_its_rules_on_a_grid(est, interval, p, standing):
    low, high = interval
    text = verdict(_claim(estimate=est, low=low, high=high, p_value=p, no_interval="too few clusters"),
                   standing=standing)
    assert text.startswith(PREFIX + " ") and "\n" not in text
    assert _kind(text) == _naive(est, low, high, p, standing=standing), text
    assert "significant" not in text
    if _kind(text) in ("lean", "test-lean"):
        assert ("towards the stereotype" in text) == (est > 50) and ("against the stereotype" in text) == (est < 50)


def test_the_sentence_names_direction_size_interval_and_no_bias():
    text = verdict(_claim(interval_name="cluster interval", p_value=0.003))
    assert text == ("Verdict: a moderate lean towards the stereotype — stereotype score of 62.0 % (95 % cluster "
                    "interval 55.0–69.0 %), distinguishable from no bias (50 %).")
    d = verdict(Claim(what="WEAT effect size d", estimate=-0.9, low=-1.5, high=-0.3, null=0, above="X to A",
                      below="X to B", digits=2, size="large"))
    assert d == ("Verdict: a large lean X to B — WEAT effect size d of −0.90 (95 % interval −1.50 to −0.30), "
                 "distinguishable from no bias (0).")


@pytest.mark.parametrize(("standing", "why"), [(Standing.NOT_CONVERGED, MSG_NOT_CONVERGED),
                                               (Standing.PARTIAL, MSG_PARTIAL),
                                               (Standing.NOT_COMPARABLE, MSG_NOT_COMPARABLE)])
def test_a_run_that_cannot_be_read_says_why_and_claims_nothing(standing, why):
    text = verdict(_claim(p_value=0.0001), standing=standing)
    assert text.startswith(f"{PREFIX} no verdict — {why}.") and "shown for reference only" in text
    assert "distinguishable" not in text and "lean" not in text and "significant" not in text
    assert verdict(_claim(estimate=None), standing=standing) == f"{PREFIX} no verdict — {why}."


def test_the_standing_is_read_from_the_result_s_provenance():
    assert run_standing({"model": {"complete": False}}) is Standing.PARTIAL
    assert run_standing({"model": {"complete": True}}) is Standing.OK
    assert run_standing({}) is Standing.OK and run_standing(None) is Standing.OK


def test_size_words_and_a_missing_estimate():
    words = ("slight", "moderate", "strong")
    assert [size_word(x, (5, 15), words) for x in (1, -4.9, 5, 14.9, -15, 40)] == [
        "slight", "slight", "moderate", "moderate", "strong", "strong"]
    assert verdict(_claim(estimate=None, no_interval="no pair could be scored")) == (
        "Verdict: no verdict — no pair could be scored.")
    assert verdict(_claim(estimate=float("nan"))).startswith("Verdict: no verdict")


def test_count_verdict_equals_a_naive_count_and_its_chance_level():
    rng = np.random.default_rng(3)
    centres = rng.uniform(0.2, 0.8, size=40)
    estimates = [(c, c - 0.05, c + 0.05) for c in centres] + [(0.5, None, None)] * 3
    text = count_verdict(estimates, null=0.5, units="target words", above="towards she", below="towards he",
                         level=0.9)
    above = sum(1 for c in centres if c - 0.05 > 0.5)
    below = sum(1 for c in centres if c + 0.05 < 0.5)
    assert text.startswith(f"Verdict: {above} of 40 target words lean towards she beyond their 90 % interval and "
                           f"{below} towards he; {40 - above - below} cannot be told apart from no bias (0.5).")
    assert "about 4.0 would lean" in text and "3 more had no interval" in text
    assert count_verdict([(0.6, None, None)], null=0.5, units="target words", above="a", below="b", level=0.95,
                         no_interval="no bootstrap was asked for") == (
        "Verdict: no verdict on single target words — no bootstrap was asked for.")


def test_the_posterior_reading_of_an_unconverged_run_claims_no_significance():
    from biastest.measures.posterior import report as prep
    from biastest.measures.posterior import summary

    tests = [{"posterior": p, "group_a": "women", "group_b": "men", "difference": -0.02, "p_permutation": 0.0426,
              "t_welch": -2.1, "p_welch": 0.05} for p in ("+", "-")]
    classifier = SimpleNamespace(description="MLP", test_auc=0.9, n_test=100)
    info = {"seconds": 1.0, "divergences": 3, "mean_accept_prob": 0.8, "target_accept": 0.8}
    options = SimpleNamespace(chains=2, draws=200)
    per = {"max_rhat": 1.2, "min_ess_bulk": 20, "min_ess_tail": 20}
    for problems in (["largest R-hat 1.2 > 1.01"], []):
        diagnostics = {"+": per, "-": per, "problems": problems, "ess_per_second": 5, "converged": not problems}
        reading = summary._reading(classifier, diagnostics, info, tests, options)
        result = SimpleNamespace(group_tests=tests, diagnostics=diagnostics, reading=tuple(reading))
        text = html.unescape(prep.posterior_reading_markdown(result))
        if problems:  # the default run today: "NOT CONVERGED" and then "(significant at 0.05)"
            assert text.startswith(f"{PREFIX} no verdict — {MSG_NOT_CONVERGED}.") and "significant" not in text
        else:
            assert text.startswith(f"{PREFIX} a lean towards 'women'") and "(significant at 0.05)" in text


def test_a_reason_written_to_stand_alone_reads_inside_the_sentence():
    from biastest.stats.clusters import MSG_TOO_FEW_CLUSTERS

    why = MSG_TOO_FEW_CLUSTERS.format(items="4 pairs", clusters="4 clusters", cluster_by="template", minimum=5)
    text = verdict(_claim(low=None, high=None, p_value=None, no_interval=why))
    assert "(no interval" not in text and "No interval" not in text and "the 4 pairs fall into only 4 clusters" in text
    assert text.endswith("so it cannot be told apart from no bias (50 %).") and ".," not in text
