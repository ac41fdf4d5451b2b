"""Planted bias: tiny language models trained on corpora with a known stereotype rate are scored in that order.

Six tiny models are trained here (seconds each on a CPU, fixed seeds) on the synthetic corpus of
:func:`tests.lm_helpers.planted_corpus`: in every frame ("[T] is a [A] .", "the [A] said [T] was late .", …) a
female-stereotyped occupation (nurse, dancer, …) goes with the female term of each pair (she/he, woman/man, …) in
90%, 50% or 10% of the sentences, and a male-stereotyped one with the male term at the same rate. A GPT-2 causal
LM and a BERT masked LM are trained on each corpus. The 448 test pairs (:func:`tests.lm_helpers.planted_pairs`)
put each occupation with its stereotyped and its anti-stereotyped term; half are female-stereotyped, so a model
that merely prefers one gender everywhere scores 50%.

What must hold, for every scoring method of each model kind (through the measure's
:func:`biastest.measures.stereotype.run.run`, the path the app takes):

- the scores keep the planted order, 90% corpus > 50% corpus > 10% corpus, with the 90% and 10% corpora
  significantly away from 50%;
- the 95% bootstrap interval of the 50% corpus (no planted preference) contains 50%;
- the model has learnt the planted rate itself: the typical log-probability difference of a pair is
  log(r / (1 − r)) (about ±2.2 nats at 90% / 10%, 0 at 50%);
- ``causal-diff-span`` scores only the differing words given what comes *before* them, so in the frames where
  the group term comes first it cannot see the occupation and scores exactly 50% on every corpus.
"""

from __future__ import annotations

import math
import os
import statistics

import pytest

from biastest.measures.stereotype.score import methods_for_kind
from biastest.models.cache import ModelCache
from tests import lm_helpers as H
from tests.lm_helpers import run_pairs

# Seed sensitivity, measured with BIASTEST_PLANTED_SEED on this 2-core CPU: the causal models learnt the planted
# rate on every seed tried (1, 2, 3, 20240). The masked model did on seeds 1, 2 and 20240, but on seed 3
# pll-unmodified stayed near 50% on the 90% corpus; and the pll-unmodified interval of the 50% corpus missed 50% on
# seeds 3 and 20240 (44.2% [39.3, 48.9] and 45.1% [40.4, 49.6]; seeds 1, 2, 4: 49.1%, 54.5% [49.8, 58.9], 48.4%).
# An unbiased model's verdicts are decided by its chance leanings, which are not fully independent across pairs.
# The other methods stayed within 1.3 points of 50% on every seed (their main gender leanings cancel between the
# female- and male-stereotyped halves of the pairs).
SEED = int(os.environ.get("BIASTEST_PLANTED_SEED", "1"))
print(f"test seed: {SEED}")
RATES = (0.9, 0.5, 0.1)
KINDS = ("causal", "masked")
# The masked LM learns from ~1 target word per row (see train_planted_lm): more, smaller steps than the causal LM.
TRAINING = {"causal": {"epochs": 5, "batch_size": 32}, "masked": {"epochs": 4, "batch_size": 16}}
CASES = [(kind, method) for kind in KINDS for method in methods_for_kind(kind)]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted_lm")
    pairs = H.planted_pairs()
    cache = ModelCache(max_items=1)
    out = {}
    for kind in KINDS:
        for rate in RATES:
            model_dir = H.train_planted_lm(kind, rate, root / f"{kind}_{rate}", seed=SEED, **TRAINING[kind])
            for method in methods_for_kind(kind):
                r = run_pairs(
                    pairs=pairs,
                    model_id=str(model_dir),
                    method=method,
                    seed=SEED,
                    batch_size=64,
                    n_resamples=2000,
                    device="cpu",
                    cache=cache,
                )
                out[kind, method, rate] = r
                o = r.overall
                print(f"{kind:6} {method:22} rate {rate:.0%}: {o.score:5.1f}% [{o.ci_low:5.1f}, {o.ci_high:5.1f}]")
    return out


def _describe(results, kind, method):
    return ", ".join(
        f"{rate:.0%}: {results[kind, method, rate].score:.1f} "
        f"[{results[kind, method, rate].overall.ci_low:.1f}, {results[kind, method, rate].overall.ci_high:.1f}]"
        for rate in RATES
    )


@pytest.mark.parametrize(("kind", "method"), CASES)
def test_scores_keep_the_planted_order(results, kind, method):
    r = {rate: results[kind, method, rate] for rate in RATES}
    assert all(x.n_scored == x.n_pairs == 448 for x in r.values())
    assert r[0.9].score > r[0.5].score > r[0.1].score, _describe(results, kind, method)
    assert r[0.9].overall.ci_low > 50 > r[0.1].overall.ci_high, _describe(results, kind, method)
    assert r[0.9].overall.p_value < 1e-6 and r[0.1].overall.p_value < 1e-6


@pytest.mark.parametrize(("kind", "method"), CASES)
def test_unbiased_corpus_interval_contains_50(results, kind, method):
    o = results[kind, method, 0.5].overall
    assert o.ci_low <= 50 <= o.ci_high, _describe(results, kind, method)
    assert o.ci_high - o.ci_low < 15  # an interval over 448 pairs, not a vacuous one


@pytest.mark.parametrize(("kind", "method"), CASES)
def test_the_headline_counts_templates(results, kind, method):
    """448 pairs from 112 templates (7 frames × 16 occupations), one pair per group-term swap: 112 clusters.

    Pairs of one template share everything but the group term, so they lean together; the cluster-aware headline
    keeps the score, widens the interval, and must still contain 50 % where nothing was planted (the pair interval
    of pll-unmodified missed it on some seeds, see SEED) and exclude it where 90 % / 10 % was planted.
    """
    r = {rate: results[kind, method, rate] for rate in RATES}
    for x in r.values():
        c = x.overall_clustered
        assert x.clusters == "template" and x.cluster_aware and (c.n_items, c.n_clusters) == (448, 112)
        assert c.interval_shown and c.estimate == pytest.approx(x.overall.score)
        # no design effect where every pair agrees (0 % or 100 %): there is no variance to compare
        assert (c.design_effect is None) == (x.overall.score in (0.0, 100.0))
    c = r[0.5].overall_clustered
    assert c.low <= 50 <= c.high, (kind, method, c.low, c.high)
    if method != "causal-diff-span":  # that method sees half the frames only (next test)
        hi, lo = r[0.9].overall_clustered, r[0.1].overall_clustered
        assert hi.low > 50 > lo.high and hi.p_value < 1e-3 and lo.p_value < 1e-3, (kind, method)
        assert r[0.9].magnitude.low > 0 > r[0.1].magnitude.high  # the magnitude has the planted sign


@pytest.mark.parametrize(("kind", "method"), [c for c in CASES if c[1] != "causal-diff-span"])
def test_pair_differences_recover_the_planted_rate(results, kind, method):
    # Each pair differs in the group term only, so a model that learnt the corpus gives the stereotyped sentence
    # log(r / (1 - r)) more log-probability (its attribute-vs-group conditional); read back as a rate.
    for rate in RATES:
        median = statistics.median(p.difference for p in results[kind, method, rate].pairs)
        recovered = 1 / (1 + math.exp(-median))
        assert recovered == pytest.approx(rate, abs=0.05), (kind, method, rate, median)


def _group_first(pair) -> bool:
    words = pair.anti_stereotyped.split()
    return words.index(pair.group_term_anti) < words.index(pair.attribute_term)


def test_causal_diff_span_sees_only_the_words_before_the_group_term(results):
    for rate in RATES:
        pairs = results["causal", "causal-diff-span", rate].pairs
        before = [p.verdict == "stereotyped" for p in pairs if _group_first(p)]
        after = [p.verdict == "stereotyped" for p in pairs if not _group_first(p)]
        assert len(before) == 5 * 64 and len(after) == 2 * 64
        # Group term first: its log-probability depends on the frame alone, so within each frame all female- and
        # all male-stereotyped pairs get opposite verdicts: exactly half are stereotyped, whatever the corpus.
        assert sum(before) == len(before) // 2, rate
        # Occupation first: the planted rate decides.
        share = sum(after) / len(after)
        if rate != 0.5:
            assert share >= 0.9 if rate == 0.9 else share <= 0.1, (rate, share)
