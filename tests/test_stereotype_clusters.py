"""The stereotype score's cluster-aware summary, magnitude and per-term corrections, through the result and report.

Pairs are built here with planted template effects (each template leans its own way), so the truth is known:
the cluster-aware summary must report the clusters and a design effect well above 1, an interval wider than the
pair bootstrap's, and a test that does not mistake a few leaning templates for a preference; a planted
preference across templates must still be detected. Per-term p-values carry Holm and Benjamini–Hochberg
adjustments, the reading names only the terms that survive Holm, the CSV starts with summary rows, labels follow
the result's confidence level, and results saved before all this still read.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from scipy.stats import binomtest, false_discovery_control

from biastest.errors import OptionError
from biastest.measures.stereotype import clusters as ss
from biastest.measures.stereotype import report as rep
from biastest.measures.stereotype.result import PairScore, StereotypeResult
from biastest.measures.stereotype.score import verdict_of
from biastest.measures.stereotype.summary import summarize_stereotype
from biastest.report.export import round_cell
from biastest.stats.clusters import MIN_CLUSTERS_FOR_INTERVAL, MSG_TOO_FEW_CLUSTERS, summarize_clusters
from biastest.stats.multiple import holm
from tests.test_strata import naive_stratified_cluster_bootstrap

MODEL = {"model_id": "planted", "model_kind": "causal"}



def _written(row, column, value):
    """``value`` as the CSV for people writes it in ``row`` (rounded by column kind: ``round_cell``)."""
    return pytest.approx(round_cell(column, value, row))

def _pair(i, difference, *, attribute="nurse", template="", group="she", category="c"):
    verdict = verdict_of(difference)
    return PairScore(index=i, pair_id=f"p{i}", stereotyped=f"{group} {i} {attribute}",
                     anti_stereotyped=f"x {i} {attribute}", attribute_term=attribute, group_term_stereotyped=group,
                     group_term_anti="x", category=category, source="test", score_stereotyped=difference,
                     score_anti=0.0, difference=difference, verdict=verdict, template=template)


def _planted(*, n_templates=40, per_template=6, effect=0.0, template_sd=1.5, noise_sd=0.3, seed=0):
    """Pairs whose Δ = effect + template effect + noise; templates nested in 8 attribute terms."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n_templates):
        u = rng.normal(0.0, template_sd)
        attribute = f"attr{t % 8}"
        for g in range(per_template):
            out.append(_pair(len(out), float(effect + u + rng.normal(0.0, noise_sd)), attribute=attribute,
                             template=f"[T] frame {t} {attribute}", group=f"g{g}"))
    return out


def _summarize(scores, **kw):
    kw.setdefault("n_resamples", 2000)
    return summarize_stereotype(scores, model=MODEL, method="causal-sum", seed=3, **kw)


# ----------------------------------------------------------------------------- clusters chosen and summarised


def test_default_clusters_follow_what_the_pairs_carry():
    with_templates = [_pair(0, 1.0, template="[T] a"), _pair(1, -1.0, template="[T] b")]
    assert ss.resolve_clusters(with_templates) == "template"
    one_without = [*with_templates, _pair(2, 1.0)]
    # attribute terms are strata, never clusters (issue 28): without a template for every pair, pairs are the units
    assert ss.resolve_clusters(one_without) == "pair"
    no_attribute = [*one_without, _pair(3, 1.0, attribute="")]
    assert ss.resolve_clusters(no_attribute) == "pair"
    assert ss.resolve_clusters(no_attribute, "Attribute term") == "attribute-term"  # as the app's words say it
    keys = ss.cluster_keys(one_without, "template")
    assert keys[:2] == ["template: [t] a", "template: [t] b"] and keys[2] == "pair #2"  # no template: its own
    with pytest.raises(OptionError) as e:
        ss.check_clusters("by author")
    assert str(e.value) == ss.MSG_BAD_CLUSTERS.format(value="by author", choices=", ".join(ss.CLUSTERINGS))


def test_planted_template_effects_widen_the_headline_and_keep_the_estimate():
    scores = _planted(effect=0.0, seed=4)
    r = _summarize(scores)
    c = r.overall_clustered
    assert r.clusters == "template" and r.cluster_aware and r.provenance["clusters"] == "template"
    assert (c.n_items, c.n_clusters, c.cluster_by) == (240, 40, "template")
    assert c.estimate == pytest.approx(r.overall.score)  # the same score, another interval
    # templates resampled within their attribute terms (strata): equal to a naive loop
    stereo = [1.0 if p.verdict == "stereotyped" else 0.0 for p in scores]
    ref = naive_stratified_cluster_bootstrap(stereo, [p.template for p in scores], [p.attribute_term for p in scores],
                                             seed=3, n_resamples=2000, confidence=0.95)
    assert (c.low, c.high) == pytest.approx((100 * ref[1], 100 * ref[2]), abs=1e-9)
    assert c.n_strata == 8 and r.design_note == ss.DESIGN_NOTES["template"]
    assert c.design_effect > 3  # 6 pairs per template, ICC ≈ 0.9
    assert (c.high - c.low) > 1.8 * (r.overall.ci_high - r.overall.ci_low)
    # the sign test counts templates: equal to a naive count of template means
    by_template: dict[str, list[float]] = {}
    for p in scores:
        by_template.setdefault(p.template, []).append(np.sign(p.difference))
    above = sum(np.mean(v) > 0 for v in by_template.values())
    below = sum(np.mean(v) < 0 for v in by_template.values())
    assert (c.n_clusters_above, c.n_clusters_below) == (above, below)
    assert c.p_value == pytest.approx(binomtest(above, above + below, 0.5).pvalue)
    # the magnitude: mean and median Δ over pairs, naive
    diffs = [p.difference for p in scores]
    assert r.magnitude.estimate == pytest.approx(float(np.mean(diffs)), abs=1e-12)
    assert r.magnitude_median.estimate == pytest.approx(float(np.median(diffs)), abs=1e-12)
    assert r.magnitude.low < r.magnitude.estimate < r.magnitude.high
    # the same pairs declared independent: the pair-level numbers, design effect 1
    independent = _summarize(scores, clusters="pair")  # pairs independent within attribute terms (strata)
    assert independent.cluster_aware and independent.overall_clustered.design_effect == pytest.approx(1.0)
    assert independent.design_note == ss.DESIGN_NOTES["pair"]
    assert independent.overall_clustered.p_value == pytest.approx(independent.overall.p_value)


def test_no_planted_preference_is_not_read_as_one_where_pairs_alone_would_be():
    """Over 60 datasets with template effects but no preference: the pair test is fooled often, the cluster not."""
    fooled_pairs = fooled_clusters = 0
    for seed in range(60):
        scores = _planted(n_templates=30, per_template=6, effect=0.0, seed=100 + seed)
        signs = [np.sign(p.difference) for p in scores]
        st, anti = signs.count(1.0), signs.count(-1.0)
        fooled_pairs += binomtest(st, st + anti, 0.5).pvalue < 0.05
        c = summarize_clusters([s > 0 for s in signs], [p.template for p in scores], seed=0, n_resamples=100,
                               test_values=signs)
        fooled_clusters += c.p_value < 0.05
    # pairs of a template agree, so the pair test's z is about √6 too large: P(|Z| > 1.96/√6) ≈ 40 % of datasets
    assert fooled_pairs >= 15, fooled_pairs
    assert fooled_clusters <= 7, fooled_clusters  # the exact sign test on templates keeps (at most) its 5 %: ~3


def test_a_planted_preference_across_templates_is_detected():
    r = _summarize(_planted(effect=1.5, template_sd=1.0, seed=7))
    c = r.overall_clustered
    assert c.p_value < 0.001 and c.low > 50
    assert r.magnitude.low > 0 and r.magnitude.p_value < 0.001
    assert "evidence of a" in rep.interpretation(r)


def test_too_few_templates_give_no_interval_and_the_report_says_why():
    r = _summarize(_planted(n_templates=4, per_template=10, effect=0.0, seed=1))
    c = r.overall_clustered
    assert c.n_clusters == 4 < MIN_CLUSTERS_FOR_INTERVAL and not c.interval_shown
    reason = MSG_TOO_FEW_CLUSTERS.format(items="40 items", clusters="4 independent clusters", cluster_by="template",
                                         minimum=MIN_CLUSTERS_FOR_INTERVAL)
    assert c.reason == reason
    summary = rep.summary_markdown(r)
    assert "no interval: too few clusters" in summary and reason in summary
    assert "cannot tell" in rep.interpretation(r)


# ----------------------------------------------------------------------------- per term


def _terms_with_one_real_effect():
    """Term 'strong': 30 of 30 pairs stereotyped; nine terms with 15 of 20 (raw p 0.041, not after Holm)."""
    scores = [_pair(i, 1.0, attribute="strong") for i in range(30)]
    for t in range(9):
        for j in range(20):
            scores.append(_pair(len(scores), 1.0 if j < 15 else -1.0, attribute=f"weak{t}"))
    return scores


def test_per_term_p_values_carry_holm_and_bh():
    r = _summarize(_terms_with_one_real_effect(), clusters="pair")
    terms = r.per_attribute
    raw = [t.p_value for t in terms]
    assert [t.p_holm for t in terms] == pytest.approx(holm(raw))
    assert [t.q_bh for t in terms] == pytest.approx(list(false_discovery_control(raw)))
    weak = next(t for t in terms if t.term == "weak0")
    assert weak.p_value == pytest.approx(binomtest(15, 20, 0.5).pvalue) and weak.p_value < 0.05
    assert weak.p_holm > 0.05
    reading = rep.interpretation(r)
    assert "'strong'" in reading and "weak" not in reading.split("\n\n")[1]
    # the bars' hover keeps the raw p and shows the adjusted one and the magnitude
    bar = rep.attribute_figure(r).data[0]
    row = list(bar.y).index("weak0")
    assert bar.customdata[row][4] == f"{weak.p_value:.3g}"
    assert f"p, Holm-adjusted: {weak.p_holm:.3g}" in bar.customdata[row][5]
    m = weak.magnitude
    assert f"mean Δ log-prob: +0.500 (95% interval {m.low:+.3f} to {m.high:+.3f})" in bar.customdata[row][5]
    assert "%{customdata[5]}" in bar.hovertemplate


def test_no_term_is_named_when_none_survives_holm():
    scores = []
    for t in range(9):
        for j in range(20):
            scores.append(_pair(len(scores), 1.0 if j < 15 else -1.0, attribute=f"weak{t}"))
    r = _summarize(scores, clusters="pair")
    assert all(t.p_value < 0.05 < t.p_holm for t in r.per_attribute)
    assert rep.MSG_HOLM_NONE.format(family="attribute term", m=9, alpha="5") in rep.interpretation(r)


def test_within_an_attribute_term_pairs_are_templates_or_independent():
    scores = _planted(seed=2)
    by_template = _summarize(scores, clusters="template")
    assert {t.clustered.cluster_by for t in by_template.per_attribute} == {"template"}
    assert {t.clustered.n_clusters for t in by_template.per_attribute} == {5}
    by_term = _summarize(scores, clusters="attribute-term")
    assert by_term.overall_clustered.n_clusters == 8
    assert {t.clustered.cluster_by for t in by_term.per_attribute} == {ss.CLUSTER_LABELS["pair"]}
    assert {t.clustered.cluster_by for t in by_term.per_group} == {"attribute term"}


# ----------------------------------------------------------------------------- level, CSV, JSON


def test_labels_follow_the_confidence_level():
    r = _summarize(_planted(seed=5), confidence=0.9)
    summary = rep.summary_markdown(r)
    assert "90 % cluster interval" in summary and "95" not in summary.replace("0.95", "")
    assert rep.TERM_INTERVAL_LABEL.format(level="90%") in rep.attribute_figure(r).data[0].hovertemplate
    assert "90% exact" in rep.group_figure(r).data[0].hovertemplate


def test_the_csv_starts_with_summary_rows_that_name_the_run(tmp_path):
    scores = _planted(seed=6)
    spec = {"name": "planted spec"}
    r = summarize_stereotype(scores, model={"model_id": "=cmd|' /C calc'!A0", "model_kind": "causal"},
                             method="causal-sum", seed=3, n_resamples=500, spec=spec)
    csv_path, _ = rep.export_files(r, directory=tmp_path)
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8-sig")))
    kinds = [row["row_type"] for row in rows]
    n_summary = kinds.index("pair")
    assert set(kinds[:n_summary]) == {"summary"} and kinds[n_summary:] == ["pair"] * len(scores)
    head = {row["measure"]: row for row in rows[:n_summary]}
    clustered = head["stereotype score, cluster-aware (headline)"]
    assert float(clustered["estimate"]) == _written(clustered, "estimate", r.overall.score)
    assert float(clustered["ci_low"]) == _written(clustered, "ci_low", r.overall_clustered.low)
    assert float(clustered["p_value"]) == _written(clustered, "p_value", r.overall_clustered.p_value)
    assert clustered["n_pairs"] == "240" and clustered["n_clusters"] == "40" and clustered["clusters"] == "template"
    assert float(clustered["design_effect"]) == _written(clustered, "design_effect", r.overall_clustered.design_effect)
    mean = head["magnitude: mean Δ log-prob (stereotyped − anti)"]
    assert float(mean["estimate"]) == _written(mean, "estimate", r.magnitude.estimate) and mean["unit"] == "nats"
    term = head["attribute term: attr0"]
    t0 = next(t for t in r.per_attribute if t.term == "attr0")
    assert float(term["p_holm"]) == _written(term, "p_holm", t0.p_holm)
    assert float(term["q_bh"]) == _written(term, "q_bh", t0.q_bh)
    assert float(term["mean_difference"]) == _written(term, "mean_difference", t0.magnitude.estimate)
    # 5 templates: an interval
    assert float(term["mean_difference_low"]) == _written(term, "mean_difference_low", t0.magnitude.low)
    for row in rows[:n_summary]:
        assert row["spec"] == "planted spec" and row["method"] == "causal-sum" and row["seed"] == "3"
        assert row["model_id"] == "'=cmd|' /C calc'!A0"  # formula neutralised
        assert json.loads(row["versions"])["numpy"] and row["date"] == r.provenance["created_at"]
    assert rows[n_summary]["cluster"].startswith("template: ")


def test_json_round_trip_and_results_saved_before_clusters_still_read(tmp_path):
    r = _summarize(_planted(seed=8))
    assert StereotypeResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    old = r.to_dict()
    for key in ("clusters", "overall_clustered", "magnitude", "magnitude_median"):
        del old[key]
    for family in ("per_attribute", "per_group", "per_category"):
        for t in old[family]:
            for key in ("clustered", "magnitude", "median_difference", "p_holm", "q_bh"):
                del t[key]
    for p in old["pairs"]:
        del p["template"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    back = StereotypeResult.load_json(path)
    assert back.clusters == "pair" and not back.cluster_aware and back.magnitude is None
    assert back.per_attribute[0].clustered is None
    assert back.per_attribute[0].p_value == r.per_attribute[0].summary.p_value
    assert back.overall == r.overall
    summary = rep.summary_markdown(back)
    assert "Stereotype score" in summary and "cluster" not in summary and "Magnitude" not in summary
    assert "Holm" not in rep.interpretation(back)
    csv_path, _ = rep.export_files(back, directory=tmp_path)
    assert "stereotype score, pairs independent" in csv_path.read_text(encoding="utf-8-sig")
