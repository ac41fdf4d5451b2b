"""The vision-language score's cluster-aware summary, magnitude and per-term corrections, through result and report.

Images are planted here with prompt effects (the pictures of one prompt share their own lean, as pictures
generated from one prompt do), so the truth is known: the cluster-aware summary must equal a naive cluster
bootstrap loop, report the clusters and a design effect well above 1, an interval wider than the image
bootstrap's, and a test that does not mistake a few leaning prompts for a preference, while a planted lean
across prompts is still found. Per-term p-values carry Holm and Benjamini–Hochberg adjustments and the reading
names only the terms that survive Holm; hard-only results (a model behind an endpoint without probabilities) get
the same for their single answers; the CSV starts with summary rows; labels follow the result's confidence level;
results saved before all this still read; the app's clusters choice recomputes without the model.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from scipy.stats import binomtest, false_discovery_control

from biastest.errors import OptionError
from biastest.measures import vlm as V
from biastest.measures.vlm import report as rep
from biastest.measures.vlm import report_figures as figs
from biastest.records import TestImage
from biastest.report.export import round_cell
from biastest.spec import BiasSpec
from biastest.stats.clusters import MIN_CLUSTERS_FOR_INTERVAL, MSG_TOO_FEW_CLUSTERS
from tests.test_clusters import (  # the loop references of the cluster statistics, written once
    naive_cluster_bootstrap,
    naive_cluster_sign,
    naive_design_effect,
    naive_holm,
)
from tests.test_strata import naive_stratified_cluster_bootstrap
from tests.vlm_helpers import summarize

SEED = 20261123
SPEC = BiasSpec.from_terms(group1="man, father", group2="woman, mother", stereotype1="doctor",
                           antistereotype1="nurse", name="planted prompts")
TERMS = ["man", "father", "woman", "mother"]
GROUP1 = {"man", "father"}


# ----------------------------------------------------------------------------- planted data and naive oracles

def _written(row, column, value):
    """``value`` as the CSV for people writes it in ``row`` (rounded by column kind: ``round_cell``)."""
    return pytest.approx(round_cell(column, value, row))

def _planted(seed, *, n_prompts=24, per_prompt=6, effect=0.0, prompt_sd=1.2, noise_sd=0.3, prompts=True):
    """Images whose log-odds of the stereotyped list = effect + the prompt's own lean + noise (4 image terms)."""
    rng = np.random.default_rng(seed)
    images, p_st = [], []
    for k in range(n_prompts):
        term = TERMS[k % len(TERMS)]
        u = rng.normal(effect, prompt_sd)
        for _ in range(per_prompt):
            i = len(images)
            images.append(TestImage(path=f"images/{i:04d}.png", sha256=f"{i:064x}", image_term=term,
                                    prompt=f"a photo of a {term}, scene {k}" if prompts else "",
                                    generator="planted" if prompts else "upload"))
            p_st.append(1.0 / (1.0 + math.exp(-(u + rng.normal(0.0, noise_sd)))))
    p_st = np.array(p_st)
    p_t1 = np.array([p if img.image_term in GROUP1 else 1 - p for img, p in zip(images, p_st, strict=True)])
    return images, np.c_[p_t1, 1 - p_t1], ["T1" if p > 0.5 else "T2" for p in p_t1], p_st


def _summarize(images, probs, verdicts, **kw):
    kw.setdefault("n_resamples", 1000)
    kw.setdefault("seed", SEED)
    return summarize(images=images, spec=kw.pop("spec", SPEC), term_probabilities=probs,
                     answers=["x"] * len(images), verdicts=verdicts, method="clip-zero-shot", model_id="planted",
                     model_kind="clip", **kw)


# ----------------------------------------------------------------------------- clusters chosen and summarised
def test_default_clusters_follow_how_the_images_were_made():
    generated = _summarize(*_planted(1, n_prompts=8, per_prompt=2)[:3], n_resamples=200)
    assert generated.clusters == "image-prompt" and generated.cluster_aware
    assert generated.provenance["clusters"] == "image-prompt" and generated.provenance["clusters_requested"] == "auto"
    # uploads (issue 28): image terms are strata, never clusters — independent pictures within each term
    uploads = _summarize(*_planted(1, n_prompts=8, per_prompt=2, prompts=False)[:3], n_resamples=200)
    assert uploads.clusters == "image" and uploads.soft_clustered.n_clusters == 16 and uploads.cluster_aware
    assert uploads.soft_clustered.n_strata == 4 and uploads.soft_clustered.strata_by == "image term"
    assert uploads.soft_clustered.interval_shown and uploads.soft_clustered.reason is None
    assert uploads.design_note == V.DESIGN_NOTES["image"]
    # the former clustering by image term is still there to choose (and old results keep it): no interval
    by_term = _summarize(*_planted(1, n_prompts=8, per_prompt=2, prompts=False)[:3], n_resamples=200,
                         clusters="image-term")
    assert by_term.clusters == "image-term" and by_term.soft_clustered.n_clusters == 4
    assert by_term.soft_clustered.cluster_by == "image term" and not by_term.soft_clustered.interval_shown
    assert by_term.soft_clustered.reason == MSG_TOO_FEW_CLUSTERS.format(
        items="16 items", clusters="4 independent clusters", cluster_by="image term", minimum=MIN_CLUSTERS_FOR_INTERVAL)
    independent = _summarize(*_planted(1, n_prompts=8, per_prompt=2)[:3], n_resamples=200, clusters="image")
    assert independent.clusters == "image" and independent.cluster_aware
    assert independent.soft_clustered.n_clusters == 16 and independent.soft_clustered.design_effect == pytest.approx(1)
    assert V.cluster_keys(generated.images, "image-prompt")[0] == "image prompt: a photo of a man, scene 0"
    with pytest.raises(OptionError) as e:
        _summarize(*_planted(1, n_prompts=8, per_prompt=2)[:3], clusters="prompts")
    assert e.value.message == V.MSG_BAD_CLUSTERS.format(value="prompts", choices=", ".join(V.CLUSTERINGS))


def test_planted_prompt_effects_equal_a_naive_cluster_bootstrap_and_widen_the_interval():
    images, probs, verdicts, p_st = _planted(SEED)
    r = _summarize(images, probs, verdicts, n_resamples=1500, confidence=0.9)
    labels = [img.prompt for img in images]
    strata = [img.image_term for img in images]  # image terms are strata: prompts resampled within their term
    c = r.soft_clustered
    est, low, high = naive_stratified_cluster_bootstrap(list(p_st), labels, strata, seed=SEED, n_resamples=1500,
                                                        confidence=0.9)
    assert (c.estimate, c.low, c.high) == pytest.approx((100 * est, 100 * low, 100 * high), abs=1e-9)
    assert c.estimate == pytest.approx(r.soft.score, abs=1e-9) and c.n_items == 144 and c.n_clusters == 24
    assert c.design_effect == pytest.approx(naive_design_effect(list(p_st), labels), rel=1e-9)
    assert c.design_effect > 3 and c.effective_n < 144 / 3  # prompts lean together
    assert (c.high - c.low) > 1.8 * (r.soft.ci_high - r.soft.ci_low)  # wider than the image bootstrap
    assert (c.p_value, c.n_clusters_above, c.n_clusters_below) == pytest.approx(
        naive_cluster_sign(list(p_st), labels, 0.5))
    # the magnitude: log-odds of the stereotyped list, its mean and median with cluster intervals
    lo = [math.log(p / (1 - p)) for p in p_st]
    m = r.magnitude
    assert (m.estimate, m.low, m.high) == pytest.approx(
        naive_stratified_cluster_bootstrap(lo, labels, strata, seed=SEED, n_resamples=1500, confidence=0.9),
        abs=1e-9)
    med = r.magnitude_median
    assert (med.estimate, med.low, med.high) == pytest.approx(naive_stratified_cluster_bootstrap(
        lo, labels, strata, seed=SEED, n_resamples=1500, confidence=0.9, statistic="median"), abs=1e-9)
    assert m.design_effect > 3 and r.n_log_odds_capped == 0
    # the single answers: share stereotyped, sign test of cluster means of +1/−1
    stereo = [1.0 if o == "stereotyped" else 0.0 for o in (img.outcome for img in r.images)]
    signs = [1.0 if o == "stereotyped" else -1.0 for o in (img.outcome for img in r.images)]
    h = r.hard_clustered
    assert (h.estimate, h.low, h.high) == pytest.approx(tuple(100 * x for x in naive_stratified_cluster_bootstrap(
        stereo, labels, strata, seed=SEED, n_resamples=1500, confidence=0.9)), abs=1e-9)
    assert h.p_value == pytest.approx(naive_cluster_sign(signs, labels, 0.0)[0])
    # per image term, clustered by prompt within the term: 6 prompts of 6 images each
    for term in r.per_image_term:
        ix = [i for i, img in enumerate(images) if img.image_term == term.term]
        sub, sub_labels = [p_st[i] for i in ix], [labels[i] for i in ix]
        want = naive_cluster_bootstrap(sub, sub_labels, seed=SEED, n_resamples=1500, confidence=0.9)
        got = term.soft_clustered
        assert got.n_clusters == 6 and (got.estimate, got.low, got.high) == pytest.approx(
            tuple(100 * x for x in want), abs=1e-9)
        assert term.magnitude.estimate == pytest.approx(np.mean([lo[i] for i in ix]))
        assert term.median_log_odds == pytest.approx(np.median([lo[i] for i in ix]))


def test_a_few_leaning_prompts_do_not_fool_the_cluster_test_but_a_real_lean_is_found():
    fooled_images = fooled_clusters = covered_images = covered_clusters = 0
    for s in range(40):  # no overall lean: each prompt leans its own way
        r = _summarize(*_planted(s)[:3], seed=s, n_resamples=300)
        fooled_images += r.soft.p_value < 0.05
        fooled_clusters += r.soft_clustered.p_value < 0.05
        covered_images += r.soft.ci_low <= 50 <= r.soft.ci_high
        covered_clusters += r.soft_clustered.low <= 50 <= r.soft_clustered.high
    assert fooled_images >= 8 and fooled_clusters <= 4, (fooled_images, fooled_clusters)
    assert covered_images <= 34 and covered_clusters >= 37, (covered_images, covered_clusters)
    leaning = _summarize(*_planted(7, effect=1.0, prompt_sd=0.6)[:3], n_resamples=1000)
    c = leaning.soft_clustered
    assert c.low > 50 and c.p_value < 0.001 and leaning.magnitude.low > 0
    text = rep.summary_markdown(leaning)
    assert "the **stereotypical** direction" in text and "cluster interval" in text
    assert f"**Clusters: 144 images in 24 clusters** (by image prompt); design effect {c.design_effect:.2f}" in text


def test_with_clusters_recomputes_from_the_images_alone():
    images, probs, verdicts, _ = _planted(3, n_prompts=12, per_prompt=4)
    direct = {k: _summarize(images, probs, verdicts, clusters=k, n_resamples=400) for k in V.CLUSTERINGS[1:]}
    start = direct["image"]
    for k, want in direct.items():
        got = start.with_clusters(k)
        assert got.clusters == k and got.provenance["clusters"] == k
        for name in ("soft_clustered", "hard_clustered", "magnitude", "magnitude_median", "per_image_term",
                     "per_target_term", "soft", "hard", "images"):
            assert getattr(got, name) == getattr(want, name), (k, name)
    mean_embedding = V.VLMResult.from_dict({**start.to_dict(), "combine": "mean-embedding"})
    assert mean_embedding.with_clusters("image-prompt").per_target_term == direct["image-prompt"].per_target_term


# ----------------------------------------------------------------------------- many terms: Holm and BH
GROUPS = {"kingly": 12, "princely": 9, "lordly": 5}  # images leaning to the stereotype, of 12, 10 and 10


def _holm_case():
    spec = BiasSpec.from_terms(group1="kingly, princely, lordly", group2="queenly, royal, ladylike",
                               stereotype1="ruler", antistereotype1="servant", name="many terms")
    images, p_st = [], []
    for term, n_st in (*GROUPS.items(), ("queenly", 5), ("royal", 6), ("ladylike", 4)):
        n = 12 if term == "kingly" else 10
        for j in range(n):
            i = len(images)
            images.append(TestImage(path=f"images/{i}.png", sha256=f"{i:064x}", image_term=term))
            p_st.append(0.7 if j < n_st else 0.3)
    p_t1 = np.array([p if img.image_term in GROUPS else 1 - p for img, p in zip(images, p_st, strict=True)])
    return images, np.c_[p_t1, 1 - p_t1], ["T1" if p > 0.5 else "T2" for p in p_t1], spec


def test_per_term_p_values_carry_holm_and_bh_and_the_reading_names_only_survivors():
    images, probs, verdicts, spec = _holm_case()
    r = _summarize(images, probs, verdicts, spec=spec, clusters="image", n_resamples=300)
    terms = r.per_image_term
    raw = [term.p_value for term in terms]
    assert [term.term for term in terms] == ["kingly", "princely", "lordly", "queenly", "royal", "ladylike"]
    assert raw[0] == pytest.approx(binomtest(12, 12, 0.5).pvalue) and raw[1] == pytest.approx(
        binomtest(9, 10, 0.5).pvalue)
    assert [term.p_holm for term in terms] == pytest.approx(naive_holm(raw))
    assert [term.q_bh for term in terms] == pytest.approx(list(false_discovery_control(raw, method="bh")))
    assert raw[1] < 0.05 <= terms[1].p_holm and terms[0].p_holm < 0.05  # 'princely' leans, but not past Holm
    text = rep.summary_markdown(r)
    survivors = rep.MSG_HOLM_SOME.format(family_title="Image term", m=6, alpha="5",
                                         terms=f"'kingly' ({terms[0].soft.score:.1f}%, Holm p = "
                                               f"{rep._p(terms[0].p_holm)})")
    assert survivors in text and "'princely' (" not in text
    target = r.per_target_term  # one family of its own
    assert [x.p_holm for x in target] == pytest.approx(naive_holm([x.p_value for x in target]))
    bar = {row["label"]: row for row in rep.term_rows(r)}["images of 'princely'"]
    assert bar["p_value"] == pytest.approx(raw[1])
    assert bar["hover_extra"]["p, Holm-adjusted"] == f"{terms[1].p_holm:.3g}"
    assert bar["hover_extra"]["q (Benjamini–Hochberg)"] == f"{terms[1].q_bh:.3g}"
    assert bar["hover_extra"]["mean log-odds"] == f"{terms[1].magnitude.estimate:+.3f}" + (
        f" ({terms[1].magnitude.low:+.3f} to {terms[1].magnitude.high:+.3f})")
    nothing = _summarize(images, np.full_like(probs, 0.5), ["tie"] * len(images), spec=spec, clusters="image",
                         n_resamples=200)
    assert all(term.p_value is None and term.p_holm is None for term in nothing.per_image_term)


# ----------------------------------------------------------------------------- hard-only and mixed results
def test_results_without_probabilities_are_clustered_by_their_single_answers():
    images, probs, verdicts, _ = _planted(11, n_prompts=12, per_prompt=3)
    verdicts = [v if i % 5 else "neither" for i, v in enumerate(verdicts)]
    r = _summarize(images, np.full_like(probs, np.nan), verdicts, soft_available=[False] * len(images),
                   image_notes=["no log-probabilities"] * len(images), n_resamples=500)
    assert r.soft is None and r.soft_clustered is None and r.magnitude is None and r.headline == "hard"
    h = r.hard_clustered
    labels = [img.prompt for img in images]
    stereo = [1.0 if img.outcome == "stereotyped" else 0.0 for img in r.images]
    signs = [{"stereotyped": 1.0, "anti-stereotyped": -1.0}.get(img.outcome, 0.0) for img in r.images]
    est, low, high = naive_stratified_cluster_bootstrap(stereo, labels, [img.image_term for img in images],
                                                        seed=SEED, n_resamples=500, confidence=0.95)
    assert (h.estimate, h.low, h.high) == pytest.approx((100 * est, 100 * low, 100 * high), abs=1e-9)
    assert h.p_value == pytest.approx(naive_cluster_sign(signs, labels, 0.0)[0]) and r.cluster_aware
    assert [t.p_value for t in r.per_image_term] == [t.hard_clustered.p_value for t in r.per_image_term]
    assert [t.p_holm for t in r.per_image_term] == pytest.approx(naive_holm([t.p_value for t in r.per_image_term]))
    reading, text = rep.summary_parts(r)  # issue 28: the verdict first, the headline number in the details
    assert reading.startswith("Verdict: ") and rep.summary_markdown(r) == f"{reading}\n\n{text}"
    assert text.startswith(f"### Bias score (single answers): <span class='bt-score'>**{r.hard.score:.1f}%**</span> "
                           f"(95% cluster interval {h.low:.1f}–{h.high:.1f}%)")
    assert "**Clusters: 36 images in 12 clusters** (by image prompt)" in text and "Magnitude" not in text
    rows = rep.term_rows(r)
    assert rows[0]["ci_low"] == h.low and "mean log-odds" not in rows[0]["hover_extra"]
    # mixed: the soft score over the images with a probability, the hard one over all
    has = [i % 3 != 0 for i in range(len(images))]
    mixed = _summarize(images, probs, verdicts, soft_available=has, n_resamples=500)
    assert mixed.soft_clustered.n_items == sum(has) and mixed.hard_clustered.n_items == len(images)
    assert mixed.magnitude.n_items == sum(has) and all(img.term_vs_other == {} for img, s in
                                                       zip(mixed.images, has, strict=True) if not s)
    assert V.VLMResult.from_dict(json.loads(json.dumps(mixed.to_dict()))) == mixed


def test_a_saturated_probability_is_capped_and_counted():
    images, probs, verdicts, _ = _planted(5, n_prompts=8, per_prompt=2)
    probs[0] = [1.0, 0.0] if images[0].image_term in GROUP1 else [0.0, 1.0]
    r = _summarize(images, probs, verdicts, n_resamples=200)
    assert r.n_log_odds_capped == 1 and math.isfinite(r.magnitude.estimate)
    cap = math.log((1 - V.LOG_ODDS_EPS) / V.LOG_ODDS_EPS)
    assert V.log_odds([1.0, 0.0, 0.5])[0] == pytest.approx([cap, -cap, 0.0]) and V.log_odds([1.0, 0.5])[1] == 1
    assert "1 image(s) had a probability within 1e-06 of 0 or 1" in rep.summary_markdown(r)


# ----------------------------------------------------------------------------- files and labels
def test_csv_starts_with_summary_rows_that_name_the_run(tmp_path):
    images, probs, verdicts, _ = _planted(2, n_prompts=10, per_prompt=3)
    r = _summarize(images, probs, verdicts, n_resamples=300)
    csv_path, json_path = rep.write_exports(r, folder=tmp_path)
    every = list(csv.DictReader(csv_path.open(encoding="utf-8-sig")))
    summary = [row for row in every if row["row_type"] == "summary"]
    image_rows = [row for row in every if row["row_type"] == "image"]
    assert every[: len(summary)] == summary and len(image_rows) == 30
    by = {row["measure"]: row for row in summary}
    head = by["bias score (probabilities), cluster-aware (headline)"]
    c = r.soft_clustered
    assert float(head["estimate"]) == _written(head, "estimate", r.soft.score)
    assert float(head["ci_low"]) == _written(head, "ci_low", c.low)
    assert float(head["ci_high"]) == _written(head, "ci_high", c.high)
    assert float(head["p_value"]) == _written(head, "p_value", c.p_value)
    assert head["n_images"] == "30" and head["n_clusters"] == "10" and head["clusters"] == "image-prompt"
    assert float(head["design_effect"]) == _written(head, "design_effect", c.design_effect)
    for row in summary:  # every summary row names the run
        assert row["spec"] == "planted prompts" and row["model_id"] == "planted" and row["seed"] == str(SEED)
        assert row["method"] == "clip-zero-shot" and row["date"] == r.provenance["created_at"]
        assert json.loads(row["versions"])["numpy"] == np.__version__ and row["confidence"] == "0.95"
    row = by["bias score (probabilities), images independent"]
    assert float(row["ci_low"]) == _written(row, "ci_low", r.soft.ci_low)
    row = by["magnitude: mean log-odds of the stereotyped list"]
    assert float(row["estimate"]) == _written(row, "estimate", r.magnitude.estimate) and row["unit"] == "nats"
    row = by["bias score (single answers), cluster-aware"]
    assert float(row["ci_low"]) == _written(row, "ci_low", r.hard_clustered.low)
    man = by["image term: man"]
    term = r.per_image_term[0]
    assert float(man["p_holm"]) == _written(man, "p_holm", term.p_holm)
    assert float(man["q_bh"]) == _written(man, "q_bh", term.q_bh)
    assert float(man["mean_log_odds"]) == _written(man, "mean_log_odds", term.magnitude.estimate)
    assert "target term: doctor" in by
    first = image_rows[0]
    assert first["cluster"] == "image prompt: a photo of a man, scene 0" and first["clusters"] == "image-prompt"
    assert float(first["log_odds"]) == pytest.approx(math.log(float(first["p_stereotyped"])  # 4 digits each
                                                              / (1 - float(first["p_stereotyped"]))), abs=1e-3)
    assert json.loads(json_path.read_text())["soft_clustered"]["n_clusters"] == 10


def test_interval_labels_follow_the_results_level():
    images, probs, verdicts, _ = _planted(4, n_prompts=10, per_prompt=3)
    r = _summarize(images, probs, verdicts, confidence=0.9, n_resamples=300)
    text = rep.summary_markdown(r)
    assert "(90% cluster interval" in text and "90% cluster interval" in text.split("**Magnitude:**")[1]
    assert "95%" not in text
    bars = figs.term_bars(r)
    assert "90% interval: %{customdata[1]}" in bars.data[0].hovertemplate
    independent = r.with_clusters("image")
    assert "(90% interval" in rep.summary_markdown(independent)
    assert "95%" not in figs.term_bars(independent).data[0].hovertemplate


# ----------------------------------------------------------------------------- results saved before clusters
def _old_file(result: V.VLMResult) -> dict:
    """What a result saved before clusters, the magnitude and per-term corrections looked like."""
    data = json.loads(json.dumps(result.to_dict()))
    for key in ("clusters", "soft_clustered", "hard_clustered", "magnitude", "magnitude_median", "n_log_odds_capped"):
        del data[key]
    for term in (*data["per_image_term"], *data["per_target_term"]):
        for key in ("soft_clustered", "hard_clustered", "magnitude", "median_log_odds", "p_holm", "q_bh"):
            del term[key]
    for img in data["images"]:
        del img["term_vs_other"]
    return data


def test_results_saved_before_clusters_still_read_report_and_recluster(tmp_path):
    images, probs, verdicts, _ = _planted(6, n_prompts=10, per_prompt=3)
    new = _summarize(images, probs, verdicts, n_resamples=300)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_old_file(new)), encoding="utf-8")
    old = V.VLMResult.load_json(path)
    assert old.clusters == "image" and not old.cluster_aware and old.soft_clustered is None
    assert old.soft == new.soft and old.hard == new.hard and old.per_image_term[0].p_holm is None
    assert old.per_image_term[0].p_value == new.per_image_term[0].soft.p_value  # the image-level test
    text = rep.summary_markdown(old)
    assert f"**{new.soft.score:.1f}%**</span> (95% interval {new.soft.ci_low:.1f}–{new.soft.ci_high:.1f}%)" in text
    assert "Clusters" not in text and "Magnitude" not in text and "Holm" not in text
    assert rep.term_rows(old)[0]["ci_low"] == new.soft.ci_low
    csv_path, _ = rep.write_exports(old, folder=tmp_path)
    assert sum(row["row_type"] == "image" for row in csv.DictReader(csv_path.open(encoding="utf-8-sig"))) == 30
    again = old.with_clusters("auto")  # recomputed from the images, q_t from the term probabilities
    for name in ("clusters", "soft_clustered", "hard_clustered", "magnitude", "magnitude_median"):
        assert getattr(again, name) == getattr(new, name), name
    assert [t.p_holm for t in again.per_target_term] == [t.p_holm for t in new.per_target_term]


# ----------------------------------------------------------------------------- runner, CLI and the app
def test_the_clusters_option_is_checked_before_anything_loads(tmp_path, capsys):
    from biastest import cli
    from tests.vlm_helpers import run_vlm

    with pytest.raises(OptionError) as e:
        run_vlm(images=[], image_root=tmp_path, spec=SPEC, model_id=str(tmp_path / "no-model"), clusters="x")
    assert e.value.message == V.MSG_BAD_CLUSTERS.format(value="x", choices=", ".join(V.CLUSTERINGS))
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC.to_dict()), encoding="utf-8")
    rc = cli.main(["run", str(spec_file), "--kind", "vlm", "--model", str(tmp_path / "no-model"), "--images",
                   str(tmp_path / "none"), "--out", str(tmp_path / "r.json"), "--clusters", "authors"])
    err = capsys.readouterr().err
    assert rc == 2 and V.MSG_BAD_CLUSTERS.format(value="authors", choices=", ".join(V.CLUSTERINGS)) in err
    assert not (tmp_path / "r.json").exists()


def test_the_apps_clusters_choice_recomputes_without_the_model(monkeypatch):
    import gradio as gr

    from biastest.ui.vqa import results as ui

    assert [value for _, value in ui.CLUSTER_CHOICES] == list(V.CLUSTERINGS)
    images, probs, verdicts, _ = _planted(8, n_prompts=10, per_prompt=3)
    r = _summarize(images, probs, verdicts, n_resamples=300)
    monkeypatch.setattr(ui, "run", lambda *_, **__: pytest.fail("the model ran again"))
    session = {"result": r, "settings": {"clusters": "auto"}}
    new, reading, details, bars, csv_u, json_u = ui.recluster_handler(session, "image-term")
    summary = f"{reading}\n\n{details}"  # issue 28: the reading (verdict first), then the details
    assert new["result"].clusters == "image-term" and new["settings"]["clusters"] == "image-term"
    assert new["result"].soft == r.soft and new["result"].images == r.images and session["result"] is r
    assert "**Clusters: 30 images in 4 clusters** (by image term)" in summary and "no interval" in summary
    assert bars.data and csv_u["visible"] and json_u["visible"]
    assert json.loads(open(json_u["value"], encoding="utf-8").read())["clusters"] == "image-term"
    assert ui.recluster_handler({"result": None}, "image") == (gr.skip(),) * ui.RECLUSTER_OUTPUTS
