"""Text classifiers in an audit grid: a local folder and a classifier behind a label-scores endpoint, each run on a
2AFC specification (``twoafc-classifier``) and a bias specification (``classifier-2afc``); every cell equals a direct
call of the measure's runner, and the grid's classifier references go through the same checks as the app's."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biastest import public
from biastest.audit import parse_grid, read_table, run_audit
from biastest.audit.grid_common import GridError
from biastest.audit.plan import make_plan
from biastest.audit.report import build_report
from biastest.errors import PolicyError
from biastest.inputs import load_spec
from biastest.measures.classifier_2afc import Classifier2AFCItems, Classifier2AFCOptions, run_classifier_2afc
from biastest.measures.classifier_twoafc import TwoAFCClassifierItems, TwoAFCClassifierOptions, run_twoafc_classifier
from tests.audit_helpers import SPEC_A
from tests.classifier_helpers import LabelScoresStub, RuleClassifier, build_planted_classifier
from tests.twoafc_chat_helpers import small_spec


@pytest.fixture(scope="module")
def clf(tmp_path_factory):
    return build_planted_classifier(tmp_path_factory.mktemp("clf") / "clf", boost=("woman", "female", "she"),
                                    effect=1.0)


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(small_spec(n=12, pairs=3).to_dict()), encoding="utf-8")
    return path


@pytest.fixture
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


def test_classifier_cells_equal_direct_runner_calls(tmp_path, clf, spec_file, private_mode) -> None:
    """The local tiny classifier boosts every female cue word: P(cue 1) is 100 % everywhere, so its correlation is
    not defined (an empty score with the reason); the served one follows a rule tied to the BLS shares."""
    rule = RuleClassifier(seed=5)
    with LabelScoresStub(rule) as stub:
        grid = {"models": [{"name": "local", "kind": "classifier", "id": str(clf)},
                           {"name": "served", "kind": "classifier", "endpoint": stub.url, "model": "clf"}],
                "specs": [{"spec": str(spec_file)}, {"spec": SPEC_A}], "seeds": [3],
                "options": {"n_resamples": 200, "n_permutations": 500, "device": "cpu"}}
        plan = make_plan(parse_grid(grid, base=tmp_path), tmp_path / "plan")
        assert sorted((c.model.name, c.measure) for c in plan.cells) == [
            ("local", "classifier-2afc"), ("local", "twoafc-classifier"), ("served", "classifier-2afc"),
            ("served", "twoafc-classifier")]
        out = tmp_path / "out"
        summary = run_audit(parse_grid(grid, base=tmp_path), out, progress=False)
    assert (summary.cells, summary.computed, summary.failed) == (4, 4, 0)
    html = build_report(out)  # the report compares the two classifiers by each measure's own compare
    assert "2 models on the same 12 items" in html
    table = read_table(out).set_index(["model", "method"])
    for name, model in (("local", None), ("served", rule)):
        occ = run_twoafc_classifier(TwoAFCClassifierOptions.parse(
            {"model_id": str(clf), "seed": 3, "n_resamples": 200, "device": "cpu"}),
            TwoAFCClassifierItems(small_spec(n=12, pairs=3)), model=model)
        bias = run_classifier_2afc(Classifier2AFCOptions.parse(
            {"model_id": str(clf), "seed": 3, "n_resamples": 200, "n_permutations": 500, "device": "cpu"}),
            Classifier2AFCItems(load_spec(SPEC_A)), model=model)
        row = table.loc[(name, "twoafc-classifier")]
        assert row.status == "done" and row.statistic.startswith("Pearson r") and row.n == occ.n_comparisons
        if model is None:
            assert occ.labour.pearson_r is None and pd.isna(row.score) and occ.labour.reason in row.note
        else:
            assert occ.labour.pearson_r > 0.5 and row.score == pytest.approx(occ.labour.pearson_r, abs=1e-9)
            assert (row.ci_low, row.ci_high) == pytest.approx((occ.labour.pearson_low, occ.labour.pearson_high),
                                                              abs=1e-9)
        row = table.loc[(name, "classifier-2afc")]
        assert row.status == "done" and row.score == pytest.approx(bias.share.estimate, abs=1e-9)
        assert (row.ci_low, row.ci_high) == pytest.approx((bias.share.low, bias.share.high), abs=1e-9)


def test_a_grids_classifier_reference_is_checked_before_anything_loads(tmp_path, monkeypatch) -> None:
    with pytest.raises(GridError) as e:
        parse_grid({"models": [{"kind": "classifier", "id": "./no/such/folder"}], "specs": [SPEC_A]}, base=tmp_path)
    assert "no/such/folder" in str(e.value)
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={"BIASTEST_PUBLIC": "1"}))
    with pytest.raises(PolicyError) as e:  # the public-mode address check, as in the app
        parse_grid({"models": [{"kind": "classifier", "endpoint": "http://127.0.0.1:9/predict", "model": "m"}],
                    "specs": [SPEC_A]}, base=tmp_path)
    assert str(e.value).startswith("model 1: ") and "127.0.0.1" in str(e.value)
