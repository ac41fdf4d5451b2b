"""Model comparison statistics: against naive references, on planted truths and on planted tiny language models.

- the paired bootstrap equals a loop that resamples pairs (and whole clusters) one resample at a time;
- the exact McNemar test equals ``scipy.stats.binomtest`` on the discordant pairs, over a grid of counts;
- the WEAT and 2AFC comparisons equal loops over resampled words with the paper's formulas written out;
- on simulated paired verdicts with a known difference the interval covers it about as often as it says, while
  the same interval computed as if the two models had been tested on different items over-covers (so the pairing
  matters and the test can fail); with planted clusters the item-level interval under-covers and the cluster one
  does not;
- tiny causal LMs trained on corpora with planted stereotype rates (90 %, and 50 % on two seeds) are separated as
  planted, and the two 50 % models are not told apart.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm, t

from biastest.errors import DataError
from biastest.measures.stereotype.compare import compare_stereotype
from biastest.measures.stereotype.result import PairScore, StereotypeResult
from biastest.measures.stereotype.summary import summarize_stereotype
from biastest.measures.twoafc.compare import MSG_TWOAFC_CUES, compare_twoafc
from biastest.measures.vlm import compare_vlm
from biastest.measures.weat.compare import compare_weat
from biastest.records import TestImage
from biastest.spec import BiasSpec
from biastest.stats import compare as C
from biastest.stats.clusters import MIN_CLUSTERS_FOR_INTERVAL
from tests.embeddings_helpers import mean, sd
from tests.vlm_helpers import summarize

SEED = 20261123
print(f"test seed: {SEED}")


# ----------------------------------------------------------------------------- builders
def _pair(i: int, verdict: str | None, *, pair_id: str | None = None, attribute: str | None = None) -> PairScore:
    return PairScore(
        index=i, pair_id=pair_id or f"pair-{i}", stereotyped=f"s {i}", anti_stereotyped=f"a {i}",
        attribute_term=attribute if attribute is not None else f"attr{i % 12}", group_term_stereotyped="he",
        group_term_anti="she", category="c", source="test",
        score_stereotyped=None if verdict is None else 1.0, score_anti=None if verdict is None else 0.0,
        difference=None if verdict is None else 1.0, verdict=verdict,
        excluded_code=None if verdict else "too-long", excluded_reason=None if verdict else "too long",
    )


def _lm(verdicts, model="m", *, ids=None, attributes=None, method="causal-sum") -> StereotypeResult:
    pairs = [
        _pair(i, v, pair_id=None if ids is None else ids[i], attribute=None if attributes is None else attributes[i])
        for i, v in enumerate(verdicts)
    ]
    return summarize_stereotype(pairs, model={"model_id": model, "model_revision": None, "model_kind": "causal"},
                                method=method, seed=0, n_resamples=200)


def _verdicts(rng, n, p_st, p_tie=0.0):
    return list(rng.choice(["stereotyped", "anti-stereotyped", "tie"], size=n, p=[p_st, 1 - p_st - p_tie, p_tie]))


# ----------------------------------------------------------------------------- naive references
def naive_paired_interval(xa, xb, *, seed, n_resamples, confidence):
    """Resample pairs in a loop; percentile interval of the difference of the two scores (points)."""
    rng = np.random.default_rng(seed)
    n = len(xa)
    diffs = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, size=n)
        diffs.append(100 * (sum(xa[i] for i in idx) - sum(xb[i] for i in idx)) / n)
    return tuple(np.quantile(diffs, [(1 - confidence) / 2, (1 + confidence) / 2]))


def naive_cluster_interval(d, clusters, *, seed, n_resamples, confidence):
    """Resample whole clusters in a loop (first-appearance order), widen as the clusters module documents."""
    order = list(dict.fromkeys(clusters))
    members = {c: [i for i, x in enumerate(clusters) if x == c] for c in order}
    rng = np.random.default_rng(seed)
    m = len(order)
    stats = []
    for _ in range(n_resamples):
        chosen = rng.integers(0, m, size=m)
        total = sum(d[i] for c in chosen for i in members[order[c]])
        size = sum(len(members[order[c]]) for c in chosen)
        stats.append(total / size)
    lo, hi = np.quantile(stats, [(1 - confidence) / 2, (1 + confidence) / 2])
    est = sum(d) / len(d)
    q = 1 - (1 - confidence) / 2
    f = math.sqrt(m / (m - 1)) * t.ppf(q, m - 1) / norm.ppf(q)
    return max(min(d), est - f * (est - lo)), min(max(d), est + f * (hi - est))


def naive_holm(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    for rank, i in enumerate(order):
        out[i] = min(1.0, max((m - r) * p[order[r]] for r in range(rank + 1)))
    return out


# ----------------------------------------------------------------------------- exactness
def test_mcnemar_exact_equals_binomtest_on_the_discordant_pairs():
    for b, c in itertools.product(range(0, 31, 3), range(0, 31, 4)):
        got = C.mcnemar_exact(b, c)
        if b + c == 0:
            assert got is None
            continue
        assert got == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12, abs=1e-15), (b, c)
    assert C.mcnemar_exact(60, 40) == pytest.approx(binomtest(60, 100, 0.5).pvalue, rel=1e-12)


def test_paired_bootstrap_equals_a_loop_over_resampled_pairs():
    rng = np.random.default_rng(SEED)
    va, vb = _verdicts(rng, 150, 0.65, 0.05), _verdicts(rng, 150, 0.5)
    cmp = compare_stereotype([_lm(va, "A"), _lm(vb, "B")], seed=7, n_resamples=1500, confidence=0.9)
    xa = [v == "stereotyped" for v in va]
    xb = [v == "stereotyped" for v in vb]
    low, high = naive_paired_interval(xa, xb, seed=7, n_resamples=1500, confidence=0.9)
    pair = cmp.pairs[0]
    assert (pair.ci_low, pair.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    b = sum(a and not z for a, z in zip(xa, xb, strict=True))
    c = sum(z and not a for a, z in zip(xa, xb, strict=True))
    assert pair.discordant["a_only"] == b and pair.discordant["b_only"] == c
    assert pair.difference == pytest.approx(100 * (b - c) / 150, abs=1e-12)
    assert pair.p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12)
    assert pair.test == C.TEST_MCNEMAR
    assert cmp.models[0].n_ties == va.count("tie") and cmp.models[0].estimate == pytest.approx(100 * sum(xa) / 150)
    # each model's forest-plot interval comes from the same resampled pairs
    low_a, high_a = naive_paired_interval(xa, [0] * 150, seed=7, n_resamples=1500, confidence=0.9)
    assert (cmp.models[0].ci_low, cmp.models[0].ci_high) == (pytest.approx(low_a), pytest.approx(high_a))


def test_cluster_bootstrap_equals_a_loop_over_resampled_clusters():
    rng = np.random.default_rng(SEED + 1)
    n = 240
    attributes = [f"attr{i % 16}" for i in rng.permutation(n)]
    va, vb = _verdicts(rng, n, 0.6), _verdicts(rng, n, 0.5)
    cmp = compare_stereotype([_lm(va, "A", attributes=attributes), _lm(vb, "B", attributes=attributes)],
                               seed=3, n_resamples=800, cluster_by="attribute_term")
    d = [float(a == "stereotyped") - float(b == "stereotyped") for a, b in zip(va, vb, strict=True)]
    low, high = naive_cluster_interval(d, attributes, seed=3, n_resamples=800, confidence=0.95)
    pair = cmp.pairs[0]
    assert cmp.n_clusters == 16 and cmp.interval_method == C.INTERVAL_CLUSTERED
    assert pair.ci_low == pytest.approx(100 * low, abs=1e-9) and pair.ci_high == pytest.approx(100 * high, abs=1e-9)
    # the test: a sign test on the clusters' mean differences
    means = {c: mean(d[i] for i in range(n) if attributes[i] == c) for c in set(attributes)}
    above, below = sum(v > 0 for v in means.values()), sum(v < 0 for v in means.values())
    assert pair.test == C.TEST_CLUSTER_SIGN_PAIRED
    assert pair.p_value == pytest.approx(binomtest(above, above + below, 0.5).pvalue, rel=1e-12)
    assert pair.p_exact == pytest.approx(C.mcnemar_exact(pair.discordant["a_only"], pair.discordant["b_only"]))


def test_too_few_clusters_give_no_interval_and_say_why():
    rng = np.random.default_rng(SEED + 2)
    attributes = [f"t{i % 4}" for i in range(80)]
    cmp = compare_stereotype(
        [_lm(_verdicts(rng, 80, 0.7), "A", attributes=attributes), _lm(_verdicts(rng, 80, 0.4), "B",
                                                                     attributes=attributes)],
        seed=1, n_resamples=200, cluster_by="attribute_term")
    assert cmp.n_clusters == 4 < MIN_CLUSTERS_FOR_INTERVAL
    # each model's row is its own result's interval (pairs independent within attribute terms, issue 28); the
    # difference, clustered by attribute term as asked here, has none
    assert all(m.interval_from_result and m.ci_low is not None for m in cmp.models)
    assert cmp.pairs[0].ci_low is None and cmp.pairs[0].p_value is not None
    assert any("only 4 independent clusters" in note for note in cmp.notes)


def test_holm_over_many_models_equals_a_naive_holm():
    rng = np.random.default_rng(SEED + 3)
    results = [_lm(_verdicts(rng, 120, p), f"m{p}") for p in (0.75, 0.62, 0.5, 0.45)]
    cmp = compare_stereotype(results, seed=1, n_resamples=300)
    assert len(cmp.pairs) == 6 and [(p.a, p.b) for p in cmp.pairs] == list(itertools.combinations(cmp.labels, 2))
    raw = [p.p_value for p in cmp.pairs]
    assert [p.p_adjusted for p in cmp.pairs] == pytest.approx(naive_holm(raw), rel=1e-12)
    assert all(p.p_adjusted >= p.p_value for p in cmp.pairs)


def test_items_are_matched_by_pair_id_and_the_left_out_ones_counted():
    rng = np.random.default_rng(SEED + 4)
    va, vb = _verdicts(rng, 60, 0.7), _verdicts(rng, 60, 0.4)
    vb[5] = None  # B could not score pair 5
    ids = [f"p{i}" for i in range(60)]
    a = _lm([*va, "stereotyped"], "A", ids=[*ids, "only-in-A"])
    order = list(reversed(range(60)))  # B lists the same pairs in another order
    b = _lm([vb[i] for i in order], "B", ids=[ids[i] for i in order])
    cmp = compare_stereotype([a, b.to_dict()], seed=2, n_resamples=300)  # a result's JSON form works too
    assert cmp.n_items == 59
    assert (cmp.models[0].n_unmatched, cmp.models[0].n_excluded, cmp.models[0].n_items) == (1, 0, 61)
    assert (cmp.models[1].n_unmatched, cmp.models[1].n_excluded, cmp.models[1].n_items) == (0, 1, 60)
    keep = [i for i in range(60) if i != 5]
    expected = 100 * (sum(va[i] == "stereotyped" for i in keep) - sum(vb[i] == "stereotyped" for i in keep)) / 59
    assert cmp.pairs[0].difference == pytest.approx(expected, abs=1e-12)
    assert cmp.models[0].own_estimate == pytest.approx(a.overall.score)
    # orientation: B − A is the negative of A − B, interval mirrored
    flipped = cmp.pair("B", "A")
    assert flipped.difference == -cmp.pairs[0].difference and flipped.ci_low == -cmp.pairs[0].ci_high
    assert flipped.discordant["a_only"] == cmp.pairs[0].discordant["b_only"]
    assert C.Comparison.from_dict(cmp.to_dict()) == cmp


def test_refusals_name_the_problem():
    rng = np.random.default_rng(SEED + 5)
    a = _lm(_verdicts(rng, 10, 0.5), "A")
    b = _lm(_verdicts(rng, 10, 0.5), "B", ids=[f"other-{i}" for i in range(10)])
    with pytest.raises(DataError) as err:
        compare_stereotype([a, b], seed=0)
    assert err.value.message == C.MSG_NOT_SAME_ITEMS.format(what="sentence pairs")
    with pytest.raises(DataError) as err:
        compare_stereotype([a], seed=0)
    assert err.value.message == C.MSG_TOO_FEW_MODELS.format(n=1)
    half = _lm(["stereotyped", None], "A")
    other = _lm([None, "tie"], "B")
    with pytest.raises(DataError) as err:
        compare_stereotype([half, other], seed=0)
    assert err.value.message == C.MSG_NOTHING_COMMON.format(n_common=2)
    with pytest.raises(DataError) as err:
        compare_stereotype([a, a], seed=0, labels=["x", "x"])
    assert err.value.message == C.MSG_BAD_LABELS.format(n_models=2, n_labels=2)
    with pytest.raises(DataError) as err:
        compare_stereotype([a, a], seed=0, cluster_by="colour")
    assert err.value.message.startswith("The items have no field 'colour'")


def test_identical_models_differ_by_nothing_and_are_not_tested():
    rng = np.random.default_rng(SEED + 6)
    v = _verdicts(rng, 40, 0.6)
    cmp = compare_stereotype([_lm(v, "gpt2", method="causal-sum"), _lm(v, "gpt2", method="causal-diff-span")],
                               seed=0, n_resamples=200)
    assert cmp.labels == ["gpt2 (causal-sum)", "gpt2 (causal-diff-span)"]
    p = cmp.pairs[0]
    assert p.difference == 0 and (p.ci_low, p.ci_high) == (0, 0)
    assert p.p_value is None and p.p_adjusted is None and p.test == C.TEST_NONE_NO_DISCORDANT


# ----------------------------------------------------------------------------- planted truths (simulation)
def _simulate(rng, n, p_a, p_b, rho):
    """Correlated paired verdicts: a shared item effect pushes both models the same way."""
    z = rng.normal(size=n)
    ua = norm.cdf(rho * z + math.sqrt(1 - rho**2) * rng.normal(size=n))
    ub = norm.cdf(rho * z + math.sqrt(1 - rho**2) * rng.normal(size=n))
    return ua < p_a, ub < p_b


def test_paired_interval_covers_a_planted_difference_as_often_as_it_says():
    rng = np.random.default_rng(SEED + 7)
    truth = 100 * (0.62 - 0.5)
    covered = unpaired_covered = rejected = 0
    n_sim = 300
    for s in range(n_sim):
        a, b = _simulate(rng, 150, 0.62, 0.5, rho=0.8)
        cmp = C.compare_arrays(np.column_stack([a, b]), labels=["A", "B"], binary=True, seed=s, n_resamples=500)
        p = cmp.pairs[0]
        covered += p.ci_low <= truth <= p.ci_high
        rejected += p.p_value is not None and p.p_value < 0.05
        # what laying the two models' own intervals side by side implies about the difference (independent items)
        ma, mb = cmp.models
        half = math.hypot((ma.ci_high - ma.ci_low) / 2, (mb.ci_high - mb.ci_low) / 2)
        unpaired_covered += abs(p.difference - truth) <= half
    print(f"paired coverage {covered / n_sim:.3f}, unpaired {unpaired_covered / n_sim:.3f}, "
          f"power {rejected / n_sim:.3f}")
    assert 0.92 <= covered / n_sim <= 0.98
    assert unpaired_covered / n_sim > 0.975  # ignoring the pairing gives a far too wide interval
    assert rejected / n_sim > 0.6  # the paired test sees a 12-point difference on 150 pairs most of the time


def test_mcnemar_keeps_its_level_when_the_models_are_equally_biased():
    rng = np.random.default_rng(SEED + 8)
    n_sim = 400
    rejected = 0
    for _ in range(n_sim):
        a, b = _simulate(rng, 100, 0.6, 0.6, rho=0.5)
        bc = int(np.count_nonzero(a & ~b)), int(np.count_nonzero(~a & b))
        p = C.mcnemar_exact(*bc)
        rejected += p is not None and p < 0.05
    assert rejected / n_sim <= 0.06  # exact: at most the level (up to simulation noise)


def test_cluster_interval_covers_when_templates_lean_together():
    """Planted template effects on the difference: item resampling under-covers, cluster resampling does not."""
    rng = np.random.default_rng(SEED + 9)
    n_sim, n_templates, per = 200, 30, 8
    truth = 0.0
    item_cov = cluster_cov = 0
    templates = [f"t{i}" for i in range(n_templates) for _ in range(per)]
    for s in range(n_sim):
        lean = rng.normal(0, 1.0, size=n_templates)  # each template favours A or B by its own amount
        z = np.repeat(lean, per)
        a = rng.random(n_templates * per) < norm.cdf(0.2 + z)
        b = rng.random(n_templates * per) < norm.cdf(0.2 - z)
        # symmetric leans: the expected difference is 0
        x = np.column_stack([a, b])
        plain = C.compare_arrays(x, labels=["A", "B"], binary=True, seed=s, n_resamples=400).pairs[0]
        clustered = C.compare_arrays(x, labels=["A", "B"], binary=True, seed=s, n_resamples=400,
                                     clusters=templates).pairs[0]
        item_cov += plain.ci_low <= truth <= plain.ci_high
        cluster_cov += clustered.ci_low <= truth <= clustered.ci_high
    print(f"coverage: items {item_cov / n_sim:.3f}, clusters {cluster_cov / n_sim:.3f}")
    assert item_cov / n_sim < 0.8
    assert 0.91 <= cluster_cov / n_sim <= 0.99


# ----------------------------------------------------------------------------- vision-language
SPEC = BiasSpec.from_terms(group1="man", group2="woman", stereotype1="doctor", antistereotype1="nurse",
                           name="vlm compare")


def _vlm(probs, verdicts, model):
    images = [TestImage(path=f"images/{i}.png", sha256=f"{i:064x}", image_term="man" if i % 2 else "woman")
              for i in range(len(probs))]
    return summarize(images=images, spec=SPEC, term_probabilities=np.column_stack([probs, 1 - probs]),
                     answers=["doctor"] * len(probs), verdicts=verdicts, method="clip-zero-shot",
                     model_id=model, seed=0, n_resamples=200)


def test_vlm_soft_and_hard_comparisons_equal_naive_references():
    rng = np.random.default_rng(SEED + 10)
    n = 90
    pa, pb = rng.random(n), rng.random(n)
    va = list(rng.choice(["T1", "T2", "neither"], size=n))
    vb = list(rng.choice(["T1", "T2", "tie"], size=n))
    ra, rb = _vlm(pa, va, "clip-a"), _vlm(pb, vb, "clip-b")
    soft = compare_vlm([ra, rb], seed=4, n_resamples=700)
    st_a = [img.p_stereotyped for img in ra.images]
    st_b = [img.p_stereotyped for img in rb.images]
    low, high = naive_paired_interval(st_a, st_b, seed=4, n_resamples=700, confidence=0.95)
    p = soft.pairs[0]
    assert (p.ci_low, p.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert p.difference == pytest.approx(ra.soft.score - rb.soft.score, abs=1e-9)
    higher = sum(x > y for x, y in zip(st_a, st_b, strict=True))
    lower = sum(x < y for x, y in zip(st_a, st_b, strict=True))
    assert p.test == C.TEST_SIGN_PAIRED and p.discordant == {"a_higher": higher, "b_higher": lower, "equal": 0}
    assert p.p_value == pytest.approx(binomtest(higher, higher + lower, 0.5).pvalue, rel=1e-12)
    hard = compare_vlm([ra, rb], seed=4, n_resamples=700, score="hard")
    ha = [img.outcome == "stereotyped" for img in ra.images]
    hb = [img.outcome == "stereotyped" for img in rb.images]
    assert hard.pairs[0].difference == pytest.approx(ra.hard.score - rb.hard.score, abs=1e-9)
    b = sum(x and not y for x, y in zip(ha, hb, strict=True))
    c = sum(y and not x for x, y in zip(ha, hb, strict=True))
    assert hard.pairs[0].p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12)
    assert hard.models[0].n_ties == sum(img.outcome == "tie" for img in ra.images)
    with pytest.raises(DataError):
        compare_vlm([ra, rb], seed=0, score="medium")


# ----------------------------------------------------------------------------- embeddings
def _weat_result(sx: dict, sy: dict, name: str, d: float | None = None):
    rows = [{"word": w, "set": "X", "s": s} for w, s in sx.items()] + [
        {"word": w, "set": "Y", "s": s} for w, s in sy.items()]
    return {"word_scores": rows, "effect_size": d, "provenance": {"model_id": name}}


def naive_d(sx, sy):
    return (mean(sx) - mean(sy)) / sd(list(sx) + list(sy), ddof=1)


def test_weat_comparison_equals_a_loop_over_resampled_words():
    rng = np.random.default_rng(SEED + 11)
    xw, yw = [f"x{i}" for i in range(8)], [f"y{i}" for i in range(7)]
    a = _weat_result(dict(zip(xw, rng.normal(0.3, 0.2, 8), strict=True)),
                     dict(zip(yw, rng.normal(0.0, 0.2, 7), strict=True)), "glove")
    b_x = dict(zip(xw, rng.normal(0.1, 0.2, 8), strict=True))
    b_x["only-in-b"] = 0.5
    b = _weat_result(b_x, dict(zip(yw[1:], rng.normal(0.0, 0.2, 6), strict=True)), "minilm")  # lacks y0
    cmp = compare_weat([a, b], seed=5, n_resamples=600)
    common_y = yw[1:]
    sa_x = [r["s"] for r in a["word_scores"] if r["set"] == "X"]
    sa_y = [r["s"] for r in a["word_scores"] if r["set"] == "Y" and r["word"] in common_y]
    sb_x = [b_x[w] for w in xw]
    sb_y = [r["s"] for r in b["word_scores"] if r["set"] == "Y"]
    assert cmp.models[0].estimate == pytest.approx(naive_d(sa_x, sa_y), abs=1e-12)
    assert cmp.models[1].estimate == pytest.approx(naive_d(sb_x, sb_y), abs=1e-12)
    assert (cmp.models[0].n_unmatched, cmp.models[1].n_unmatched, cmp.n_items) == (1, 1, 14)
    rng_loop = np.random.default_rng(5)
    high = np.array([8] * 8 + [6] * 6)
    diffs = []
    for _ in range(600):
        idx = rng_loop.integers(0, high)
        ix, iy = idx[:8], idx[8:]
        da = naive_d([sa_x[i] for i in ix], [sa_y[i] for i in iy])
        db = naive_d([sb_x[i] for i in ix], [sb_y[i] for i in iy])
        diffs.append(da - db)
    low, up = np.quantile(diffs, [0.025, 0.975])
    p = cmp.pairs[0]
    assert (p.ci_low, p.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(up, abs=1e-9))
    below, above = sum(x <= 0 for x in diffs), sum(x >= 0 for x in diffs)
    assert p.p_value == pytest.approx(min(1, 2 * (1 + min(below, above)) / 601)) and p.test == C.TEST_BOOTSTRAP


def test_weat_comparison_separates_a_planted_difference_of_effect_sizes():
    rng = np.random.default_rng(SEED + 12)
    xw, yw = [f"x{i}" for i in range(25)], [f"y{i}" for i in range(25)]
    noise = rng.normal(0, 0.1, 50)
    strong = _weat_result(dict(zip(xw, 0.2 + noise[:25], strict=True)), dict(zip(yw, noise[25:], strict=True)), "s")
    weak = _weat_result(dict(zip(xw, 0.02 + noise[:25] + rng.normal(0, 0.02, 25), strict=True)),
                        dict(zip(yw, noise[25:] + rng.normal(0, 0.02, 25), strict=True)), "w")
    same = _weat_result(dict(zip(xw, 0.2 + noise[:25] + rng.normal(0, 0.02, 25), strict=True)),
                        dict(zip(yw, noise[25:] + rng.normal(0, 0.02, 25), strict=True)), "s2")
    cmp = compare_weat([strong, weak, same], seed=1, n_resamples=2000)
    sw, ss = cmp.pair("s", "w"), cmp.pair("s", "s2")
    assert sw.ci_low > 0.5 and sw.p_adjusted < 0.01
    assert ss.ci_low < 0 < ss.ci_high and ss.p_value > 0.05


def test_twoafc_comparison_equals_the_mean_of_pse_deviations():
    rng = np.random.default_rng(SEED + 13)
    targets = [f"job{i}" for i in range(12)]
    cues = [("woman", "man"), ("she", "he"), ("girl", "boy")]

    def result(name, shift, use_cues):
        pairs = [{"target": w, "cue1": c1, "cue2": c2, "cue_pair": f"{c1}/{c2}",
                  "pse": float(0.5 + shift + rng.normal(0, 0.1))} for w in targets for c1, c2 in use_cues]
        return {"pairs": pairs, "provenance": {"model_id": name}}

    a = result("glove", 0.1, cues)
    b = result("w2v", 0.0, cues[:2])  # 'girl/boy' missing from b: the common cue pairs are the first two
    cmp = compare_twoafc([a, b], seed=3, n_resamples=500)
    assert cmp.notes == (MSG_TWOAFC_CUES.format(n=2, cues="woman/man, she/he"),)

    def stat(res):
        per = {}
        for p in res["pairs"]:
            if p["cue_pair"] != "girl/boy":
                per.setdefault(p["target"], []).append(p["pse"])
        return [abs(mean(v) - 0.5) for v in per.values()]

    va, vb = stat(a), stat(b)
    assert cmp.models[0].estimate == pytest.approx(mean(va), abs=1e-12)
    low, high = naive_paired_interval(va, vb, seed=3, n_resamples=500, confidence=0.95)
    assert cmp.pairs[0].ci_low == pytest.approx(low / 100, abs=1e-12)
    assert cmp.pairs[0].ci_high == pytest.approx(high / 100, abs=1e-12)
    signed = compare_twoafc([a, b], seed=3, n_resamples=500, statistic="mean-deviation")
    assert signed.models[1].estimate == pytest.approx(mean(
        mean(p["pse"] for p in b["pairs"] if p["target"] == w) - 0.5 for w in targets), abs=1e-12)
    with pytest.raises(DataError):
        compare_twoafc([a, b], seed=3, statistic="median")


# ----------------------------------------------------------------------------- planted tiny language models
@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    from biastest.models.cache import ModelCache
    from tests import lm_helpers as H
    from tests.lm_helpers import run_pairs

    root = tmp_path_factory.mktemp("planted_compare")
    pairs = H.planted_pairs()
    cache = ModelCache(max_items=1)
    out = {}
    # three epochs learn the planted rate on this corpus (a 90 % corpus scores ~99 %); seed 2 is a second,
    # independently trained model of the unbiased corpus
    for name, rate, seed in (("r90", 0.9, 1), ("r50", 0.5, 1), ("r50b", 0.5, 2)):
        path = H.train_planted_lm("causal", rate, root / name, seed=seed, epochs=3)
        out[name] = run_pairs(pairs=pairs, model_id=str(path), method="causal-sum", seed=1,
                                        batch_size=64, n_resamples=500, device="cpu", cache=cache)
        print(name, f"{out[name].score:.1f}")
    return out


def test_planted_models_are_ordered_and_separated(planted):
    labels = ["90 %", "50 %", "50 % (seed 2)"]
    cmp = compare_stereotype([planted[k] for k in ("r90", "r50", "r50b")], seed=1, n_resamples=2000,
                               labels=labels)
    est = {m.label: m.estimate for m in cmp.models}
    assert est["90 %"] > 90 and 40 < est["50 %"] < 60 and 40 < est["50 % (seed 2)"] < 60
    for a, b in (("90 %", "50 %"), ("90 %", "50 % (seed 2)")):
        p = cmp.pair(a, b)
        assert p.ci_low > 30 and p.p_adjusted < 1e-6, (a, b, p)
        assert cmp.pair(b, a).ci_high < -30
    null = cmp.pair("50 %", "50 % (seed 2)")
    print("two unbiased models:", null)
    assert null.ci_low < 0 < null.ci_high and null.p_adjusted > 0.05
    assert null.discordant["a_only"] + null.discordant["b_only"] > 50  # they do disagree, only not one-sidedly
    # the matched pairs and the McNemar counts, from the per-pair verdicts
    x90 = {p.pair_id: p.verdict == "stereotyped" for p in planted["r90"].pairs}
    x50 = {p.pair_id: p.verdict == "stereotyped" for p in planted["r50"].pairs}
    b = sum(x90[k] and not x50[k] for k in x90)
    c = sum(x50[k] and not x90[k] for k in x90)
    p = cmp.pair("90 %", "50 %")
    assert p.discordant["a_only"] == b and p.discordant["b_only"] == c
    assert p.p_exact == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12, abs=1e-300)
