"""The 2AFC and WEAT measures in the house: registry, typed options, and result files of 0.1.0 that still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biastest.errors import MethodError, OptionError
from biastest.measures import MEASURES, get_measure
from biastest.measures.twoafc import LaborCorrelation, TwoAFCOptions, TwoAFCResult
from biastest.measures.twoafc.options import MSG_CORPUS_AND_REPLICATES
from biastest.measures.twoafc.score import MSG_MODES
from biastest.measures.weat import MACOptions, MACResult, WEATOptions, WEATResult
from biastest.options import DEFAULT_CONFIDENCE, DEFAULT_TWOAFC_BOOTSTRAP, DEFAULT_WEAT_BOOTSTRAP

RESULTS = Path(__file__).parent / "data" / "results"
FILES = [
    (TwoAFCResult, "twoafc-0.1.0.json"),
    (TwoAFCResult, "twoafc-0.1.0-thurstonian.json"),
    (LaborCorrelation, "twoafc-0.1.0-labor.json"),
    (WEATResult, "weat-0.1.0.json"),
    (MACResult, "weat-0.1.0-mac.json"),
]


# Fields added after 0.1.0 (default None or ""), by place: the named JNDs of the 2AFC (measures/twoafc/jnd.py).
_ADDED = {"": {"jnd_curve_definition", "jnd_definition"}, "targets": {"jnd_sd_ci", "jnd_curve", "jnd_curve_ci",
                                                                     "jnd_note"}, "pairs": {"jnd_curve"}}


def _without_added(d: dict) -> dict:
    out = {k: v for k, v in d.items() if k not in _ADDED[""]}
    for key in ("targets", "pairs"):
        if isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in row.items() if k not in _ADDED[key]} for row in out[key]]
    return out


@pytest.mark.parametrize(("cls", "name"), FILES)
def test_a_result_file_of_0_1_0_loads_with_the_same_content(cls, name):
    data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    result = cls.load_json(RESULTS / name)
    now = result.to_dict()
    assert _without_added(now) == _without_added(data)
    added = set(now) - set(data)
    assert added <= _ADDED[""]
    if cls is TwoAFCResult:  # the new fields are empty: an old file had no JND beyond the replicates' SD
        assert all(t["jnd_curve"] is None and t["jnd_sd_ci"] is None for t in now["targets"])
        assert now["jnd_definition"].startswith("standard deviation")


@pytest.mark.parametrize(("cls", "name"), FILES)
def test_save_and_load_is_identity(cls, name, tmp_path):
    result = cls.load_json(RESULTS / name)
    again = cls.load_json(result.save_json(tmp_path / name))
    assert again.to_dict() == result.to_dict()


def test_a_loaded_2afc_result_still_draws_its_plots():
    result = TwoAFCResult.load_json(RESULTS / "twoafc-0.1.0.json")
    first = result.targets[0].target
    assert result.psychometric_curve(first).target == first
    assert len(result.spectrum().rows) == len(result.targets)
    assert result.targets[0].fit is not None and result.targets[0].fit.sigmoid == "norm"


def test_the_registry_knows_both_measures_and_the_2afc_alias():
    assert get_measure("2afc") is get_measure("twoafc")
    assert MEASURES["weat"].kind == MEASURES["twoafc"].kind == "embeddings"
    with pytest.raises(MethodError, match="Did you mean 'weat'"):
        get_measure("waet")


def test_options_defaults_are_todays():
    o = TwoAFCOptions()
    assert (o.source, o.seed, o.sigmoid, o.lapse, o.n_bootstrap, o.confidence, o.noise_sigma) == (
        "glove-6b-50d", 0, "norm", False, DEFAULT_TWOAFC_BOOTSTRAP, DEFAULT_CONFIDENCE, None)
    w = WEATOptions()
    assert (w.source, w.seed, w.n_permutations, w.n_resamples, w.confidence, w.alternative) == (
        "glove-6b-50d", 0, 10_000, DEFAULT_WEAT_BOOTSTRAP, DEFAULT_CONFIDENCE, "greater")
    assert MACOptions().max_missing_fraction == 0.5


def test_options_refuse_bad_values_with_the_projects_messages():
    with pytest.raises(MethodError, match="one source of perceptual noise"):
        TwoAFCOptions.parse(replicates=("a", "b"), noise_sigma=0.1)
    with pytest.raises(MethodError) as err:
        TwoAFCOptions.parse(replicates=("a", "b"), corpus="some text")
    assert str(err.value) == MSG_CORPUS_AND_REPLICATES
    assert MSG_MODES.startswith("Choose one source")
    with pytest.raises(OptionError, match="The seed"):
        TwoAFCOptions.parse(seed=-1)
    with pytest.raises(OptionError, match="permutations"):
        WEATOptions.parse(n_permutations=5)
    with pytest.raises(OptionError, match="Did you mean 'n_resamples'"):
        WEATOptions.parse(n_resample=500)
