"""The word-embedding app's 2AFC of a chat model (step 2's "Which model?" → a chat model), handlers called directly.

A :class:`~biastest.models.dummy.DummyChatLM` answers by the planted rule of ``tests/twoafc_chat_helpers.py`` (option
A with probability Q, else the female cue with the occupation's BLS share of women); the loopback
:class:`tests.chat_stub.ChatStub` (private mode) checks the endpoint path and that the key reaches the server only.
Step 3's per-target P(cue 1) is checked against a naive count of the downloaded CSV's answer rows.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from biastest import public
from biastest.continuum import name_continuum
from biastest.errors import PolicyError
from biastest.measures.chat_twoafc import TwoAFCChatOptions, estimate_cost, report
from biastest.measures.chat_twoafc.result import CUE1, CUE2
from biastest.measures.chat_twoafc.templates import MSG_TEMPLATE_PLACEHOLDERS
from biastest.measures.classifier_2afc import report as report_clf
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.measures.psychometric_chat import report as report_pc
from biastest.measures.psychometric_chat.templates import MSG_CONTEXT_SLOT, MSG_CUES_BAD
from biastest.models import factory
from biastest.models.dummy import DummyChatLM
from biastest.models.endpoint_lm import MSG_NEED_ENDPOINT_URL, check_endpoint_url
from biastest.report.export import ROW_TYPE
from biastest.report.text import md_escape
from biastest.ui import psychophysics as app
from biastest.ui.chat_choice import CHAT_ENDPOINT, CHAT_HERE, MSG_CONFIRM_NEEDED, MSG_NO_CHAT_MODEL
from biastest.ui.psychophysics import chat, classifier, curves
from tests.chat_stub import ChatStub
from tests.classifier_helpers import HashNullClassifier, LabelScoresStub
from tests.psychometric_helpers import PlantedPsychometricResponder
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
    with open(out[VIEW + 7].value["path"], encoding="utf-8-sig", newline="") as f:
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
    for kind, shown in ((chat.MODEL_CHAT, (False, True, False, False)),
                        (chat.MODEL_CLASSIFIER, (False, False, True, False)),
                        (chat.MODEL_EMBEDDING, (True, False, False, True))):
        assert tuple(u.visible for u in chat.model_kind_view(kind)) == shown
    assert chat.chat_template("associate-v1", chat.template_text("associate-v1")) == ("associate-v1", None)
    own = "Be brief.\n---\nWord: {target}\nA. {option_a}\nB. {option_b}"
    assert chat.chat_template("occupation-who-v1", own) == ("custom", own)


# ------------------------------------------------------------------ psychometric curves of the chat model
NEUTRAL, NURSE = "{stimulus} is a person.", "{stimulus} is a nurse."
PLANTED = {NEUTRAL: (0.5, 12.0), NURSE: (0.35, 12.0)}  # (PSE, rate) per context
run_curves = curves.make_curves_run_handler(6)


def _responder(alphas):
    return PlantedPsychometricResponder(alphas, PLANTED, cues=("man", "woman"), q=0.2, seed=SEED, refusal_rate=0.05)


def _curves(session, model, *, contexts=f"{NEUTRAL}\n{NURSE}", cues="man/woman", source=curves.CONTINUUM_NAMES,
            upload=None, where=CHAT_HERE, name="planted-chat", url="", samples=2, boot=60, confirmed=False):
    return run_curves(session, where, name, url, "", contexts, cues, source, upload, samples, 1.0, SEED, boot,
                      confirmed, model=model)


def test_the_curves_of_a_planted_chat_model_show_pse_jnd_and_shift_with_readings_and_downloads(session):
    continuum = name_continuum()
    model = DummyChatLM(_responder({s.text: s.alpha for s in continuum.stimuli}), model_id="planted-chat")
    out = _curves(session, model)
    n = 2 * len(continuum) * 2 * 2  # contexts × stimuli × orders × samples
    assert out[0].startswith("✅") and model.requests == n
    result = out[1]["curves"]
    box, readings, fig, table, csv_btn, json_btn = out[4:]
    assert box.visible is True and readings == "\n\n".join(md_escape(r) for r in report_pc.readings(result))
    records = report_pc.summary_records(result)
    assert list(table["context"]) == [NEUTRAL, NURSE]
    for row, rec in zip(table.to_dict("records"), records, strict=True):
        for k in ("pse", "pse_low", "pse_high", "jnd", "pse_shift", "shift_low", "shift_high"):
            assert (math.isnan(row[k]) and rec[k] is None) or row[k] == pytest.approx(rec[k], abs=1e-3)
    # the nurse context's planted PSE lies 0.15 below the neutral one's: its shift is negative
    assert records[1]["pse_shift"] < 0 and records[0]["fit_status"] == "ok"
    assert any(t.hovertemplate for t in fig.data) and len({t.legendgroup for t in fig.data}) == 2
    with open(csv_btn.value["path"], encoding="utf-8-sig", newline="") as f:
        assert sum(1 for r in csv.DictReader(f) if r[ROW_TYPE] == "answer") == n
    assert json.loads(Path(json_btn.value["path"]).read_text(encoding="utf-8"))["model_id"] == "planted-chat"


def test_an_uploaded_continuum_is_used_and_mistakes_are_the_measures_messages(session, tmp_path):
    path = tmp_path / "names.csv"
    path.write_text("stimulus,alpha\n" + "".join(f"Name{i:02d},{i / 10}\n" for i in range(11)), encoding="utf-8")
    model = DummyChatLM(_responder({f"Name{i:02d}": i / 10 for i in range(11)}))
    out = _curves(session, model, source=curves.CONTINUUM_UPLOAD, upload=str(path))
    assert out[0].startswith("✅") and len(out[1]["curves"].continuum["stimuli"]) == 11
    asked = model.requests
    assert _curves(session, model, source=curves.CONTINUUM_UPLOAD)[0] == _inline(curves.MSG_NO_CONTINUUM_FILE)
    out = _curves(session, model, contexts="no slot here")
    assert out[0].startswith(_inline(MSG_CONTEXT_SLOT.split("{number}")[0]))
    assert _curves(session, model, cues="man")[0].startswith(_inline(MSG_CUES_BAD.split("{limit}")[0]))
    assert _curves(session, model, name="")[0] == _inline(MSG_NO_CHAT_MODEL)
    assert model.requests == asked
    line, box = curves.curves_cost_handler(session, CHAT_HERE, "m", "", NEUTRAL, "man/woman", curves.CONTINUUM_NAMES,
                                           None, 1, 0.0, SEED, 60)
    assert line.startswith("**Before you run:**") and "questions" in line and box.visible is False


# ------------------------------------------------------------------ a text classifier
class FavoursCue1(HashNullClassifier):
    """The null classifier plus a planted effect: a sentence with a first-cue word scores higher (logit + 1.5)."""

    def label_scores(self, texts, *, progress=None):
        out = []
        for t in texts:
            words = {w.strip(".,").casefold() for w in t.split()}
            z = (1.5 if words & {"woman", "female", "she", "girl"} else 0.0) + self._eps(t)
            p = 1.0 / (1.0 + math.exp(-z))
            out.append([1.0 - p, p])
        return np.asarray(out)


run_clf = classifier.make_classifier_run_handler(5)


def test_a_planted_classifier_effect_is_found_and_step3_shows_the_table_and_downloads(session):
    out = run_clf(session, CHAT_HERE, "planted-clf", "", "", "", SEED, model=FavoursCue1(SEED), n_resamples=BOOT)
    assert out[0].startswith("✅ Classifier 2AFC, female vs male:")
    result = out[1]["classifier"]
    assert tuple(result.groups) == ("female", "male") and result.share.estimate > 80 and result.share.low > 50
    box, headline, table, csv_btn, json_btn = out[4:]
    assert box.visible is True and headline == md_escape(report_clf.reading(result))
    assert headline.startswith("Verdict: ")  # issue 28 item 4: the reading opens with the verdict
    assert len(table) == len(report_clf.summary_rows(result)) and "template" in set(table.iloc[:, 0])
    with open(csv_btn.value["path"], encoding="utf-8-sig", newline="") as f:
        assert sum(1 for _ in csv.DictReader(f)) == len(report_clf.csv_rows(result))
    assert json.loads(Path(json_btn.value["path"]).read_text(encoding="utf-8"))["model_id"] == "planted-clf"


def test_a_classifier_behind_an_endpoint_and_the_classifiers_mistakes(session, monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with LabelScoresStub(FavoursCue1(SEED)) as stub:
        out = run_clf(session, CHAT_ENDPOINT, "clf", stub.url, KEY, "POSITIVE", SEED, n_resamples=BOOT)
        sent = {r["headers"].get("authorization") for r in stub.requests}
    assert out[0].startswith("✅") and sent == {f"Bearer {KEY}"}
    assert KEY not in json.dumps(out[1]["classifier"].to_dict(), default=str)
    out = run_clf(session, CHAT_HERE, "m", "", "", "JOY", SEED, model=FavoursCue1(SEED), n_resamples=BOOT)
    assert out[0].startswith("⚠️ The classifier has no label 'JOY'")
    assert run_clf(session, CHAT_HERE, " ", "", "", "", SEED)[0] == _inline(MSG_NO_CHAT_MODEL)
    assert run_clf(session, CHAT_ENDPOINT, "m", "", "", "", SEED)[0] == _inline(MSG_NEED_ENDPOINT_URL)
