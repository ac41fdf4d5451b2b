"""The language-model app: handlers against the runner, bad input, exports (no browser here).

Mistakes the user fixes by editing an input come back inline (``⚠️`` + the escaped message, the first output of
the handler's message box) with a yellow toast; what editing cannot fix (a model that cannot be loaded, an
unexpected error) is shown in the same box as what failed, that the inputs are kept, and the project's own reason.
"""

from __future__ import annotations

import csv
import json
import threading
import time

import gradio as gr
import pandas as pd
import pytest

from biastest.measures.stereotype import report
from biastest.measures.stereotype import run as lm_run
from biastest.report.export import round_cell
from biastest.report.text import md_escape
from biastest.runner import services
from biastest.ui import gpt as app
from biastest.ui.common import escape
from biastest.ui.dataset_panel import MSG_PANEL_COMMIT
from tests.lm_helpers import build_tiny_gpt2, run_pairs
from tests.store_helpers import shared_dataset_at as _dataset
from tests.store_helpers import wait_until as _wait

SPEC_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt2") / "tiny-gpt2", seed=3))


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if the runner is reached (the check must come before any model loads)."""

    def refuse(**_):
        raise AssertionError("the runner was called")

    monkeypatch.setattr(lm_run, "run_lm_test", refuse)


def _table(rows):
    """The app's table (readable headers) holding ``rows`` (dicts keyed by field)."""
    frame = pd.DataFrame(rows, columns=report.PAIR_COLUMNS)
    return frame.rename(columns=report.PAIR_HEADERS)


def _state():
    state, msg, *_ = app.confirm_spec(SPEC_NAME, *app.fill_from_library(SPEC_NAME)[:4], app._fresh_state())
    assert msg.startswith("✅")
    return state


def _inline(message: str) -> str:
    return f"⚠️ {md_escape(message)}"


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
        "stereotyped": "She loves <b>@poetry</b> =1+1",
        "group_term_anti": "he",
        "anti_stereotyped": "He loves <b>@poetry</b> =1+1",
        "category": "Arts",
        "source": "user",
        "template": "[T] loves <b>@poetry</b> =1+1",
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

#: The pair the issue found scored without a word: an edit that leaves more than the group term different.
EDITED = {
    **PAIRS[0],
    "attribute_term": "passion",
    "group_term_stereotyped": "he",
    "stereotyped": "He has a real passion for numbers.",
    "group_term_anti": "she",
    "anti_stereotyped": "She has a real passion for =cmd|' /C calc'!A0.",
}


def test_spec_step_validates_and_unlocks(tiny_gpt2):
    state = _state()
    assert state["spec"]["name"] == SPEC_NAME
    out = app.confirm_spec(app.CUSTOM, "he, she", "she", "math", "art", app._fresh_state())
    assert out[1].startswith("⚠️") and "both social groups" in out[1]
    assert out[0] == app._fresh_state()  # nothing unlocked, no spec kept


def test_run_equals_the_runner_and_exports_match(tiny_gpt2):
    state = _state()
    table = _table(PAIRS)
    out = app.run_test(tiny_gpt2, "causal-sum", 7, state, table)
    assert len(out) == app.RUN_OUTPUTS
    assert out[0] == app.MSG_RUN_DONE.format(n=2, model=md_escape(tiny_gpt2))
    new_state = out[1]
    result = new_state["result"]
    pairs = report.pairs_from_table(table, spec_name=SPEC_NAME)
    assert len(pairs) == 2  # the unticked row is left out, not an error
    direct = run_pairs(pairs=pairs, model_id=tiny_gpt2, method="causal-sum", seed=7)
    assert [p["difference"] for p in result["pairs"]] == pytest.approx([p.difference for p in direct.pairs], abs=1e-9)
    assert result["overall"]["score"] == direct.overall.score
    csv_path, json_path = out[9].value["path"], out[10].value["path"]
    everything = list(csv.DictReader(open(csv_path, encoding="utf-8-sig")))
    rows = [r for r in everything if r["row_type"] == "pair"]
    assert everything[0]["row_type"] == "summary" and everything[-len(rows):] == rows  # summary rows first
    assert [r["stereotyped"] for r in rows] == ["He is good at math.", "She loves <b>@poetry</b> =1+1"]
    assert [r["attribute_term"] for r in rows] == ["math", "'@poetry"]  # formula cell neutralised
    # the CSV rounds (4 significant digits), the JSON keeps every digit
    assert [float(r["difference"]) for r in rows] == [round_cell("difference", p.difference) for p in direct.pairs]
    saved = json.loads(open(json_path, encoding="utf-8").read())
    assert saved["seed"] == 7 and saved["method"] == "causal-sum" and saved["model_id"] == tiny_gpt2
    # hover text escapes the HTML
    grid = out[8]
    assert any("&lt;b&gt;@poetry&lt;/b&gt;" in cell for row in grid.data[0].customdata for cell in row)


def test_the_clusters_choice_reaches_the_run_and_recomputes_without_the_model(tiny_gpt2, monkeypatch):
    from biastest.measures.stereotype.clusters import CLUSTERINGS, MSG_BAD_CLUSTERS

    state = _state()
    out = app.run_test(tiny_gpt2, "causal-sum", 7, state, _table(PAIRS), clusters="pair")
    result = out[1]["result"]
    assert result["clusters"] == "pair" and "treated as independent" in out[4]
    monkeypatch.setattr(lm_run, "run_lm_test", lambda **_: pytest.fail("the model ran again"))
    new_state, summary, reading, attr, group, dl_csv, dl_json = app.recluster("template", out[1])
    again = new_state["result"]
    assert again["clusters"] == "template" and again["overall"] == result["overall"]  # same pairs, same score
    assert again["pairs"] == result["pairs"] and again["provenance"]["scored_at"] == result["provenance"]["created_at"]
    assert "in 2 clusters** (by template)" in summary and "fewer than the 5" in summary
    assert attr.data and group.data and "cannot tell" in reading
    assert dl_csv.value["path"] != out[9].value["path"] and dl_json.value["path"] != out[10].value["path"]
    assert app.recluster("template", app._fresh_state()) == (gr.skip(),) * app.RECLUSTER_OUTPUTS
    # a clustering the app does not offer (through the API) is a mistake named next to the button, before any model
    bad = app.run_test(tiny_gpt2, "causal-sum", 7, state, _table(PAIRS), clusters="authors")
    assert bad[0] == _inline(MSG_BAD_CLUSTERS.format(value="authors", choices=", ".join(CLUSTERINGS)))
    assert [value for _, value in app.CLUSTER_CHOICES] == list(CLUSTERINGS)


def test_the_table_has_readable_headers_and_reads_back_either_way():
    table = report.pairs_to_table([])
    assert list(table.columns) == [report.PAIR_HEADERS[c] for c in report.PAIR_COLUMNS]
    assert all("_" not in h for h in table.columns)
    by_field = pd.DataFrame([PAIRS[0]], columns=report.PAIR_COLUMNS)  # an API client may send the field names
    assert report.pairs_from_table(by_field) == report.pairs_from_table(_table(PAIRS[:1]))


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
        (
            [{**PAIRS[0], "anti_stereotyped": "She is good at art."}],
            report.MSG_ROW_ATTRIBUTE_MISSING.format(row=1, sentence="She is good at art.", term="math"),
        ),
        (
            [{**PAIRS[0], "anti_stereotyped": "She is as good at math as he is."}],
            report.MSG_ROW_KEPT_GROUP_TERM.format(row=1, sentence="She is as good at math as he is.", term="he"),
        ),
    ],
)
def test_bad_tables_get_clear_inline_messages_before_any_model_loads(rows, expected, no_model):
    out = app.run_test("gpt2", "causal-sum", 1, _state(), _table(rows))
    assert out[0] == _inline(expected)
    assert all(isinstance(o, type(gr.skip())) for o in out[1:])  # nothing else changes


def test_every_failing_row_is_named_and_none_is_scored(no_model):
    missing = {**PAIRS[0], "stereotyped": "The boy is good at math."}
    rows = [PAIRS[0], missing, PAIRS[1], {**PAIRS[0], "anti_stereotyped": ""}]
    out = app.run_test("gpt2", "causal-sum", 1, _state(), _table(rows))
    problems = [
        report.MSG_ROW_GROUP_MISSING.format(row=2, sentence="The boy is good at math.", term="he"),
        report.MSG_ROW_EMPTY_SENTENCE.format(row=4),
    ]
    assert out[0] == "\n".join([_inline(report.MSG_ROWS_PROBLEMS.format(count=2)),
                                *(f"- {md_escape(p)}" for p in problems)])
    # unticking the failing rows is the way out
    rows[1], rows[3] = {**missing, "keep": False}, {**rows[3], "keep": False}
    assert len(report.pairs_from_table(_table(rows))) == 2


def test_a_pair_that_is_not_minimal_is_named_and_left_to_the_run():
    """Issue 28: the edited pair is named with its differing words; the table does not refuse it, the run leaves
    it out (or keeps it by choice) and counts it."""
    rows = [PAIRS[0], EDITED]
    assert report.row_problems(_table(rows)) == {1: report.MSG_ROW_NOT_MINIMAL.format(
        row=2, differences="'numbers' → '= cmd | ' / C calc ' ! A0'")}
    assert report.row_problems(_table(rows), not_minimal=False) == {}
    assert [p.stereotyped for p in report.pairs_from_table(_table(rows))] == [PAIRS[0]["stereotyped"],
                                                                              EDITED["stereotyped"]]


def test_the_keep_anyway_choice_reaches_the_run_and_is_recorded(tiny_gpt2):
    """Step 2's "keep pairs that are not minimal": off, the edited pair is left out and counted; on, it is tested."""
    state, table = _state(), _table([*PAIRS, EDITED])
    ticked = len(report.pairs_from_table(table, spec_name=SPEC_NAME))
    left = app.run_test(tiny_gpt2, "causal-sum", 7, state, table)[1]["result"]
    kept = app.run_test(tiny_gpt2, "causal-sum", 7, state, table, keep_non_minimal=True)[1]["result"]
    assert left["provenance"]["minimal_pairs"]["n_not_minimal"] == 1
    assert left["provenance"]["minimal_pairs"]["left_out"] is True and left["n_scored"] == ticked - 1
    assert kept["provenance"]["minimal_pairs"]["keep_non_minimal"] is True and kept["n_scored"] == ticked


def test_rows_without_two_group_terms_are_not_swap_checked():
    """CrowS-Pairs rows name no group terms and StereoSet rows the same target twice: nothing to swap."""
    crows = {**PAIRS[0], "group_term_stereotyped": "", "group_term_anti": "", "attribute_term": "",
             "stereotyped": "Poor people never pay their bills.", "anti_stereotyped": "Rich people never pay bills."}
    stereoset = {**crows, "group_term_stereotyped": "chess player", "group_term_anti": "chess player",
                 "stereotyped": "The chess player was asian.", "anti_stereotyped": "The chess player was hispanic."}
    assert len(report.pairs_from_table(_table([crows, stereoset]))) == 2


def test_bad_model_and_method_and_seed_are_clear(tiny_gpt2, tmp_path):
    state, table = _state(), _table(PAIRS[:1])
    assert app.run_test("", "causal-sum", 1, state, table)[0] == _inline(app.MSG_NO_MODEL)
    message = app.run_test(tiny_gpt2, "pll-unmodified", 1, state, table)[0]
    assert message.startswith("⚠️") and "causal" in message and "causal\\-sum" in message
    # a model that cannot be loaded: the reason next to the button (issue 28: not only a pop-up that vanishes)
    failed = app.run_test(str(tmp_path / "nothing-here"), "causal-sum", 1, state, table)[0]
    assert failed.startswith(app.MSG_ACTION_FAILED.split("{")[0]) and "nothing\\-here" in failed
    assert "Traceback" not in failed and app.MSG_UNEXPECTED_REASON not in failed
    assert app.run_test(tiny_gpt2, "causal-sum", "abc", state, table)[0] == _inline(app.MSG_BAD_SEED.format(
        value="abc"))


def test_too_many_pairs_is_refused_without_scoring(no_model):
    rows = [
        {**PAIRS[0], "stereotyped": f"He is good at math {i}.", "anti_stereotyped": f"She is good at math {i}."}
        for i in range(report.MAX_PAIRS + 1)
    ]
    out = app.run_test("gpt2", "causal-sum", 1, _state(), _table(rows))
    assert out[0] == _inline(report.MSG_TOO_MANY_PAIRS.format(n=report.MAX_PAIRS + 1, limit=report.MAX_PAIRS))


def test_steps_refuse_without_a_spec(no_model):
    assert app.run_test("gpt2", "causal-sum", 1, app._fresh_state(), _table(PAIRS))[0] == _inline(app.MSG_NO_SPEC)
    assert app.find_sentences(app._fresh_state(), _table([]))[1] == _inline(app.MSG_NO_SPEC)


def test_a_mistake_is_answered_while_another_test_holds_the_model(no_model):
    """The cause of the silent zero-pair run: it waited for the one model slot before looking at its table."""
    slot = threading.Lock()
    slot.acquire()  # another user's test is scoring
    try:
        started = time.monotonic()
        out = app.run_test("gpt2", "causal-sum", 1, _state(), _table([]), slot=slot)
        assert time.monotonic() - started < 2
    finally:
        slot.release()
    assert out[0] == _inline(report.MSG_TABLE_EMPTY)


def test_imported_pairs_are_checked_and_failing_ones_left_unticked(tmp_path, no_model):
    path = tmp_path / "pairs.csv"
    header = "group_term,template,sent_att_1,sent_att_2,att_term_1,att_term_2,label_1,label_2\n"
    path.write_text(
        header
        + "math,[T] likes math.,He likes math.,She likes math.,he,she,stereotype,anti-stereotype\n"
        + "math,[T] likes math.,He likes math.,She hates everything.,he,she,stereotype,anti-stereotype\n",
        encoding="utf-8",
    )
    state = _state()
    table, find_msg, import_msg, gen_msg, run_msg = app.import_file(str(path), "auto", state, _table([PAIRS[0]]))
    assert list(table[report.PAIR_HEADERS["keep"]]) == [True, True, False]
    problem = report.MSG_ROW_ATTRIBUTE_MISSING.format(row=3, sentence="She hates everything.", term="math")
    assert import_msg == "\n".join([
        app.MSG_IMPORTED.format(pairs="2 sentence pairs", name=md_escape("pairs.csv")),
        "",
        _inline(app.MSG_LEFT_UNTICKED.format(count=1, verb="is")),
        f"- {md_escape(problem)}",
    ])
    assert (find_msg, gen_msg, run_msg) == ("", "", "")  # the messages about the earlier table are gone
    assert len(report.pairs_from_table(table)) == 2  # the failing row is not tested
    no_file = app.import_file(None, "auto", state, table)
    assert no_file[2] == _inline(app.MSG_NO_FILE)


def test_a_new_spec_starts_a_clean_step_2_and_the_same_spec_keeps_it():
    state = _state()
    same = app.confirm_spec(SPEC_NAME, *app.fill_from_library(SPEC_NAME)[:4], state)
    assert same[0] is state and all(isinstance(o, type(gr.skip())) for o in same[5:])
    other = app.confirm_spec(app.CUSTOM, "he, man", "she, woman", "math", "art", state)
    assert other[0]["spec"]["name"] == "Custom bias"
    assert len(other[5]) == 0 and other[6:] == ("", "", "", "", "")


def test_step_2_names_the_terms_it_tests():
    custom = app.confirm_spec(app.CUSTOM, "he, man, boy, son", "she, woman, girl, daughter", "math", "art",
                              app._fresh_state())
    assert custom[4] == app.MSG_TESTING.format(what=md_escape("he, man, boy… vs she, woman, girl…, with math vs art"))
    library = app.confirm_spec(SPEC_NAME, *app.fill_from_library(SPEC_NAME)[:4], app._fresh_state())
    assert library[4].startswith(app.MSG_TESTING.format(what=md_escape(library[0]["spec"]["name"])))
    assert "male, man, boy…" in library[4]


def test_generation_clears_stale_messages_and_updates_the_coverage(tmp_path, monkeypatch):
    from tests.openai_stub import OpenAIStub

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    state = app.confirm_spec(app.CUSTOM, "he", "she", "math", "art", app._fresh_state())[0]
    table, find_msg, coverage, *_ = app.find_sentences(state, _table([]))
    assert find_msg == app.MSG_NOTHING_FOUND and "| math | 0 |" in coverage
    with OpenAIStub() as stub:
        out = app.generate("openai-compatible", "", stub.base_url, "stub-model", 1, "with-context", 1, state, table)
    table, find_msg, coverage, import_msg, gen_msg, run_msg, _ = out
    assert len(table) == 2 and "new sentences" in gen_msg
    assert find_msg == "" and import_msg == "" and run_msg == ""
    assert "| math | 1 |" in coverage and "| art | 1 |" in coverage  # kept and brought up to date
    bad = app.generate("openai-compatible", "", "", "stub-model", 1, "with-context", 1, state, table)
    assert bad[4] == _inline(services.MSG_NEED_BASE_URL)


def test_pair_numbers_agree_between_axis_and_hover():
    from types import SimpleNamespace

    def pair(i, attr):  # the figure reads only these fields of a scored pair
        return SimpleNamespace(index=i, attribute_term=attr, stereotyped=f"He likes {attr}.",
                               anti_stereotyped=f"She likes {attr}.", difference=0.5, verdict="stereotyped",
                               excluded_reason=None)

    result = SimpleNamespace(pairs=[pair(0, "math"), pair(1, "art"), pair(2, "math")])
    trace = report.pair_grid(result).data[0]
    keys = [line.split("</b>")[0].removeprefix("<b>") for line in trace.hovertemplate.split("<br>")]
    pair_col = keys.index("Pair")
    assert list(trace.y) == ["#1", "#1", "#2"]
    for x, y, custom in zip(trace.x, trace.y, trace.customdata, strict=True):
        assert custom[pair_col] == md_escape(report.MSG_PAIR_LABEL.format(number=y.removeprefix("#"), term=x)) \
            or custom[pair_col] == report.MSG_PAIR_LABEL.format(number=y.removeprefix("#"), term=x)


def test_zero_bars_are_hoverable_by_row(tiny_gpt2):
    out = app.run_test(tiny_gpt2, "causal-sum", 7, _state(), _table(PAIRS))
    for fig in (out[6], out[7]):
        assert fig.layout.hovermode == "y"


def test_dropdowns_show_short_labels_with_the_description_beside():
    assert all(len(label) <= 40 for label, _ in app.method_choices())
    assert app.prompt_info("with-context").startswith("Names both terms")
    assert "Log-probability of the whole sentence" in app.method_info("causal-sum")


def test_restart_clears_everything():
    out = app.restart()
    assert out[0] == app._fresh_state()
    assert len(out[4]) == 0
    assert out[5:13] == ("",) * 8


# --------------------------------------------------------------------------- the shared dataset, live in step 2
HUB_REPO = "stub-user/lm-sentences"
HUB_TOKEN = "hf_stub_lm_token_0123456789"
TERMS = ("he", "she", "math", "art")




def _custom_state():
    return app.confirm_spec(app.CUSTOM, *TERMS, app._fresh_state())[0]


def _generate(state, table, stub, ds, per_attribute=1):
    return app.generate("openai-compatible", "", stub.base_url, "stub-model", per_attribute, "with-context", 1,
                        state, table, dataset=ds)


def test_the_app_reads_and_writes_the_store_its_shared_dataset_watches(tmp_path, monkeypatch):
    from tests.openai_stub import OpenAIStub

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    ds = services.shared_dataset()
    assert ds.store is services.shared_store()  # one store: the pusher hears the app's writes
    heard = []
    ds.store.add_listener(heard.append)
    state = _custom_state()
    with OpenAIStub() as stub:
        out = app.generate("openai-compatible", "", stub.base_url, "stub-model", 1, "with-context", 1, state,
                           _table([]))
    files = out[6]["shared"][0]["files"]
    assert files and set(files) <= set(heard)  # written to the watched store, and remembered by the session
    ds.store.remove_listener(heard.append)


def test_panel_without_a_dataset_says_sync_is_off_and_how_to_share(tmp_path):
    from biastest.store import shared as S
    from biastest.store.importers import PUBLIC_BIASTESTGPT_REPO
    from tests.openai_stub import OpenAIStub

    ds = _dataset(tmp_path / "store").start()  # no dataset, and no connection (the suite runs offline)
    assert ds.mode == S.MODE_PUBLIC and ds.wait_pulled(20)
    state = _custom_state()
    panel = app.panel_handler(state, dataset=ds)
    assert panel.startswith(escape(S.MSG_SUMMARY_PUBLIC.format(repo=PUBLIC_BIASTESTGPT_REPO,
                                                                   pulled=S.MSG_NEVER_PULLED.format(ago="just now"))))
    assert "BIASTEST_HF_DATASET" in panel and "HF_TOKEN" in panel  # how to turn sharing on
    assert escape(S.MSG_UNREACHABLE.format(problem="offline")) in panel  # said plainly
    assert panel.endswith(escape(app.MSG_PANEL_NONE_SAVED))
    with OpenAIStub() as stub:
        out = _generate(state, _table([]), stub, ds)
    state = out[6]
    assert len(out[0]) == 2 and len(state["shared"]) == 1
    panel = app.panel_handler(state, dataset=ds)
    assert escape(app.MSG_PANEL_SAVED_HEAD.format(n=1, counts=f"1 {S.ITEM_LOCAL}")) in panel
    assert escape(app.MSG_PANEL_ITEM.format(sentences=2, pairs=2, model="stub-model", state=S.ITEM_LOCAL)) \
        in panel
    found = app.find_sentences(state, _table([]), dataset=ds)[1]  # found here, said so
    where = S.MSG_FOUND_LINE.format(n=2, what="sentences", parts=S.MSG_FROM_HERE.format(n=2))
    assert found == md_escape(app.MSG_FOUND.format(where=where, n_pairs=2))
    ds.stop()


def test_generated_sentences_reach_the_hub_and_another_server_finds_exactly_them(tmp_path, hub):
    from collections import Counter

    from biastest.store import shared as S
    from tests.openai_stub import OpenAIStub

    a = _dataset(tmp_path / "a", hub, repo_id=HUB_REPO, token=HUB_TOKEN).start()
    assert a.mode == S.MODE_SYNC and a.wait_pulled(20)
    alice = _custom_state()
    with OpenAIStub() as stub:
        out = _generate(alice, _table([]), stub, a, per_attribute=2)
    alice, table = out[6], out[0]
    assert len(table) == 4 and "new sentences" in out[4]
    _wait(lambda: f": {S.ITEM_PUSHED} in commit " in app.panel_handler(alice, dataset=a), what="the push")
    panel = app.panel_handler(alice, dataset=a)
    assert escape(app.MSG_PANEL_SAVED_HEAD.format(n=1, counts=f"1 {S.ITEM_PUSHED}")) in panel
    states = a.item_state(alice["shared"][0]["files"])
    assert {s for s, _ in states.values()} == {S.ITEM_PUSHED}
    commit = list(states.values())[-1][1]
    assert len(commit) == 40 and escape(S.MSG_SUMMARY_SYNC.split(" {pulled}")[0].format(repo=HUB_REPO)) in panel
    assert panel.endswith(escape(app.MSG_PANEL_ITEM.format(sentences=4, pairs=4, model="stub-model",
                                                               state=S.ITEM_PUSHED)
                                     + MSG_PANEL_COMMIT.format(commit=commit[:10])))
    mine = {s.text: s for s in a.store.sentences()}
    assert len(mine) == 4
    rows = hub.parquet_rows(HUB_REPO, "sentences")
    assert sorted(r["text"] for r in rows) == sorted(mine)  # every generated sentence, once
    a.stop()

    b = _dataset(tmp_path / "b", hub, repo_id=HUB_REPO, token=HUB_TOKEN).start()  # server B: empty, started later
    assert b.wait_pulled(30) and b.pulls.ok
    b.clock.t += 120
    bob = _custom_state()
    table, found, *_ = app.find_sentences(bob, _table([]), dataset=b)
    where = S.MSG_FOUND_LINE.format(n=4, what="sentences", parts=S.MSG_FROM_DATASET.format(
        n=4, repo=HUB_REPO, pulled="pulled 2 min ago"))
    assert found == md_escape(app.MSG_FOUND.format(where=where, n_pairs=4))
    got = services.retrieve_pairs(app._spec(bob), dataset=b)
    assert Counter(s.text for s in b.store.sentences()) == Counter(list(mine))  # each exactly once
    assert sorted(got.sentence_ids) == sorted(s.id for s in mine.values())
    for s in b.store.sentences():  # provenance intact
        m = mine[s.text]
        assert (s.source, s.generator, s.model, s.prompt, s.group_term, s.attribute_term, s.seed) == (
            m.source, m.generator, m.model, m.prompt, m.group_term, m.attribute_term, m.seed)
        assert s.source == "generated" and s.prompt
    st, anti = report.PAIR_HEADERS["stereotyped"], report.PAIR_HEADERS["anti_stereotyped"]
    assert sorted(zip(table[st], table[anti], strict=True)) == sorted(
        zip(out[0][st], out[0][anti], strict=True))  # the same pairs as the generating session's
    b.stop()


def test_refresh_from_the_dataset_returns_at_once_and_a_later_find_sees_new_sentences(tmp_path, hub):
    from biastest.store import shared as S
    from tests.openai_stub import OpenAIStub

    writer = _dataset(tmp_path / "w", hub, repo_id=HUB_REPO, token=HUB_TOKEN)
    reader = _dataset(tmp_path / "r", hub, repo_id=HUB_REPO, pull_interval_s=3600).start()
    assert reader.wait_pulled(20)
    state = _custom_state()
    assert app.find_sentences(state, _table([]), dataset=reader)[1] == app.MSG_NOTHING_FOUND
    with OpenAIStub() as stub:  # another server's user generates (pushed by hand: its pusher is not started)
        made = _generate(_custom_state(), _table([]), stub, writer)
    assert len(made[0]) == 2 and writer.sync.push_now().ok
    n = len(reader.pulls.history)
    hub.delay_s = 0.5  # a slow hub
    t0 = time.monotonic()
    panel = app.refresh_handler(state, dataset=reader)
    assert time.monotonic() - t0 < 0.25  # the button returns while the pull runs in the background
    assert panel.startswith(escape(S.MSG_SUMMARY_READ.format(repo=HUB_REPO, pulled="pulled just now")))
    assert reader.wait_pulled(30) and len(reader.pulls.history) == n + 1
    hub.delay_s = 0
    found = app.find_sentences(state, _table([]), dataset=reader)[1]
    where = S.MSG_FOUND_LINE.format(n=2, what="sentences", parts=S.MSG_FROM_DATASET.format(
        n=2, repo=HUB_REPO, pulled="pulled just now"))
    assert found == md_escape(app.MSG_FOUND.format(where=where, n_pairs=2))
    reader.stop()


# ----------------------------------------------------------------------------- failures stay inline (issue 28, 6)
def _failed(action: str, reason: str = app.MSG_UNEXPECTED_REASON) -> str:
    return app.MSG_ACTION_FAILED.format(action=action, reason=md_escape(reason))


def _broken(exc: Exception):
    def fail(*_, **__):
        raise exc

    return fail


def _all_skipped(outputs) -> bool:
    return all(isinstance(o, type(gr.skip())) for o in outputs)


def test_a_run_that_fails_says_why_next_to_its_button_and_the_next_run_clears_it(tiny_gpt2, monkeypatch):
    from biastest.errors import ModelLoadError
    from biastest.ui.gpt import handlers

    state, table = _state(), _table(PAIRS)
    real = lm_run.run_lm_test
    monkeypatch.setattr(lm_run, "run_lm_test", _broken(RuntimeError("CUDA internal detail")))
    out = app.run_test(tiny_gpt2, "causal-sum", 7, state, table)
    assert out[0] == _failed(handlers.ACTION_RUN)
    assert "RuntimeError" not in out[0] and "CUDA" not in out[0]  # the class name and internals are no reason
    assert len(out) == app.RUN_OUTPUTS and _all_skipped(out[1:])  # the inputs and any earlier result are kept
    # the project's own message is a reason: it is shown
    monkeypatch.setattr(lm_run, "run_lm_test", _broken(ModelLoadError("The model 'x' could not be loaded.")))
    assert app.run_test(tiny_gpt2, "causal-sum", 7, state, table)[0] == _failed(
        handlers.ACTION_RUN, "The model 'x' could not be loaded.")
    monkeypatch.setattr(lm_run, "run_lm_test", real)
    again = app.run_test(tiny_gpt2, "causal-sum", 7, state, table)
    assert again[0] == app.MSG_RUN_DONE.format(n=2, model=md_escape(tiny_gpt2))  # the old message is replaced


def test_find_import_and_generate_failures_are_shown_inline_and_cleared_by_the_next_success(tmp_path, monkeypatch):
    from biastest.ui.gpt import handlers
    from tests.openai_stub import OpenAIStub

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    state = app.confirm_spec(app.CUSTOM, "he", "she", "math", "art", app._fresh_state())[0]
    table = _table([])
    for name in ("retrieve_pairs", "import_pairs", "generate_pairs"):
        real = getattr(services, name)
        monkeypatch.setattr(services, name, _broken(OSError("disk detail")))
        find = app.find_sentences(state, table) if name == "retrieve_pairs" else None
        if find is not None:
            assert find[1] == _failed(handlers.ACTION_FIND) and _all_skipped([find[0], *find[2:]])
        path = tmp_path / "pairs.csv"
        path.write_text("group_term,template,sent_att_1,sent_att_2,att_term_1,att_term_2,label_1,label_2\n"
                        "math,[T] likes math.,He likes math.,She likes math.,he,she,stereotype,anti-stereotype\n",
                        encoding="utf-8")
        imported = app.import_file(str(path), "auto", state, table)
        generated = app.generate("openai-compatible", "", "http://127.0.0.1:9/v1", "m", 1, "with-context", 1,
                                 state, table)
        if name == "import_pairs":
            assert imported[2] == _failed(handlers.ACTION_IMPORT) and _all_skipped([*imported[:2], *imported[3:]])
        if name == "generate_pairs":
            assert generated[4] == _failed(handlers.ACTION_GENERATE)
            assert _all_skipped([*generated[:4], *generated[5:]])
        monkeypatch.setattr(services, name, real)
    find = app.find_sentences(state, table)
    assert find[1] == app.MSG_NOTHING_FOUND
    imported = app.import_file(str(path), "auto", state, table)
    assert imported[2] == app.MSG_IMPORTED.format(pairs="1 sentence pair", name=md_escape("pairs.csv"))
    with OpenAIStub() as stub:
        generated = app.generate("openai-compatible", "", stub.base_url, "stub-model", 1, "with-context", 1, state,
                                 table)
    assert "new sentences" in generated[4] and "did not work" not in generated[4]
