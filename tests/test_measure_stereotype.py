"""The stereotype measure in its folder: result files of version 0.1.0 load, options check what the runner did.

The two result files in ``tests/data/results/`` were written by version 0.1.0's ``StereotypeResult.save_json``
(before the measure moved into ``biastest/measures/stereotype/``): one clustered by template, one with
independent pairs and a pair excluded. Seeds are in the files (3 and 5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biastest.errors import DataError, MethodError, OptionError
from biastest.measures import MEASURES, get_measure
from biastest.measures.stereotype import MEASURE, StereotypeOptions, StereotypeResult, report, with_clusters
from biastest.measures.stereotype.clusters import CLUSTERINGS, DEFAULT_CLUSTERS, MSG_BAD_CLUSTERS
from biastest.measures.stereotype.options import DEFAULT_N_RESAMPLES, MSG_MASKED_NEEDS_PROCESS
from biastest.measures.stereotype.run import StereotypeItems, run
from biastest.measures.stereotype.score import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_TIE_TOLERANCE,
    METHODS,
    MSG_UNKNOWN_METHOD,
)
from biastest.options import DEFAULT_CONFIDENCE, MSG_BAD_WHOLE

RESULTS = Path(__file__).parent / "data" / "results"
FILES = sorted(RESULTS.glob("stereotype-0.1.0-*.json"))


def test_the_fixtures_are_there() -> None:
    assert [f.name for f in FILES] == ["stereotype-0.1.0-pairs.json", "stereotype-0.1.0-template.json"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_result_file_of_version_0_1_0_loads_and_writes_the_same_keys_and_values(path, tmp_path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    result = StereotypeResult.load_json(path)
    assert result.to_dict() == data
    assert result.score == data["overall"]["score"] and result.n_scored == data["n_scored"]
    again = StereotypeResult.load_json(result.save_json(tmp_path / "again.json"))
    assert again == result and again.to_dict() == data
    assert [r["pair_id"] for r in again.pairs_records()] == [p["pair_id"] for p in data["pairs"]]
    assert report.summary_markdown(again)  # the report reads a loaded result


def test_an_old_result_without_clusters_reads_with_pairs_independent() -> None:
    data = json.loads(FILES[0].read_text(encoding="utf-8"))
    for key in ("clusters", "overall_clustered", "magnitude", "magnitude_median"):
        data.pop(key)
    for term in data["per_attribute"]:
        for key in ("clustered", "magnitude", "median_difference", "p_holm", "q_bh"):
            term.pop(key)
    old = StereotypeResult.from_dict(data)
    assert old.clusters == "pair" and old.overall_clustered is None and not old.cluster_aware
    first = old.per_attribute[0]
    assert first.clustered is None and first.p_value == first.summary.p_value


def test_with_clusters_resummarises_a_loaded_result() -> None:
    result = StereotypeResult.load_json(RESULTS / "stereotype-0.1.0-template.json")
    independent = with_clusters(result, "pair")
    assert independent.clusters == "pair" and independent.pairs == result.pairs
    assert independent.overall == result.overall
    # pairs independent within their attribute terms (strata, issue 28): the headline is that design's interval
    assert independent.cluster_aware and independent.overall_clustered.n_strata == 3
    assert independent.headline_interval == (independent.overall_clustered.low, independent.overall_clustered.high)
    assert result.overall_clustered.n_strata == 1  # the file of 0.1.0 keeps the interval it was saved with
    assert independent.provenance["scored_at"] == result.provenance["created_at"]


@pytest.mark.parametrize("bad", [{"kind": "vlm-score"}, {"overall": None}, [1, 2]])
def test_a_file_that_is_not_a_stereotype_result_is_refused(bad) -> None:
    data = json.loads(FILES[0].read_text(encoding="utf-8"))
    with pytest.raises(DataError, match="not a saved stereotype-test result"):
        StereotypeResult.from_dict({**data, **bad} if isinstance(bad, dict) else bad)


def test_the_measure_is_registered() -> None:
    assert get_measure("stereotype") is MEASURE and "stereotype" in MEASURES.names("lm")
    assert MEASURE.Options is StereotypeOptions and MEASURE.Result is StereotypeResult and MEASURE.run is run


def test_the_options_defaults_are_the_apps_and_the_command_lines() -> None:
    from biastest.audit.grid import option_defaults as _defaults
    from biastest.options import DEFAULT_BOOTSTRAP

    o = StereotypeOptions.parse(model_id="gpt2", method="causal-sum", seed=42)
    assert (o.n_resamples, o.confidence, o.batch_size, o.tie_tolerance, o.clusters) == (
        DEFAULT_N_RESAMPLES, DEFAULT_CONFIDENCE, DEFAULT_BATCH_SIZE, DEFAULT_TIE_TOLERANCE, DEFAULT_CLUSTERS)
    assert o.n_resamples == DEFAULT_BOOTSTRAP["lm"] == 10_000 and (o.device, o.dtype) == ("auto", "auto")
    grid = _defaults()
    for scope in ("lm", "lm-endpoint"):
        for name, value in grid[scope].items():
            assert getattr(o, name) == value, (scope, name)


@pytest.mark.parametrize(("given", "error", "message"), [
    ({"seed": -1}, OptionError, MSG_BAD_WHOLE.format(label="The seed", low=0, high=2**32 - 1, value=-1)),
    ({"seed": None}, OptionError, MSG_BAD_WHOLE.format(label="The seed", low=0, high=2**32 - 1, value=None)),
    ({"method": "causal-summ"}, MethodError, MSG_UNKNOWN_METHOD.format(
        name="causal-summ", hint=" Did you mean 'causal-sum'?", choices=", ".join(METHODS))),
    ({"clusters": "by author"}, OptionError,
     MSG_BAD_CLUSTERS.format(value="by author", choices=", ".join(CLUSTERINGS))),
    ({"endpoint": "http://localhost:8000/v1", "method": "pll-unmodified"}, MethodError,
     MSG_MASKED_NEEDS_PROCESS.format(method="pll-unmodified")),
    ({"sede": 1}, OptionError, "Unknown option 'sede'. Did you mean 'seed'?"),
])
def test_each_bad_option_gets_its_message_before_any_model_loads(given, error, message) -> None:
    with pytest.raises(error) as e:
        StereotypeOptions.parse({"model_id": "no/such-model", "method": "causal-sum", "seed": 1, **given})
    assert str(e.value) == message


def test_the_api_key_is_never_an_option_and_never_in_the_result(tmp_path) -> None:
    """The key is a keyword of ``run`` for one call: not a field, not in the dump, not in the result JSON."""
    from tests.completions_stub import CompletionsStub
    from tests.lm_helpers import build_tiny_gpt2, planted_pairs

    secret = "sk-stereotype-secret-1234"
    with pytest.raises(OptionError):
        StereotypeOptions.parse(model_id="m", method="causal-sum", seed=1, api_key=secret)
    folder = build_tiny_gpt2(tmp_path / "gpt2")
    options = StereotypeOptions.parse(model_id="served", method="causal-sum", seed=1, n_resamples=200,
                                      tokenizer=str(folder), endpoint="http://127.0.0.1:1/v1")
    assert secret not in json.dumps(options.dump())
    with CompletionsStub(folder, served_name="served") as stub:
        options = options.model_copy(update={"endpoint": stub.base_url})
        result = run(options, StereotypeItems(planted_pairs()[:6]), api_key=secret)
        assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {secret}"}
    text = result.save_json(tmp_path / "r.json").read_text(encoding="utf-8")
    assert result.n_scored > 0 and secret not in text and secret not in json.dumps(options.dump())
