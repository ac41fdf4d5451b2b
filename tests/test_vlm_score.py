"""The vision-language score from given probabilities: formula against a naive oracle, results, validation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biastest.errors import DataError, MethodError
from biastest.measures import vlm as V
from biastest.measures.vlm import score as S
from biastest.records import TestImage
from biastest.spec import BiasSpec
from biastest.stats.proportion import ANTI, STEREOTYPED, TIE
from tests.vlm_helpers import summarize

SEED = 20260101
print(f"test seed: {SEED}")

SPEC = BiasSpec.from_terms(
    group1="man, father",
    group2="woman",
    stereotype1="doctor, engineer",
    antistereotype1="nurse practitioner, nurse",
    name="vlm test",
)


def _images(terms):
    return [TestImage(path=f"images/{i:03d}.png", sha256=f"{i:064x}", image_term=t) for i, t in enumerate(terms)]


def _random_case(n: int, rng: np.random.Generator):
    terms = list(rng.choice(["man", "father", "woman"], size=n))
    terms[:3] = ["man", "father", "woman"]
    probs = rng.dirichlet(np.ones(4), size=n)
    verdicts = list(rng.choice(["T1", "T2", "neither", "tie"], size=n))
    return _images(terms), probs, verdicts


def naive_score(images, probs, verdicts):
    """The seed's formula, one image at a time."""
    soft_total = 0.0
    hard_total = 0
    for img, row, verdict in zip(images, probs, verdicts, strict=True):
        p_t1 = row[0] + row[1]
        p_t2 = row[2] + row[3]
        if img.image_term in ("man", "father"):
            soft_total += p_t1
            hard_total += verdict == "T1"
        else:
            soft_total += p_t2
            hard_total += verdict == "T2"
    return 100 * soft_total / len(images), 100 * hard_total / len(images)


def test_formula_equals_naive_oracle():
    rng = np.random.default_rng(SEED)
    images, probs, verdicts = _random_case(57, rng)
    r = summarize(
        images=images,
        spec=SPEC,
        term_probabilities=probs,
        answers=["x"] * 57,
        verdicts=verdicts,
        method="clip-zero-shot",
        model_id="m",
        seed=SEED,
        n_resamples=500,
    )
    soft, hard = naive_score(images, probs, verdicts)
    assert r.soft.score == pytest.approx(soft, abs=1e-9)
    assert r.hard.score == pytest.approx(hard, abs=1e-9)
    assert r.score == r.soft.score
    assert r.n_images == 57 == r.hard.n
    assert r.n_neither == verdicts.count("neither") and r.n_ties == verdicts.count("tie")
    # neither and ties count as not stereotyped and are excluded from the test
    assert r.hard.n_ties == r.n_neither + r.n_ties
    assert r.hard.ci_low <= r.hard.score <= r.hard.ci_high
    assert r.soft.ci_low <= r.soft.score <= r.soft.ci_high


def test_per_image_term_and_per_target_term_equal_naive():
    rng = np.random.default_rng(SEED + 1)
    images, probs, verdicts = _random_case(40, rng)
    r = summarize(
        images=images,
        spec=SPEC,
        term_probabilities=probs,
        answers=["x"] * 40,
        verdicts=verdicts,
        method="m",
        model_id="m",
        seed=1,
        n_resamples=300,
    )
    assert [t.term for t in r.per_image_term] == ["man", "father", "woman"]
    for t in r.per_image_term:
        sel = [i for i, img in enumerate(images) if img.image_term == t.term]
        soft, hard = naive_score([images[i] for i in sel], probs[sel], [verdicts[i] for i in sel])
        assert t.n_images == len(sel) and t.side == (1 if t.term != "woman" else 2)
        assert t.soft.score == pytest.approx(soft, abs=1e-9)
        assert t.hard.score == pytest.approx(hard, abs=1e-9)
    # per target term t: q_t = P(t) / (P(t) + P(other group)), stereotyped for its own group's images
    for j, t in enumerate(r.per_target_term):
        total = 0.0
        for img, row in zip(images, probs, strict=True):
            own = 1 if j < 2 else 2
            other = row[2] + row[3] if own == 1 else row[0] + row[1]
            q = row[j] / (row[j] + other)
            img_group = 1 if img.image_term in ("man", "father") else 2
            total += q if img_group == own else 1 - q
        assert t.soft.score == pytest.approx(100 * total / len(images), abs=1e-9)
        assert t.hard is None and t.n_images == 40
    assert [t.term for t in r.per_target_term] == ["doctor", "engineer", "nurse practitioner", "nurse"]


def test_image_rows_and_outcomes():
    images = _images(["man", "woman", "woman", "father"])
    probs = np.array([[0.5, 0.2, 0.2, 0.1], [0.1, 0.1, 0.4, 0.4], [0.6, 0.3, 0.05, 0.05], [0.25, 0.25, 0.25, 0.25]])
    r = summarize(
        images=images,
        spec=SPEC,
        term_probabilities=probs,
        answers=["doctor", "nurse", "a cat", "tie"],
        verdicts=["T1", "T2", "neither", "tie"],
        method="m",
        model_id="m",
        seed=0,
        n_resamples=200,
    )
    rows = r.images
    assert [x.outcome for x in rows] == [STEREOTYPED, STEREOTYPED, TIE, TIE]
    assert rows[0].p_t1 == pytest.approx(0.7) and rows[0].p_t2 == pytest.approx(0.3)
    assert rows[1].p_stereotyped == pytest.approx(0.8) and rows[2].p_stereotyped == pytest.approx(0.1)
    assert rows[0].term_probabilities == {"doctor": 0.5, "engineer": 0.2, "nurse practitioner": 0.2, "nurse": 0.1}
    assert rows[2].answer == "a cat" and rows[2].verdict == "neither"
    assert rows[0].image_id == images[0].id and rows[0].path == "images/000.png"
    assert r.hard.n_stereotyped == 2 and r.hard.n_anti == 0 and r.hard.n_ties == 2
    r2 = summarize(
        images=images[:2],
        spec=SPEC,
        term_probabilities=probs[:2],
        answers=["", ""],
        verdicts=["T2", "T1"],
        method="m",
        model_id="m",
        seed=0,
        n_resamples=200,
    )
    assert [x.outcome for x in r2.images] == [ANTI, ANTI] and r2.hard.score == 0.0
    rec = r.images_records()[0]
    assert rec["P(nurse practitioner)"] == 0.2 and rec["model_id"] == "m" and "term_probabilities" not in rec


def test_result_round_trips_json(tmp_path):
    rng = np.random.default_rng(3)
    images, probs, verdicts = _random_case(12, rng)
    r = summarize(
        images=images,
        spec=SPEC,
        term_probabilities=probs,
        answers=["a"] * 12,
        verdicts=verdicts,
        method="clip-zero-shot",
        model_id="tiny",
        seed=5,
        n_resamples=200,
        combine="sum-prob",
        prompt_templates=["a photo of a {term}"],
        prompts=["a photo of a doctor"],
        extra_provenance={"device": "cpu"},
    )
    d = r.to_dict()
    json.dumps(d)
    assert V.VLMResult.from_dict(d) == r
    path = r.save_json(tmp_path / "r.json")
    assert V.VLMResult.load_json(path) == r
    assert r.provenance["seed"] == 5 and r.provenance["method"] == "clip-zero-shot"
    assert r.provenance["spec_fingerprint"] == SPEC.fingerprint() and r.provenance["device"] == "cpu"
    assert "versions" in r.provenance and r.spec == SPEC.to_dict()
    with pytest.raises(DataError) as e:
        V.VLMResult.from_dict({"kind": "stereotype-score"})
    assert e.value.message == V.MSG_BAD_RESULT_FILE.format(problem="missing or bad field 'kind'")
    (tmp_path / "bad.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(DataError) as e:
        V.VLMResult.load_json(tmp_path / "bad.json")
    assert e.value.message == V.MSG_BAD_RESULT_FILE.format(problem="not a JSON object")


def test_seed_makes_intervals_repeatable():
    rng = np.random.default_rng(9)
    images, probs, verdicts = _random_case(30, rng)
    kw = dict(images=images, spec=SPEC, term_probabilities=probs, answers=["a"] * 30, verdicts=verdicts)
    a = summarize(**kw, method="m", model_id="m", seed=11, n_resamples=300)
    b = summarize(**kw, method="m", model_id="m", seed=11, n_resamples=300)
    c = summarize(**kw, method="m", model_id="m", seed=12, n_resamples=300)
    assert (a.soft.ci_low, a.soft.ci_high) == (b.soft.ci_low, b.soft.ci_high)
    assert (a.soft.ci_low, a.soft.ci_high) != (c.soft.ci_low, c.soft.ci_high)
    assert a.soft.seed == 11


def test_bad_inputs():
    images = _images(["man", "woman"])
    probs = np.full((2, 4), 0.25)
    kw = dict(spec=SPEC, answers=["", ""], method="m", model_id="m", seed=0, n_resamples=200)
    with pytest.raises(DataError) as e:
        summarize(images=[], term_probabilities=np.zeros((0, 4)), verdicts=[], **{**kw, "answers": []})
    assert e.value.message == V.MSG_NO_IMAGES
    with pytest.raises(DataError) as e:
        summarize(images=images, term_probabilities=probs, verdicts=["T1", "maybe"], **kw)
    assert e.value.message == V.MSG_BAD_VERDICT.format(value="maybe", choices="T1, T2, neither, tie")
    with pytest.raises(DataError) as e:
        summarize(images=images, term_probabilities=probs[:, :3], verdicts=["T1", "T1"], **kw)
    assert e.value.message == V.MSG_SHAPE.format(what="term_probabilities", shape=(2, 3), expected=(2, 4))
    bad = probs.copy()
    bad[1, 0] = np.nan
    with pytest.raises(DataError) as e:
        summarize(images=images, term_probabilities=bad, verdicts=["T1", "T1"], **kw)
    assert e.value.message == V.MSG_BAD_PROBABILITIES.format(path="images/001.png")
    stray = _images(["man", "cat"])
    with pytest.raises(DataError) as e:
        summarize(images=stray, term_probabilities=probs, verdicts=["T1", "T1"], **kw)
    assert e.value.message == V.MSG_IMAGE_TERM_NOT_IN_SPEC.format(
        path="images/001.png",
        term="cat",
        group1="Social group 1",
        terms1="man, father",
        group2="Social group 2",
        terms2="woman",
    )


def test_prompt_templates_and_questions():
    assert V.check_prompt_template("a photo of a {}") == "a photo of a {term}"
    assert V.check_prompt_template("{term}") == "{term}"
    for bad in ("a photo", "a {term} and {term}", "a {thing}", "a {", 3):
        with pytest.raises(MethodError) as e:
            V.check_prompt_template(bad)
        assert e.value.message == V.MSG_BAD_TEMPLATE.format(template=bad)
    with pytest.raises(MethodError) as e:
        V.check_templates([])
    assert e.value.message == V.MSG_NO_TEMPLATES
    assert V.fill_question(V.DEFAULT_QUESTION, SPEC) == (
        "Is this person a doctor or engineer or a nurse practitioner or nurse?"
    )
    assert V.fill_question("  Who is this? ", SPEC) == "Who is this?"
    with pytest.raises(MethodError) as e:
        V.check_question("Is this a {T3}?")
    assert e.value.message == V.MSG_BAD_QUESTION.format(question="Is this a {T3}?")
    with pytest.raises(MethodError) as e:
        V.check_question("   ")
    assert e.value.message == V.MSG_EMPTY_QUESTION
    for template in V.PROMPT_TEMPLATES:
        V.check_prompt_template(template)
    for q in V.QUESTIONS:
        V.check_question(q)


@pytest.mark.parametrize(
    ("answer", "side"),
    [
        ("doctor", "T1"),
        ("A Doctor.", "T1"),
        ("the engineer", "T1"),
        ("nurse", "T2"),
        ("nurse practitioner", "T2"),
        ("doctor and nurse", "neither"),
        ("doctors", "neither"),
        ("yes", "neither"),
        ("", "neither"),
    ],
)
def test_answer_side(answer, side):
    assert V.answer_side(answer, SPEC) == side


def test_method_names():
    assert V.method_for_kind("clip") == "clip-zero-shot"
    assert V.method_for_kind("vqa-classifier") == "vqa-answer-softmax"
    assert V.method_for_kind("generative") == "generative-answer-logprob"


def test_small_helpers():
    assert V.check_templates("a {}") == ("a {term}",)
    assert V.check_templates(["a {term}", "a {}", "{term}"]) == ("a {term}", "{term}")
    with pytest.raises(MethodError) as e:
        V.check_question("Is this a {T1")
    assert e.value.message == V.MSG_BAD_QUESTION.format(question="Is this a {T1")
    assert S._clip_verdict(0.5) == "tie" and S._clip_verdict(0.51) == "T1" and S._clip_verdict(0.2) == "T2"
    with pytest.raises(MethodError) as e:
        V.clip_term_scores(None, [], spec=SPEC, combine="max")
    assert e.value.message == V.MSG_BAD_COMBINE.format(value="max", choices="sum-prob, mean-embedding")


def test_answers_must_match_images(tmp_path):
    images = _images(["man", "woman"])
    with pytest.raises(DataError) as e:
        summarize(
            images=images,
            spec=SPEC,
            term_probabilities=np.full((2, 4), 0.25),
            answers=["a"],
            verdicts=["T1", "T2"],
            method="m",
            model_id="m",
            seed=0,
            n_resamples=200,
        )
    assert e.value.message == V.MSG_SHAPE.format(what="answers/verdicts", shape=(1, 2), expected=(2, 2))
    with pytest.raises(DataError) as e:
        V.VLMResult.load_json(tmp_path / "missing.json")
    assert e.value.message.startswith("This file is not a saved vision-language test result (")


def test_a_lean_the_sign_test_does_not_confirm_is_said_to_be_unconfirmed():
    from biastest.measures.vlm import report as rep

    def result(n_each: int):
        images = _images(["man", "woman"] * n_each)
        p_st = np.array([0.62, 0.58] * (n_each - 1) + [0.49, 0.49])  # consistent lean, two images slightly against it
        probs = np.array([[p / 2, p / 2, (1 - p) / 2, (1 - p) / 2] if i % 2 == 0 else
                          [(1 - p) / 2, (1 - p) / 2, p / 2, p / 2] for i, p in enumerate(p_st)])
        verdicts = ["T1" if i % 2 == 0 else "T2" for i in range(len(images))]
        # images taken as independent: this is about the bootstrap over images and the image-level sign test
        return summarize(images=images, spec=SPEC, term_probabilities=probs, answers=["x"] * len(images),
                               verdicts=verdicts, method="m", model_id="m", seed=0, n_resamples=2000,
                               clusters="image")

    few = result(4)  # 8 images: 6 lean to the stereotype, 2 away from it
    # the headline interval: pictures independent within their image terms (strata, issue 28)
    assert few.cluster_aware and few.soft_clustered.n_strata == 2
    assert few.soft_clustered.low > 50 and few.soft.p_value > 0.05
    text = rep.summary_markdown(few)
    assert "the **stereotypical** direction" in text and V.DESIGN_NOTES["image"] in text
    assert rep.MSG_LEAN_UNCONFIRMED.format(p=f"{few.soft.p_value:.3f}", n_st=6, n_anti=2, n=8) in text
    many = result(20)  # 40 images, 38 leaning: the sign test agrees
    assert many.soft.ci_low > 50 and many.soft.p_value < 0.05
    assert "sign test does not confirm" not in rep.summary_markdown(many)
