"""Models that only answer: the chat endpoint adapter, the local instruct model and the response cache.

The endpoint adapter (biastest.models.endpoint_chat) talks to a real HTTP server on 127.0.0.1
(tests/chat_stub.py) whose answers follow a rule planted here: the answers, the seeds sent (a later sample gets a
derived seed), the fingerprint and served name recorded, the log-probabilities read exactly as the stub built them,
log-probabilities refused (asked again without, remembered) or null; faults (429 with Retry-After, 5xx, answers
slower than the time-out, garbled bodies, content filters) end in no crash and no lost question; limits and the
stop signal keep what was answered; fatal answers end with the module's messages; public mode refuses the address
before any connection. The local model (biastest.models.local_chat) is a tiny random GPT-2 with a chat template
(gibberish answers): greedy answers are deterministic, sampled ones reproducible by (seed, sample) whatever the
batch and order, the top log-probabilities equal a naive forward-pass reference, and a model without a template is
refused first. The response cache (biastest.models.response_cache): a rerun asks nothing and answers the same, a
corrupt entry is asked again, failed replies are not kept, another model or request misses, no key on disk.
"""

from __future__ import annotations

import json
import math
import pickle
import threading
import time
from pathlib import Path

import pytest

from biastest import public, remote
from biastest.errors import EndpointError, ModelKindError, PolicyError
from biastest.measures.chat_common import ChatModelOptions, build_chat_model
from biastest.models import endpoint_chat as E
from biastest.models.chat_records import REPLY_ANSWERED, REPLY_FAILED, ChatReply, ChatRequest, sampling_seed
from biastest.models.dummy import DummyChatLM
from biastest.models.endpoint_chat import EndpointChatLM
from biastest.models.factory import EndpointRef, ModelRef, chat_model
from biastest.models.local_chat import MSG_LOCAL_PARTIAL, MSG_NO_CHAT_TEMPLATE, LocalChatLM
from biastest.models.response_cache import CACHE_FOLDER_NAME, CachedChatLM, default_cache_dir
from biastest.remote import STOP_BUDGET, STOP_CANCELLED, STOP_TIME, STOP_UNAVAILABLE, RetryPolicy, RunLimits
from tests.chat_stub import Action, ChatStub, answer_tokens, token_alternatives
from tests.generate_helpers import build_tiny_gpt2

SEED = 11
print(f"test seed: {SEED}")
SERVED = "stub-chat"
KEY = "sk-chat-SECRET-9f3e2a"
FAST = RetryPolicy(max_retries=2, initial_delay=0.01, factor=1.0, max_delay=0.05, jitter=0.0)
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


def rule(messages, seed) -> str:
    """The planted answer: the question's number and the seed, e.g. ``"Answer 3 (seed 7)"``."""
    return f"Answer {messages[-1]['content'].split()[-1]} (seed {seed})"


def questions(n: int, **settings) -> list[ChatRequest]:
    return [ChatRequest.ask(f"Question number {i}", system="Be brief.", **settings) for i in range(n)]


@pytest.fixture(autouse=True)
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


@pytest.fixture(scope="module")
def server():
    with ChatStub(rule, served_name=SERVED) as stub:
        yield stub


@pytest.fixture
def stub(server):
    server.reset()
    yield server
    server.reset()


def endpoint(stub, *, concurrency=2, max_requests=200, time_limit=30.0, request_timeout=5.0, retry=FAST,
             **kw) -> EndpointChatLM:
    return EndpointChatLM(stub.base_url, SERVED, concurrency=concurrency, retry=retry,
                          limits=RunLimits(max_requests=max_requests, max_seconds=time_limit,
                                           request_timeout=request_timeout), **kw)


# ----------------------------------------------------------------------------- through the endpoint
def test_answers_seeds_and_provenance_through_the_endpoint(stub):
    lm = endpoint(stub, api_key=KEY)
    asked = [*questions(3, seed=7, max_tokens=12, temperature=0.7), ChatRequest.ask("Question number 9")]
    asked.append(ChatRequest.ask("Question number 5", seed=7, sample=2, temperature=0.7))
    seen = []
    replies = lm.chat(asked, progress=lambda done, total, msg: seen.append((done, total)))
    derived = sampling_seed(asked[-1])
    assert derived not in (None, 7) and 0 <= derived < 2**31
    assert [r.text for r in replies] == ["Answer 0 (seed 7)", "Answer 1 (seed 7)", "Answer 2 (seed 7)",
                                         "Answer 9 (seed None)", f"Answer 5 (seed {derived})"]
    assert all(r.status == REPLY_ANSWERED and r.finish_reason == "stop" and r.served_model == SERVED
               and r.system_fingerprint == "fp_stub_chat" and r.top_logprobs is None and not r.cached
               for r in replies)
    bodies = sorted(stub.bodies(), key=lambda b: b["messages"][-1]["content"])
    first = bodies[0]
    assert first["messages"] == [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "Question number 0"}]
    assert first["max_tokens"] == 12 and first["temperature"] == 0.7 and first["seed"] == 7 and first["n"] == 1
    assert "logprobs" not in first and "top_logprobs" not in first
    assert "seed" not in next(b for b in bodies if b["messages"][-1]["content"].endswith("9"))
    assert sorted(seen)[-1] == (5, 5)
    d = lm.describe()
    assert d["served_model"] == SERVED and d["system_fingerprints"] == ["fp_stub_chat"]
    assert d["server_version"] == "stub-chat-1.0" and d["requests"]["chat"] == 5 and d["complete"]
    assert d["questions"]["answered"] == 5 and d["logprobs"] == "not asked" and d["api_key"] == "***"
    assert {r["headers"].get("authorization") for r in stub.requests if r["body"]} == {f"Bearer {KEY}"}
    assert KEY not in json.dumps(d) + repr(lm)
    with pytest.raises(TypeError):
        pickle.dumps(lm)


def test_log_probabilities_are_read_as_the_server_gave_them(stub):
    lm = endpoint(stub)
    (reply,) = lm.chat([ChatRequest.ask("Question number 4", seed=3, top_logprobs=2)])
    tokens = answer_tokens("Answer 4 (seed 3)")
    expected = tuple({**dict(token_alternatives(t, 2)), t: token_alternatives(t, 2)[0][1]} for t in tokens)
    assert reply.top_logprobs == expected and len(reply.top_logprobs) == 4
    assert reply.top_logprobs[0] == {"Answer": math.log(0.6), "ANSWER": math.log(0.3)}
    assert stub.bodies()[0]["logprobs"] is True and stub.bodies()[0]["top_logprobs"] == 2
    (capped,) = lm.chat([ChatRequest.ask("Question number 4", top_logprobs=50)])
    assert stub.bodies()[-1]["top_logprobs"] == E.MAX_TOP_LOGPROBS and capped.top_logprobs is not None
    assert lm.describe()["logprobs"] == "asked"
    assert lm.describe()["questions"]["answers_with_logprobs"] == 2


def test_log_probabilities_refused_are_asked_again_without_and_not_asked_for_again(stub):
    stub.refuse_logprobs = True
    lm = endpoint(stub, concurrency=1)
    replies = lm.chat(questions(4, top_logprobs=5))
    assert [r.text for r in replies] == [f"Answer {i} (seed None)" for i in range(4)]
    assert all(r.top_logprobs is None for r in replies)
    bodies = stub.bodies()
    assert len(bodies) == 5 and bodies[0]["logprobs"] is True  # asked with, refused, then never again
    assert all("logprobs" not in b for b in bodies[1:])
    assert lm.describe()["logprobs"] == "refused (HTTP 400)"


def test_log_probabilities_null_give_answers_without_them_and_say_so(stub):
    stub.give_logprobs = False
    lm = endpoint(stub)
    replies = lm.chat(questions(3, top_logprobs=5))
    assert all(r.status == REPLY_ANSWERED and r.top_logprobs is None for r in replies)
    assert lm.describe()["logprobs"] == "not given"
    assert lm.describe()["questions"]["answers_without_logprobs"] == 3


def test_faults_crash_nothing_and_lose_no_question(stub):
    """One batch meets every per-request fault; every question has its reply, in order."""
    ok = Action("sleep", seconds=0.0)
    stub.script(Action("status", 429, headers={"Retry-After": "0.05"}), Action("status", 500),
                Action("hang", seconds=3), ok, Action("garbage"), ok, Action("shapeless"), ok,
                Action("content_filter"), Action("filter400"), Action("refusal", text="I cannot help with that."),
                Action("no_logprobs"))
    retry = RetryPolicy(max_retries=3, initial_delay=0.01, factor=1.0, max_delay=0.1, jitter=0.0)
    lm = endpoint(stub, concurrency=1, request_timeout=0.4, retry=retry)
    t = time.monotonic()
    replies = lm.chat(questions(8, top_logprobs=1))
    elapsed = time.monotonic() - t
    print(f"faults answered in {elapsed:.2f} s: {[r.finish_reason for r in replies]}")
    assert elapsed < 6.0 and all(r is not None and r.status == REPLY_ANSWERED for r in replies)
    # question 0 answered on its 4th try (429, 500, a time-out); questions 1 and 2 on their 2nd (unreadable)
    assert [r.text for r in replies[:3]] == [f"Answer {i} (seed None)" for i in range(3)]
    assert (replies[3].text, replies[3].finish_reason) == ("", "content_filter")
    assert (replies[4].text, replies[4].finish_reason, replies[4].extra) == ("", "content_filter",
                                                                               {"http_status": 400})
    assert replies[5].text == "I cannot help with that." and replies[5].extra == {"refusal_field": True}
    assert replies[6].top_logprobs is None and replies[7].top_logprobs is not None
    assert replies[7].text == "Answer 7 (seed None)"
    d = lm.describe()
    assert d["transient_failures"] == {"rate_limit": 1, "server_error": 1, "timeout": 1}
    assert d["questions"]["content_filter"] == 2 and d["questions"]["failed"] == 0
    assert stub.count() == 13 == d["requests"]["chat"]


def test_an_answer_garbled_on_every_try_is_a_failed_reply_and_the_run_goes_on(stub):
    stub.script(Action("garbage"), Action("garbage"))
    lm = endpoint(stub, concurrency=1)
    replies = lm.chat(questions(3))
    assert replies[0] == ChatReply.failed(E.MSG_REPLY_GARBLED.format(problem="JSONDecodeError",
                                                                     tries=E.GARBLED_TRIES))
    assert replies[0].status == REPLY_FAILED and replies[0].text is None
    assert [r.text for r in replies[1:]] == ["Answer 1 (seed None)", "Answer 2 (seed None)"]
    assert lm.describe()["questions"]["failed"] == 1


def test_a_question_the_server_refuses_is_a_failed_reply(stub):
    stub.script(Action("status", 422))
    lm = endpoint(stub, concurrency=1)
    replies = lm.chat(questions(2))
    assert replies[0] == ChatReply.failed(E.MSG_REPLY_REJECTED.format(status=422))
    assert replies[1].text == "Answer 1 (seed None)"


def test_a_server_that_refuses_every_question_ends_the_run_early(stub):
    stub.always(Action("status", 400))
    lm = endpoint(stub, concurrency=1)
    with pytest.raises(EndpointError) as e:
        lm.chat(questions(30))
    assert e.value.message == E.MSG_NOTHING_ANSWERED.format(where=stub.base_url, count=E.FAIL_FAST,
                                                            error=E.MSG_REPLY_REJECTED.format(status=400))
    assert stub.count() == E.FAIL_FAST


def test_the_request_budget_stops_the_run_and_keeps_the_answers(stub):
    lm = endpoint(stub, concurrency=1, max_requests=3)
    replies = lm.chat(questions(5))
    assert [r.text if r else None for r in replies] == ["Answer 0 (seed None)", "Answer 1 (seed None)",
                                                        "Answer 2 (seed None)", None, None]
    why = E.MSG_WHY[STOP_BUDGET].format(max_requests=3)
    assert lm.stop_message == E.MSG_CHAT_PARTIAL.format(why=why, missing=2, total=5)
    assert lm.describe()["stopped_because"] == STOP_BUDGET and not lm.describe()["complete"]
    lm.chat(questions(1))  # a later call starts afresh: its own budget, no stop
    assert lm.stop_message is None


def test_the_time_limit_stops_the_run_and_keeps_the_answers(stub):
    stub.always(Action("sleep", seconds=0.3))
    lm = endpoint(stub, concurrency=1, time_limit=1.0, request_timeout=1.0)
    t = time.monotonic()
    replies = lm.chat(questions(10))
    elapsed = time.monotonic() - t
    answered = [r for r in replies if r is not None]
    print(f"time limit 1 s: {len(answered)} of 10 answered in {elapsed:.2f} s")
    assert 1 <= len(answered) <= 4 and elapsed < 2.5 and replies[-1] is None
    assert all(r.text == f"Answer {i} (seed None)" for i, r in enumerate(replies) if r is not None)
    assert lm.describe()["stopped_because"] == STOP_TIME
    assert lm.stop_message == E.MSG_CHAT_PARTIAL.format(why=E.MSG_WHY[STOP_TIME].format(seconds=1.0),
                                                        missing=10 - len(answered), total=10)


def test_server_errors_past_the_retries_with_nothing_answered_are_an_error(stub):
    lm = endpoint(stub, concurrency=1)
    lm.chat(questions(1))
    stub.always(Action("status", 503))
    with pytest.raises(EndpointError) as e:  # nothing answered at all: an error, not an empty result
        lm.chat(questions(2))
    assert e.value.message == E.MSG_CHAT_FAILED.format(where=stub.base_url,
                                                       why=E.MSG_WHY[STOP_UNAVAILABLE].format(tries=3))


def test_a_stop_signal_keeps_what_was_answered(stub):
    stub.always(Action("sleep", seconds=0.15))
    cancel = threading.Event()
    lm = endpoint(stub, concurrency=1, cancel=cancel)
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    t = time.monotonic()
    replies = lm.chat(questions(20))
    elapsed = time.monotonic() - t
    timer.cancel()
    answered = [r for r in replies if r is not None]
    print(f"stopped after {elapsed:.2f} s with {len(answered)} of 20 answered")
    assert 1 <= len(answered) < 20 and elapsed < 3.0
    assert all(r.text == f"Answer {i} (seed None)" for i, r in enumerate(replies) if r is not None)
    assert lm.describe()["stopped_because"] == STOP_CANCELLED
    assert lm.stop_message == E.MSG_CHAT_PARTIAL.format(why=E.MSG_WHY[STOP_CANCELLED],
                                                        missing=20 - len(answered), total=20)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_ends_the_run(stub, status):
    stub.always(Action("status", status))
    with pytest.raises(EndpointError) as e:
        endpoint(stub, api_key=KEY).chat(questions(3))
    assert e.value.message == E.MSG_KEY_REFUSED.format(where=stub.base_url, status=status)
    assert KEY not in e.value.message


def test_no_chat_service_another_model_or_one_not_served_end_the_run(stub):
    root = stub.base_url[: -len("/v1")]
    with pytest.raises(EndpointError) as e:
        EndpointChatLM(root, SERVED, retry=FAST).chat(questions(1))
    assert e.value.message == E.MSG_NO_CHAT.format(where=root, model=SERVED)
    stub.reset()
    with pytest.raises(EndpointError) as e:
        EndpointChatLM(stub.base_url, "llama-3", retry=FAST).chat(questions(1))
    assert e.value.message == E.MSG_NOT_SERVED.format(where=stub.base_url, model="llama-3", served=SERVED)
    assert stub.count() == 0
    stub.always(Action("model", model="other-model"))
    with pytest.raises(EndpointError) as e:
        endpoint(stub).chat(questions(2))
    assert e.value.message == E.MSG_MODEL_MISMATCH.format(where=stub.base_url, served="other-model", model=SERVED)
    stub.always(Action("model", model=f"{SERVED}-2025-01-31"))
    lm = endpoint(stub)
    (reply,) = lm.chat(questions(1))
    assert reply.served_model == f"{SERVED}-2025-01-31" == lm.describe()["served_model"]


def test_public_mode_refuses_a_private_address_before_any_connection(stub, monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
    with pytest.raises(PolicyError) as e:
        EndpointChatLM(stub.base_url, SERVED, api_key=KEY)
    assert e.value.message == remote.MSG_PRIVATE_ADDRESS.format(host="127.0.0.1")
    with pytest.raises(PolicyError):
        chat_model(ModelRef(SERVED, endpoint=EndpointRef(stub.base_url)), api_key=KEY)
    assert stub.requests == []


def test_an_address_with_credentials_is_recorded_without_them(stub):
    lm = EndpointChatLM("http://user:hunter2@127.0.0.1:9/v1?token=abc", SERVED, api_key=KEY)
    shown = json.dumps(lm.describe()) + repr(lm)
    for secret in (KEY, "hunter2", "token=abc"):
        assert secret not in shown


# ----------------------------------------------------------------------------- in this process
@pytest.fixture(scope="module")
def tiny_chat(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_chat")
    return {"chat": build_tiny_gpt2(root / "chat", chat_template=CHAT_TEMPLATE, n_positions=128),
            "plain": build_tiny_gpt2(root / "plain", n_positions=128)}


def test_a_model_without_a_chat_template_is_refused_before_any_answer(tiny_chat):
    with pytest.raises(ModelKindError) as e:
        LocalChatLM(str(tiny_chat["plain"]), device="cpu")
    assert e.value.message == MSG_NO_CHAT_TEMPLATE.format(model=str(tiny_chat["plain"]))


def test_greedy_answers_are_deterministic_and_independent_of_the_batch(tiny_chat):
    lm = LocalChatLM(str(tiny_chat["chat"]), device="cpu")
    asked = questions(4, max_tokens=6)
    first = lm.chat(asked)
    again = lm.chat(list(reversed(asked)))[::-1]
    alone = [lm.chat([q])[0] for q in asked]
    assert [r.text for r in first] == [r.text for r in again] == [r.text for r in alone]
    assert all(r.status == REPLY_ANSWERED and r.finish_reason in ("stop", "length") for r in first)
    assert all(r.extra["answer_tokens"] <= 6 and (r.finish_reason == "length") == (r.extra["answer_tokens"] == 6)
               for r in first)
    d = lm.describe()
    assert d["served_by"] == "process" and d["model_kind"] == "chat" and d["questions"]["answered"] == 12
    assert len(d["chat_template_sha256"]) == 64 and d["dtype"] == "float32"


def test_sampled_answers_are_reproducible_by_seed_and_sample(tiny_chat):
    lm = LocalChatLM(str(tiny_chat["chat"]), device="cpu")
    settings = {"max_tokens": 8, "temperature": 1.5}
    asked = [ChatRequest.ask("Question number 1", seed=s, sample=k, **settings) for s in (1, 2) for k in range(3)]
    first = [r.text for r in lm.chat(asked)]
    shuffled = [r.text for r in lm.chat(asked[::-1])][::-1]
    assert first == shuffled == [lm.chat([q])[0].text for q in asked]
    print("sampled answers:", first)
    assert len(set(first)) >= 4  # samples and seeds differ (gibberish from a random model, sampled hot)


def test_top_log_probabilities_equal_a_naive_forward_pass(tiny_chat):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm = LocalChatLM(str(tiny_chat["chat"]), device="cpu")
    request = ChatRequest.ask("Question number 2", max_tokens=5, top_logprobs=3)
    (reply,) = lm.chat([request])
    assert reply.top_logprobs is not None and len(reply.top_logprobs) == reply.extra["answer_tokens"]
    # the naive reference: the model from its folder, the prompt through the template, one forward pass
    tok = AutoTokenizer.from_pretrained(tiny_chat["chat"])
    model = AutoModelForCausalLM.from_pretrained(tiny_chat["chat"]).eval()
    prompt = tok.apply_chat_template([{"role": "user", "content": "Question number 2"}], add_generation_prompt=True,
                                     return_tensors="pt", return_dict=True)["input_ids"][0].tolist()
    ids = list(prompt)
    for position in reply.top_logprobs:
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1].double(), dim=-1)
        top = torch.topk(logp, 3)
        chosen = int(torch.argmax(logp))  # greedy
        want = {}
        for value, token in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            want.setdefault(tok.decode([token]), value)
        want.setdefault(tok.decode([chosen]), float(logp[chosen]))
        assert position.keys() == want.keys()
        for k, v in want.items():
            assert position[k] == pytest.approx(v, abs=1e-5)
        assert 3 <= len(position) <= 4 and max(position.values()) <= 0
        ids.append(chosen)
    assert tok.decode(ids[len(prompt):], skip_special_tokens=True) == reply.text


def test_a_stop_signal_before_a_question_leaves_it_unasked(tiny_chat):
    cancel = threading.Event()
    lm = LocalChatLM(str(tiny_chat["chat"]), device="cpu", cancel=cancel)
    seen = []

    def progress(done, total, message):
        seen.append(done)
        if done == 2:
            cancel.set()

    replies = lm.chat(questions(5, max_tokens=3), progress=progress)
    assert [r is not None for r in replies] == [True, True, False, False, False]
    assert lm.stop_message == MSG_LOCAL_PARTIAL.format(missing=3, total=5) and seen == [1, 2]


def test_a_question_too_long_for_the_model_is_a_failed_reply(tiny_chat):
    lm = LocalChatLM(str(tiny_chat["chat"]), device="cpu")
    replies = lm.chat([ChatRequest.ask("word " * 200, max_tokens=4), ChatRequest.ask("Question number 1",
                                                                                  max_tokens=4)])
    assert replies[0].status == REPLY_FAILED and "reads at most 128" in replies[0].error
    assert replies[1].status == REPLY_ANSWERED


def test_the_factory_builds_each_chat_backend(tiny_chat, stub, tmp_path):
    local = chat_model(ModelRef(str(tiny_chat["chat"]), device="cpu"))
    assert type(local) is LocalChatLM
    there = chat_model(ModelRef(SERVED, endpoint=EndpointRef(stub.base_url, concurrency=3, max_requests=9)),
                       api_key=KEY, retry=FAST)
    assert type(there) is EndpointChatLM and there.concurrency == 3 and there.limits.max_requests == 9
    cached = chat_model(ModelRef(SERVED, endpoint=EndpointRef(stub.base_url)), cache_dir=tmp_path, retry=FAST)
    assert type(cached) is CachedChatLM and type(cached.inner) is EndpointChatLM
    options = ChatModelOptions(model_id=SERVED, endpoint=stub.base_url, seed=SEED)
    assert type(build_chat_model(options, cache_dir=tmp_path)) is CachedChatLM
    assert type(build_chat_model(options.model_copy(update={"use_cache": False}), cache_dir=tmp_path)) \
        is EndpointChatLM
    assert stub.count() == 0


# ----------------------------------------------------------------------------- the response cache
def test_a_rerun_asks_nothing_and_answers_the_same(stub, tmp_path):
    asked = questions(6, seed=4, top_logprobs=2)
    first_lm = CachedChatLM(endpoint(stub, api_key=KEY), tmp_path)
    first = first_lm.chat(asked)
    assert stub.count() == 6 and not any(r.cached for r in first)
    stub.reset()
    again_lm = CachedChatLM(endpoint(stub, api_key=KEY), tmp_path)
    seen = []
    again = again_lm.chat(asked, progress=lambda done, total, msg: seen.append((done, total)))
    assert stub.count() == 0 and seen == [(6, 6)]
    assert all(r.cached for r in again)
    assert [r.as_dict() | {"cached": False} for r in again] == [r.as_dict() for r in first]
    assert again_lm.describe()["response_cache"] == {"hits": 6, "misses": 0, "written": 0, "ignored": 0}
    assert first_lm.describe()["response_cache"] == {"hits": 0, "misses": 6, "written": 6, "ignored": 0}
    # without the cache the same questions are asked again
    endpoint(stub).chat(asked)
    assert stub.count() == 6
    # the key never reaches the disk
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 6 and not any(KEY in p.read_text(encoding="utf-8") for p in files)


def test_only_the_misses_are_asked_in_one_batch_and_duplicates_once(tmp_path):
    inner = DummyChatLM(lambda r: r.messages[-1][1].upper())
    batches = []
    real = inner.chat
    inner.chat = lambda requests, progress=None: batches.append(len(requests)) or real(requests, progress=progress)
    lm = CachedChatLM(inner, tmp_path)
    lm.chat(questions(3))
    replies = lm.chat(questions(5) + questions(5))
    assert batches == [3, 2] and [r.text for r in replies] == [f"QUESTION NUMBER {i}" for i in range(5)] * 2
    assert [r.cached for r in replies[:5]] == [True, True, True, False, False]


def test_a_corrupt_entry_is_asked_again(stub, tmp_path):
    asked = questions(3)
    CachedChatLM(endpoint(stub), tmp_path).chat(asked)
    files = sorted(p for p in tmp_path.rglob("*.json"))
    files[0].write_text("{not json", encoding="utf-8")
    files[1].write_text(files[1].read_text(encoding="utf-8").replace("Question number", "Question nombre"),
                        encoding="utf-8")
    stub.reset()
    lm = CachedChatLM(endpoint(stub), tmp_path)
    replies = lm.chat(asked)
    assert stub.count() == 2 and [r.text for r in replies] == [f"Answer {i} (seed None)" for i in range(3)]
    assert lm.describe()["response_cache"] == {"hits": 1, "misses": 2, "written": 2, "ignored": 2}
    stub.reset()
    CachedChatLM(endpoint(stub), tmp_path).chat(asked)  # rewritten whole
    assert stub.count() == 0


def test_failed_replies_are_not_kept(stub, tmp_path):
    stub.script(Action("status", 422))
    lm = CachedChatLM(endpoint(stub, concurrency=1), tmp_path)
    first = lm.chat(questions(2))
    assert first[0].status == REPLY_FAILED and lm.describe()["response_cache"]["written"] == 1
    stub.reset()
    again = CachedChatLM(endpoint(stub), tmp_path).chat(questions(2))
    assert stub.count() == 1 and again[0].status == REPLY_ANSWERED and again[1].cached


def test_another_model_endpoint_or_request_misses(stub, tmp_path):
    CachedChatLM(DummyChatLM(lambda r: "A", model_id="model-a"), tmp_path).chat(questions(2))
    other_model = CachedChatLM(DummyChatLM(lambda r: "B", model_id="model-b"), tmp_path)
    assert [r.text for r in other_model.chat(questions(2))] == ["B", "B"]
    other_request = CachedChatLM(DummyChatLM(lambda r: "C", model_id="model-a"), tmp_path)
    assert [r.text for r in other_request.chat(questions(2, temperature=0.5))] == ["C", "C"]
    assert [r.text for r in other_request.chat(questions(2, sample=1))] == ["C", "C"]
    assert [r.text for r in other_request.chat(questions(2))] == ["A", "A"]
    CachedChatLM(DummyChatLM(lambda r: "D", model_id=SERVED), tmp_path).chat(questions(2))
    there = CachedChatLM(endpoint(stub), tmp_path).chat(questions(2))  # the same model name, another place
    assert stub.count() == 2 and not any(r.cached for r in there)


def test_the_cache_keeps_its_hits_when_the_model_stops_before_any_miss(stub, tmp_path):
    CachedChatLM(endpoint(stub), tmp_path).chat(questions(2))
    stub.reset()
    stub.always(Action("status", 503))
    lm = CachedChatLM(endpoint(stub), tmp_path)
    replies = lm.chat(questions(4))
    assert [r is not None for r in replies] == [True, True, False, False]
    assert lm.stop_message == E.MSG_CHAT_FAILED.format(where=stub.base_url,
                                                       why=E.MSG_WHY[STOP_UNAVAILABLE].format(tries=3))


def test_the_default_folder_is_in_the_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "data"))
    assert default_cache_dir() == tmp_path / "data" / CACHE_FOLDER_NAME
