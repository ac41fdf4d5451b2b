"""Vision-language models behind an endpoint: the in-process scores through the chat protocol, honest without them.

A real HTTP server on 127.0.0.1 (:mod:`tests.chat_images_stub`) answers questions about images with a tiny CLIP
model (trained so that red pictures read as "doctor", blue ones as "nurse"), through the OpenAI chat protocol with
images: the most probable term as the answer, and its ``top_logprobs``. Through it, the hard and soft VQA scores equal
the in-process CLIP computation of the same weights (per image to 1e-6; the figures are printed) and a naive
re-computation from the answers the server gave. Faults — no log-probabilities, log-probabilities refused with HTTP
400, answers that are no allowed answer, 429 then success, 500s past the retries or the budget, an unreadable body, a
request that hangs, another model's name — end with the messages of :mod:`biastest.models.endpoint_vlm` after a
bounded number of tries; what was answered before a limit is kept and the rest is listed as not answered. The
command line runs through the stub with a key from an environment variable that reaches the server and no file.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import json
import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from biastest import cli, public, remote
from biastest.errors import EndpointError, OptionError, PolicyError
from biastest.measures.vlm import VLMResult, compare_vlm
from biastest.measures.vlm import report as rep
from biastest.measures.vlm import report_figures as figs
from biastest.models import endpoint_vlm as V
from biastest.models.cache import ModelCache
from biastest.models.endpoint_vlm import EndpointVLM, answer_term_probabilities, strict_answer
from biastest.records import TestImage
from biastest.remote import STOP_BUDGET, STOP_CANCELLED, STOP_TIME, STOP_UNAVAILABLE, RetryPolicy
from biastest.spec import BiasSpec
from tests import vlm_helpers as H
from tests.chat_images_stub import EPSILON, Action, ChatImagesStub
from tests.vlm_helpers import run_vlm

SEED = 31
print(f"test seed: {SEED}")
SERVED = "tiny-llava"
KEY = "sk-vlm-endpoint-SECRET-41c7"
FAST = RetryPolicy(max_retries=2, initial_delay=0.01, factor=1.0, max_delay=0.05, jitter=0.0)
SPEC = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse",
                           name="endpoint colours")
SPEC3 = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor, surgeon", antistereotype1="nurse",
                            name="endpoint colours, three targets")
PER_TERM = 6
N = 2 * PER_TERM
COMMON = {"seed": SEED, "n_resamples": 500}


@pytest.fixture(autouse=True)
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("endpoint_vlm")


@pytest.fixture(scope="module")
def clip_dir(base) -> Path:
    return H.train_planted_clip(base / "clip", rate=0.8, seed=SEED, n_train=128, steps=30)


@pytest.fixture(scope="module")
def images(base):
    return H.colour_images(base / "store", per_term=PER_TERM, seed=SEED + 1)


@pytest.fixture(scope="module")
def server(clip_dir):
    with ChatImagesStub(clip_dir, served_name=SERVED) as stub:
        yield stub


@pytest.fixture
def stub(server):
    server.reset()
    yield server
    server.reset()


def _in_process(clip_dir, images, base, spec=SPEC):
    return run_vlm(images=images, image_root=base / "store", spec=spec, model_id=str(clip_dir), device="cpu",
                        cache=ModelCache(1), **COMMON)


@pytest.fixture(scope="module")
def here(clip_dir, images, base):
    return _in_process(clip_dir, images, base)


def _run(stub, images, base, spec=SPEC, **kw):
    kw.setdefault("retry", FAST)
    return run_vlm(images=images, image_root=base / "store", spec=spec, model_id=SERVED,
                        endpoint=stub.base_url, **COMMON, **kw)


def _pixels(image) -> str:
    return hashlib.sha256(image.convert("RGB").tobytes()).hexdigest()


def _file_pixels(base, img, folder="store") -> str:
    from PIL import Image

    with Image.open(base / folder / img.path) as im:
        return _pixels(im)


def _naive(result_images, answered_by_pixels, spec, base):
    """Soft and hard score (percent) from the server's own answers and probabilities, by the seed's formula."""
    soft, hard = [], []
    for img in result_images:
        a = answered_by_pixels[_file_pixels(base, img)]
        group = 1 if img.image_term in spec.group1 else 2
        p = dict(zip(a["terms"], a["probabilities"], strict=True))
        p1 = sum(p[t] for t in spec.attributes1)
        soft.append(p1 if group == 1 else 1 - p1)
        side = 1 if a["answer"] in spec.attributes1 else 2 if a["answer"] in spec.attributes2 else 0
        hard.append(side == group)
    return 100 * float(np.mean(soft)), 100 * float(np.mean(hard))


# ----------------------------------------------------------------------------- equivalence
def test_scores_through_the_endpoint_equal_the_in_process_computation(stub, images, base, here):
    there = _run(stub, images, base)
    worst = max(abs(a.p_t1 - b.p_t1) for a, b in zip(here.images, there.images, strict=True))
    print(f"{N} images: soft {here.soft.score:.4f}% in process, {there.soft.score:.4f}% through the endpoint; hard "
          f"{here.hard.score:.1f}% / {there.hard.score:.1f}%; largest per-image difference of P(T1) {worst:.2e}")
    assert worst < 1e-6
    assert there.soft.score == pytest.approx(here.soft.score, abs=1e-4)
    assert (there.soft.ci_low, there.soft.ci_high) == pytest.approx((here.soft.ci_low, here.soft.ci_high), abs=1e-3)
    assert [i.verdict for i in there.images] == [i.verdict for i in here.images]
    # both orders asked, the same answer in each: every answer counts once, over twice the images' answers
    assert there.orders == ("T1 first", "T2 first") and there.n_answers == 2 * N
    assert (there.hard.n, there.hard.n_stereotyped, there.hard.n_anti) == (
        2 * here.hard.n, 2 * here.hard.n_stereotyped, 2 * here.hard.n_anti)
    assert there.hard.score == here.hard.score
    assert there.order_consistency.estimate == 100.0 and there.refusal_rate.estimate == 0.0
    firsts = sum(a.outcome == ("T1" if a.order == "T1 first" else "T2") for i in there.images for a in i.by_order)
    assert there.position_bias.k == firsts and there.position_bias.n == 2 * N
    assert 60 < here.soft.score < 100 and 50 < here.hard.score  # the planted lean is there to be equal to
    for a, b in zip(here.per_image_term, there.per_image_term, strict=True):
        assert (a.term, a.n_images, a.hard.score) == (b.term, b.n_images, b.hard.score)
        assert a.soft.score == pytest.approx(b.soft.score, abs=1e-4)
    for a, b in zip(here.per_target_term, there.per_target_term, strict=True):
        assert a.soft.score == pytest.approx(b.soft.score, abs=1e-4)
    assert there.n_soft == there.n_images == N and there.not_scored == () and there.notes == ()
    assert [i.answer for i in there.images] == [i.answer for i in here.images]  # one term per list: the same term
    info = there.provenance["model"]
    assert there.provenance["endpoint"] == stub.base_url and info["endpoint"] == stub.base_url
    assert there.model_id == SERVED and there.model_kind == "chat" and there.method == "chat-answer"
    assert info["served_model"] == SERVED and info["server_version"] == "stub-vl-1.0"
    assert info["system_fingerprints"] == ["fp_stub_vl"] and info["logprobs"] == "asked"
    assert info["requests"] == {"chat": 2 * N, "models": 1, "version": 1} and info["complete"] is True
    assert there.provenance["probabilities"] == V.MSG_NOTE_SOFT.format(k=20, low=1 - EPSILON, high=1 - EPSILON,
                                                                       median=1 - EPSILON)


def test_scores_equal_a_naive_reference_from_the_answers_given(stub, images, base):
    """Two target terms on one list: the sums of probabilities and the answer's list, recomputed from the server."""
    there = _run(stub, images, base, spec=SPEC3, concurrency=3)
    answered = {a["pixels"]: a for a in stub.answered}
    soft, hard = _naive(there.images, answered, SPEC3, base)
    print(f"three target terms: soft {there.soft.score:.4f}% (naive {soft:.4f}%), hard {there.hard.score:.1f}% "
          f"(naive {hard:.1f}%)")
    assert len(answered) == N
    assert there.soft.score == pytest.approx(soft, abs=1e-6)
    assert there.hard.score == pytest.approx(hard, abs=1e-9)
    for img in there.images:
        a = answered[_file_pixels(base, img)]
        assert img.answer == a["answer"]
        for t, p in zip(a["terms"], a["probabilities"], strict=True):
            # the stub's tiny CLIP answers in float32: its probabilities and the log-probabilities it sends agree
            # to float32's precision (~1e-7), not to the last double digit
            assert img.term_probabilities[t] == pytest.approx(p, abs=1e-6)


def test_requests_follow_the_chat_protocol_with_images(stub, images, base):
    from PIL import Image

    some = [images[0], images[1], images[-1]]
    _run(stub, some, base, spec=SPEC, concurrency=1, max_new_tokens=5)
    bodies = [r["body"] for r in stub.requests if r["path"] == "/v1/chat/completions"]
    assert len(bodies) == 6  # each image in both orders, image by image
    asked = {"T1 first": "Is this person a doctor or a nurse?\nAnswer with exactly one of these words and nothing "
                         "else: doctor, nurse.",
             "T2 first": "Is this person a nurse or a doctor?\nAnswer with exactly one of these words and nothing "
                         "else: nurse, doctor."}
    assert [b["messages"][0]["content"][1]["text"] for b in bodies] == [asked["T1 first"], asked["T2 first"]] * 3
    for body, img in zip(bodies[::2], some, strict=True):
        assert {k: body[k] for k in ("model", "temperature", "max_tokens", "logprobs", "top_logprobs")} == {
            "model": SERVED, "temperature": 0, "max_tokens": 5, "logprobs": True, "top_logprobs": 20}
        (message,) = body["messages"]
        assert message["role"] == "user"
        picture, text = message["content"]
        assert text == {"type": "text", "text": asked["T1 first"]}
        header, _, data = picture["image_url"]["url"].partition(",")
        assert picture["type"] == "image_url" and header == "data:image/png;base64"
        with Image.open(io.BytesIO(base64.b64decode(data))) as sent:
            assert _pixels(sent) == _file_pixels(base, img)  # lossless: the pixels of the file


def test_an_answer_with_an_article_is_read_at_the_term(stub, images, base, here):
    stub.always(Action("article"))
    there = _run(stub, images, base)
    assert {i.answer for i in there.images} <= {"A doctor", "A nurse"}
    assert [i.verdict for i in there.images] == [i.verdict for i in here.images]
    assert max(abs(a.p_t1 - b.p_t1) for a, b in zip(here.images, there.images, strict=True)) < 1e-6


def test_concurrent_requests_are_bounded(stub, images, base):
    stub.always(Action("sleep", seconds=0.15))
    _run(stub, images[3:9], base, concurrency=2)
    print(f"most requests in flight at once: {stub.max_in_flight}")
    assert 1 < stub.max_in_flight <= 2


# ----------------------------------------------------------------------------- answers and probabilities, read alone
@pytest.mark.parametrize("answer, term", [
    ("doctor", "doctor"), ("Doctor.", "doctor"), ("  **Nurse**  ", "nurse"), ("A doctor", "doctor"),
    ("the nurse!", "nurse"), ('"doctor"', "doctor"), ("a Surgeon", "surgeon"),
    ("I think a doctor", None), ("doctor or nurse", None), ("doctors", None), ("a", None), ("", None),
    (None, None), ("It is a nurse.", None), ("An", None),
])
def test_answers_are_read_strictly(answer, term):
    assert strict_answer(answer, SPEC3) == term


def _tok(token, logprob, top=()):
    return {"token": token, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": v} for t, v in top]}


def test_first_token_probabilities_follow_the_formula():
    terms = ["doctor", "surgeon", "nurse", "nurse practitioner"]
    top = [(" doctor", np.log(0.3)), ("Doctor", np.log(0.1)), ("sur", np.log(0.05)), ("nurse", np.log(0.2)),
           ("I", np.log(0.25)), ("nur", np.log(0.04))]  # 'nur' begins two terms: left out
    probs, mass = answer_term_probabilities([_tok(" doctor", np.log(0.3), top), _tok(".", -0.1)], terms)
    total = 0.3 + 0.1 + 0.05 + 0.2
    assert probs == pytest.approx({"doctor": 0.4 / total, "surgeon": 0.05 / total, "nurse": 0.2 / total,
                                   "nurse practitioner": 0.0})
    assert mass == pytest.approx(total)
    # a leading article followed by more is skipped; the generated token counts when it is not among the top ones
    content = [_tok("A", np.log(0.9), [("A", np.log(0.9))]), _tok(" nurse", np.log(0.6), [(" doctor", np.log(0.2))])]
    probs, mass = answer_term_probabilities(content, terms)
    assert probs["nurse"] == pytest.approx(0.75) and probs["doctor"] == pytest.approx(0.25)
    assert mass == pytest.approx(0.8)
    # no target term among the alternatives, or no word at all: no probability (never a made-up one)
    assert answer_term_probabilities([_tok("I", -0.1, [("I", -0.1), ("Sorry", -3.0)])], terms) == (None, None)
    assert answer_term_probabilities([_tok("\n", -0.1), _tok("**", -0.1)], terms) == (None, None)


def _result_with_some_probabilities(have):
    imgs = [TestImage(path=f"images/{i}.png", sha256=str(i), image_term=t)
            for i, t in enumerate(["red", "red", "blue", "blue"])]
    probs = np.array([[0.9, 0.1], [np.nan, np.nan], [0.3, 0.7], [0.6, 0.4]])
    probs[[not h for h in have]] = np.nan
    return H.summarize(images=imgs, spec=SPEC, term_probabilities=probs, answers=["doctor", "nurse", "x", "nurse"],
                       verdicts=["T1", "T2", "neither", "T2"], method="chat-answer", model_id="m", seed=1,
                       n_resamples=200, soft_available=have, image_notes=["", "no log-probabilities", "", ""],
                       notes=("a note",), not_scored=({"path": "images/9.png", "reason": "stopped"},),
                       model_kind="chat")


def test_soft_scores_rest_on_the_images_that_have_a_probability():
    r = _result_with_some_probabilities([True, False, True, True])
    # images 0 (red, P(T1)=.9), 2 (blue, P(T2)=.7), 3 (blue, P(T2)=.4): (0.9 + 0.7 + 0.4) / 3
    assert r.soft.score == pytest.approx(100 * 2.0 / 3) and r.n_soft == 3 and r.soft.n == 3
    assert r.hard.score == pytest.approx(100 * 2 / 4)  # all four answers: 0 (red, T1) and 3 (blue, T2)
    assert r.images[1].p_t1 is None and r.images[1].term_probabilities == {}
    assert r.images[1].note == "no log-probabilities" and r.images[0].note == ""
    red = next(t for t in r.per_image_term if t.term == "red")
    assert red.soft.score == pytest.approx(90.0) and red.hard.score == pytest.approx(50.0)
    blue = next(t for t in r.per_image_term if t.term == "blue")
    assert blue.soft.score == pytest.approx(100 * 1.1 / 2) and blue.hard.score == pytest.approx(50.0)
    assert all(t.n_images == 3 for t in r.per_target_term)
    again = VLMResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again == r and again.not_scored == r.not_scored and again.notes == ("a note",)
    rows = rep.term_rows(r)
    assert rows[0]["n"] == 3 and rows[0]["score"] == pytest.approx(r.soft.score)
    table = rep.image_table(r)
    assert table.iloc[1]["P(doctor)"] == "—" and table.iloc[0]["P(doctor)"] == 0.9
    assert "a note" in rep.summary_markdown(r) and "images/9.png" in rep.summary_markdown(r)


def test_without_any_probability_only_the_single_answers_are_a_score():
    r = _result_with_some_probabilities([False] * 4)
    assert r.soft is None and r.score is None and r.per_target_term == () and r.n_soft == 0
    assert all(t.soft is None for t in r.per_image_term)
    assert r.hard.score == pytest.approx(50.0)
    md = rep.summary_markdown(r)
    assert "Bias score (single answers)" in md and "**50.0%**" in md
    rows = rep.term_rows(r)
    assert [x["label"] for x in rows] == ["All images (single answers)", "images of 'red' (single answers)",
                                          "images of 'blue' (single answers)"]
    assert [x["score"] for x in rows] == pytest.approx([50.0, 50.0, 50.0])
    assert figs.term_bars(r).layout.title.text.startswith("Share of stereotyped single answers")
    assert list(figs.image_grid(r).data[0].marker.color) == [1.0, -1.0, 0.0, -1.0]  # by the answers
    assert VLMResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r


# ----------------------------------------------------------------------------- no probabilities, odd answers
def test_no_log_probabilities_gives_hard_scores_and_says_so(stub, images, base, here):
    stub.always(Action("no_logprobs"))
    there = _run(stub, images, base)
    assert there.soft is None and there.n_soft == 0
    assert there.hard.score == here.hard.score and [i.verdict for i in there.images] == [i.verdict for i in here.images]
    assert there.notes == (V.MSG_NO_LOGPROBS.format(where=stub.base_url, model=SERVED),)
    assert {i.note for i in there.images} == {V.MSG_IMAGE_NO_LOGPROBS}
    assert stub.count() == 2 * N


def test_log_probabilities_refused_are_asked_for_no_more(stub, images, base, here):
    stub.always(Action("refuse_logprobs"))
    there = _run(stub, images, base, concurrency=1)
    assert there.soft is None and there.hard.score == here.hard.score
    assert there.notes == (V.MSG_LOGPROBS_REFUSED.format(where=stub.base_url, model=SERVED, status=400),)
    bodies = [r["body"] for r in stub.requests if r["path"] == "/v1/chat/completions"]
    assert [bool(b.get("logprobs")) for b in bodies] == [True] + [False] * 2 * N  # refused once, then never asked
    assert there.provenance["model"]["logprobs"] == "refused (HTTP 400)"
    assert there.provenance["model"]["requests"]["chat"] == 2 * N + 1


def test_refusals_and_unparseable_answers_are_outcomes_of_their_own(stub, images, base, here):
    """Image 0 refuses in both orders, image 1 answers 'Surgeon.' (no allowed answer) when doctor is named first."""
    stub.script(Action("answer", text="I cannot tell."), Action("answer", text="I cannot tell."),
                Action("answer", text="Surgeon."))
    there = _run(stub, images, base, concurrency=1)
    assert (there.n_answers, there.n_refused, there.n_unparseable, there.n_not_answered) == (2 * N, 2, 1, 0)
    assert [a.outcome for a in there.images[0].by_order] == ["refused", "refused"]
    assert [a.answer for a in there.images[0].by_order] == ["I cannot tell.", "I cannot tell."]  # quoted, raw
    assert there.images[1].by_order[0].outcome == "unparseable" and there.images[1].by_order[0].answer == "Surgeon."
    assert there.n_neither == 1 and there.images[0].verdict == "neither" and there.images[1].verdict != "neither"
    assert there.notes == (
        V.MSG_REFUSED_ANSWERS.format(count=2, total=2 * N, examples="'I cannot tell.' (2)"),
        V.MSG_UNPARSEABLE_ANSWERS.format(count=1, total=2 * N, examples="'Surgeon.' (1)"))
    # the share is among the parseable answers only: refusals are in neither its numerator nor its denominator
    parseable = [(a.outcome, i.image_group) for i in there.images for a in i.by_order if a.outcome in ("T1", "T2")]
    stereotyped = sum(o == f"T{g}" for o, g in parseable)
    assert there.hard.n == len(parseable) == 2 * N - 3
    assert there.hard.score == pytest.approx(100 * stereotyped / (2 * N - 3))
    assert there.refusal_rate.k == 2 and there.refusal_rate.n == 2 * N
    assert there.unparseable_rate.k == 1 and there.unparseable_rate.estimate == pytest.approx(100 / (2 * N))
    # the first words' probabilities still name the target terms: the soft score is the in-process one
    assert there.soft.score == pytest.approx(here.soft.score, abs=1e-4)
    md = rep.summary_markdown(there)
    assert "left out of the stereotyped share" in md and "naming neither list" not in md
    assert html.escape("'I cannot tell.'", quote=True) in md  # quoted in the report
    # beside another model, the image it refused has no verdict: left out for both models, never "not stereotyped"
    cmp = compare_vlm([there, here], seed=1, score="hard", n_resamples=200)
    chat, _clip = cmp.models
    no_verdict = sum(i.outcome not in ("stereotyped", "anti-stereotyped") for i in there.images)
    assert no_verdict >= 1 and chat.n_excluded == no_verdict and chat.n_ties == 0
    assert cmp.n_items == N - no_verdict


def test_answers_without_a_target_term_among_the_alternatives_have_no_probability(stub, images, base, here):
    stub.script(*[Action("no_terms")] * 4)  # images 0 and 1, both orders
    there = _run(stub, images, base, concurrency=1)
    assert there.n_soft == N - 2 and there.soft.n == N - 2
    assert [i.p_t1 is None for i in there.images[:3]] == [True, True, False]
    note = V.MSG_IMAGE_NO_TERMS.format(k=20)
    assert there.images[0].note == note
    assert there.notes == (V.MSG_SOME_WITHOUT_PROBABILITY.format(count=2, total=N, reasons=f"{note}: 2", rest=N - 2),
                           V.MSG_REFUSED_ANSWERS.format(count=4, total=2 * N, examples="\"I don't know.\" (4)"))
    naive = 100 * np.mean([x.p_stereotyped for x in here.images[2:]])
    assert there.soft.score == pytest.approx(naive, abs=1e-4)


# ----------------------------------------------------------------------------- planted rules: orders and refusals
PLANTED_PER_TERM = 30
REFUSALS = ("I cannot tell.", "It is not possible to tell from this picture.", "Unknown", "Both", "Neither.",
            "I can't determine that.")
FORMATS = ("{}", "**{}**", "Answer: {}", "A {}.", "{}.")


@pytest.fixture(scope="module")
def many(base):
    """60 pictures (30 red, 30 blue) in their own folder, and each one's group by its pixels."""
    root = base / "many"
    imgs = H.colour_images(root, per_term=PLANTED_PER_TERM, seed=SEED + 7)
    groups = {_file_pixels(base, img, folder="many"): 1 if img.image_term == "red" else 2 for img in imgs}
    assert len(groups) == len(imgs)
    return root, imgs, groups


def _run_many(stub, many, **kw):
    root, imgs, _ = many
    return run_vlm(images=imgs, image_root=root, spec=SPEC, model_id=SERVED, endpoint=stub.base_url,
                   retry=FAST, concurrency=4, clusters="image", **COMMON, **kw)  # an image (both orders): a cluster


def _u(*parts: str) -> float:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:12], 16) / 16 ** 12


def _naive_counts(answered, groups):
    """Counts from the stub's own record of every question and answer, by a plain loop (its own reading)."""
    n = {"stereotyped": 0, "anti": 0, "refused": 0, "unparseable": 0, "first": 0, "parseable": 0}
    by_image: dict[str, dict[str, str]] = {}
    for a in answered:
        text, first_term = a["answer"], a["terms"][0]
        if text in REFUSALS:
            n["refused"] += 1
            continue
        word = text.replace("*", "").replace("Answer:", "").strip().rstrip(".")
        word = word[2:] if word.startswith("A ") else word
        if word not in ("doctor", "nurse"):
            n["unparseable"] += 1
            continue
        side = 1 if word == "doctor" else 2
        n["parseable"] += 1
        n["stereotyped" if side == groups[a["pixels"]] else "anti"] += 1
        n["first"] += word == first_term
        by_image.setdefault(a["pixels"], {})[first_term] = word
    both = [v for v in by_image.values() if len(v) == 2]
    n["both"], n["same"] = len(both), sum(len(set(v.values())) == 1 for v in both)
    return n


def test_a_model_that_always_names_the_first_listed_term_reads_50_percent_with_position_bias_100(stub, many):
    _, imgs, groups = many
    stub.rule = lambda terms, probs, pixels: terms[0]
    r = _run_many(stub, many)
    naive = _naive_counts(stub.answered, groups)
    print(f"order-only model: share {r.hard.score:.1f}% (interval {r.hard_clustered.low:.1f}–"
          f"{r.hard_clustered.high:.1f}%), position bias {r.position_bias.estimate:.1f}%, consistency "
          f"{r.order_consistency.estimate:.1f}%")
    assert len(stub.answered) == 2 * len(imgs) == r.n_answers
    assert r.hard.score == 50.0 and r.hard.n == 2 * len(imgs)
    assert (r.hard.n_stereotyped, r.hard.n_anti) == (naive["stereotyped"], naive["anti"]) == (len(imgs), len(imgs))
    assert r.position_bias.estimate == 100.0 and r.position_bias.k == naive["first"] == 2 * len(imgs)
    assert r.order_consistency.estimate == 0.0 and r.order_consistency.n == naive["both"] == len(imgs)
    assert r.refusal_rate.estimate == 0.0 and r.n_refused == 0
    assert all(i.verdict == "tie" for i in r.images)  # the two orders named different lists
    md = rep.summary_markdown(r)
    assert "**Position bias:**" in md and "**100.0%**" in md


def test_refusals_are_counted_apart_and_the_planted_share_is_recovered_among_the_rest(stub, many):
    """Planted: 30 % refusals, 5 % unparseable, and among the choices 75 % stereotyped, by content only."""
    groups = many[2]

    def rule(terms, probs, pixels):
        u, v, w = (_u(pixels, terms[0], k) for k in ("refuse", "choose", "format"))
        if u < 0.30:
            return REFUSALS[int(w * len(REFUSALS))]
        if u < 0.35:
            return f"{terms[0]} or {terms[1]}"
        stereotyped = "doctor" if groups[pixels] == 1 else "nurse"
        other = "nurse" if stereotyped == "doctor" else "doctor"
        return FORMATS[int(w * len(FORMATS))].format(stereotyped if v < 0.75 else other)

    stub.rule = rule
    r = _run_many(stub, many)
    naive = _naive_counts(stub.answered, groups)
    c = r.hard_clustered
    old_rule = 100 * naive["stereotyped"] / len(stub.answered)  # refusals folded into "not stereotyped"
    print(f"planted 75% stereotyped, 30% refused, 5% unparseable: share {r.hard.score:.1f}% ({c.low:.1f}–"
          f"{c.high:.1f}%), refused {r.refusal_rate.estimate:.1f}% ({r.refusal_rate.low:.1f}–"
          f"{r.refusal_rate.high:.1f}%), unparseable {r.unparseable_rate.estimate:.1f}%, position "
          f"{r.position_bias.estimate:.1f}%, consistency {r.order_consistency.estimate:.1f}%; folding refusals into "
          f"'not stereotyped' would read {old_rule:.1f}%")
    # the counts equal the naive loop's
    assert (r.n_answers, r.n_refused, r.n_unparseable) == (len(stub.answered), naive["refused"], naive["unparseable"])
    assert (r.hard.n, r.hard.n_stereotyped, r.hard.n_anti) == (naive["parseable"], naive["stereotyped"],
                                                                naive["anti"])
    assert r.hard.score == pytest.approx(100 * naive["stereotyped"] / naive["parseable"])
    assert r.position_bias.k == naive["first"] and r.position_bias.n == naive["parseable"]
    assert (r.order_consistency.k, r.order_consistency.n) == (naive["same"], naive["both"])
    # the planted truths lie within the reported intervals
    assert c.low <= 75.0 <= c.high and r.hard.ci_low <= 75.0 <= r.hard.ci_high
    assert r.refusal_rate.low <= 30.0 <= r.refusal_rate.high
    assert r.unparseable_rate.low <= 5.0 <= r.unparseable_rate.high
    assert r.position_bias.low <= 50.0 <= r.position_bias.high  # content only: no position preference
    assert old_rule < c.low  # the old rule would have pulled the share below the interval
    # every refusal is kept as said, and quoted
    said = [a.answer for i in r.images for a in i.by_order if a.outcome == "refused"]
    assert sorted(said) == sorted(a["answer"] for a in stub.answered if a["answer"] in REFUSALS)
    assert any(note.startswith(f"{naive['refused']} of {len(stub.answered)} answers declined") for note in r.notes)
    assert any(f"[{o}]" in col for o in ("T1 first", "T2 first") for col in rep.csv_columns(r))
    rows = {row["measure"]: row for row in rep.summary_records(r)}
    refusal_row = next(v for k, v in rows.items() if k.startswith("refusal rate"))
    assert refusal_row["estimate"] == pytest.approx(r.refusal_rate.estimate) and refusal_row["n_images"] == r.n_answers
    again = VLMResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again == r
    regrouped = r.with_clusters("image")
    assert regrouped.hard.score == r.hard.score and regrouped.refusal_rate.k == r.refusal_rate.k


@pytest.mark.parametrize("answer, outcome", [
    ("doctor", "T1"), ("**Nurse**", "T2"), ("Answer: doctor", "T1"), ("The answer is a nurse.", "T2"),
    ("I cannot tell.", "refused"), ("It is not possible to tell.", "refused"), ("Both", "refused"),
    ("Neither.", "refused"), ("unknown", "refused"), ("I can't determine that.", "refused"),
    ("doctor or nurse", "unparseable"), ("Surgeon.", "unparseable"), ("", "unparseable"),
    ("It is a nurse.", "unparseable"),
])
def test_answers_are_read_into_a_list_a_refusal_or_unparseable(answer, outcome):
    assert V.read_answer(answer, SPEC)[1] == outcome


def test_the_dummy_chat_model_follows_a_planted_order_rule():
    from biastest.models.dummy import DummyChatVLM
    from biastest.models.vlm_question import ORDERS

    first = DummyChatVLM(rule=lambda key, terms, order: terms[0])
    answers = first.ask(["img-a", "img-b"], spec=SPEC, question="Is this person a {T1} or a {T2}?", orders=ORDERS)
    assert [(a.order, a.outcome, a.text) for a in answers] == [
        ("T1 first", "T1", "doctor"), ("T2 first", "T2", "nurse")] * 2
    assert answers[1].prompt.startswith("Is this person a nurse or a doctor?")
    plain = DummyChatVLM().ask(["img-a"], spec=SPEC, question="Who is this?", orders=ORDERS)
    assert plain[0].text == plain[1].text and plain[0].outcome == plain[1].outcome  # by content, not order


# ----------------------------------------------------------------------------- faults and limits
def test_429_then_success_is_retried_and_counted(stub, images, base, here):
    stub.script(*[Action("status", 429, headers={"Retry-After": "0"})] * 2)
    there = _run(stub, images, base, concurrency=1)
    info = there.provenance["model"]
    assert info["transient_failures"] == {"rate_limit": 2} and info["requests"]["chat"] == 2 * N + 2 == stub.count()
    assert info["complete"] is True and there.soft.score == pytest.approx(here.soft.score, abs=1e-4)


def test_server_errors_past_the_retries_keep_what_was_answered_and_label_the_rest(stub, images, base, here):
    stub.script(Action("ok"), Action("ok"), Action("ok"))
    stub.always(Action("status", 500))
    there = _run(stub, images, base, concurrency=1)
    why = V.MSG_WHY[STOP_UNAVAILABLE].format(tries=3)
    info = there.provenance["model"]
    print(f"500s after 3 answers: {there.n_images} answered, {len(there.not_scored)} not; {info['requests']}")
    assert stub.count() == info["requests"]["chat"] == 3 + 3
    # three answers: image 0 in both orders, image 1 with list 1 named first; image 1's second order is missing
    assert there.n_images == 2 and len(there.not_scored) == N - 2
    assert [a.outcome for a in there.images[1].by_order][1] == "not answered" and there.n_not_answered == 1
    assert there.hard.n == 3 and there.n_answers == 3
    assert [x["path"] for x in there.not_scored] == [i.path for i in images[2:]]
    assert {x["reason"] for x in there.not_scored} == {why}
    stop = V.MSG_ENDPOINT_PARTIAL.format(why=why, missing=2 * N - 3, total=2 * N)
    assert there.notes == (stop,) and info["stop_message"] == stop
    assert info["complete"] is False and info["stopped_because"] == STOP_UNAVAILABLE
    assert there.provenance["n_images_asked"] == N and there.provenance["n_questions_asked"] == 2 * N
    for a, b in zip(here.images[:2], there.images, strict=True):
        assert a.image_id == b.image_id and abs(a.p_t1 - b.p_t1) < 1e-6
    md = rep.summary_markdown(there)
    assert html.escape(stop, quote=True) in md
    assert f"{N - 2} image(s) got no answer" in md


def test_the_request_budget_ends_a_run_with_partial_results(stub, images, base):
    there = _run(stub, images, base, concurrency=1, max_requests=4)
    assert stub.count() == 4 and there.n_images == 2 and len(there.not_scored) == N - 2  # two images, both orders
    assert there.provenance["model"]["stopped_because"] == STOP_BUDGET


def test_a_stop_signal_keeps_what_was_answered(stub, images, base):
    stub.always(Action("sleep", seconds=0.2))
    cancel = threading.Event()
    threading.Timer(0.9, cancel.set).start()
    t = time.monotonic()
    there = _run(stub, images, base, concurrency=1, cancel=cancel)
    elapsed = time.monotonic() - t
    print(f"stopped after {elapsed:.2f} s with {there.n_images} of {N} images answered")
    assert 1 <= there.n_images < N and elapsed < 4.0
    assert there.provenance["model"]["stopped_because"] == STOP_CANCELLED


def test_server_errors_from_the_start_fail_with_a_message_after_bounded_tries(stub, images, base):
    stub.always(Action("status", 503))
    with pytest.raises(EndpointError) as e:
        _run(stub, images, base, concurrency=1)
    assert e.value.message == V.MSG_ENDPOINT_FAILED.format(where=stub.base_url,
                                                           why=V.MSG_WHY[STOP_UNAVAILABLE].format(tries=3))
    assert stub.count() == 3


def test_an_unreadable_body_is_a_clear_error(stub, images, base):
    stub.always(Action("garbage"))
    with pytest.raises(EndpointError) as e:
        _run(stub, images, base)
    assert e.value.message == V.MSG_GARBLED.format(where=stub.base_url)


def test_a_picture_the_model_refuses_is_a_clear_error(stub, images, base):
    stub.always(Action("status", 400))
    with pytest.raises(EndpointError) as e:
        _run(stub, images, base, concurrency=1)
    assert e.value.message == V.MSG_IMAGE_REJECTED.format(where=stub.base_url, model=SERVED, status=400)
    assert stub.count() == 2  # with log-probabilities, then once without


def test_a_request_that_hangs_is_given_up_and_retried(stub, images, base, here):
    stub.script(Action("hang", seconds=6))
    t = time.monotonic()
    there = _run(stub, [images[0], images[-1]], base, concurrency=1, request_timeout=0.5)
    elapsed = time.monotonic() - t
    print(f"one hung request: answered after {elapsed:.2f} s")
    assert there.n_images == 2 and elapsed < 4.0
    assert there.provenance["model"]["transient_failures"] == {"timeout": 1}


def test_a_server_that_never_answers_is_given_up_at_the_time_limit(stub, images, base):
    stub.always(Action("hang", seconds=2))
    retry = RetryPolicy(max_retries=50, initial_delay=0.01, factor=1.0, max_delay=0.05, jitter=0.0)
    t = time.monotonic()
    with pytest.raises(EndpointError) as e:
        _run(stub, images, base, concurrency=1, time_limit=1.5, request_timeout=0.5, retry=retry)
    elapsed = time.monotonic() - t
    assert e.value.message == V.MSG_ENDPOINT_FAILED.format(where=stub.base_url,
                                                           why=V.MSG_WHY[STOP_TIME].format(seconds=1.5))
    assert elapsed < 4.0


def test_another_model_name_in_the_answer_is_refused_but_a_dated_snapshot_is_recorded(stub, images, base):
    stub.always(Action("model", model="some-other-model"))
    with pytest.raises(EndpointError) as e:
        _run(stub, images, base)
    assert e.value.message == V.MSG_MODEL_MISMATCH.format(where=stub.base_url, served="some-other-model",
                                                          model=SERVED)
    stub.reset()
    stub.always(Action("model", model=f"{SERVED}-2024-08-06"))
    there = _run(stub, [images[0], images[-1]], base)
    assert there.provenance["model"]["served_model"] == f"{SERVED}-2024-08-06" and there.model_id == SERVED


def test_a_model_the_server_does_not_list_is_refused_before_any_question(stub, images, base):
    with pytest.raises(EndpointError) as e:
        run_vlm(images=images, image_root=base / "store", spec=SPEC, model_id="llava-1.6", endpoint=stub.base_url,
                     **COMMON)
    assert e.value.message == V.MSG_NOT_SERVED.format(where=stub.base_url, model="llava-1.6", served=SERVED)
    assert stub.count() == 0


def test_an_address_without_a_chat_service_is_a_clear_error(stub, images, base):
    root = stub.base_url[: -len("/v1")]
    with pytest.raises(EndpointError) as e:
        run_vlm(images=images, image_root=base / "store", spec=SPEC, model_id=SERVED, endpoint=root, **COMMON)
    assert e.value.message == V.MSG_NO_CHAT.format(where=root, model=SERVED)


@pytest.mark.parametrize("option, value", [("concurrency", 0), ("max_requests", 0), ("time_limit", -1.0),
                                           ("request_timeout", float("nan"))])
def test_bad_endpoint_options_are_refused_before_any_request(stub, images, base, option, value):
    with pytest.raises(OptionError) as e:
        _run(stub, images, base, **{option: value})
    assert str(value) in e.value.message
    assert stub.requests == []


def test_public_mode_refuses_a_private_endpoint_before_any_request(stub, images, base, monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
    with pytest.raises(PolicyError) as e:
        _run(stub, images, base)
    assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host="127.0.0.1")
    assert stub.requests == []


# ----------------------------------------------------------------------------- keys and provenance
def test_the_key_reaches_the_server_and_no_file(stub, images, base, tmp_path):
    there = _run(stub, images, base, api_key=KEY)
    assert there.provenance["model"]["api_key"] == "***"
    (tmp_path / "exports").mkdir()
    csv_path, json_path = rep.write_exports(there, folder=tmp_path / "exports")
    for text in (csv_path.read_text(encoding="utf-8"), json_path.read_text(encoding="utf-8"), repr(there),
                 rep.summary_markdown(there)):
        assert KEY not in text
    assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {KEY}"}
    ep = EndpointVLM("http://user:hunter2@127.0.0.1:9/v1?token=abc", SERVED, api_key=KEY)
    shown = json.dumps(ep.describe()) + repr(ep)
    for secret in (KEY, "hunter2", "token=abc"):
        assert secret not in shown
    with pytest.raises(TypeError):
        pickle.dumps(ep)


# ----------------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def cli_files(base, images) -> dict[str, Path]:
    spec = base / "spec.json"
    spec.write_text(SPEC.to_json(), encoding="utf-8")
    manifest = base / "store" / "manifest.csv"
    with manifest.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["path", "image_term"])
        w.writeheader()
        for img in images:
            w.writerow({"path": img.path, "image_term": img.image_term})
    return {"spec": spec, "manifest": manifest}


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def _vlm_args(cli_files, stub, *extra: str) -> list[str]:
    return ["run", str(cli_files["spec"]), "--kind", "vlm", "--endpoint", stub.base_url, "--model", SERVED,
            "--images", str(cli_files["manifest"]), *extra]


def test_cli_runs_through_the_endpoint_with_a_key_from_the_environment(stub, cli_files, here, tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setenv("BIASTEST_TEST_VLM_KEY", KEY)
    out, rows = tmp_path / "r.json", tmp_path / "r.csv"
    rc, stdout, stderr = _cli(capsys, *_vlm_args(cli_files, stub, "--api-key-env", "BIASTEST_TEST_VLM_KEY",
                                                 "--out", str(out), "--csv", str(rows), "--bootstrap", "500",
                                                 "--seed", str(SEED), "--concurrency", "2"))
    assert rc == 0, stderr
    assert f"on {SERVED} at {stub.base_url}" in stdout
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["options"]["endpoint"] == stub.base_url and doc["options"]["api_key"] == "***"
    assert doc["options"]["concurrency"] == 2
    assert not {"device", "dtype", "prompt_template", "combine", "batch_size", "revision"} & set(doc["options"])
    result = VLMResult.from_dict(doc["result"])
    assert result.soft.score == pytest.approx(here.soft.score, abs=1e-4) and result.hard.score == here.hard.score
    for text in (out.read_text(encoding="utf-8"), rows.read_text(encoding="utf-8"), stdout, stderr):
        assert KEY not in text
    assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {KEY}"}


def test_cli_without_log_probabilities_reports_the_single_answers(stub, cli_files, tmp_path, capsys):
    stub.always(Action("no_logprobs"))
    out = tmp_path / "r.json"
    rc, stdout, stderr = _cli(capsys, *_vlm_args(cli_files, stub, "--out", str(out), "--bootstrap", "500"))
    assert rc == 0, stderr
    assert stdout.startswith("Bias score (single answers)")
    assert V.MSG_NO_LOGPROBS.format(where=stub.base_url, model=SERVED) in stderr
    assert json.loads(out.read_text(encoding="utf-8"))["result"]["soft"] is None


@pytest.mark.parametrize("extra, message", [
    (("--device", "cpu"), cli.MSG_NOT_WITH_ENDPOINT.format(option="--device")),
    (("--batch-size", "4"), cli.MSG_NOT_WITH_ENDPOINT.format(option="--batch-size")),
    (("--prompt-template", "a {term}"), cli.MSG_NOT_WITH_ENDPOINT.format(option="--prompt-template")),
    (("--combine", "sum-prob"), cli.MSG_NOT_WITH_ENDPOINT.format(option="--combine")),
    (("--tokenizer", "gpt2"), cli.MSG_OPTION_NOT_FOR_RUN.format(option="--tokenizer", what="--kind vlm",
                                                                applies="lm")),
    (("--api-key-env", "BIASTEST_TEST_UNSET_VARIABLE"), cli.MSG_KEY_ENV_UNSET),
])
def test_cli_usage_errors_exit_2_before_any_request(stub, cli_files, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.delenv("BIASTEST_TEST_UNSET_VARIABLE", raising=False)
    rc, _, stderr = _cli(capsys, *_vlm_args(cli_files, stub, *extra, "--out", str(tmp_path / "r.json")))
    assert rc == 2
    assert stderr.strip().splitlines()[-1] == message
    assert stub.requests == [] and not (tmp_path / "r.json").exists()


def test_cli_endpoint_failure_exits_1(stub, cli_files, tmp_path, capsys):
    stub.always(Action("garbage"))
    rc, _, stderr = _cli(capsys, *_vlm_args(cli_files, stub, "--out", str(tmp_path / "r.json")))
    assert rc == 1
    assert stderr.strip().splitlines()[-1] == V.MSG_GARBLED.format(where=stub.base_url)


# ----------------------------------------------------------------------------- the app's handler (step 2)
@pytest.fixture
def app_session(base, images):
    from biastest.ui import vqa as app
    from biastest.ui.spec_step import CUSTOM

    session, _ = app.confirm_spec(app.new_session(), CUSTOM, "red", "blue", "doctor", "nurse")
    for img in images:
        app.add_image(session, base / "store" / img.path, name=Path(img.path).name, term=img.image_term,
                      generator="test", source_kind="upload")
    yield session
    app.discard_session(session)


def _handler(session, *endpoint):
    from biastest.ui import vqa as app

    return app.run_handler(session, "", ["a photo of a {term}"], "", "sum-prob", None, SEED, 16, 500, *endpoint)


def test_the_app_runs_through_the_endpoint_and_keeps_the_key_out_of_the_session(stub, app_session, here):
    from biastest.ui.vqa.results import MODEL_ENDPOINT

    out = _handler(app_session, MODEL_ENDPOINT, f" {stub.base_url} ", f" {SERVED} ", KEY)
    new, message = out[0], out[1]
    assert message == "" and new["result"] is not None
    assert new["result"].soft.score == pytest.approx(here.soft.score, abs=1e-4)
    settings = new["settings"]
    assert {k: settings[k] for k in ("model_id", "question", "seed", "n_resamples", "endpoint")} == {
        "model_id": SERVED, "question": "Is this person a {T1} or a {T2}?", "seed": SEED, "n_resamples": 500,
        "endpoint": stub.base_url}
    assert not any("key" in k for k in settings)
    assert KEY not in repr(new) and KEY not in json.dumps(new["result"].to_dict())
    assert "Where:" in out[5] and stub.base_url in out[5]  # the details name the endpoint
    assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {KEY}"}


@pytest.mark.parametrize("url, name, message", [
    ("", SERVED, "need_url"), ("localhost:8000", SERVED, "bad_url"), ("{url}", " ", "no_name"),
])
def test_the_app_checks_the_endpoint_before_anything_is_sent(stub, app_session, url, name, message):
    from biastest.models.endpoint_lm import MSG_BAD_ENDPOINT, MSG_NEED_ENDPOINT_URL, MSG_NO_MODEL_NAME
    from biastest.ui.vqa.results import MODEL_ENDPOINT

    want = {"need_url": MSG_NEED_ENDPOINT_URL, "bad_url": MSG_BAD_ENDPOINT.format(value="localhost:8000"),
            "no_name": MSG_NO_MODEL_NAME}[message]
    with pytest.warns(UserWarning, match="."):  # the yellow toast (outside a Gradio event: a warning)
        out = _handler(app_session, MODEL_ENDPOINT, url.format(url=stub.base_url), name, KEY)
    assert out[0] is app_session and out[1] == "⚠️ " + html.escape(want, quote=True)
    assert stub.requests == []


def test_the_app_shows_what_the_endpoint_answered_inline_and_a_partial_run_as_partial(stub, app_session):
    from biastest.ui.vqa.results import MODEL_ENDPOINT, MSG_RUN_PARTIAL

    stub.always(Action("model", model="gpt-4o"))
    with pytest.warns(UserWarning):
        out = _handler(app_session, MODEL_ENDPOINT, stub.base_url, SERVED, "")
    assert out[1] == "⚠️ " + html.escape(V.MSG_MODEL_MISMATCH.format(where=stub.base_url, served="gpt-4o",
                                                                       model=SERVED), quote=True)
    stub.reset()
    stub.script(Action("ok"), Action("ok"))
    stub.always(Action("status", 503))
    with pytest.warns(UserWarning):
        out = _handler(app_session, MODEL_ENDPOINT, stub.base_url, SERVED, "")
    result = out[0]["result"]
    # two answers: one picture in both orders, or two pictures in one order each (requests run concurrently)
    assert result.n_answers == 2 and result.n_images in (1, 2) and len(result.not_scored) == N - result.n_images
    stop = result.provenance["model"]["stop_message"]
    assert out[1] == html.escape(MSG_RUN_PARTIAL.format(n=result.n_images, total=N, model=SERVED, why=stop),
                                 quote=True)
    # issue 28 item 4: a run a limit stopped gives no verdict, and its reading claims no lean
    from biastest.measures.verdict import MSG_PARTIAL, PREFIX
    assert out[4].startswith(f"{PREFIX} no verdict — {MSG_PARTIAL}."), out[4]
    assert "lean to the" not in out[4] and "significant" not in out[4] and "Holm" not in out[4]


# ----------------------------------------------------------------------------- the soft score over two orders
class _TwoOrderModel:
    """A stand-in for :class:`EndpointVLM` after :meth:`ask`: what the measure reads from it."""

    where, model_id, top_logprobs, prompt = "http://x/v1", "m", 20, "q1"
    stop_message = stop_why = logprobs_refused_status = None

    def __init__(self):
        self.prompts = {"T1 first": "q1", "T2 first": "q2"}

    def describe(self):
        return {"model_id": self.model_id, "served_by": "endpoint"}


def test_the_soft_score_averages_each_pictures_probabilities_over_the_orders_that_have_them(tmp_path):
    import importlib

    from biastest.measures.vlm.options import VLMOptions

    R = importlib.import_module("biastest.measures.vlm.run")  # the module (the package's ``run`` is the function)

    imgs = [TestImage(path=f"images/{i}.png", sha256=str(i), image_term=t) for i, t in enumerate(["red", "blue"])]

    def said(text, order, p_doctor):
        term, outcome = V.read_answer(text, SPEC)
        probs = None if p_doctor is None else {"doctor": p_doctor, "nurse": 1 - p_doctor}
        return V.ChatAnswer(text, term, outcome if term else "neither", probs, 1.0 if probs else None,
                            "" if probs else V.MSG_IMAGE_NO_LOGPROBS, outcome, order, f"q{order[1]}")

    answers = [said("doctor", "T1 first", 0.9), said("nurse", "T2 first", 0.4),  # red: orders disagree
               said("I cannot tell", "T1 first", None), said("nurse", "T2 first", 0.2)]  # blue: one probability
    r = R._endpoint_result(_TwoOrderModel(), answers, images=imgs, spec=SPEC,
                           options=VLMOptions.parse(model_id="m", seed=SEED, n_resamples=200), root=tmp_path)
    # naive: red P(doctor) = (0.9 + 0.4) / 2, stereotyped (doctor); blue P(nurse) = 1 − 0.2 (the one order with one)
    assert r.images[0].p_t1 == pytest.approx(0.65) and r.images[1].p_t2 == pytest.approx(0.8)
    assert r.soft.score == pytest.approx(100 * (0.65 + 0.8) / 2)
    assert [a.p_stereotyped for a in r.images[0].by_order] == pytest.approx([0.9, 0.4])
    assert r.images[0].verdict == "tie" and r.images[1].verdict == "T2"
    assert (r.hard.n, r.hard.n_stereotyped, r.n_refused) == (3, 2, 1)  # doctor|red, nurse|blue; nurse|red is anti
    assert r.position_bias.k == 3 and r.position_bias.n == 3  # each parseable answer named the list named first
    assert r.order_consistency.n == 1 and r.order_consistency.k == 0


def test_a_model_that_always_refuses_has_no_share_and_says_why(stub, images, base):
    from biastest.errors import DataError
    from biastest.measures.vlm.summary import MSG_NO_CHOICES

    stub.rule = lambda terms, probs, pixels: "I cannot tell."
    with pytest.raises(DataError) as e:
        _run(stub, images, base)
    assert e.value.message == MSG_NO_CHOICES.format(total=2 * N, refused=2 * N, unparseable=0,
                                                    examples="'I cannot tell.'")
