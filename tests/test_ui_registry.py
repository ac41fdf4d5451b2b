"""The apps' lists of measures and methods come from :data:`biastest.measures.MEASURES` (issue 23).

Each app reads the registry: the language-model app's scoring methods are the stereotype measure's ``choices``,
the vision-language app's ways to combine terms the vlm measure's, the word-embedding app's "Which test?" and
its section titles the embedding measures' labels. A measure registered for a ``with`` block shows up in the
lists that read the registry; a record whose ``choices`` name an option it does not have is refused.
"""

from __future__ import annotations

import dataclasses

import pytest

from biastest.measures import MEASURES, Measure
from biastest.measures.stereotype.score import METHODS
from biastest.measures.vlm.options import COMBINE_CHOICES
from biastest.ui import gpt
from biastest.ui.common import measure_label, offered
from biastest.ui.psychophysics import spec as emb_spec
from biastest.ui.vqa import results as vqa_results


def test_every_measure_has_a_label_and_its_choices_are_its_options():
    for m in MEASURES.values():
        assert m.label and m.label == measure_label(m.name)
        for option in m.choices:
            assert option in m.Options.model_fields
    assert offered("stereotype", "method") == tuple(METHODS)
    assert offered("vlm", "combine") == tuple(COMBINE_CHOICES)
    assert measure_label("2afc") == measure_label("twoafc")  # aliases resolve


def test_a_record_whose_choices_name_an_unknown_option_is_refused():
    with pytest.raises(ValueError, match="not one of its options"):
        dataclasses.replace(MEASURES["vlm"], choices={"combien": ("sum-prob",)})
    assert dataclasses.replace(MEASURES["vlm"], label="").label == "vlm"  # no label: the name


def test_the_language_model_app_offers_the_registrys_methods():
    assert [value for _, value in gpt.method_choices()] == list(offered("stereotype", "method"))
    assert gpt.DEFAULT_METHOD in offered("stereotype", "method")
    assert gpt.method_info("no-such-method") == ""
    for name in offered("stereotype", "method"):
        assert f"**{name}**" in gpt.METHOD_HELP


def test_a_method_the_registry_stops_offering_leaves_the_app():
    stereotype = MEASURES["stereotype"]
    fewer = dataclasses.replace(stereotype, choices={"method": ("causal-sum",)})
    MEASURES._by_name["stereotype"] = fewer
    try:
        assert [value for _, value in gpt.method_choices()] == ["causal-sum"]
        assert gpt.method_info("template-mask") == ""
    finally:
        MEASURES._by_name["stereotype"] = stereotype


def test_the_embedding_apps_test_kinds_are_the_registrys_labels():
    assert emb_spec.TEST_KINDS == (measure_label("twoafc"), measure_label("weat"))
    assert (emb_spec.KIND_TWOAFC, emb_spec.KIND_WEAT) == ("2AFC psychophysics", "WEAT / MAC")


def test_a_registered_embedding_measure_of_a_new_kind_of_spec_shows_in_which_test():
    toy = Measure(name="toy-emb", kind="embeddings", title="toy", Options=MEASURES["weat"].Options,
                  run=lambda *a, **k: None, Result=MEASURES["weat"].Result, spec_type="toy", label="Toy test")
    with MEASURES.registered(toy):
        assert emb_spec._test_kinds() == ("2AFC psychophysics", "WEAT / MAC", "Toy test")
    assert emb_spec._test_kinds() == ("2AFC psychophysics", "WEAT / MAC")


def test_the_vqa_run_inputs_are_one_record_and_keep_the_key_out_of_its_repr():
    inputs = vqa_results.RunInputs("m", [], "", "sum-prob", "", 0, 16, 500, vqa_results.MODEL_ENDPOINT,
                                   "http://127.0.0.1:1/v1", "served", "sk-secret")
    assert "sk-secret" not in repr(inputs) and inputs.endpoint_key == "sk-secret"
    assert inputs.clusters == "auto"
    with pytest.raises(TypeError):
        vqa_results.RunInputs(*range(14))  # one value more than the Run button passes
