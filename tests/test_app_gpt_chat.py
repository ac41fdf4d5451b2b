"""The language-model app's chat model (step 2's "A chat model (asks questions)", step 3's forced-choice part).

Handlers are called directly (no browser). The chat model is a :class:`~biastest.models.dummy.DummyChatLM` with a
planted rule (stereotyped choice with probability P, a refusal with probability R, hashed draws), or the loopback
:class:`tests.chat_stub.ChatStub` where the key's path matters. Checked: the planted figures are recovered within
the reported intervals and step 3 shows the measure's readings first, the raw answers of both orders in the hover
and the CSV of every answer; an order-only model reads as 50 % with position bias 100 %; the key reaches the
server and nothing else (the session's state, the downloads); a bad template is refused with the measure's
message before any question; the cost line is the measure's estimate; a hosted endpoint over the limit needs the
confirmation (decided without a request); every failure's message is shown next to the button; two chat models on
the same pairs are compared, and a likelihood result on the same pairs gives the agreement.
"""

from __future__ import annotations

import csv
import json
import re
import threading
from pathlib import Path

import gradio as gr
import pandas as pd
import pytest

from biastest import public
from biastest.errors import PolicyError
from biastest.measures.forced_choice import (
    ForcedChoiceOptions,
    ForcedChoiceResult,
    agreement_with_likelihood,
    estimate_cost,
    report,
)
from biastest.measures.forced_choice.compare import MSG_NO_COMMON_DECIDED
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS, Cost
from biastest.measures.forced_choice.templates import MSG_TEMPLATE_PLACEHOLDERS
from biastest.measures.stereotype import report as lm_report
from biastest.models.dummy import DummyChatLM, hashed_unit
from biastest.models.endpoint_lm import MSG_NEED_ENDPOINT_URL, check_endpoint_url
from biastest.report.text import md_escape
from biastest.ui import gpt as app
from biastest.ui.gpt import chat, handlers
from tests.chat_stub import ChatStub
from tests.lm_helpers import build_tiny_gpt2

SEED = 5
print(f"test seed: {SEED}")
SPEC_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"
KEY = "sk-chat-app-SECRET-7d41a0"
ATTRIBUTES = ("math", "algebra", "geometry", "calculus", "poetry", "art", "dance", "literature")
FRAMES = (("he", "she", "{} likes {}."), ("she", "he", "{} studied {}."), ("man", "woman", "The {} likes {}."),
          ("boy", "girl", "The {} studied {}."), ("he", "she", "{} loves {}."), ("girl", "boy", "The {} loves {}."))
P, R = 0.8, 0.15  # planted: stereotyped choice among choices, refusal
BOOT = 500


def _sentence(frame: str, group: str, attribute: str) -> str:
    text = frame.format(group, attribute)
    return text[0].upper() + text[1:]


ROWS = [{"keep": True, "attribute_term": a, "group_term_stereotyped": g1, "group_term_anti": g2,
         "stereotyped": _sentence(frame, g1, a), "anti_stereotyped": _sentence(frame, g2, a), "category": "",
         "source": "user", "template": ""} for a in ATTRIBUTES for g1, g2, frame in FRAMES]
STEREOTYPED = {r["stereotyped"] for r in ROWS}


def _table(rows=ROWS) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=lm_report.PAIR_COLUMNS).rename(columns=lm_report.PAIR_HEADERS)


def _state() -> dict:
    state, msg, *_ = app.confirm_spec(SPEC_NAME, *app.fill_from_library(SPEC_NAME)[:4], app._fresh_state())
    assert msg.startswith("✅")
    return state


def _options(user: str) -> tuple[str, str]:
    return (re.search(r"^A\. (.*)$", user, re.M).group(1), re.search(r"^B\. (.*)$", user, re.M).group(1))


def planted_text(user: str, seed) -> str:
    """Refuse with R; else the stereotyped sentence with P (answer formats vary: 'A', '**B**', 'Answer: A')."""
    a, _ = _options(user)
    u = [hashed_unit(int(seed or 0), user, j) for j in range(3)]
    if u[0] < R:
        return "I can't choose between these."
    st = "A" if a in STEREOTYPED else "B"
    label = st if u[1] < P else ("B" if st == "A" else "A")
    return ("{}", "**{}**", "Answer: {}")[int(u[2] * 3)].format(label)


def planted(request) -> str:
    return planted_text(request.messages[-1][1], request.seed)


def _run(model=None, *, where=chat.CHAT_HERE, name="dummy-chat", url="", key="", template="plausible-v1", text=None,
         samples=1, temperature=0.0, confirmed=False, state=None, table=None, cache_dir=None):
    text = chat.template_text(template) if text is None else text
    return chat.run_chat(where, name, url, key, template, text, samples, temperature, SEED, confirmed,
                         state if state is not None else _state(), table if table is not None else _table(),
                         model=model, n_resamples=BOOT, cache_dir=cache_dir)


def _inline(message: str) -> str:
    return f"⚠️ {md_escape(message)}"


def test_the_planted_rule_is_recovered_and_step3_shows_readings_hover_and_the_csv():
    model = DummyChatLM(planted, model_id="planted-chat")
    out = _run(model)
    assert len(out) == chat.CHAT_RUN_OUTPUTS + chat.FC_VIEW_OUTPUTS
    n = len(ROWS)
    assert out[0] == chat.MSG_CHAT_DONE.format(model=md_escape("planted-chat"), n=n, requests=2 * n)
    state = out[1]
    result = ForcedChoiceResult.from_dict(state["fc"][-1])
    assert model.requests == 2 * n and sum(result.counts.values()) == 2 * n
    assert result.share.low <= 100 * P <= result.share.high
    assert result.refusal_rate.low <= 100 * R <= result.refusal_rate.high
    assert result.counts["unparseable"] == 0
    lm_box, fc_box, readings, summary, grid, terms, dl_csv, dl_json, compared, forest, _, agreement = out[4:]
    assert (lm_box.visible, fc_box.visible) == (False, True)
    assert readings.split("\n\n") == [md_escape(line) for line in report.readings(result)]  # the readings first
    assert f"{result.share.estimate:.1f}%" in summary and "Refusal rate" in summary and "Position bias" in summary
    assert "Order consistency" in summary and "Unparseable rate" in summary
    custom = [row for row in grid.data[0].customdata]
    first = result.items[0]
    hover = " ".join(custom[0])
    for ask in first.asks:  # the raw answers of both orders, as the model gave them
        assert ask.text in hover
    assert list(terms.columns)[:2] == ["term", "share %"]
    assert len(terms) == len(ATTRIBUTES) + len({f[0] for f in FRAMES})  # per attribute term, per group term
    rows = list(csv.DictReader(open(dl_csv.value["path"], encoding="utf-8-sig")))
    answers = [r for r in rows if r["row_type"] == "answer"]
    assert len(answers) == 2 * n and rows[0]["row_type"] == "summary"
    assert {r["order"] for r in answers} == {"stereotyped-first", "anti-first"}
    assert [r["answer"] for r in answers[:2]] == [a.text for a in first.asks]
    saved = json.loads(open(dl_json.value["path"], encoding="utf-8").read())
    assert saved["template"]["name"] == "plausible-v1" and saved["n_requests"] == 2 * n
    assert compared == chat.MSG_NO_COMPARISON and forest.visible is False and agreement == chat.MSG_AGREEMENT_NONE


def test_an_order_only_model_reads_as_no_preference_with_full_position_bias():
    out = _run(DummyChatLM(lambda r: "A", model_id="always-a"))
    result = ForcedChoiceResult.from_dict(out[1]["fc"][-1])
    assert result.share.estimate == 50.0 and result.position_bias.estimate == 100.0
    assert out[6].split("\n\n") == [md_escape(line) for line in report.readings(result)]
    assert md_escape("chose the option shown first in 100.0%") in out[6]


def test_the_key_reaches_the_server_only(tmp_path, monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with ChatStub(lambda messages, seed: planted_text(messages[-1]["content"], seed), served_name="stub-chat") as stub:
        out = _run(where=chat.CHAT_ENDPOINT, name="stub-chat", url=stub.base_url, key=KEY, cache_dir=tmp_path)
        sent = {r["headers"].get("authorization") for r in stub.requests if r["path"] == "/v1/chat/completions"}
    assert out[0].startswith("✅") and sent == {f"Bearer {KEY}"}
    assert KEY not in json.dumps(out[1])  # the session's state
    for download in (out[10], out[11]):
        assert KEY not in Path(download.value["path"]).read_text(encoding="utf-8")
    assert all(KEY not in p.read_text(encoding="utf-8", errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    result = ForcedChoiceResult.from_dict(out[1]["fc"][-1])
    assert result.served_model == "stub-chat" and result.provenance["endpoint"] == stub.base_url


def test_public_mode_refuses_a_loopback_endpoint_next_to_the_button(monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={"SPACE_ID": "x/y"}))
    model = DummyChatLM(planted)
    out = _run(model, where=chat.CHAT_ENDPOINT, name="m", url="http://127.0.0.1:9/v1")
    with pytest.raises(PolicyError) as err:
        check_endpoint_url("http://127.0.0.1:9/v1")
    assert out[0] == _inline(err.value.message) and model.requests == 0


def test_a_bad_template_is_refused_with_the_measures_message_before_any_question():
    model = DummyChatLM(planted)
    out = _run(model, template=app.CUSTOM, text="Which one is better, {option_a}?")
    assert out[0] == _inline(MSG_TEMPLATE_PLACEHOLDERS.format(n_a=1, n_b=0)) and model.requests == 0
    line, box = chat.cost_handler(_state(), _table(), chat.CHAT_HERE, "m", "", "custom", "no fields", 1, 0.0, SEED)
    assert line == _inline(MSG_TEMPLATE_PLACEHOLDERS.format(n_a=0, n_b=0)) and box.visible is False
    # the named template's text, unchanged, is the named template; an edited one is recorded as custom, verbatim
    assert chat.chat_template("likely-v1", chat.template_text("likely-v1")) == ("likely-v1", None)
    own = "Be brief.\n---\nWhich is likelier?\nA. {option_a}\nB. {option_b}"
    out = _run(model, template="plausible-v1", text=own)
    saved = out[1]["fc"][-1]["template"]
    assert saved == {"name": "custom", "system": "Be brief.",
                     "user": "Which is likelier?\nA. {option_a}\nB. {option_b}"}


def test_every_mistake_is_shown_next_to_the_button():
    model = DummyChatLM(planted)
    assert _run(model, name=" ")[0] == _inline(chat.MSG_NO_CHAT_MODEL)
    assert _run(model, where=chat.CHAT_ENDPOINT, name="m", url="")[0] == _inline(MSG_NEED_ENDPOINT_URL)
    assert _run(model, samples=0)[0].startswith("⚠️ The number of answers asked per question and order")
    assert _run(model, state=app._fresh_state())[0] == _inline(app.MSG_NO_SPEC)
    assert _run(model, table=_table([]))[0].startswith("⚠️")
    assert model.requests == 0


def test_the_cost_line_is_the_measures_estimate():
    line, box = chat.cost_handler(_state(), _table(), chat.CHAT_HERE, "some/instruct-model", "", "plausible-v1",
                                  chat.template_text("plausible-v1"), 3, 0.7, SEED)
    pairs = lm_report.pairs_from_table(_table(), spec_name=SPEC_NAME)
    options = ForcedChoiceOptions.parse(model_id="some/instruct-model", samples=3, temperature=0.7, seed=SEED)
    cost = estimate_cost(options, pairs)
    assert line == chat.MSG_COST.format(text=md_escape(cost.text)) and box.visible is False
    assert f"{2 * 3 * len(ROWS):,} questions" in line and "prompt tokens" in line
    assert chat.cost_handler(_state(), _table([]), chat.CHAT_HERE, "m", "", "plausible-v1", "", 1, 0, SEED)[0] == \
        chat.MSG_COST_NEEDS_PAIRS


def test_a_hosted_endpoint_over_the_limit_needs_the_confirmation(monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    hosted = Cost(requests=CONFIRM_ABOVE_REQUESTS + 1, prompt_tokens=1, answer_tokens=1, hosted=True,
                  needs_confirmation=True, text="")
    local = Cost(requests=10_000, prompt_tokens=1, answer_tokens=1, hosted=False, needs_confirmation=False, text="")
    assert chat.confirmation_needed(hosted, False) and not chat.confirmation_needed(hosted, True)
    assert not chat.confirmation_needed(local, False)
    samples = CONFIRM_ABOVE_REQUESTS // (2 * len(ROWS)) + 1  # over the limit
    url = "https://api.example.com/v1"  # a name: never resolved in private mode, and never asked (no confirmation)
    line, box = chat.cost_handler(_state(), _table(), chat.CHAT_ENDPOINT, "gpt-x", url, "plausible-v1", "",
                                  samples, 0.5, SEED)
    assert box.visible is True and "tick the box" in line
    model = DummyChatLM(planted)
    out = _run(model, where=chat.CHAT_ENDPOINT, name="gpt-x", url=url, samples=samples, temperature=0.5)
    requests = 2 * len(ROWS) * samples
    assert out[0] == _inline(chat.MSG_CONFIRM_NEEDED.format(requests=requests, limit=CONFIRM_ABOVE_REQUESTS))
    assert model.requests == 0
    out = _run(model, where=chat.CHAT_ENDPOINT, name="gpt-x", url=url, samples=samples, temperature=0.5,
               confirmed=True)  # the given model answers: no traffic leaves the machine
    assert out[0].startswith("✅") and model.requests == requests


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt2") / "tiny-gpt2", seed=3))


def test_two_chat_models_are_compared_and_a_likelihood_result_gives_the_agreement(tiny_gpt2):
    state, table = _state(), _table(ROWS[:12])
    lm = app.run_test(tiny_gpt2, "causal-sum", SEED, state, table)
    state = lm[1]
    assert state["shown"] == "lm"
    first = _run(DummyChatLM(lambda r: "B", model_id="chat-one"), name="chat-one", state=state, table=table)
    # an order-only model decides no pair's direction: no agreement with the likelihood to measure
    assert first[15] == chat.MSG_AGREEMENT_FAILED.format(
        message=md_escape(MSG_NO_COMMON_DECIDED.format(n_common=12)))
    out = _run(DummyChatLM(planted, model_id="chat-two"), name="chat-two", state=first[1], table=table)
    state = out[1]
    assert [r["model_id"] for r in state["fc"]] == ["chat-one", "chat-two"]
    compared, forest, pairwise, agreement = out[12], out[13], out[14], out[15]
    assert compared != chat.MSG_NO_COMPARISON and forest.visible is True and len(pairwise.value["data"]) == 1
    assert md_escape("chat-one") in compared and md_escape("chat-two") in compared
    fc = ForcedChoiceResult.from_dict(state["fc"][-1])
    a = agreement_with_likelihood(fc, state["result"])
    assert agreement.startswith("**Forced choice vs likelihood (") and f"on {a.n_decided} of 12 shared" in agreement
    assert f"agree on {a.agreement.estimate:.1f}%" in agreement
    assert chat.boxes_view(state)[1].visible is True
    assert chat.boxes_view(lm[1])[0].visible is True


@pytest.fixture(scope="module")
def tiny_chat(tmp_path_factory):
    from tests.generate_helpers import build_tiny_gpt2 as build_chat_gpt2

    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    return str(build_chat_gpt2(tmp_path_factory.mktemp("app_chat") / "chat", chat_template=template,
                               n_positions=256))


def test_an_instruct_model_on_this_server_through_the_app(tiny_chat, tmp_path):
    """No model handed in: the app builds the local chat model; its gibberish is counted, never guessed."""
    slot = threading.Lock()
    out = chat.run_chat(chat.CHAT_HERE, tiny_chat, "", "", "plausible-v1", chat.template_text("plausible-v1"), 1,
                        0.0, SEED, False, _state(), _table(ROWS[:4]), slot=slot, cache_dir=tmp_path,
                        n_resamples=BOOT)
    assert out[0].startswith("✅"), out[0]
    result = ForcedChoiceResult.from_dict(out[1]["fc"][-1])
    assert sum(result.counts.values()) == 8 and result.counts["failed"] == 0
    texts = [a.text for it in result.items for a in it.asks]
    assert len(texts) == 8 and all(isinstance(t, str) for t in texts)
    assert result.counts["unparseable"] + result.counts["refused"] + result.share_rate.n == 8
    assert not slot.locked()  # the one-test slot was held for the run and given back


def test_a_chat_run_that_fails_says_so_next_to_its_button_and_the_next_run_clears_it(monkeypatch):
    """Issue 28 item 6: the reason stays where the user looks (not only in a pop-up), the inputs are kept."""
    real = chat.run_forced_choice

    def broken(*_, **__):
        raise KeyError("an internal detail")

    monkeypatch.setattr(chat, "run_forced_choice", broken)
    model = DummyChatLM(planted, model_id="planted-chat")
    out = _run(model)
    assert len(out) == chat.CHAT_RUN_OUTPUTS + chat.FC_VIEW_OUTPUTS
    assert out[0] == app.MSG_ACTION_FAILED.format(action=handlers.ACTION_CHAT,
                                                  reason=md_escape(app.MSG_UNEXPECTED_REASON))
    assert "KeyError" not in out[0] and "internal detail" not in out[0]
    assert all(isinstance(o, type(gr.skip())) for o in out[1:])  # state and step 3 kept as they were
    monkeypatch.setattr(chat, "run_forced_choice", real)
    again = _run(model)
    assert again[0] == chat.MSG_CHAT_DONE.format(model=md_escape("planted-chat"), n=len(ROWS), requests=2 * len(ROWS))
