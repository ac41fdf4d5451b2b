"""The forced-choice measure end to end through the real chat backends (no dummy between measure and model).

* Through :class:`~biastest.models.endpoint_chat.EndpointChatLM` against the loopback
  :class:`tests.chat_stub.ChatStub` with a planted rule (stereotyped-choice probability, first-position
  probability, refusals, answers in varied formats): the planted figures are recovered within the reported
  intervals, with faults (429, 500, a garbled body) on the way and nothing lost; a rerun is answered by the
  response cache with zero requests and the same result.
* BBQ through the same endpoint on real BBQ questions, with faults: nothing lost, a model that names the
  "unknown" answer is read as doing so.
* Through :class:`~biastest.models.local_chat.LocalChatLM`, a tiny random GPT-2 with a chat template built
  here: its answers are gibberish, and they must be counted as unparseable (or refused), never guessed.
"""

from __future__ import annotations

import re

import pytest

from biastest import public
from biastest.measures.bbq import BBQOptions
from biastest.measures.bbq.run import run as run_bbq
from biastest.measures.forced_choice import ForcedChoiceItems, ForcedChoiceOptions, run_forced_choice
from biastest.models.dummy import hashed_unit
from tests.chat_stub import Action, ChatStub
from tests.generate_helpers import build_tiny_gpt2
from tests.test_forced_choice import FORMATS, REFUSALS, make_pairs

SERVED = "stub-chat"
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
P, Q, R = 0.8, 0.3, 0.1  # planted: stereotyped choice, first position, refusal


@pytest.fixture(autouse=True)
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


def planted(messages, seed) -> str:
    """Refuse with R; else the first option with Q; else the stereotyped sentence with P (hashed draws)."""
    user = messages[-1]["content"]
    a = re.search(r"^A\. (.*)$", user, re.M).group(1)
    b = re.search(r"^B\. (.*)$", user, re.M).group(1)
    u = [hashed_unit(int(seed or 0), user, j) for j in range(4)]
    if u[0] < R:
        return REFUSALS[int(u[3] * len(REFUSALS))]
    if u[1] < Q:
        label = "A"
    else:
        st = "A" if a.startswith("The man") else "B"
        label = st if u[2] < P else ("B" if st == "A" else "A")
    return FORMATS[int(u[3] * len(FORMATS))](label, a if label == "A" else b)


def options(**kw) -> ForcedChoiceOptions:
    return ForcedChoiceOptions.parse({"model_id": SERVED, "seed": 3, "n_resamples": 1000, "top_logprobs": 0,
                                      "concurrency": 3, **kw})


def test_planted_choices_through_the_endpoint_are_recovered_and_a_rerun_is_cached(tmp_path) -> None:
    pairs = make_pairs(n=80, n_terms=16)
    with ChatStub(planted, served_name=SERVED) as stub:
        stub.script(Action("status", 429, headers={"Retry-After": "0.01"}), Action("status", 500), Action("garbage"))
        o = options(endpoint=stub.base_url)
        first = run_forced_choice(o, ForcedChoiceItems(pairs), cache_dir=tmp_path / "cache")
        asked = stub.count()
        again = run_forced_choice(o, ForcedChoiceItems(pairs), cache_dir=tmp_path / "cache")
        assert stub.count() == asked  # the rerun asked nothing
    assert first.counts["failed"] == 0 and first.counts["not-asked"] == 0
    assert sum(first.counts.values()) == 160  # 80 pairs × 2 orders, nothing lost to the faults
    truth = Q / 2 + (1 - Q) * P
    assert first.share.low <= 100 * truth <= first.share.high
    assert first.refusal_rate.low <= 100 * R <= first.refusal_rate.high
    assert first.position_bias.low <= 100 * (Q + (1 - Q) / 2) <= first.position_bias.high
    assert first.counts["unparseable"] == 0  # every planted format is read
    assert first.served_model == SERVED
    assert again.counts == first.counts and again.share.estimate == first.share.estimate
    raw = [ask.reply for item in first.items for ask in item.asks]  # the exact answers are kept
    assert len(raw) == 160 and all(isinstance(r["text"], str) for r in raw if r["status"] == "answered")


@pytest.fixture(scope="module")
def tiny_chat(tmp_path_factory):
    return build_tiny_gpt2(tmp_path_factory.mktemp("fc_chat") / "chat", chat_template=CHAT_TEMPLATE,
                           n_positions=256)


def test_a_local_instruct_models_gibberish_is_counted_never_guessed(tiny_chat, tmp_path) -> None:
    o = ForcedChoiceOptions.parse({"model_id": str(tiny_chat), "seed": 2, "n_resamples": 200, "device": "cpu",
                                   "max_answer_tokens": 6, "top_logprobs": 0, "use_cache": False})
    result = run_forced_choice(o, ForcedChoiceItems(make_pairs(n=4, n_terms=2)))
    assert sum(result.counts.values()) == 8 and result.counts["failed"] == 0
    chosen = result.counts["stereotyped"] + result.counts["anti-stereotyped"]
    texts = [ask.reply["text"] for item in result.items for ask in item.asks]
    assert len(texts) == 8 and all(isinstance(t, str) for t in texts)
    # a random model's tokens are not a label: an answer read as a choice must name a label or its sentence in its
    # text (checked here without the parser); every other answer is unparseable or refused, never a side
    pairs = {item.index: item for item in result.items}
    for item in pairs.values():
        for ask in item.asks:
            text = ask.reply["text"]
            if ask.outcome in ("stereotyped", "anti-stereotyped"):
                shown = (item.stereotyped, item.anti_stereotyped)
                assert re.search(r"(?<![A-Za-z])[AB](?![A-Za-z])", text) or any(
                    s.lower().rstrip(".") in text.lower() for s in shown), text
            else:
                assert ask.outcome in ("unparseable", "refused"), ask.outcome
    assert chosen + result.counts["unparseable"] + result.counts["refused"] == 8


# --------------------------------------------------------------------------- BBQ through the chat endpoint
def _bbq_label(messages, seed) -> str:
    """Name the answer whose text says the context does not tell (else the first), in varied formats."""
    user = messages[-1]["content"]
    options = re.findall(r"^\(?([ABC])[).]\s*(.+)$", user, re.M)
    unknown = [label for label, text in options if re.search(r"(?i)\b(not|can't|cannot|unknown|undetermined|"
                                                             r"not enough)\b", text)]
    label = unknown[0] if unknown else "A"
    return (f"({label})", f"Answer: {label}", f"**{label}**")[hashed_unit(int(seed or 0), user) < 0.5]


def test_bbq_through_the_endpoint_with_faults_loses_nothing_and_reads_a_cautious_model(shared_data, tmp_path):
    with ChatStub(_bbq_label, served_name=SERVED) as stub:
        stub.script(Action("status", 429, headers={"Retry-After": "0.01"}), Action("status", 500), Action("garbage"))
        o = BBQOptions.parse({"model_id": SERVED, "seed": 4, "n_items": 6, "n_resamples": 200, "top_logprobs": 0,
                              "categories": ["Age", "Religion"], "bbq_dir": str(shared_data / "bbq"),
                              "endpoint": stub.base_url})
        result = run_bbq(o, cache_dir=tmp_path / "cache")
    assert result.n_items == 12 and len(result.rows) == 12
    assert all(r.reply is not None and r.reply["status"] == "answered" for r in result.rows)
    assert result.overall.outcomes.get("answered", 0) == 12  # every planted format read, nothing lost to faults
    ambiguous = [r for r in result.rows if r.condition == "ambig"]
    # the planted model names the "unknown" answer: right on every ambiguous question it could find one in
    chosen = [r.roles[r.order[r.position]] for r in ambiguous if r.position is not None]
    assert len(chosen) == len(ambiguous) > 0 and set(chosen) == {"unknown"}
