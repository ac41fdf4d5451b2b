"""Every model backend satisfies its protocol (biastest.models.protocols), and the factory picks the right one.

In-process backends are tiny models built from configurations (tests/lm_helpers.py, tests/vlm_helpers.py,
tests/generate_helpers.py for an instruct model with a chat template); the endpoint backends talk to the HTTP stubs on
127.0.0.1 (tests/completions_stub.py, tests/chat_images_stub.py, tests/chat_stub.py); the
dummies (biastest.models.dummy) give reproducible answers. Positive controls: an object missing any one member of
a protocol is not an instance of it, and an ``isinstance`` check sends no request to an endpoint.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from biastest import public
from biastest.models import dummy as D
from biastest.models import protocols as P
from biastest.models.cache import ModelCache
from biastest.models.chat_records import REPLY_ANSWERED, ChatRequest
from biastest.models.embeddings import InMemoryEmbeddings, KeyedVectorsEmbeddings, WordEmbeddings
from biastest.models.endpoint_chat import EndpointChatLM
from biastest.models.endpoint_lm import EndpointCausalLM
from biastest.models.endpoint_vlm import EndpointVLM
from biastest.models.factory import (
    EndpointRef,
    ModelRef,
    chat_model,
    language_model,
    vision_language_model,
    word_vectors,
)
from biastest.models.lm import CausalLanguageModel, MaskedLanguageModel, MaskedQuery
from biastest.models.local_chat import LocalChatLM
from biastest.models.response_cache import CachedChatLM
from biastest.models.vlm import ClipLikeModel, GenerativeVLM, VQAClassifierModel
from biastest.remote import RetryPolicy
from biastest.spec import BiasSpec
from tests import lm_helpers as H
from tests import vlm_helpers as V
from tests.chat_images_stub import ChatImagesStub
from tests.chat_stub import ChatStub
from tests.completions_stub import CompletionsStub
from tests.generate_helpers import build_tiny_gpt2 as build_tiny_chat_gpt2

SEED = 5
print(f"test seed: {SEED}")
SERVED_LM = "tiny-gpt2"
SERVED_VLM = "tiny-llava"
SERVED_CHAT = "tiny-chat"
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
KEY = "sk-protocol-test-secret"
FAST = RetryPolicy(max_retries=1, initial_delay=0.01, factor=1.0, max_delay=0.05, jitter=0.0)
SPEC = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse",
                           name="protocol colours")

LANGUAGE = (P.CausalLM, P.TextCausalLM, P.MaskedLM)
VISION = (P.ContrastiveVLM, P.AnswerClassifierVLM, P.AnswerGeneratorVLM, P.ChatVLM)
ALL = (*LANGUAGE, *VISION, P.ChatLM, P.WordVectors, P.TextClassifier)


def _satisfies(obj) -> set[type]:
    return {proto for proto in ALL if isinstance(obj, proto)}


@pytest.fixture(autouse=True)
def private_mode(monkeypatch):
    """The stubs live on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("protocols")


@pytest.fixture(scope="module")
def gpt2_dir(base) -> Path:
    return H.build_tiny_gpt2(base / "gpt2", seed=SEED)


@pytest.fixture(scope="module")
def clip_dir(base) -> Path:
    return V.save_tiny_clip(base / "clip", seed=SEED)


@pytest.fixture(scope="module")
def cache() -> ModelCache:
    return ModelCache(8)


# ----------------------------------------------------------------------------- in process
def test_in_process_language_models_satisfy_their_protocol(base, gpt2_dir, cache):
    bert = language_model(ModelRef(str(H.build_tiny_bert(base / "bert", seed=SEED)), device="cpu"), cache=cache)
    gpt2 = language_model(ModelRef(str(gpt2_dir), device="cpu"), cache=cache)
    assert type(bert) is MaskedLanguageModel and _satisfies(bert) == {P.MaskedLM}
    assert type(gpt2) is CausalLanguageModel and _satisfies(gpt2) == {P.CausalLM}
    assert isinstance(bert, P.ModelBackend) and isinstance(gpt2, P.ModelBackend)
    assert language_model(ModelRef(str(gpt2_dir), device="cpu"), cache=cache) is gpt2  # once per process
    ids = gpt2.encode("she is a nurse")
    (values,) = gpt2.token_log_probs([ids])
    assert values.shape == (len(ids),) and values.dtype == np.float64 and (values < 0).all()
    query = MaskedQuery.single(bert.encode("he is a pilot"), 2)
    (masked,) = bert.masked_log_probs([query])
    assert masked.shape == (1,) and masked[0] < 0


def test_in_process_vision_language_models_satisfy_their_protocol(base, clip_dir, cache):
    clip = vision_language_model(ModelRef(str(clip_dir), device="cpu"), cache=cache)
    vilt = vision_language_model(ModelRef(str(V.save_tiny_vilt(base / "vilt", ["red", "blue"], seed=SEED)),
                                          device="cpu"), cache=cache)
    git = vision_language_model(ModelRef(str(V.save_tiny_git(base / "git", seed=SEED)), device="cpu"), cache=cache)
    assert type(clip) is ClipLikeModel and _satisfies(clip) == {P.ContrastiveVLM}
    assert type(vilt) is VQAClassifierModel and _satisfies(vilt) == {P.AnswerClassifierVLM}
    assert type(git) is GenerativeVLM and _satisfies(git) == {P.AnswerGeneratorVLM}
    for model in (clip, vilt, git):
        assert isinstance(model, P.ModelBackend)
        assert model.describe()["model_id"] == model.model_id and model.describe()["model_kind"] == model.kind


def test_the_in_process_chat_model_satisfies_the_chat_protocol(base, tmp_path):
    folder = build_tiny_chat_gpt2(base / "chat", chat_template=CHAT_TEMPLATE, n_positions=128)
    chat = chat_model(ModelRef(str(folder), device="cpu"))
    cached = chat_model(ModelRef(str(folder), device="cpu"), cache_dir=tmp_path)
    assert type(chat) is LocalChatLM and _satisfies(chat) == {P.ChatLM} and isinstance(chat, P.ModelBackend)
    assert type(cached) is CachedChatLM and _satisfies(cached) == {P.ChatLM} and isinstance(cached, P.ModelBackend)
    (reply,) = chat.chat([ChatRequest.ask("Who is a nurse?", max_tokens=3)])
    assert reply.status == REPLY_ANSWERED and isinstance(reply.text, str) and chat.stop_message is None
    assert chat.describe()["model_id"] == chat.model_id and chat.describe()["model_kind"] == chat.kind == "chat"


def test_embedding_backends_satisfy_word_vectors(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("2 3\nnurse 0.1 0.2 0.3\npilot 0.3 0.2 0.1\n", encoding="utf-8")
    from_file = word_vectors(f"file:{path}", cache=ModelCache(1))
    in_memory = InMemoryEmbeddings("mem", ["a", "b"], np.eye(2))
    assert type(from_file) is KeyedVectorsEmbeddings and _satisfies(from_file) == {P.WordVectors}
    assert word_vectors(in_memory) is in_memory and _satisfies(in_memory) == {P.WordVectors}
    vecs, missing = from_file.vectors(["nurse", "doctor"])
    assert vecs.shape == (1, 3) and missing == ["doctor"]


# ----------------------------------------------------------------------------- behind an endpoint
@pytest.fixture(scope="module")
def lm_server(gpt2_dir):
    with CompletionsStub(gpt2_dir, served_name=SERVED_LM) as stub:
        yield stub


@pytest.fixture(scope="module")
def vlm_server(clip_dir):
    with ChatImagesStub(clip_dir, served_name=SERVED_VLM) as stub:
        yield stub


def test_the_endpoint_language_model_satisfies_the_causal_protocols(lm_server, gpt2_dir, cache):
    lm_server.reset()
    ref = ModelRef(SERVED_LM, endpoint=EndpointRef(lm_server.base_url, tokenizer=str(gpt2_dir), max_requests=20,
                                                  time_limit=30.0, request_timeout=10.0))
    lm = language_model(ref, api_key=KEY, retry=FAST)
    assert type(lm) is EndpointCausalLM and lm.limits.request_timeout == 10.0
    assert _satisfies(lm) == {P.CausalLM, P.TextCausalLM}
    assert lm_server.count() == 0  # the check looked at the members; it asked the server nothing
    here = language_model(ModelRef(str(gpt2_dir), device="cpu"), cache=cache)
    ids = here.encode("she is a nurse")
    (there,) = lm.token_log_probs([ids])
    np.testing.assert_allclose(there, here.token_log_probs([ids])[0], atol=1e-4)
    text = language_model(ModelRef(SERVED_LM, endpoint=EndpointRef(lm_server.base_url, tokenizer=False)), retry=FAST)
    assert type(text) is EndpointCausalLM and text.prompts == "text"
    (tokens, values), = text.text_log_probs(["she is a nurse"])
    assert len(tokens) == len(values) and np.isnan(values[0])
    assert KEY not in json.dumps(lm.describe()) + repr(lm) + json.dumps(ref.dump())


def test_the_endpoint_vision_language_model_satisfies_the_chat_protocol(vlm_server, base):
    vlm_server.reset()
    ref = ModelRef(SERVED_VLM, endpoint=EndpointRef(vlm_server.base_url, max_requests=20, time_limit=30.0))
    vlm = vision_language_model(ref, api_key=KEY, retry=FAST)
    assert type(vlm) is EndpointVLM and _satisfies(vlm) == {P.ChatVLM}
    assert vlm_server.count() == 0
    rng = np.random.default_rng(SEED)
    images = [V.shape_image("red", "square", rng=rng), V.shape_image("blue", "circle", rng=rng)]
    answers = vlm.ask(images, spec=SPEC, question="What is this person's job?")
    assert len(answers) == 2 and all(a.term in SPEC.attribute_terms for a in answers)
    assert KEY not in json.dumps(vlm.describe()) + repr(vlm)


def test_the_endpoint_chat_model_satisfies_the_chat_protocol():
    with ChatStub(lambda messages, seed: "A", served_name=SERVED_CHAT) as stub:
        ref = ModelRef(SERVED_CHAT, endpoint=EndpointRef(stub.base_url, max_requests=20, time_limit=30.0))
        chat = chat_model(ref, api_key=KEY, retry=FAST)
        assert type(chat) is EndpointChatLM and _satisfies(chat) == {P.ChatLM}
        assert stub.count() == 0  # the check looked at the members; it asked the server nothing
        (reply,) = chat.chat([ChatRequest.ask("Who is a nurse? Answer A or B.", seed=SEED)])
        assert reply.text == "A" and reply.served_model == SERVED_CHAT and chat.stop_message is None
        assert KEY not in json.dumps(chat.describe()) + repr(chat)


def test_a_reference_dump_holds_no_key_and_no_credentials():
    ref = ModelRef("served", endpoint=EndpointRef("http://user:pw@127.0.0.1:8000/v1?api_key=x", tokenizer=False))
    dumped = json.dumps(ref.dump())
    assert "pw" not in dumped and "api_key" not in dumped
    assert ref.dump()["endpoint"]["base_url"] == "http://127.0.0.1:8000/v1" and ref.served_by == "endpoint"
    assert "api_key" not in inspect.signature(ModelRef).parameters
    assert "api_key" not in inspect.signature(EndpointRef).parameters
    assert ModelRef("gpt2").served_by == "process"


# ----------------------------------------------------------------------------- the dummies
DUMMIES = {
    P.CausalLM: D.DummyCausalLM,
    P.TextCausalLM: D.DummyCausalLM,
    P.MaskedLM: D.DummyMaskedLM,
    P.ContrastiveVLM: D.DummyContrastiveVLM,
    P.AnswerClassifierVLM: D.DummyAnswerClassifierVLM,
    P.AnswerGeneratorVLM: D.DummyAnswerGeneratorVLM,
    P.ChatVLM: D.DummyChatVLM,
    P.TextClassifier: D.DummyTextClassifier,
}


def _dummy(proto):
    if proto is P.ChatLM:  # answers by a planted rule, not by a seed
        return D.DummyChatLM(lambda request: request.messages[-1][1][:1])
    return D.DummyWordVectors(["nurse", "pilot"], seed=SEED) if proto is P.WordVectors else DUMMIES[proto](seed=SEED)


@pytest.mark.parametrize("proto", ALL, ids=lambda p: p.__name__)
def test_each_protocol_has_a_dummy_that_satisfies_it(proto):
    obj = _dummy(proto)
    assert isinstance(obj, proto)
    if proto is P.ChatLM:
        assert isinstance(obj, P.ModelBackend) and [r.text for r in obj.chat([ChatRequest.ask("Nurse?")])] == ["N"]
    elif proto is not P.WordVectors:
        assert isinstance(obj, P.ModelBackend) and obj.describe()["seed"] == SEED


def _answers(seed: int) -> list[np.ndarray]:
    causal, masked = D.DummyCausalLM(seed=seed), D.DummyMaskedLM(seed=seed)
    clip, vqa, gen = (cls(seed=seed) for cls in (D.DummyContrastiveVLM, D.DummyAnswerClassifierVLM,
                                                 D.DummyAnswerGeneratorVLM))
    rng = np.random.default_rng(SEED)
    images = [V.shape_image("red", "square", rng=rng), V.shape_image("blue", "circle", rng=rng)]
    prepared = gen.prepare("Who is this?", ["doctor", "nurse"], images[0])
    chat = D.DummyChatVLM(seed=seed).ask(images, spec=SPEC, question="Who is this?")
    return [
        *causal.token_log_probs([causal.encode("she is a nurse"), causal.encode("he is a pilot")]),
        causal.text_log_probs(["she is a nurse"])[0][1],
        *masked.masked_log_probs([MaskedQuery.single(masked.encode("she is a nurse"), 2)]),
        clip.similarities(clip.encode_images(images), clip.encode_text(["a doctor", "a nurse"])),
        vqa.answer_logits(images, vqa.encode_question("Who is this?")),
        gen.candidate_logprobs(images, prepared),
        np.array([a.probabilities["doctor"] for a in chat]),
        D.DummyWordVectors(["nurse", "pilot"], seed=seed).matrix(),
    ]


def test_the_dummies_answer_reproducibly_and_by_seed():
    first, again, other = _answers(SEED), _answers(SEED), _answers(SEED + 1)
    for a, b, c in zip(first, again, other, strict=True):
        np.testing.assert_array_equal(a, b)
        assert not np.allclose(np.nan_to_num(a), np.nan_to_num(c))
    # the hash has no per-process salt: these numbers are the same in every process and on every machine
    assert D.hashed_unit(0, "word", "nurse") == pytest.approx(0.7127719045058994, abs=1e-15)
    assert D.hashed_unit(1, "x") == pytest.approx(0.9909978395624465, abs=1e-15)
    lm = D.DummyCausalLM(seed=1)
    assert [round(float(v), 2) for v in lm.token_log_probs([lm.encode("a nurse")])[0]] == [-4.71, -0.33]
    assert D.DummyAnswerGeneratorVLM(seed=SEED).generate_answers(["img"], {"question_text": "q",
                                                                           "candidates": ["a", "b"]})[0] in "ab"


def test_the_dummy_masked_model_places_the_mask_by_offsets():
    tok = D.DummyMaskedLM().tokenizer
    enc = tok("she is a [MASK]", add_special_tokens=True, return_offsets_mapping=True)
    assert enc["input_ids"][0] == 0 and enc["input_ids"][-1] == 2 and enc["input_ids"][4] == tok.mask_token_id
    assert enc["offset_mapping"][4] == (9, 15)


# ----------------------------------------------------------------------------- positive controls
def _without(obj, missing: str | None, proto) -> object:
    """An object with the protocol's members taken from ``obj``, less ``missing``."""
    members = {n: inspect.getattr_static(obj, n) for n in P.protocol_members(proto) if n != missing}
    return type("Partial", (), members)()


@pytest.mark.parametrize("proto", (P.ModelBackend, *ALL), ids=lambda p: p.__name__)
def test_an_object_missing_any_member_is_not_an_instance(proto):
    full = _dummy(P.CausalLM if proto is P.ModelBackend else proto)
    members = P.protocol_members(proto)
    assert members and isinstance(_without(full, None, proto), proto)  # the control of the control
    for name in sorted(members):
        assert not isinstance(_without(full, name, proto), proto), name
    assert not isinstance(object(), proto)


def test_an_isinstance_check_reads_no_property():
    class Guarded(D.DummyCausalLM):
        @property
        def max_length(self) -> int:  # as EndpointCausalLM's, which asks the server
            raise AssertionError("read during an isinstance check")

    assert isinstance(Guarded(), P.CausalLM)


def test_backends_satisfy_their_protocols_by_structure_not_inheritance():
    assert P.WordVectors not in WordEmbeddings.__mro__ and P.CausalLM not in D.DummyCausalLM.__mro__
    assert P.CausalLM not in CausalLanguageModel.__mro__ and P.ChatVLM not in EndpointVLM.__mro__
    assert P.ChatLM not in EndpointChatLM.__mro__ and P.ChatLM not in LocalChatLM.__mro__
