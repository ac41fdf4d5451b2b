"""The vision-language measure's house: result files of 0.1.0 still load, the options' defaults and checks, the
registry entry, and the endpoint key never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biastest.audit.grid import option_defaults as _defaults
from biastest.errors import MethodError, OptionError
from biastest.measures import get_measure
from biastest.measures import vlm as V
from biastest.models.endpoint_lm import DEFAULT_CONCURRENCY, DEFAULT_MAX_REQUESTS, DEFAULT_TIME_LIMIT
from biastest.options import DEFAULT_BOOTSTRAP, DEFAULT_SEEDS, check_option

RESULTS = Path(__file__).parent / "data" / "results"
#: Written by the 0.1.0 code (metrics/vlm_score.py) before the move: a CLIP-like run, an endpoint run with some
#: images without probabilities and one not scored, and an endpoint run without any probability.
CURRENT = ["vlm-0.1.0-clip.json", "vlm-0.1.0-endpoint.json", "vlm-0.1.0-hard-only.json"]
#: The CLIP-like file with the fields clusters brought removed (a file saved before clusters existed).
BEFORE_CLUSTERS = "vlm-0.1.0-before-clusters.json"


@pytest.mark.parametrize("name", CURRENT)
def test_result_files_of_0_1_0_load_and_write_back_unchanged(name, tmp_path):
    data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    r = V.VLMResult.load_json(RESULTS / name)
    assert r.to_dict() == data
    again = V.VLMResult.load_json(r.save_json(tmp_path / "again.json"))
    assert again == r and again.to_dict() == data
    assert r.hard.score == data["hard"]["score"] and r.n_images == data["n_images"] == len(r.images)


def test_a_result_file_from_before_clusters_loads_with_the_cluster_fields_empty():
    old = V.VLMResult.load_json(RESULTS / BEFORE_CLUSTERS)
    now = V.VLMResult.load_json(RESULTS / "vlm-0.1.0-clip.json")
    assert old.clusters == "image" and old.soft_clustered is None and old.magnitude is None
    assert old.n_log_odds_capped == 0 and all(img.term_vs_other == {} for img in old.images)
    assert old.soft == now.soft and old.hard == now.hard and old.score == now.score
    assert [t.p_value for t in old.per_image_term] == [t.soft.p_value for t in now.per_image_term]
    again = old.with_clusters("image-prompt")  # the cluster-aware parts are recomputed from the saved images
    assert again.soft_clustered == now.with_clusters("image-prompt").soft_clustered
    assert again.clusters == "image-prompt"
    # the file of 0.1.0 keeps the interval it was saved with (prompts resampled across image terms, as then);
    # recomputed today, prompts are resampled within their image term (issue 28: terms are strata)
    assert now.soft_clustered.n_strata == 1 and again.soft_clustered.n_strata > 1


def test_the_options_defaults_are_the_apps_the_command_lines_and_the_audits():
    o = V.VLMOptions.parse(model_id="m")
    grid = _defaults()["vlm"]
    assert o.seed == DEFAULT_SEEDS["vlm"] and o.n_resamples == DEFAULT_BOOTSTRAP["vlm"] == grid["n_resamples"]
    assert list(o.prompt_template) == grid["prompt_template"] == [V.DEFAULT_PROMPT_TEMPLATE]
    for name in ("question", "combine", "clusters", "batch_size", "confidence", "max_new_tokens", "device", "dtype"):
        assert getattr(o, name) == grid[name], name
    assert (o.concurrency, o.max_requests, o.time_limit) == (DEFAULT_CONCURRENCY, DEFAULT_MAX_REQUESTS,
                                                             DEFAULT_TIME_LIMIT)
    assert o.endpoint is None and o.revision is None


def test_each_bad_option_gets_its_message():
    def message(**kw):
        with pytest.raises((MethodError, OptionError)) as e:
            V.VLMOptions.parse(model_id="m", **kw)
        return e.value.message

    assert message(combine="max") == V.MSG_BAD_COMBINE.format(value="max", choices=", ".join(V.COMBINE_CHOICES))
    assert message(prompt_template="a photo") == V.MSG_BAD_TEMPLATE.format(template="a photo")
    assert message(question="Is it {X}?") == V.MSG_BAD_QUESTION.format(question="Is it {X}?")
    assert message(question="  ") == V.MSG_EMPTY_QUESTION
    assert message(clusters="x") == V.MSG_BAD_CLUSTERS.format(value="x", choices=", ".join(V.CLUSTERINGS))
    with pytest.raises(OptionError) as bound:
        check_option("batch_size", 0)
    assert message(batch_size=0) == bound.value.message  # the bounds of biastest.options
    assert message(promt_template="{term}") == "Unknown option 'promt_template'. Did you mean 'prompt_template'?"
    assert V.VLMOptions.parse(model_id="m", prompt_template="a {}").prompt_template == ("a {term}",)


def test_the_measure_is_registered_with_its_parts():
    m = get_measure("vlm")
    assert get_measure("vqa") is m and m.kind == "vlm" and m.Options is V.VLMOptions and m.Result is V.VLMResult
    assert m.run is V.run and m.compare is V.compare_vlm and m.report.csv_rows


def test_the_endpoint_key_is_never_in_the_options_or_the_result(tmp_path):
    from biastest.spec import BiasSpec
    from tests.chat_images_stub import ChatImagesStub
    from tests.vlm_helpers import colour_images, save_tiny_clip

    key = "sk-secret-key-1234567890"
    assert "api_key" not in V.VLMOptions.model_fields  # the key is a keyword of run(), never an option
    with pytest.raises(OptionError):
        V.VLMOptions.parse(model_id="m", api_key=key)
    spec = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse")
    images = colour_images(tmp_path / "store", per_term=2, seed=3)
    with ChatImagesStub(save_tiny_clip(tmp_path / "clip"), served_name="vl") as stub:
        options = V.VLMOptions.parse(model_id="vl", endpoint=stub.base_url, n_resamples=200)
        r = V.run(options, V.VLMItems(images, tmp_path / "store", spec), api_key=key)
    assert r.n_images == 4 and key not in json.dumps(options.dump()) and key not in json.dumps(r.to_dict())
