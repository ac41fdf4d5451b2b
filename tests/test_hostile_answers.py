"""Answers an endpoint or a model's size hands us (issue 27): impossible log-probabilities, over-long questions.

Every case failed on the commit before the fix: an endpoint answering with a positive (or NaN, infinite)
log-probability was scored without a word, and a custom question or prompt template longer than a model's text
position table crashed with "Something unexpected went wrong". Everything runs on loopback stubs
(:mod:`tests.completions_stub`, :mod:`tests.chat_stub`, :mod:`tests.chat_images_stub`) and tiny models built from a
config.

A log-probability is ``log P ≤ 0``; a server's float32 ``log_softmax`` of a token it is sure of may round a few
units in the last place above 0, so values up to :data:`~biastest.models.endpoint_lm.served.LOGPROB_TOLERANCE`
(1e-6) are read as given; anything else makes that answer unreadable.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from biastest import cli, public
from biastest.errors import EndpointError, MethodError
from biastest.measures.stereotype.score import REASONS, score_pairs
from biastest.measures.vlm.run import MSG_ONE_ORDER_PROBABILITY
from biastest.models import endpoint_vlm as V
from biastest.models.cache import ModelCache
from biastest.models.chat_records import REPLY_ANSWERED, ChatRequest
from biastest.models.endpoint_chat import EndpointChatLM
from biastest.models.endpoint_lm import EndpointCausalLM
from biastest.models.endpoint_lm.causal import MSG_ALL_UNREADABLE, MSG_SOME_UNREADABLE
from biastest.models.endpoint_lm.served import LOGPROB_TOLERANCE, MSG_BAD_LOGPROB, is_logprob
from biastest.models.vlm import MSG_TEXT_TOO_LONG, load_vlm
from biastest.records import SentencePair
from biastest.remote import RetryPolicy, RunLimits
from biastest.spec import BiasSpec
from tests import lm_helpers
from tests import vlm_helpers as H
from tests.chat_images_stub import ChatImagesStub
from tests.chat_stub import ChatStub
from tests.completions_stub import Action, CompletionsStub

SEED = 5
FAST = RetryPolicy(max_retries=1, initial_delay=0.01, factor=1.0, max_delay=0.02, jitter=0.0)
#: What a hostile or broken server may put where a log-probability belongs.
IMPOSSIBLE = ["5", "0.5", "1e-3", "2e-6", "nan", "inf", "-inf", "1e308"]
#: Values at or below 0 (and float rounding above it) that are log-probabilities.
POSSIBLE = ["0", "-0", "1e-7", "1e-6", "-1e-300", "-30"]


@pytest.fixture(autouse=True)
def private_mode(monkeypatch):
    """The stubs live on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


@pytest.mark.parametrize("text", IMPOSSIBLE + POSSIBLE)
def test_a_log_probability_is_finite_and_at_most_zero(text):
    assert is_logprob(float(text)) is (text in POSSIBLE)
    assert LOGPROB_TOLERANCE == 1e-6


# =========================================================================== completions (the stereotype score)
def _pair(a: str, b: str) -> SentencePair:
    return SentencePair(stereotyped=a, anti_stereotyped=b, source="test")


PAIRS = [_pair("He is good at math.", "She is good at math."),
         _pair("The nurse said that she would be late.", "The nurse said that he would be late."),
         _pair("My mom cooked all day.", "My dad cooked all day."),
         _pair("Women cannot drive.", "Men cannot drive.")]


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> Path:
    return lm_helpers.build_tiny_gpt2(tmp_path_factory.mktemp("hostile_answers") / "gpt2", seed=SEED)


@pytest.fixture(scope="module")
def completions(gpt2_dir):
    with CompletionsStub(gpt2_dir, served_name="tiny-gpt2") as stub:
        yield stub


@pytest.fixture
def lm_stub(completions):
    completions.reset()
    yield completions
    completions.reset()


def _lm(stub, gpt2_dir, *, text: bool = False) -> EndpointCausalLM:
    return EndpointCausalLM(stub.base_url, "tiny-gpt2", tokenizer=False if text else str(gpt2_dir), retry=FAST,
                            concurrency=1)


@pytest.fixture(scope="module")
def clean(completions, gpt2_dir):
    completions.reset()
    return {text: score_pairs(_lm(completions, gpt2_dir, text=text), PAIRS, method="causal-sum", batch_size=1)
            for text in (False, True)}


@pytest.mark.parametrize("text_prompts", [False, True], ids=["token-ids", "text"])
@pytest.mark.parametrize("value", IMPOSSIBLE)
def test_an_impossible_log_probability_leaves_its_request_unscored_and_says_so(value, text_prompts, lm_stub,
                                                                                gpt2_dir, clean):
    """One request (the first sentence, alone) answers ``value``: its pair is not scored, the others are as before."""
    lm_stub.script(Action("logprob", text=value))
    lm = _lm(lm_stub, gpt2_dir, text=text_prompts)
    scores = score_pairs(lm, PAIRS, method="causal-sum", batch_size=1)
    first, rest = scores[0], scores[1:]
    assert not first.scored and first.excluded_code == "unreadable-answer"
    assert first.excluded_reason == REASONS["unreadable-answer"].format(why=MSG_BAD_LOGPROB)
    assert [(s.score_stereotyped, s.score_anti) for s in rest] == [
        (s.score_stereotyped, s.score_anti) for s in clean[text_prompts][1:]]
    d = lm.describe()
    assert d["requests_unreadable"] == 1 and d["sentences_not_scored"] == 1
    assert MSG_SOME_UNREADABLE.format(requests=1, why=MSG_BAD_LOGPROB, missing=1, total=2 * len(PAIRS)) in d["notes"]


@pytest.mark.parametrize("value", POSSIBLE[:4])
def test_zero_and_float_rounding_above_it_are_read_as_given(value, lm_stub, gpt2_dir, clean):
    lm_stub.script(Action("logprob", text=value))
    scores = score_pairs(_lm(lm_stub, gpt2_dir), PAIRS, method="causal-sum", batch_size=1)
    assert all(s.scored for s in scores)
    assert scores[1:] == clean[False][1:]


@pytest.mark.parametrize("value", ["5", "nan", "inf"])
def test_an_endpoint_whose_every_answer_is_impossible_scores_nothing_and_says_so(value, lm_stub, gpt2_dir):
    lm_stub.always(Action("logprob", text=value))
    lm = _lm(lm_stub, gpt2_dir)
    with pytest.raises(EndpointError) as e:
        score_pairs(lm, PAIRS, method="causal-sum", batch_size=3)
    assert e.value.message == MSG_ALL_UNREADABLE.format(where=lm_stub.base_url, why=MSG_BAD_LOGPROB)


def test_the_command_line_says_so_and_writes_nothing(lm_stub, gpt2_dir, tmp_path, capsys):
    """The run of the issue: +5 everywhere was reported as a 79 % score; now exit 1 with the message."""
    lm_stub.always(Action("logprob", text="5"))
    pairs = tmp_path / "crows.csv"
    pairs.write_text("sent_more,sent_less,stereo_antistereo,bias_type\n"
                     + "".join(f"{p.stereotyped.replace(',', '')},{p.anti_stereotyped},stereo,gender\n" for p in PAIRS),
                     encoding="utf-8")
    spec = tmp_path / "spec.json"
    spec.write_text(BiasSpec.from_terms(group1="she, woman", group2="he, man", stereotype1="nurse",
                                        antistereotype1="pilot", name="x").to_json(), encoding="utf-8")
    out = tmp_path / "r.json"
    code = cli.main(["run", str(spec), "--kind", "lm", "--endpoint", lm_stub.base_url, "--model", "tiny-gpt2",
                     "--tokenizer", str(gpt2_dir), "--pairs", str(pairs), "--out", str(out), "--bootstrap", "200"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_RUN_FAILED and not out.exists()
    assert MSG_ALL_UNREADABLE.format(where=lm_stub.base_url, why=MSG_BAD_LOGPROB) in err
    assert "Unexpected" not in err and "Traceback" not in err


# =========================================================================== chat (models that only answer)
@pytest.fixture(scope="module")
def chat_server():
    with ChatStub(lambda messages, seed: "nurse it is", served_name="stub-chat") as stub:
        yield stub


@pytest.mark.parametrize("value", IMPOSSIBLE)
def test_chat_log_probabilities_that_are_impossible_are_not_kept_but_the_answer_is(value, chat_server):
    chat_server.reset()
    chat_server.script(Action("logprob", text=value))
    lm = EndpointChatLM(chat_server.base_url, "stub-chat", retry=FAST, concurrency=1,
                        limits=RunLimits(max_requests=20, max_seconds=30.0, request_timeout=5.0))
    first, second = lm.chat([ChatRequest.ask("Who is it?", top_logprobs=2)] * 2)
    assert first.status == REPLY_ANSWERED and first.text == "nurse it is"
    assert first.top_logprobs is None and first.extra["logprobs_unreadable"] == MSG_BAD_LOGPROB
    assert second.top_logprobs is not None and all(is_logprob(v) for t in second.top_logprobs for v in t.values())
    counts = lm.describe()["questions"]
    assert counts["unreadable_logprobs"] == 1 and counts["answers_with_logprobs"] == 1


def test_chat_log_probabilities_at_float_rounding_above_zero_are_kept(chat_server):
    chat_server.reset()
    chat_server.script(Action("logprob", text="1e-7"))
    lm = EndpointChatLM(chat_server.base_url, "stub-chat", retry=FAST, concurrency=1)
    (reply,) = lm.chat([ChatRequest.ask("Who is it?", top_logprobs=2)])
    assert reply.top_logprobs is not None and "logprobs_unreadable" not in reply.extra  # the token's 1e-7 was read


# =========================================================================== VQA through a chat endpoint
VQA_SPEC = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse",
                               name="hostile colours")


@pytest.fixture(scope="module")
def vqa(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile_vqa")
    images = H.colour_images(base / "store", per_term=2, seed=SEED)
    with ChatImagesStub(H.save_tiny_clip(base / "clip"), served_name="tiny-llava") as stub:
        yield stub, images, base / "store"


@pytest.mark.parametrize("value", IMPOSSIBLE)
def test_vqa_log_probabilities_that_are_impossible_give_that_image_no_probability(value, vqa):
    stub, images, root = vqa
    stub.reset()
    stub.script(Action("logprob", text=value))
    result = H.run_vlm(images=images, image_root=root, spec=VQA_SPEC, model_id="tiny-llava", endpoint=stub.base_url,
                       concurrency=1, retry=FAST, seed=SEED, n_resamples=200)
    # each image is asked in both orders: the one answer with impossible numbers has no probability (its image keeps
    # the other order's), its text still counts in the single answers, and the result says so
    missing = [o for i in result.images for o in i.by_order if o.p_stereotyped is None]
    assert len(missing) == 1 and missing[0].outcome in ("T1", "T2")
    assert result.n_soft == len(images)
    assert any(n == MSG_ONE_ORDER_PROBABILITY.format(count=1, total=len(images),
                                                     reasons=f"{V.MSG_IMAGE_BAD_LOGPROBS}: 1") for n in result.notes)
    assert all(i.verdict in ("T1", "T2", "neither", "tie") for i in result.images)
    assert stub.count() == 2 * len(images)


# =========================================================================== over-long questions and templates
@pytest.fixture(scope="module")
def vlms(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hostile_vlm")
    return {"clip": H.save_tiny_clip(base / "clip"), "vilt": H.save_tiny_vilt(base / "vilt", ["doctor", "nurse"]),
            "blip": H.save_tiny_blip_vqa(base / "blip"), "git": H.save_tiny_git(base / "git"),
            "blipcap": H.save_tiny_blip_caption(base / "blipcap")}


@pytest.fixture(scope="module")
def vlm_images(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_vlm_images")
    return H.colour_images(root, per_term=1, seed=SEED), root


LONG = {"clip": {"prompt_template": ["a photo of a {} " + "very " * 200]},
        **{k: {"question": "Is this a {T1} or a {T2}? " + "really " * 300} for k in ("vilt", "blip", "git", "blipcap")}}


@pytest.mark.parametrize("kind", list(LONG))
def test_a_question_or_template_longer_than_the_model_reads_is_refused_with_a_message(kind, vlms, vlm_images):
    images, root = vlm_images
    with pytest.raises(MethodError) as e:
        H.run_vlm(images=images, image_root=root, spec=VQA_SPEC, model_id=str(vlms[kind]), seed=SEED,
                  n_resamples=200, device="cpu", cache=ModelCache(1), **LONG[kind])
    n_tokens, limit = e.value.details["n_tokens"], e.value.details["limit"]
    assert n_tokens > limit > 0
    what = "prompt" if kind == "clip" else "question (with its longest answer)" if kind in ("git", "blipcap") \
        else "question"
    text = LONG[kind].get("question", "") or LONG[kind]["prompt_template"][0].replace("{}", "doctor")
    text = text.replace("{T1}", "doctor").replace("{T2}", "nurse").strip()
    assert e.value.message == MSG_TEXT_TOO_LONG.format(what=what, text=text[:80] + "…", n_tokens=n_tokens,
                                                       limit=limit, model_id=str(vlms[kind]))


def _words_to(model, n_tokens: int, template: str) -> str:
    """A text of exactly ``n_tokens`` tokens (special tokens included) for ``model``'s tokenizer."""
    words = 0
    while len(model.tokenizer(template.format(" x" * (words + 1)))["input_ids"]) <= n_tokens:
        words += 1
    text = template.format(" x" * words)
    assert len(model.tokenizer(text)["input_ids"]) == n_tokens
    return text


def test_the_limit_is_the_position_table_exactly(vlms, vlm_images):
    """ViLT (40 positions): a question of 40 tokens runs, one of 41 is refused with the counts."""
    from biastest.models.images import load_image

    images, root = vlm_images
    model = load_vlm(str(vlms["vilt"]), device="cpu", cache=None)
    limit = model.max_text_tokens
    assert limit == model.model.config.max_position_embeddings == 40
    fits = _words_to(model, limit, "Is it{}?")
    logits = model.answer_logits([load_image(root / images[0].path)], model.encode_question(fits))
    assert logits.shape[0] == 1 and all(math.isfinite(v) for v in logits[0])
    longer = fits.replace("?", " x?")
    with pytest.raises(MethodError) as e:
        model.encode_question(longer)
    assert e.value.message == MSG_TEXT_TOO_LONG.format(what="question", text=longer, n_tokens=limit + 1, limit=limit,
                                                       model_id=str(vlms["vilt"]))


def test_a_captioner_needs_room_for_its_answer(vlms, vlm_images):
    """GIT (64 positions): a question that fits but leaves less than max_new_tokens for the answer is refused."""
    from biastest.models.images import load_image

    images, root = vlm_images
    model = load_vlm(str(vlms["git"]), device="cpu", cache=None)
    question = _words_to(model, model.max_text_tokens - 4, "Is it{}?")
    image = load_image(root / images[0].path)
    prepared = model.prepare(question, ["doctor", "nurse"], image)
    with pytest.raises(MethodError) as e:
        model.generate_answers([image], prepared, max_new_tokens=8)
    assert "with an answer of 8 tokens" in e.value.message
    assert len(model.generate_answers([image], prepared, max_new_tokens=2)) == 1


def test_the_command_line_refuses_a_long_template_with_exit_2(vlms, tmp_path, capsys):
    images = tmp_path / "images"
    for img in H.colour_images(tmp_path / "scratch", per_term=1, seed=SEED):
        (images / img.image_term).mkdir(parents=True, exist_ok=True)
        (images / img.image_term / Path(img.path).name).write_bytes((tmp_path / "scratch" / img.path).read_bytes())
    spec = tmp_path / "spec.json"
    spec.write_text(VQA_SPEC.to_json(), encoding="utf-8")
    code = cli.main(["run", str(spec), "--kind", "vlm", "--model", str(vlms["clip"]), "--images", str(images),
                     "--prompt-template", "a photo of a {} " + "very " * 200, "--out", str(tmp_path / "r.json"),
                     "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE and "tokens long for the model" in err and "Unexpected" not in err


# =========================================================================== any answer at all
ODD = [None, True, 0, -1, 1, 10**400, -(10**400), 1.5, math.nan, math.inf, -math.inf, "", "x", [], {}, [1], [None],
       {"a": 1}, ["a", "b"], [-0.1, -0.2], [None, -0.1, -0.2], [None, "x", 5]]


def _odd_completion(rng) -> object:
    logprobs = {"tokens": rng.choice([*ODD, ["a", "b", "c"]]), "token_logprobs": rng.choice([*ODD, [None, -0.5, -0.1]])}
    choice = {"index": rng.choice([0, None, "0", 1, True]),
              "logprobs": logprobs if rng.random() > 0.2 else rng.choice(ODD)}
    body = {"choices": [choice if rng.random() > 0.1 else rng.choice(ODD)], "model": rng.choice(["m", None, 5, ""])}
    return body if rng.random() > 0.1 else rng.choice(ODD)


def _odd_chat(rng) -> object:
    alternative = {"token": rng.choice(["doctor", 5]), "logprob": rng.choice(ODD)}
    entry = {"token": rng.choice(["a", 5, None]), "logprob": rng.choice(ODD),
             "top_logprobs": rng.choice([*ODD, [alternative]])}
    logprobs = {"content": rng.choice([[entry], entry, None, rng.choice(ODD)])}
    message = {"content": rng.choice(["doctor", None, 5, [{"text": "doctor"}], ["x"]]),
               "refusal": rng.choice([None, "no", 5])}
    choice = {"message": message if rng.random() > 0.1 else rng.choice(ODD),
              "logprobs": logprobs if rng.random() > 0.2 else rng.choice(ODD), "finish_reason": rng.choice(["stop", 5])}
    body = {"choices": [choice] if rng.random() > 0.1 else rng.choice(ODD), "model": rng.choice(["m", None, 5, ""]),
            "system_fingerprint": rng.choice(["fp", None, 5])}
    return body if rng.random() > 0.05 else rng.choice(ODD)


def test_no_answer_shape_escapes_as_an_unexpected_error():
    """2,000 seeded odd answers per protocol (400-digit integers, NaN, wrong types, missing parts): each is read, or
    refused with the protocol's own error — never another exception (which the user would see as "Unexpected")."""
    import random

    from biastest.errors import BiastestError
    from biastest.models.endpoint_chat import _Garbled
    from biastest.models.endpoint_vlm import EndpointVLM

    seed = 20261127
    print(f"fuzz seed: {seed}")
    rng = random.Random(seed)
    lm = EndpointCausalLM("http://127.0.0.1:9/v1", "m", tokenizer=False)
    chat = EndpointChatLM("http://127.0.0.1:9/v1", "m")
    vlm = EndpointVLM("http://127.0.0.1:9/v1", "m")
    escaped = []
    for _ in range(2000):
        for name, read in (("completions", lambda: lm._parse(_odd_completion(rng), ["a b c"])),
                           ("chat", lambda: chat._parse(_odd_chat(rng), asked_logprobs=True)),
                           ("vqa", lambda: vlm._parse(_odd_chat(rng), VQA_SPEC, asked_logprobs=True))):
            try:
                read()
            except (BiastestError, _Garbled):
                pass
            except Exception as exc:  # what the test looks for
                escaped.append((name, type(exc).__name__, str(exc)[:100]))
    assert escaped == []
    assert not is_logprob(-(10**400)) and not is_logprob(10**400)


# =========================================================================== the vision-language app, through its API
@pytest.fixture(scope="module")
def vqa_app(tmp_path_factory, vlms):
    """The vision-language app on 127.0.0.1 (private mode: a model folder may be named), a spec and four pictures."""
    from gradio_client import Client, handle_file

    from biastest.ui import vqa
    from biastest.ui.spec_step import CUSTOM
    from tests.browser_helpers import served
    from tests.openai_stub import png_bytes

    folder = tmp_path_factory.mktemp("hostile_vqa_app")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
        with served(vqa.build_demo()) as url:
            client = Client(url, verbose=False)
            client.predict(CUSTOM, "man", "woman", "doctor", "nurse", api_name="/confirm_handler")
            for term in ("man", "woman"):
                files = []
                for i in range(2):
                    p = folder / f"{term}{i}.png"
                    p.write_bytes(png_bytes(color=(40 * i, 90 if term == "man" else 10, 30)))
                    files.append(handle_file(str(p)))
                assert "✅" in str(client.predict(files, term, api_name="/upload_handler"))
            yield client


def test_the_app_shows_a_long_template_next_to_the_button_not_something_unexpected(vqa_app, vlms):
    """The issue's case in the app: a custom template of 800 tokens on a model that reads 32 (a CLIP's position
    table) was "Something unexpected went wrong"; now the message, inline."""
    import html

    from biastest.measures.vlm.options import COMBINE_CHOICES, DEFAULT_PROMPT_TEMPLATE, DEFAULT_QUESTION

    template = "a photo of a {} " + "very " * 200
    out = vqa_app.predict(str(vlms["clip"]), [DEFAULT_PROMPT_TEMPLATE], template, COMBINE_CHOICES[0],
                          DEFAULT_QUESTION, 0, 4, 200, api_name="/run_handler")
    assert out[0].startswith("⚠️ "), out
    message = html.unescape(out[0].removeprefix("⚠️ "))
    assert "tokens long for the model" in message and "reads at most 32 tokens" in message
    assert "unexpected" not in message.lower()
