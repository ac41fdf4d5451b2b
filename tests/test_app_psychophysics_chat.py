"""The word-embedding app's 2AFC of a chat model (step 2's "Which model?" → a chat model), handlers called directly.

A :class:`~biastest.models.dummy.DummyChatLM` answers by the planted rule of ``tests/twoafc_chat_helpers.py`` (option
A with probability Q, else the female cue with the occupation's BLS share of women); the loopback
:class:`tests.chat_stub.ChatStub` (private mode) checks the endpoint path and that the key reaches the server only.
Step 3's per-target P(cue 1) is checked against a naive count of the downloaded CSV's answer rows.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from biastest import public
from biastest.errors import PolicyError
from biastest.measures.chat_twoafc import TwoAFCChatOptions, estimate_cost, report
from biastest.measures.chat_twoafc.result import CUE1, CUE2
from biastest.measures.chat_twoafc.templates import MSG_TEMPLATE_PLACEHOLDERS
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.models import factory
from biastest.models.dummy import DummyChatLM
from biastest.models.endpoint_lm import MSG_NEED_ENDPOINT_URL, check_endpoint_url
from biastest.report.export import ROW_TYPE
from biastest.report.text import md_escape
from biastest.ui import psychophysics as app
from biastest.ui.chat_choice import CHAT_ENDPOINT, CHAT_HERE, MSG_CONFIRM_NEEDED, MSG_NO_CHAT_MODEL
from biastest.ui.psychophysics import chat
from tests.chat_stub import ChatStub
from tests.twoafc_chat_helpers import BLS, planted_answer

SEED = 3
print(f"test seed: {SEED}")
Q = 0.2  # planted share of answers that take the first option whatever it is
BOOT = 200
KEY = "sk-psy-chat-SECRET-51c2"
TARGETS = list(BLS)[:10]
CUES = "woman/man, female/male, she/he, girl/boy"
N_REQUESTS = len(TARGETS) * 4 * 2  # targets × cue pairs × orders × 1 sample
VIEW = 9 + 0  # the chat view's values start after message, session, tabs, tab 3 and the five hidden parts
run_chat = chat.make_chat_run_handler((), 9)


@pytest.fixture(scope="module")
def session():
    values = [app.KIND_TWOAFC, app.CUSTOM, ", ".join(TARGETS), CUES, "female", "male", app.CUSTOM,
              *("",) * 8, "glove-6b-50d", None, ""]
    state, message, _reports, _notes = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    assert message.startswith("✅")
    return state


def planted(request) -> str:
    return planted_answer(request.messages[-1][1], request.seed, q=Q)


def _run(session, model=None, *, where=CHAT_HERE, name="planted-chat", url="", key="", template="occupation-who-v1",
         text=None, samples=1, temperature=0.0, confirmed=False, cache_dir=None):
    text = chat.template_text(template) if text is None else text
    return run_chat(session, where, name, url, key, template, text, samples, temperature, SEED, confirmed,
                    model=model, cache_dir=cache_dir, n_resamples=BOOT)


def _inline(message: str) -> str:
    return f"⚠️ {md_escape(message)}"


def _csv(out) -> list[dict]:
    with open(out[VIEW + 7].value["path"], encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_a_planted_chat_model_runs_and_step3_shows_readings_hover_and_downloads(session):
    model = DummyChatLM(planted, model_id="planted-chat")
    out = _run(session, model)
    assert out[0].startswith("✅ Asked planted\\-chat 80 questions") and model.requests == N_REQUESTS
    new = out[1]
    result = new["chat"]
    assert new["result"] is None and result.n_requests == N_REQUESTS
    assert [u.get("visible") for u in out[5:7]] == [False, False]  # the embedding's result boxes are hidden
    box, readings, p_fig, rates_fig, summary, labour, targets, _csv_btn, json_btn = out[VIEW:]
    assert box.visible is True
    assert readings == "\n\n".join(md_escape(line) for line in report.readings(result))
    # per target: the figure's P(cue 1) is the share of the cue-1 answers among the answers that chose (naive count)
    rows = [r for r in _csv(out) if r[ROW_TYPE] == "answer"]
    assert len(rows) == N_REQUESTS
    chose = Counter(r["target"] for r in rows if r["outcome"] in (CUE1, CUE2))
    cue1 = Counter(r["target"] for r in rows if r["outcome"] == CUE1)
    shown = dict(zip(p_fig.data[0].y, p_fig.data[0].x, strict=True))
    assert set(shown) == {t for t in TARGETS if chose[t]}
    for t, value in shown.items():
        assert value == pytest.approx(100 * cue1[t] / chose[t], abs=1e-9)
    hover = p_fig.data[0].customdata
    assert {h[0] for h in hover} == set(shown) and "%{customdata[2]}" in p_fig.data[0].hovertemplate
    assert list(targets["target"]) == TARGETS
    assert "refusals" in list(rates_fig.data[0].y) and "position bias" in " ".join(rates_fig.data[0].y)
    assert "P(cue 1), cluster bootstrap over targets" in list(summary["measure"])
    # the labour-statistics scatter (the measure's own figure), with one hover row per occupation
    assert labour.visible is True and len(json.loads(labour.value["plot"])["data"][0]["customdata"]) == len(TARGETS)
    saved = json.loads(Path(json_btn.value["path"]).read_text(encoding="utf-8"))
    assert saved["model_id"] == "planted-chat" and len(saved["targets"]) == len(TARGETS)
    # a planted first-option habit of Q shows as position bias above 50 %
    assert result.position_bias.estimate > 50


def test_the_factory_builds_the_model_when_none_is_given(session, monkeypatch, tmp_path):
    calls = []

    def chat_model(ref, *, api_key=None, cache_dir=None, seed=None, cancel=None, **more):
        calls.append(ref.model_id)
        return DummyChatLM(planted, model_id=ref.model_id)

    monkeypatch.setattr(factory, "chat_model", chat_model, raising=False)
    out = _run(session, name="org/instruct", cache_dir=tmp_path)
    assert out[0].startswith("✅") and calls == ["org/instruct"]


def test_an_endpoint_gets_the_key_and_nothing_else_keeps_it(session, monkeypatch, tmp_path):
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with ChatStub(lambda messages, seed: planted_answer(messages[-1]["content"], seed, q=Q),
                  served_name="stub-chat") as stub:
        out = _run(session, where=CHAT_ENDPOINT, name="stub-chat", url=stub.base_url, key=KEY, cache_dir=tmp_path)
        sent = {r["headers"].get("authorization") for r in stub.requests if r["path"] == "/v1/chat/completions"}
    assert out[0].startswith("✅") and sent == {f"Bearer {KEY}"}
    result = out[1]["chat"]
    assert result.served_model == "stub-chat" and KEY not in json.dumps(result.to_dict(), default=str)
    for download in (out[VIEW + 7], out[VIEW + 8]):
        assert KEY not in Path(download.value["path"]).read_text(encoding="utf-8")
    assert all(KEY not in p.read_text(encoding="utf-8", errors="replace") for p in tmp_path.rglob("*") if p.is_file())


def test_every_mistake_is_the_measures_message_next_to_the_button(session, monkeypatch):
    model = DummyChatLM(planted)
    assert _run(session, model, name=" ")[0] == _inline(MSG_NO_CHAT_MODEL)
    assert _run(session, model, where=CHAT_ENDPOINT, url="")[0] == _inline(MSG_NEED_ENDPOINT_URL)
    assert _run(app.new_session(), model)[0] == _inline(app.MSG_SPEC_FIRST)
    assert _run(session, model, samples=0)[0].startswith("⚠️ The number of answers asked per question and order")
    out = _run(session, model, template="custom", text="Is {target} a {option_a}?")
    assert out[0] == _inline(MSG_TEMPLATE_PLACEHOLDERS.format(n_t=1, n_a=1, n_b=0))
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={"SPACE_ID": "x/y"}))
    out = _run(session, model, where=CHAT_ENDPOINT, name="m", url="http://127.0.0.1:9/v1")
    with pytest.raises(PolicyError) as err:
        check_endpoint_url("http://127.0.0.1:9/v1")
    assert out[0] == _inline(err.value.message)
    assert model.requests == 0


def test_the_cost_is_shown_before_the_run_and_a_hosted_endpoint_over_the_limit_needs_the_box(session, monkeypatch):
    line, box = chat.cost_handler(session, CHAT_HERE, "org/instruct", "", "occupation-who-v1", "", 2, 0.5, SEED)
    options = TwoAFCChatOptions.parse(model_id="org/instruct", samples=2, temperature=0.5, seed=SEED)
    cost = estimate_cost(options, session["spec"])
    assert line == chat.MSG_COST.format(text=md_escape(cost.text)) and box.visible is False
    assert f"{2 * N_REQUESTS:,} questions" in line
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    samples = CONFIRM_ABOVE_REQUESTS // N_REQUESTS + 1
    url = "https://api.example.com/v1"  # never resolved in private mode, never asked (the given model answers)
    line, box = chat.cost_handler(session, CHAT_ENDPOINT, "gpt-x", url, "occupation-who-v1", "", samples, 0.5, SEED)
    assert box.visible is True and "tick the box" in line
    model = DummyChatLM(planted)
    out = _run(session, model, where=CHAT_ENDPOINT, name="gpt-x", url=url, samples=samples, temperature=0.5)
    assert out[0] == _inline(MSG_CONFIRM_NEEDED.format(requests=N_REQUESTS * samples, limit=CONFIRM_ABOVE_REQUESTS))
    assert model.requests == 0
    line, _ = chat.cost_handler(session, CHAT_HERE, "", "", "occupation-who-v1", "", 1, 0, SEED)
    assert line == chat.MSG_COST_NEEDS_MODEL
    line, _ = chat.cost_handler(session, CHAT_HERE, "m", "", "custom", "{target}?", 1, 0, SEED)
    assert line == _inline(MSG_TEMPLATE_PLACEHOLDERS.format(n_t=1, n_a=0, n_b=0))


def test_the_model_choice_shows_one_part_and_the_template_box_follows_the_pick():
    emb, box, run = chat.model_kind_view(chat.MODEL_CHAT)
    assert (emb.visible, box.visible, run.visible) == (False, True, False)
    emb, box, run = chat.model_kind_view(chat.MODEL_EMBEDDING)
    assert (emb.visible, box.visible, run.visible) == (True, False, True)
    assert chat.chat_template("associate-v1", chat.template_text("associate-v1")) == ("associate-v1", None)
    own = "Be brief.\n---\nWord: {target}\nA. {option_a}\nB. {option_b}"
    assert chat.chat_template("occupation-who-v1", own) == ("custom", own)
