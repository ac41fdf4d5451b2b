"""The language-model app: handlers against the runner, bad input, exports (no browser here)."""

from __future__ import annotations

import csv
import json

import gradio as gr
import pandas as pd
import pytest

from biastest.report import gpt as report
from biastest.runner.lm import run_stereotype_test
from biastest.ui import gpt as app
from tests.lm_helpers import build_tiny_gpt2

SPEC_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt2") / "tiny-gpt2", seed=3))


def _table(rows):
    return report.pairs_to_table([]).pipe(lambda t: pd.concat([t, pd.DataFrame(rows)], ignore_index=True))


def _state():
    state, msg, *_ = app.confirm_spec(SPEC_NAME, *app.fill_from_library(SPEC_NAME)[:4], app._fresh_state())
    assert msg.startswith("✅")
    return state


PAIRS = [
    {
        "keep": True,
        "attribute_term": "math",
        "group_term_stereotyped": "he",
        "stereotyped": "He is good at math.",
        "group_term_anti": "she",
        "anti_stereotyped": "She is good at math.",
        "category": "Math",
        "source": "user",
        "template": "[T] is good at math.",
    },
    {
        "keep": True,
        "attribute_term": "@poetry",
        "group_term_stereotyped": "she",
        "stereotyped": "She loves <b>poetry</b> =1+1",
        "group_term_anti": "he",
        "anti_stereotyped": "He loves <b>poetry</b> =1+1",
        "category": "Arts",
        "source": "user",
        "template": "[T] loves <b>poetry</b> =1+1",
    },
    {
        "keep": False,
        "attribute_term": "dance",
        "group_term_stereotyped": "she",
        "stereotyped": "",
        "group_term_anti": "he",
        "anti_stereotyped": "",
        "category": "Arts",
        "source": "user",
        "template": "",
    },
]


def test_spec_step_validates_and_unlocks(tiny_gpt2):
    state = _state()
    assert state["spec"]["name"] == SPEC_NAME
    with pytest.raises(gr.Error) as err:
        app.confirm_spec(app.CUSTOM, "he, she", "she", "math", "art", app._fresh_state())
    assert "both social groups" in err.value.message


def test_run_equals_the_runner_and_exports_match(tiny_gpt2):
    state = _state()
    table = _table(PAIRS)
    out = app.run_test(tiny_gpt2, "causal-sum", 7, state, table)
    new_state = out[0]
    result = new_state["result"]
    pairs = report.pairs_from_table(table, spec_name=SPEC_NAME)
    assert len(pairs) == 2  # the unticked row is left out, not an error
    direct = run_stereotype_test(pairs=pairs, model_id=tiny_gpt2, method="causal-sum", seed=7)
    assert [p["difference"] for p in result["pairs"]] == pytest.approx([p.difference for p in direct.pairs], abs=1e-9)
    assert result["overall"]["score"] == direct.overall.score
    csv_path, json_path = out[8].value["path"], out[9].value["path"]
    rows = list(csv.DictReader(open(csv_path, encoding="utf-8")))
    assert [r["stereotyped"] for r in rows] == ["He is good at math.", "She loves <b>poetry</b> =1+1"]
    assert [r["attribute_term"] for r in rows] == ["math", "'@poetry"]  # formula cell neutralised
    assert [float(r["difference"]) for r in rows] == pytest.approx([p.difference for p in direct.pairs], abs=1e-6)
    saved = json.loads(open(json_path, encoding="utf-8").read())
    assert saved["seed"] == 7 and saved["method"] == "causal-sum" and saved["model_id"] == tiny_gpt2
    # hover text escapes the HTML
    grid = out[7]
    assert any("&lt;b&gt;poetry&lt;/b&gt;" in cell for row in grid.data[0].customdata for cell in row)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([], report.MSG_TABLE_EMPTY),
        ([{**PAIRS[0], "keep": False}], report.MSG_NOTHING_KEPT),
        ([{**PAIRS[0], "anti_stereotyped": ""}], report.MSG_ROW_EMPTY_SENTENCE.format(row=1)),
        ([{**PAIRS[0], "anti_stereotyped": "He is good at math."}], report.MSG_ROW_SAME_SENTENCE.format(row=1)),
        (
            [{**PAIRS[0], "stereotyped": "The boy is good at math."}],
            report.MSG_ROW_GROUP_MISSING.format(row=1, sentence="The boy is good at math.", term="he"),
        ),
    ],
)
def test_bad_tables_get_clear_messages(rows, expected, tiny_gpt2):
    with pytest.raises(gr.Error) as err:
        app.run_test(tiny_gpt2, "causal-sum", 1, _state(), _table(rows))
    assert err.value.message == expected


def test_bad_model_and_method_and_seed_are_clear(tiny_gpt2, tmp_path):
    state, table = _state(), _table(PAIRS[:1])
    with pytest.raises(gr.Error) as err:
        app.run_test("", "causal-sum", 1, state, table)
    assert err.value.message == app.MSG_NO_MODEL
    with pytest.raises(gr.Error) as err:
        app.run_test(tiny_gpt2, "pll-unmodified", 1, state, table)
    assert "causal" in err.value.message and "causal-sum" in err.value.message
    with pytest.raises(gr.Error) as err:
        app.run_test(str(tmp_path / "nothing-here"), "causal-sum", 1, state, table)
    assert "Traceback" not in err.value.message
    with pytest.raises(gr.Error) as err:
        app.run_test(tiny_gpt2, "causal-sum", "abc", state, table)
    assert err.value.message == app.MSG_BAD_SEED.format(value="abc")


def test_too_many_pairs_is_refused_without_scoring(tiny_gpt2):
    rows = [
        {**PAIRS[0], "stereotyped": f"He is good at math {i}.", "anti_stereotyped": f"She is good at math {i}."}
        for i in range(report.MAX_PAIRS + 1)
    ]
    with pytest.raises(gr.Error) as err:
        app.run_test(tiny_gpt2, "causal-sum", 1, _state(), _table(rows))
    assert err.value.message == report.MSG_TOO_MANY_PAIRS.format(n=report.MAX_PAIRS + 1, limit=report.MAX_PAIRS)


def test_steps_refuse_without_a_spec():
    with pytest.raises(gr.Error) as err:
        app.run_test("gpt2", "causal-sum", 1, app._fresh_state(), _table(PAIRS))
    assert err.value.message == app.MSG_NO_SPEC


def test_restart_clears_everything():
    out = app.restart()
    assert out[0] == app._fresh_state()
    assert len(out[4]) == 0
