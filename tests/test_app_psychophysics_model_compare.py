"""Step 3's “Compare with another chat model” in the word-embedding app (handlers called directly).

2AFC answers: a first chat model with the planted rule of ``tests/twoafc_chat_helpers.py`` and a second that names
the female cue whatever the target; the comparison's difference of mean P(cue 1) equals a naive count over the two
results' answers, and the downloads hold both models. Curves: two planted psychometric subjects whose nurse context
moves the PSE by −0.15 and −0.40; the comparison's difference of shifts equals the difference of the two runs' own
shifts and its interval lies below 0 (planted −0.25; coverage is tested in tests/test_psychometric_chat_compare.py).
Mistakes are the section's messages under its button.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from biastest.continuum import name_continuum
from biastest.measures.chat_twoafc.result import CUE1, CUE2
from biastest.models.dummy import DummyChatLM
from biastest.report.text import md_escape
from biastest.ui import psychophysics as app
from biastest.ui.chat_choice import CHAT_HERE, MSG_NO_CHAT_MODEL
from biastest.ui.psychophysics import chat, curves, model_compare
from tests.psychometric_helpers import PlantedPsychometricResponder
from tests.twoafc_chat_helpers import BLS, planted_answer

SEED = 5
TARGETS = list(BLS)[:8]
add_chat = model_compare.make_add_handler(model_compare.CHAT)
add_curves = model_compare.make_add_handler(model_compare.CURVES)
clear_chat = model_compare.make_clear_handler(model_compare.CHAT)


@pytest.fixture(scope="module")
def session():
    values = [app.KIND_TWOAFC, app.CUSTOM, ", ".join(TARGETS), "woman/man, she/he", "female", "male", app.CUSTOM,
              *("",) * 8, "glove-6b-50d", None, ""]
    state, message, _reports, _notes = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    assert message.startswith("✅")
    return state


def _first_chat(session):
    run = chat.make_chat_run_handler((), 9)
    model = DummyChatLM(lambda r: planted_answer(r.messages[-1][1], r.seed, q=0.2), model_id="planted-chat")
    out = run(session, CHAT_HERE, "planted-chat", "", "", "occupation-who-v1",
              chat.template_text("occupation-who-v1"), 1, 0.0, SEED, False, model=model, n_resamples=200)
    assert out[0].startswith("✅")
    return out[1]


def _p_cue1(result) -> dict[str, float]:
    """Naive: per target, cue-1 answers over answers that named a cue."""
    chose, cue1 = Counter(), Counter()
    for t in result.targets:
        for a in t.asks:
            chose[t.target] += a.outcome in (CUE1, CUE2)
            cue1[t.target] += a.outcome == CUE1
    return {t: cue1[t] / chose[t] for t in chose if chose[t]}


def _female(request) -> str:
    """Names the female cue, whichever option it is: 'A' when option A is the female word."""
    user = request.messages[-1][1]
    a_line = next(line for line in user.splitlines() if line.strip().startswith("A"))
    return "A" if any(w in a_line for w in ("woman", "she")) else "B"


def test_a_second_chat_model_is_asked_the_same_questions_and_compared_target_by_target(session):
    first = _first_chat(session)
    assert model_compare.chat_compare_view(first) == model_compare.empty_view()  # nothing added yet
    other = DummyChatLM(_female, model_id="female-always")
    out = add_chat(first, CHAT_HERE, "female-always", "", "", False, model=other)
    assert out[1] == model_compare.MSG_ADDED.format(model="female\\-always", requests=len(TARGETS) * 2 * 2, n=2)
    new = out[0]
    a, b = new["chat"], new["chat_compare"]["results"][0]
    assert b.template == a.template and b.seed == a.seed and b.samples == a.samples  # the same questions
    summary, forest, reading, table, items, doc, cmp_csv = out[2:]
    assert "2 models compared on the same 8 targets" in summary and reading
    assert sorted(forest.data[0].y) == ["female-always", "planted-chat"] and forest.data[0].hovertemplate
    pa, pb = _p_cue1(a), _p_cue1(b)
    common = sorted(set(pa) & set(pb))
    naive = sum(pb[t] - pa[t] for t in common) / len(common)
    assert all(v == 1.0 for v in pb.values()) and naive > 0
    row = table.iloc[0]
    assert row["Model A"] == "female-always"  # the higher one first
    assert float(row["A − B (points)"]) == pytest.approx(100 * naive, abs=0.06)  # shown in points, rounded
    assert Path(items["value"]).read_bytes().startswith(b"\xef\xbb\xbf")  # the BOM: Excel reads the text right
    with open(items["value"], encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["model"] for r in rows} == {"planted-chat", "female-always"} and len(rows) == 2 * len(TARGETS)
    saved = json.loads(Path(doc["value"]).read_text(encoding="utf-8"))
    assert [r["model_id"] for r in saved["results"]] == ["planted-chat", "female-always"]
    assert cmp_csv["visible"] is True


def test_the_sections_mistakes_are_messages_under_its_button(session):
    out = add_chat(session, CHAT_HERE, "m", "", "", False, model=DummyChatLM(_female))
    assert out[1] == "⚠️ " + md_escape(model_compare.MSG_RUN_FIRST["chat"])
    first = _first_chat(session)
    assert add_chat(first, CHAT_HERE, " ", "", "", False)[1] == "⚠️ " + md_escape(MSG_NO_CHAT_MODEL)
    out = add_chat(first, CHAT_HERE, "planted-chat", "", "", False, model=DummyChatLM(_female))
    assert out[1] == "⚠️ " + md_escape(model_compare.MSG_ALREADY.format(label="planted-chat"))
    assert clear_chat(first)[1] == model_compare.MSG_NOTHING_ADDED
    added = add_chat(first, CHAT_HERE, "other", "", "", False, model=DummyChatLM(_female))[0]
    cleared = clear_chat(added)
    assert cleared[1] == model_compare.MSG_CLEARED and cleared[0]["chat_compare"] is None
    # a new first run makes the added results stale: they are not shown against it
    again = _first_chat(added)
    assert model_compare.chat_compare_view(again) == model_compare.empty_view()


NEUTRAL, NURSE = "{stimulus} is a person.", "{stimulus} is a nurse."


def _subject(nurse_pse: float, seed: int):
    alphas = {s.text: s.alpha for s in name_continuum().stimuli}
    return PlantedPsychometricResponder(alphas, {NEUTRAL: (0.5, 8.0), NURSE: (nurse_pse, 8.0)}, cues=("man", "woman"),
                                        q=0.2, seed=seed, refusal_rate=0.05)


def test_a_second_chat_models_curves_are_compared_per_context(session):
    run = curves.make_curves_run_handler(6)
    out = run(session, CHAT_HERE, "subject-a", "", "", f"{NEUTRAL}\n{NURSE}", "man/woman", curves.CONTINUUM_NAMES,
              None, 3, 1.0, SEED, 200, False, model=DummyChatLM(_subject(0.35, 1), model_id="subject-a"))
    assert out[0].startswith("✅")
    first = out[1]
    out = add_curves(first, CHAT_HERE, "subject-b", "", "", False,
                     model=DummyChatLM(_subject(0.10, 2), model_id="subject-b"))
    assert out[1].startswith("✅ Asked subject\\-b the same")
    new = out[0]
    a, b = new["curves"], new["curves_compare"]["results"][0]
    summary, forest, reading, table, csv_btn, json_btn, hidden = out[2:]
    assert "subject\\-a, subject\\-b" in summary and hidden["visible"] is False
    nurse = table[table["context"] == NURSE].iloc[0]
    own = b.summaries[1].shift["shift"] - a.summaries[1].shift["shift"]
    assert nurse["shift_diff"] == pytest.approx(own, abs=1e-3)
    assert nurse["shift_diff_low"] < nurse["shift_diff"] < nurse["shift_diff_high"] < 0  # the planted −0.25 is found
    assert len(forest.data[0].y) == 4 and "shift from the reference" in str(forest.data[0].customdata)
    assert "difference of shifts" in reading
    path = csv_btn["value"]
    assert Path(path).read_bytes().startswith(b"\xef\xbb\xbf")
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["model"] for r in rows if r["row_type"] == "model"} == {"subject-a", "subject-b"}
    assert sum(r["row_type"] == "pair" for r in rows) == 2
    saved = json.loads(Path(json_btn["value"]).read_text(encoding="utf-8"))
    assert [r["model_id"] for r in saved["results"]] == ["subject-a", "subject-b"]
    assert saved["comparison"]["rows"][1]["shift_diff"] == pytest.approx(own, abs=1e-6)
