"""Sentence generation through the real ``openai`` client against a local stub server.

The stub (``tests/openai_stub.py``) is a real HTTP server on 127.0.0.1; the
client is the real ``openai`` 3.x client pointed at it with ``base_url``.
"""

from __future__ import annotations

import itertools
import json
import logging
import pickle
import threading
import time

import pytest

from biastest import remote
from biastest.errors import GenerationError
from biastest.generate import SentenceSettings, base, generate_sentences
from biastest.generate.openai_chat import MSG_NO_API_KEY, OpenAIChatGenerator, OpenAICompatibleGenerator
from biastest.generate.prompts import get_sentence_prompt
from biastest.remote import MSG_AUTH_FAILED, MSG_BAD_BASE_URL, MSG_QUOTA, RetryPolicy, RunLimits
from biastest.spec import BiasSpec
from tests.generate_helpers import small_spec
from tests.openai_stub import FRAMES, Action, OpenAIStub

FAKE_KEY = "sk-test-DO-NOT-LEAK-4f9c2e7a1b"
FAST_RETRY = RetryPolicy(max_retries=2, initial_delay=0.01, factor=2.0, max_delay=0.05, max_retry_after=0.2,
                         jitter=0.0)
CHAT = "/v1/chat/completions"


@pytest.fixture
def stub():
    with OpenAIStub() as s:
        yield s


def gen(stub: OpenAIStub, **kw) -> OpenAIChatGenerator:
    return OpenAIChatGenerator("stub-chat", api_key=FAKE_KEY, base_url=stub.base_url, **kw)


def pair_spec() -> BiasSpec:
    """One term per group, so scripted answers can name the requested term."""
    return BiasSpec.from_terms(group1="man", group2="woman", stereotype1="math, algebra",
                               antistereotype1="poetry, art", name="man_woman")


def chat_bodies(stub: OpenAIStub) -> list[dict]:
    return [r["body"] for r in stub.requests if r["path"] == CHAT]


# ------------------------------------------------------------------ happy path
def test_missing_sentences_generated_balanced_and_paired(stub: OpenAIStub) -> None:
    spec = small_spec()
    progress: list[tuple[int, int, str]] = []
    run = generate_sentences(spec, gen(stub, temperature=0.7), SentenceSettings(seed=11, retry=FAST_RETRY),
                             existing_counts={"math": 3, "art": 1}, progress=lambda d, t, m: progress.append((d, t, m)))
    rep = run.report
    assert rep.requested == {"math": 0, "algebra": 3, "poetry": 3, "art": 2}
    assert rep.stopped_because == base.STOP_COMPLETED
    assert rep.missing == dict.fromkeys(rep.requested, 0)
    assert rep.accepted == 8 == len(run.sentences) == len(run.pairs)
    assert rep.message == base.MSG_RUN_COMPLETED.format(accepted=8, items="sentences", unit="attribute")
    # balanced: existing + new is the best-covered count (3) for every attribute
    per_attr = {a: 0 for a in spec.attribute_terms}
    for s in run.sentences:
        per_attr[s.attribute_term] += 1
    assert {a: per_attr[a] + {"math": 3, "art": 1}.get(a, 0) for a in per_attr} == dict.fromkeys(per_attr, 3)
    # the two groups are both used for each attribute with more than one sentence
    for a in ("algebra", "poetry", "art"):
        groups = {spec.group_of(s.group_term) for s in run.sentences if s.attribute_term == a}
        assert groups == {1, 2}
    bodies = chat_bodies(stub)
    assert len(bodies) == rep.requests_used == 8
    for s, body in zip(run.sentences, bodies, strict=True):
        assert s.source == "generated" and s.generator == "openai" and s.model == "stub-chat"
        assert body["messages"] == [{"role": "user", "content": s.prompt}]  # the exact prompt is stored
        assert body["seed"] == s.seed and body["temperature"] == 0.7
        assert s.template.count("[T]") == 1 and s.group_term not in s.template.split()
        assert s.provenance["run_seed"] == 11 and s.provenance["prompt_name"] == "with-context"
    # pairs: the stereotyped side is group-1 + list-1 attribute or group-2 + list-2 attribute
    for p in run.pairs:
        side = spec.attribute_side(p.attribute_term)
        assert spec.group_of(p.group_term_stereotyped) == side
        assert spec.group_of(p.group_term_anti) == 3 - side
        assert p.category == (spec.attribute1_name if side == 1 else spec.attribute2_name)
        for text, term in ((p.stereotyped, p.group_term_stereotyped), (p.anti_stereotyped, p.group_term_anti)):
            assert f" {term} " in f" {text} " and p.attribute_term in text
        assert p.template.replace("[T]", p.group_term_stereotyped) == p.stereotyped
    # progress: starts at 0, ends at total, never decreases
    assert progress[0][:2] == (0, 8) and progress[-1][:2] == (8, 8)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(progress))
    json.dumps(run.to_dict())  # JSON-serialisable


def test_same_seed_same_requests(stub: OpenAIStub) -> None:
    spec = small_spec()
    runs = [generate_sentences(spec, gen(stub), SentenceSettings(seed=5, target_per_attribute=2, retry=FAST_RETRY))
            for _ in range(2)]
    key = [[(s.group_term, s.attribute_term, s.seed, s.prompt) for s in r.sentences] for r in runs]
    assert key[0] == key[1]
    other = generate_sentences(spec, gen(stub), SentenceSettings(seed=6, target_per_attribute=2, retry=FAST_RETRY))
    assert [(s.group_term, s.seed) for s in other.sentences] != [(k[0], k[2]) for k in key[0]]


def test_existing_texts_are_not_duplicated(stub: OpenAIStub) -> None:
    spec = pair_spec()
    dup = FRAMES[0].format(t="man", a="math")
    stub.script("chat", Action("text", text=dup), Action("text", text=dup))
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=1, attributes=["math"], target_per_attribute=1,
                                                               retry=FAST_RETRY), existing_texts=[dup])
    assert run.report.rejected == {base.REJECT_DUPLICATE: 2}
    assert run.report.accepted == 1 and run.sentences[0].text != dup


# ------------------------------------------------------------ rejected answers
def test_malformed_and_empty_answers_are_counted(stub: OpenAIStub) -> None:
    spec = pair_spec()
    stub.script(
        "chat",
        Action("malformed"), Action("empty"), Action("null"), Action("no_choices"), Action("missing_attribute"),
        Action("text", text="Sentence: The man loves math. The man is smart."),
        Action("text", text="The man and the woman both love math."),
        Action("text", text="Man math."),
        Action("text", text="The hero of the story loves math very much."),
    )
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=3, attributes=["math"], target_per_attribute=1,
                                                               prompt="plain", limits=RunLimits(attempts_per_item=10),
                                                               retry=FAST_RETRY))
    rep = run.report
    assert rep.rejected == {
        remote.REJECT_MALFORMED: 2, base.REJECT_EMPTY: 2, base.REJECT_MISSING_ATTRIBUTE: 1,
        base.REJECT_NOT_ONE_SENTENCE: 1, base.REJECT_OTHER_GROUP: 1, base.REJECT_TOO_SHORT: 1,
        base.REJECT_MISSING_GROUP: 1,
    }
    assert rep.accepted == 1 and rep.requests_used == 10


def test_item_gives_up_after_its_attempts(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.chat_rule = "missing_attribute"
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=3, target_per_attribute=1,
                                                               limits=RunLimits(attempts_per_item=2), retry=FAST_RETRY))
    rep = run.report
    assert rep.accepted == 0 and rep.requests_used == 8
    assert rep.rejected == {base.REJECT_MISSING_ATTRIBUTE: 8}
    assert rep.stopped_because == base.STOP_ATTEMPTS
    assert rep.message == base.MSG_RUN_ATTEMPTS.format(
        rejected=8, top_reason="missing attribute term", accepted=0, items="sentences", missing=4,
        missing_terms="math, algebra, poetry, art")


# ------------------------------------------------------------- faults & bounds
def test_429_with_retry_after_is_respected_then_succeeds(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.script("chat", Action("status", 429, headers={"Retry-After": "0.15"}),
                Action("status", 429, headers={"Retry-After": "0.15"}))
    t0 = time.monotonic()
    run = generate_sentences(spec, gen(stub), SentenceSettings(
        seed=1, attributes=["math"], target_per_attribute=1,
        retry=RetryPolicy(max_retries=3, initial_delay=0.0, max_retry_after=1.0)))
    assert time.monotonic() - t0 >= 0.3  # waited as asked
    assert run.report.accepted == 1 and run.report.transient_failures == {"rate_limit": 2}
    assert run.report.requests_used == 3 == stub.count(CHAT)


def test_retry_after_is_capped(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.script("chat", Action("status", 429, headers={"Retry-After": "3600"}))
    t0 = time.monotonic()
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=1, attributes=["math"], target_per_attribute=1,
                                                               retry=RetryPolicy(max_retries=2, max_retry_after=0.1)))
    assert time.monotonic() - t0 < 5
    assert run.report.accepted == 1


def test_persistent_500_stops_with_partial_results(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.script("chat", Action("rule"), Action("rule"), Action("rule"))
    stub.always("chat", Action("status", 500))
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=2, target_per_attribute=2, retry=FAST_RETRY))
    rep = run.report
    assert rep.accepted == 3 and len(run.pairs) == 3  # kept
    assert rep.stopped_because == remote.STOP_UNAVAILABLE
    assert rep.requests_used == 3 + FAST_RETRY.max_retries + 1 == stub.count(CHAT)
    assert rep.total_missing == 5 and sum(rep.missing.values()) == 5
    assert rep.message == base.MSG_RUN_UNAVAILABLE.format(tries=3, accepted=3, items="sentences", missing=5)


def test_persistent_429_stops_as_rate_limited(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.always("chat", Action("status", 429))
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=2, target_per_attribute=1, retry=FAST_RETRY))
    assert run.report.stopped_because == remote.STOP_RATE_LIMITED
    assert run.report.message == base.MSG_RUN_RATE_LIMITED.format(tries=3, accepted=0, items="sentences", missing=4)
    assert run.sentences == () and run.pairs == ()


def test_timeouts_end_within_bounds(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.script("chat", Action("rule"))
    stub.always("chat", Action("sleep", seconds=5.0))
    limits = RunLimits(request_timeout=0.2, max_seconds=30)
    t0 = time.monotonic()
    run = generate_sentences(spec, gen(stub), SentenceSettings(
        seed=2, target_per_attribute=1, limits=limits,
        retry=RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0.0)))
    elapsed = time.monotonic() - t0
    assert elapsed < 2.0  # two tries of 0.2 s plus overhead, not 5 s
    assert run.report.accepted == 1 and run.report.stopped_because == remote.STOP_UNAVAILABLE
    assert run.report.transient_failures == {"timeout": 2}


def test_time_limit_caps_the_run(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.always("chat", Action("status", 503))
    limits = RunLimits(max_seconds=0.6, request_timeout=5)
    t0 = time.monotonic()
    run = generate_sentences(spec, gen(stub), SentenceSettings(
        seed=2, target_per_attribute=1, limits=limits,
        retry=RetryPolicy(max_retries=50, initial_delay=0.2, factor=1.0, jitter=0.0)))
    assert time.monotonic() - t0 < 1.5
    assert run.report.stopped_because == remote.STOP_TIME
    assert run.report.message == base.MSG_RUN_TIME.format(seconds=0.6, accepted=0, items="sentences", missing=4)


def test_request_budget_is_a_hard_limit(stub: OpenAIStub) -> None:
    spec = small_spec()
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=2, target_per_attribute=3,
                                                               limits=RunLimits(max_requests=5), retry=FAST_RETRY))
    rep = run.report
    assert stub.count(CHAT) == 5 == rep.requests_used and rep.accepted == 5
    assert rep.stopped_because == remote.STOP_BUDGET
    assert rep.message == base.MSG_RUN_BUDGET.format(requests=5, accepted=5, items="sentences", missing=7)
    # round-robin: a cut-short run still covers every attribute
    assert {s.attribute_term for s in run.sentences} == set(small_spec().attribute_terms)


def test_cancel_keeps_partial_results(stub: OpenAIStub) -> None:
    spec = small_spec()
    cancel = threading.Event()

    def progress(done: int, total: int, message: str) -> None:
        if done >= 2:
            cancel.set()

    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=2, target_per_attribute=2), cancel=cancel,
                             progress=progress)
    assert run.report.stopped_because == remote.STOP_CANCELLED and run.report.accepted == 2


def test_fatal_errors_end_the_run_with_their_message(stub: OpenAIStub) -> None:
    spec = small_spec()
    stub.script("chat", Action("rule"), Action("status", 401))
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=2, target_per_attribute=1, retry=FAST_RETRY))
    err = MSG_AUTH_FAILED.format(where=stub.base_url, status=401)
    assert run.report.stopped_because == base.STOP_ERROR
    assert run.report.message == base.MSG_RUN_ERROR.format(error=err, accepted=1, items="sentences", missing=3)
    assert run.report.requests_used == 2  # no retries of a fatal error
    stub.script("chat", Action("status", 429, body={"error": {"message": "quota", "type": "insufficient_quota",
                                                              "code": "insufficient_quota"}}))
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=2, target_per_attribute=1, retry=FAST_RETRY))
    assert run.report.message.startswith(MSG_QUOTA.format(where=stub.base_url))


# -------------------------------------------------------------- LLM rewrites
def test_llm_minimal_rewrite(stub: OpenAIStub) -> None:
    spec = small_spec()
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=4, target_per_attribute=1, counterfactual="llm",
                                                               prompt="plain", retry=FAST_RETRY))
    assert run.report.accepted == 4 and run.report.rejected == {}
    assert stub.count(CHAT) == 8  # one sentence and one rewrite each
    for p in run.pairs:
        cf = p.provenance["counterfactual"]
        assert cf["method"] == "llm"
        assert cf["provenance"]["prompt"].startswith("system: Rewrite the sentence to replace ")
        assert p.template.count("[T]") == 1


def test_rejected_rewrite_falls_back_to_rules(stub: OpenAIStub) -> None:
    spec = pair_spec()
    stub.script("chat", Action("text", text="The man proudly taught math to everyone in the village."),
                Action("text", text="Everybody in the whole village said that the woman taught math with pride."))
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=4, attributes=["math"], target_per_attribute=1,
                                                               counterfactual="llm", retry=FAST_RETRY))
    assert run.report.rejected == {"rewrite_not_minimal": 1}
    p = run.pairs[0]
    assert p.provenance["counterfactual"]["method"] == "rules"
    assert {p.stereotyped, p.anti_stereotyped} == {"The man proudly taught math to everyone in the village.",
                                                   "The woman proudly taught math to everyone in the village."}
    stub.script("chat", Action("text", text="The man proudly taught math to everyone in the village."),
                Action("empty"), Action("text", text="The man gladly taught math to everyone in the village."),
                Action("text", text="The woman gladly taught math to everyone in the village."))
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=4, attributes=["math"], target_per_attribute=1,
                                                               counterfactual="llm", rewrite_fallback=False,
                                                               retry=FAST_RETRY))
    assert run.report.rejected == {"rewrite_empty": 1} and run.report.accepted == 1
    assert run.pairs[0].provenance["counterfactual"]["method"] == "llm"


# ------------------------------------------------------------------- secrets
def test_api_key_never_leaks(stub: OpenAIStub, caplog: pytest.LogCaptureFixture) -> None:
    spec = small_spec()
    caplog.set_level(logging.DEBUG)
    g = gen(stub)
    stub.script("chat", Action("status", 429, headers={"Retry-After": "0.01"}), Action("status", 500),
                Action("malformed"))
    run1 = generate_sentences(spec, g, SentenceSettings(seed=9, target_per_attribute=1, counterfactual="llm",
                                                        retry=FAST_RETRY))
    stub.always("chat", Action("status", 401))
    run2 = generate_sentences(spec, g, SentenceSettings(seed=9, target_per_attribute=1, retry=FAST_RETRY))
    with pytest.raises(GenerationError) as err:
        OpenAIChatGenerator("m", api_key=FAKE_KEY, base_url="ftp://x")
    # the key did reach the server (so the test can see it if it leaked)
    assert any(r["headers"].get("authorization") == f"Bearer {FAKE_KEY}" for r in stub.requests)
    assert caplog.records  # logging happened
    haystacks = [
        caplog.text, repr(g), str(g), json.dumps(g.describe()), json.dumps(run1.to_dict()), json.dumps(run2.to_dict()),
        run2.report.message, err.value.message, repr(err.value.details),
        *[json.dumps(s.to_row()) for s in run1.sentences], *[json.dumps(p.to_row()) for p in run1.pairs],
    ]
    for h in haystacks:
        assert FAKE_KEY not in h and FAKE_KEY[8:] not in h
    assert "api_key=***" in repr(g)
    with pytest.raises(TypeError):
        pickle.dumps(g)


def test_environment_key_is_never_sent_to_other_servers(stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> None:
    env_key = "sk-env-SHOULD-NOT-TRAVEL-88"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    g = OpenAICompatibleGenerator(stub.base_url, "stub-chat")
    assert g.list_models() == ["stub-chat", "stub-image"]
    run = generate_sentences(small_spec(), g, SentenceSettings(seed=1, attributes=["art"], target_per_attribute=1))
    assert run.report.accepted == 1 and run.sentences[0].generator == "openai-compatible"
    assert all(env_key not in json.dumps(r["headers"]) for r in stub.requests)
    body = chat_bodies(stub)[-1]
    assert "max_tokens" in body and "max_completion_tokens" not in body
    assert "api_key=(none)" in repr(g)


def test_official_endpoint_requires_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(GenerationError) as e:
        OpenAIChatGenerator("gpt-4o-mini")
    assert e.value.message == MSG_NO_API_KEY
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert "api_key=***" in repr(OpenAIChatGenerator("gpt-4o-mini"))  # built; nothing sent
    with pytest.raises(GenerationError) as e:
        OpenAICompatibleGenerator("localhost:8000", "m")
    assert e.value.message == MSG_BAD_BASE_URL.format(value="localhost:8000")


def test_prompt_variants_reach_the_server(stub: OpenAIStub) -> None:
    spec = small_spec()
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=1, attributes=["poetry"], target_per_attribute=1,
                                                               prompt="gender-neutral"))
    s = run.sentences[0]
    assert s.prompt == get_sentence_prompt("gender-neutral").render(s.group_term, "poetry")
    assert chat_bodies(stub)[0]["messages"][0]["content"] == s.prompt


def test_nothing_missing_sends_nothing(stub: OpenAIStub) -> None:
    spec = small_spec()
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=1),
                             existing_counts=dict.fromkeys(spec.attribute_terms, 2))
    assert run.report.requests_used == 0 == stub.count(CHAT) and run.report.accepted == 0
    assert run.report.message == base.MSG_RUN_NOTHING_MISSING.format(unit="attribute")


def test_unequal_groups_pair_with_any_counterpart(stub: OpenAIStub) -> None:
    spec = BiasSpec.from_terms(group1="man, boy, father", group2="woman", stereotype1="math",
                               antistereotype1="art", name="unequal")
    run = generate_sentences(spec, gen(stub), SentenceSettings(seed=1, target_per_attribute=4))
    assert run.report.accepted == 8
    for p in run.pairs:
        assert {spec.group_of(p.group_term_stereotyped), spec.group_of(p.group_term_anti)} == {1, 2}
