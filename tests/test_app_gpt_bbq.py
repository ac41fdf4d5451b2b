"""The language-model app's "BBQ benchmark" tab: handlers called directly, on synthetic BBQ questions.

A planted chat model (:class:`tests.bbq_helpers.Planted` in a :class:`~biastest.models.dummy.DummyChatLM`: biased,
unknown or other answers, refusals, unreadable answers, by each request's hash) answers through the tab's handler;
the tab's figures equal the measure's own run of the same options on a fresh model, per category and overall; the
count comes first (before a model is typed); a hosted endpoint over the limit needs the confirmation; mistakes are
messages next to the button; the downloads hold no key.
"""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from biastest import public
from biastest.measures.bbq import BBQItems, Estimate, estimate_cost, run_bbq
from biastest.models.dummy import DummyChatLM
from biastest.report.text import md_escape
from biastest.ui.gpt import bbq
from biastest.ui.gpt.chat import CHAT_ENDPOINT, CHAT_HERE
from tests.bbq_helpers import CATS, Planted, synthetic_items

SEED = 7
print(f"test seed: {SEED}")
KEY = "sk-bbq-app-SECRET-55aa1"
BOOT = 300
PER = 12


@pytest.fixture(scope="module")
def data():
    return synthetic_items(seed=SEED)


def _decide(item, shown, u):
    if u < 0.1:
        return ("refuse",)
    if u < 0.15:
        return ("garble",)
    other = next(i for i in range(3) if i not in (item.biased, item.unknown))
    role = item.biased if u < 0.6 else (item.unknown if u < 0.8 else other)
    return ("answer", shown.index(item.answers[role]))


def _model(data):
    return DummyChatLM(Planted(data, _decide), model_id="planted-bbq")


def _run(data, model, *, where=CHAT_HERE, name="planted-bbq", url="", key="", categories=CATS, per=PER,
         confirmed=False):
    return bbq.run_bbq_handler(where, name, url, key, list(categories), per, SEED, confirmed, model=model, data=data,
                               n_resamples=BOOT)


def test_the_tab_shows_the_measures_figures_per_category_and_the_downloads(data):
    model = _model(data)
    out = _run(data, model)
    assert len(out) == bbq.BBQ_RUN_OUTPUTS
    options = bbq.bbq_options(CHAT_HERE, "planted-bbq", "", list(CATS), PER, SEED, n_resamples=BOOT)
    direct = run_bbq(options, BBQItems(data), model=_model(data))
    assert out[0] == bbq.MSG_BBQ_DONE.format(model=md_escape("planted-bbq"), n=direct.n_items,
                                             requests=direct.n_requests)
    assert direct.n_items == PER * len(CATS) and model.requests == direct.n_requests
    assert out[1] == bbq.summary_markdown(direct)
    assert out[1].startswith("Verdict: ") and "AMB" in out[1].split("\n")[0]  # issue 28 item 4: verdict first
    assert out[2].visible is True
    table = pd.DataFrame(out[2].value["data"], columns=out[2].value["headers"])
    assert table.values.tolist() == bbq.category_frame(direct).values.tolist()
    assert list(table["category"]) == [*CATS, "overall"]
    o = direct.overall
    row = table.iloc[-1]
    assert row["s_DIS"].startswith(f"{o.s_dis.value:+.3f}") and row["s_AMB"].startswith(f"{o.s_amb.value:+.3f}")
    assert row["accuracy ambiguous"].startswith(f"{100 * o.accuracy_ambig.value:.1f}%")
    assert row["refused"].startswith(f"{100 * o.refusal_rate.value:.1f}%") and o.refusal_rate.value > 0
    assert " (" in row["s_DIS"]  # with its interval
    rows = list(csv.DictReader(open(out[3].value["path"], encoding="utf-8-sig")))
    assert rows[0]["row_type"] == "summary"
    assert len([r for r in rows if r["row_type"] == "request"]) == direct.n_requests
    saved = json.loads(open(out[4].value["path"], encoding="utf-8").read())
    assert saved["n_requests"] == direct.n_requests and saved["model_id"] == "planted-bbq"


def test_the_count_comes_first_before_a_model_is_typed(data):
    line, box = bbq.bbq_cost_handler(CHAT_HERE, "", "", ["Age", "SES"], 5, SEED, data=data)
    options = bbq.bbq_options(CHAT_HERE, "", "", ["Age", "SES"], 5, SEED, for_count=True)
    cost = estimate_cost(options, BBQItems(data))
    assert line == bbq.MSG_BBQ_COST.format(text=md_escape(cost.text)) and box.visible is False
    assert "This BBQ run asks 10 questions" in line and md_escape(bbq.MODEL_NOT_YET) in line


def test_a_hosted_endpoint_over_the_limit_needs_the_confirmation(monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    data = synthetic_items(seed=SEED, templates=10)  # 80 questions per category: 240 > the limit of 200
    url = "https://api.example.com/v1"  # never resolved in private mode; the given model answers
    line, box = bbq.bbq_cost_handler(CHAT_ENDPOINT, "gpt-x", url, list(CATS), 80, SEED, data=data)
    assert box.visible is True and "tick the box" in line
    model = _model(data)
    out = _run(data, model, where=CHAT_ENDPOINT, name="gpt-x", url=url, key=KEY, per=80)
    assert out[0] == f"⚠️ {md_escape(bbq.MSG_BBQ_CONFIRM.format(requests=80 * len(CATS), limit=200))}"
    assert model.requests == 0
    out = _run(data, model, where=CHAT_ENDPOINT, name="gpt-x", url=url, key=KEY, per=80, confirmed=True)
    assert out[0].startswith("✅") and model.requests == 80 * len(CATS)
    for download in (out[3], out[4]):
        assert KEY not in open(download.value["path"], encoding="utf-8").read()


def test_mistakes_are_shown_next_to_the_button(data):
    model = _model(data)
    assert _run(data, model, categories=())[0] == f"⚠️ {md_escape(bbq.MSG_BBQ_NO_CATEGORY)}"
    assert _run(data, model, name=" ")[0] == f"⚠️ {md_escape(bbq.MSG_NO_CHAT_MODEL)}"
    assert _run(data, model, per=0)[0].startswith("⚠️")
    assert model.requests == 0


def test_a_rate_of_alike_answers_shows_the_exact_interval_not_a_point():
    zero = Estimate(value=0.0, low=0.0, high=0.0, n=40, n_clusters=8, exact_low=0.0, exact_high=0.0881)
    assert bbq._fmt(zero, percent=True) == "0.0% (0.0–8.8%, exact)"
    wide = Estimate(value=0.5, low=0.3, high=0.7, n=40, n_clusters=8, exact_low=0.34, exact_high=0.66)
    assert bbq._fmt(wide, percent=True) == "50.0% (30.0–70.0%)"  # the cluster interval where it has a width
    assert bbq._fmt(Estimate(value=None, reason="no answer"), percent=False) == "n/a (no answer)"
