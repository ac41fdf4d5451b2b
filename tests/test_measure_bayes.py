"""The bayes and posterior measures: their options, their registration, and result files of earlier versions.

The files under ``tests/data/results/`` were written by the code before the measures moved into
``biastest/measures/`` (small runs: two words per list, three control words, 100 draws): they must
keep loading, give back exactly what they hold, and survive a save/load round trip.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biastest.errors import MethodError, OptionError
from biastest.measures import MEASURES, get_measure
from biastest.measures.bayes import BayesOptions, BayesResult
from biastest.measures.bayes.score import (
    DEFAULT_CHAINS,
    DEFAULT_DRAWS,
    DEFAULT_TIME_LIMIT,
    DEFAULT_TUNE,
    HDI_PROB,
    MAX_ATTEMPTS,
    MSG_BAD_ATTEMPTS,
    MSG_UNKNOWN_MODEL,
)
from biastest.measures.posterior import PosteriorOptions, PosteriorResult
from biastest.options import BOUNDS, MSG_BAD_WHOLE
from biastest.ui.psychophysics.bayes import BAYES_DEFAULTS
from biastest.ui.psychophysics.posterior import POSTERIOR_DEFAULTS

DATA = Path(__file__).parent / "data" / "results"
BAYES_FILES = sorted(DATA.glob("bayes-0.1.0*.json"))
POSTERIOR_FILES = sorted(DATA.glob("posterior-0.1.0*.json"))


def _whole(name, value):
    b = BOUNDS[name]
    return MSG_BAD_WHOLE.format(label=b.label, low=int(b.low), high=int(b.high), value=value)


@pytest.mark.parametrize(("path", "cls"), [(p, BayesResult) for p in BAYES_FILES]
                         + [(p, PosteriorResult) for p in POSTERIOR_FILES], ids=lambda v: getattr(v, "name", ""))
def test_result_files_of_the_earlier_version_load_unchanged(path, cls, tmp_path):
    data = json.loads(path.read_text(encoding="utf-8"))
    result = cls.load_json(path)
    assert result.to_dict() == data
    again = cls.load_json(result.save_json(tmp_path / "again.json"))
    assert again.to_dict() == data and again == result


def test_the_fixture_files_exist():
    assert len(BAYES_FILES) == 2 and len(POSTERIOR_FILES) == 1


def test_a_loaded_bayes_result_serves_the_report_and_its_records():
    from biastest.measures.bayes import report

    res = BayesResult.load_json(BAYES_FILES[0])
    assert res.level_label == res.to_dict()["interval"] == "89% HPDI"
    assert res.cells[0]["protected_word"] == "math" and res.contrasts[0]["protected_word"] == "(overall)"
    rows = report.csv_rows(res, source="glove-6b-50d")
    assert rows[0]["row_type"] == "summary" and {r["row_type"] for r in rows} >= {"sampler attempt", "interval"}


def test_a_file_that_is_not_a_result_is_refused(tmp_path):
    from biastest.errors import DataError

    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"model": {}}), encoding="utf-8")
    with pytest.raises(DataError):
        BayesResult.load_json(bad)


def test_both_measures_are_registered_for_embeddings():
    assert get_measure("bayes").Options is BayesOptions and get_measure("posterior").Result is PosteriorResult
    assert {"bayes", "posterior"} <= set(MEASURES.names("embeddings"))


def test_bayes_options_defaults_are_the_app_and_cli_defaults():
    d = BayesOptions.defaults()
    assert d == {"source": "glove-6b-50d", "seed": 0, "model": "hierarchical", "draws": DEFAULT_DRAWS,
                 "tune": DEFAULT_TUNE, "chains": DEFAULT_CHAINS, "hdi_prob": HDI_PROB, "time_limit": DEFAULT_TIME_LIMIT,
                 "max_attempts": MAX_ATTEMPTS}
    assert {k: d[k] for k in BAYES_DEFAULTS} == BAYES_DEFAULTS  # the app's controls start here
    assert (d["draws"], d["tune"], d["chains"], d["hdi_prob"], d["time_limit"]) == (2000, 1000, 2, 0.89, 120.0)


def test_posterior_options_defaults_are_the_runner_defaults():
    d = PosteriorOptions.defaults()
    assert d == {"source": "glove-6b-50d", "seed": 0, "draws": 2000, "tune": 1000, "chains": 2, "hidden": 8,
                 "epochs": 200, "vocab_size": 50000, "k_words": 10,
                 # the classifier learned from the user's labelled texts (issue 25); none: the lexicon's
                 "training_texts": None, "training_rows": None, "training_positive_label": None, "cv_folds": 5}
    assert POSTERIOR_DEFAULTS["seed"] == d["seed"] and POSTERIOR_DEFAULTS["chains"] == d["chains"]


@pytest.mark.parametrize(("name", "value"), [("seed", -1), ("draws", 10**9), ("tune", 0), ("chains", 100),
                                             ("seed", None), ("draws", None)])
def test_bad_sampler_settings_give_their_bound_message(name, value):
    for cls in (BayesOptions, PosteriorOptions):
        with pytest.raises(OptionError) as e:
            cls.given({name: value})
        assert e.value.message == _whole(name, value)


def test_bad_model_attempts_and_typos_are_refused():
    with pytest.raises(MethodError) as e:
        BayesOptions.parse({"model": "hierarchal"})
    assert e.value.message == MSG_UNKNOWN_MODEL.format(name="hierarchal", choices="additive, hierarchical")
    with pytest.raises(MethodError) as e:
        BayesOptions.parse({"max_attempts": 9})
    assert e.value.message == MSG_BAD_ATTEMPTS.format(value=9, high=MAX_ATTEMPTS)
    with pytest.raises(OptionError) as e:
        BayesOptions.parse({"draw": 500})
    assert "Did you mean 'draws'?" in e.value.message
    with pytest.raises(OptionError) as e:
        PosteriorOptions.parse({"k_word": 5})
    assert "Did you mean 'k_words'?" in e.value.message


def test_loaded_embeddings_dump_as_their_name():
    class Emb:
        name = "toy-embedding"

    assert BayesOptions.parse({"source": Emb()}).dump()["source"] == "toy-embedding"
