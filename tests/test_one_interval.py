"""One interval per statistic (issue 28): the main result, the comparison's row, the CSV and the audit agree.

A two-group VQA upload (man/woman pictures, no prompt) gets an interval with its design said; the stereotype
score of imported pairs (no template) resamples pairs within attribute terms; each model's row in a comparison is
its own result's interval, exactly, unless items were left out (then a note says so); WEAT's comparison shows each
embedding's own jackknife interval of d.
"""

from __future__ import annotations

import numpy as np
import pytest

from biastest.audit.uses import _stereotype_row, _vlm_row, _weat_row
from biastest.measures import vlm as V
from biastest.measures.stereotype import report as srep
from biastest.measures.stereotype.compare import compare_stereotype
from biastest.measures.vlm import report as vrep
from biastest.measures.weat.compare import MSG_OWN_INTERVAL_ONLY, compare_weat
from biastest.measures.weat.score import weat_effect_size
from biastest.records import TestImage
from biastest.report import compare as crep
from biastest.spec import BiasSpec
from biastest.stats.compare import MSG_RESAMPLED_MODELS
from tests.embedding_runs import run_weat
from tests.test_stereotype_clusters import _pair
from tests.test_stereotype_clusters import _summarize as summarize_pairs
from tests.vlm_helpers import summarize

SEED = 20261128
SPEC = BiasSpec.from_terms(group1="man", group2="woman", stereotype1="doctor", antistereotype1="nurse",
                           name="two-group upload")


def _upload(seed: int, *, lean: float, n_each: int = 12):
    """A man/woman upload: pictures with no prompt; P(stereotyped list) leaning by ``lean`` plus noise."""
    rng = np.random.default_rng(seed)
    images, p_st = [], []
    for i in range(2 * n_each):
        term = "man" if i % 2 == 0 else "woman"
        images.append(TestImage(path=f"images/{i:03d}.png", sha256=f"{seed:08x}{i:056x}", image_term=term,
                                generator="upload"))
        p_st.append(1 / (1 + np.exp(-(lean + rng.normal(0, 0.8)))))
    p = np.array(p_st)
    p_t1 = np.where(np.arange(p.size) % 2 == 0, p, 1 - p)
    return images, np.c_[p_t1, 1 - p_t1], ["T1" if x > 0.5 else "T2" for x in p_t1]


def _vlm(seed: int, lean: float, model_id: str):
    images, probs, verdicts = _upload(seed, lean=lean)
    return summarize(images=images, spec=SPEC, term_probabilities=probs, answers=["x"] * len(images),
                     verdicts=verdicts, method="clip-zero-shot", model_id=model_id, model_kind="clip", seed=0,
                     n_resamples=1000)


def test_two_group_upload_gets_an_interval_with_its_design_said_everywhere_alike():
    r = _vlm(1, 0.6, "model-a")
    c = r.soft_clustered
    assert r.clusters == "image" and r.cluster_aware and c.interval_shown and c.n_strata == 2
    low, high = r.headline_interval()
    assert (low, high) == (c.low, c.high) and low < r.soft.score < high
    text = vrep.summary_markdown(r)
    assert f"(95% interval {low:.1f}–{high:.1f}%)" in text and "no interval" not in text
    assert V.DESIGN_NOTES["image"] in text  # the reason: pictures independent within each image term
    bar = vrep.term_rows(r)[0]  # the "All images" bar shows the same interval
    assert bar["label"] == "All images" and (bar["ci_low"], bar["ci_high"]) == (low, high)
    headline = [row for row in vrep.summary_records(r) if "(headline)" in row["measure"]]
    assert len(headline) == 1 and (headline[0]["ci_low"], headline[0]["ci_high"]) == (low, high)
    audit: dict = {}
    _vlm_row(r.to_dict(), audit)
    assert (audit["ci_low"], audit["ci_high"]) == (low, high)
    # a result saved before (image-term clusters): no interval, as it was — it keeps its design
    old = r.with_clusters("image-term")
    assert not old.soft_clustered.interval_shown and old.headline_interval() == (None, None)


def test_each_model_in_a_comparison_shows_its_own_interval_and_the_difference_its_own():
    a, b = _vlm(1, 0.6, "model-a"), _vlm(1, -0.2, "model-b")  # the same pictures, two models
    for score in ("soft", "hard"):
        cmp = V.compare_vlm([a, b], seed=5, score=score, n_resamples=1000)
        for r, m in zip((a, b), cmp.models, strict=True):
            assert m.interval_from_result and (m.ci_low, m.ci_high) == r.headline_interval(score)
        pair = cmp.pairs[0]
        assert pair.ci_low < pair.difference < pair.ci_high  # the difference: the comparison's own interval
        assert crep.MSG_OWN_INTERVALS.split("(")[0] in crep.summary_markdown(cmp)
    # a picture is left out (missing from B's images, its headline over all 24): neither estimate here is its
    # model's headline, so both rows are the comparison's resampling, and a note says so
    short = b.model_copy(update={"images": b.images[:-1]})
    cmp = V.compare_vlm([a, short], seed=5, n_resamples=500)
    assert not any(m.interval_from_result for m in cmp.models)
    assert MSG_RESAMPLED_MODELS.format(labels="model-a, model-b") in cmp.notes


def test_stereotype_pairs_without_templates_are_independent_within_attribute_terms():
    rng = np.random.default_rng(SEED)
    pairs = [_pair(i, float(rng.normal(0.3, 1.0)), attribute=f"attr{i % 4}") for i in range(60)]
    r = summarize_pairs(pairs)
    c = r.overall_clustered
    assert r.clusters == "pair" and r.cluster_aware and c.n_strata == 4 and c.strata_by == "attribute term"
    assert r.headline_interval == (c.low, c.high) and c.interval_shown
    text = srep.summary_markdown(r)
    assert r.design_note in text and f"{r.headline_interval[0]:.1f}" in text
    row: dict = {}
    _stereotype_row(r.to_dict(), row)
    assert (row["ci_low"], row["ci_high"]) == r.headline_interval
    other = summarize_pairs([_pair(p.index, -float(p.difference), attribute=p.attribute_term) for p in pairs])
    cmp = compare_stereotype([r, other], seed=2, n_resamples=500)
    assert [(m.ci_low, m.ci_high) for m in cmp.models] == [r.headline_interval, other.headline_interval]


def test_weat_comparison_shows_each_embeddings_own_interval_of_d():
    spec = BiasSpec.from_dict({
        "name": "toy",
        "social_groups": {"male": ["he", "man", "boy", "father"], "female": ["she", "woman", "girl", "mother"]},
        "attributes": {"career": ["office", "salary", "business"], "family": ["home", "children", "family"]},
    })
    a = run_weat(spec=spec, seed=1, n_bootstrap=200)
    scores = tuple({**w, "s": w["s"] * 0.5 + 0.01 * (i % 3)} for i, w in enumerate(a.word_scores))
    d_b = weat_effect_size(np.array([w["s"] for w in scores if w["set"] == "X"]),
                           np.array([w["s"] for w in scores if w["set"] == "Y"]))
    b = a.model_copy(update={"word_scores": scores, "effect_size": d_b, "effect_size_ci": (-0.5, 0.5)})
    cmp = compare_weat([a, b], seed=3, n_resamples=500, labels=["A", "B"])
    assert [(m.ci_low, m.ci_high) for m in cmp.models] == [tuple(a.effect_size_ci), (-0.5, 0.5)]
    assert cmp.pairs[0].ci_low is not None and not cmp.notes
    weat_row: dict = {}
    _weat_row(a.to_dict(), weat_row)
    assert (weat_row["ci_low"], weat_row["ci_high"]) == tuple(a.effect_size_ci)
    assert weat_row["ci_method"].startswith("jackknife")
    fewer = b.model_copy(update={"word_scores": b.word_scores[1:]})
    cmp = compare_weat([a, fewer], seed=3, n_resamples=500, labels=["A", "B"])
    assert cmp.models[0].ci_low is None and MSG_OWN_INTERVAL_ONLY.format(label="A", n_common=7, n_own=8) in cmp.notes
    assert cmp.models[1].ci_low is None  # B's result says d over 8 words; here it is d over 7
    other_level = compare_weat([a, b], seed=3, n_resamples=500, labels=["A", "B"], confidence=0.9)
    assert other_level.models[0].ci_low is None  # the result's interval is at 95 %: not shown as a 90 % one


@pytest.mark.parametrize("lean", [0.0, 0.8])
def test_two_group_upload_interval_covers_the_planted_share(lean):
    """60 planted uploads of 12 + 12 pictures: the soft score's interval covers the population share.

    The truth is E[P] of the planted distribution (by quadrature); loose bounds that fail for an interval that
    is absent (the former image-term clusters: no interval), a point, or everything.
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    truth = 100 * float(np.sum(weights / np.sqrt(2 * np.pi) / (1 + np.exp(-(lean + 0.8 * nodes)))))
    hits, widths = 0, []
    for s in range(60):
        r = _vlm(1000 + s, lean, "m")
        low, high = r.headline_interval()
        hits += low <= truth <= high
        widths.append(high - low)
    print(f"lean={lean}: truth {truth:.1f} %, coverage {hits}/60, median width {np.median(widths):.1f}")
    assert hits >= 51 and np.median(widths) < 25
