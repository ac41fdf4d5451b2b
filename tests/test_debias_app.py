"""The word-embedding app's comparisons with the hard-debiased embedding: WEAT and 2AFC in "Compare with another
embedding", and the Bayesian estimate's own comparison (the HDI of each contrast's difference)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biastest.measures.bayes.compare import compare_bayes
from biastest.measures.bayes.result import BayesResult
from biastest.measures.weat.compare import compare_weat
from biastest.report.text import md_escape
from biastest.ui import compare
from biastest.ui import psychophysics as emb_app
from biastest.ui.psychophysics import bayes_compare
from biastest.ui.psychophysics.bayes import bayes_core
from tests.embedding_runs import run_weat

WEAT8 = "WEAT 8: Science vs arts, male vs female terms"
PAPER = "Occupations vs gender (Liang & Acuna 2020)"
DEBIASED = "glove-6b-50d + hard-debias(bolukbasi2016)"


def _step1(kind, name):
    if kind == emb_app.KIND_WEAT:
        weat, twoafc = (name, *emb_app.fill_weat(name)), ("", "", "", "", "")
    else:
        twoafc, weat = (name, *emb_app.fill_twoafc(name)), ("",) * 9
    lib2, libw = twoafc[0] or emb_app.CUSTOM, weat[0] or emb_app.CUSTOM
    return [kind, lib2, *twoafc[1:], libw, *weat[1:], "glove-6b-50d", None, ""]


def _embedding_run(kind, name):
    session, message, *_ = emb_app.confirm_spec_core(emb_app.new_session(), *_step1(kind, name), allow_paths=False)
    assert message.startswith("✅")
    return emb_app.run_core(session, emb_app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 2000, 0)


def test_weat_compared_with_this_embedding_hard_debiased():
    run = _embedding_run(emb_app.KIND_WEAT, WEAT8)
    add = compare.embedding_add_handler(allow_paths=False)
    new, message, _summary, _forest, _reading, table, *_ = add(compare.SOURCE_DEBIASED, None, "",
                                                              "mean-abs-deviation", run)
    assert message == md_escape(compare.MSG_ADDED.format(model=DEBIASED, n=2, items="words"))
    direct = run_weat(spec=run["spec"], source=DEBIASED, seed=0)
    expected = compare_weat([run["weat"], direct], seed=0, labels=["glove-6b-50d", DEBIASED])
    assert [m.estimate for m in expected.models] == pytest.approx([run["weat"].effect_size, direct.effect_size])
    assert new["compare"]["results"][0]["source"] == DEBIASED
    assert {table.iloc[0]["Model A"], table.iloc[0]["Model B"]} == {"glove-6b-50d", DEBIASED}
    again = add(compare.SOURCE_DEBIASED, None, "", "mean-abs-deviation", new)[1]  # already there: inline
    assert again == f"⚠️ {md_escape(compare.MSG_ALREADY.format(label=DEBIASED))}"


def test_twoafc_compared_with_this_embedding_hard_debiased():
    run = _embedding_run(emb_app.KIND_TWOAFC, PAPER)
    add = compare.embedding_add_handler(allow_paths=False)
    new, message, *_ = add(compare.SOURCE_DEBIASED, None, "", "mean-deviation", run)
    assert message.startswith("✅")
    debiased = new["compare"]["results"][0]["result"]
    # the cue pairs (he/she, man/woman ...) are equalised and the occupations neutralised: no preference is left
    assert max(abs(t.pse - 0.5) for t in debiased.targets) < max(abs(t.pse - 0.5) for t in run["result"].targets)


def test_the_bayesian_estimate_compared_with_this_embedding_hard_debiased():
    run = _embedding_run(emb_app.KIND_WEAT, WEAT8)
    with pytest.raises(Exception) as err:
        bayes_compare.compare_core(run, bayes_compare.SOURCE_DEBIASED)
    assert str(err.value) == bayes_compare.MSG_RUN_BAYES_FIRST
    session = bayes_core(run, "additive", 200, 100, 1, 3, 0.89, 0.001)  # one short attempt each: the wiring
    new = bayes_compare.compare_core(session, bayes_compare.SOURCE_DEBIASED)
    saved = new["bayes_compare"]
    assert saved["source"] == DEBIASED and saved["result"].provenance["model_id"] == DEBIASED
    assert saved["result"].seed == 3 and saved["result"].model["name"] == "additive" and saved["result"].draws == 200
    expected = compare_bayes(session["bayes"], saved["result"], labels=("glove-6b-50d", DEBIASED))
    assert saved["comparison"].rows == expected.rows
    with pytest.raises(Exception) as err:  # an embedding on this machine only where server paths are allowed
        bayes_compare.compare_core(session, "file:/etc/passwd")
    assert str(err.value) == emb_app.MSG_PATHS_DISABLED
    with pytest.raises(Exception) as err:
        bayes_compare.compare_core(session, "glove-6b-50d")
    assert str(err.value) == bayes_compare.MSG_SAME_EMBEDDING
    status, reading, figure, table, csv_dl, json_dl = bayes_compare.compare_view(new)
    assert status.startswith(("✅", "⚠️")) and "minus glove-6b-50d" in reading
    assert len(table) == len(expected.rows) and figure is not None
    doc = json.loads(Path(json_dl["value"]).read_text(encoding="utf-8"))
    assert doc["result"]["labels"] == ["glove-6b-50d", DEBIASED]
    assert Path(csv_dl["value"]).read_text(encoding="utf-8-sig").startswith("first,second,protected_word")
    # a new estimate (another run, here its record re-dated) leaves no stale comparison
    first = new["bayes"].to_dict()
    rerun = {**new, "bayes": BayesResult.from_dict({**first, "provenance": {**first["provenance"],
                                                                             "created_at": "2030-01-01T00:00:00"}})}
    assert bayes_compare.compare_view(rerun)[0] == ""
