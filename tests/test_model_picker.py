"""The honest model picker in the three apps: what each list offers, in what order, and what it says offline.

The Hugging Face cache (``huggingface_hub.constants.HF_HUB_CACHE``) and the models folder (``BIASTEST_MODELS_DIR``)
are pointed at folders in ``tmp_path``; the test session is offline (``HF_HUB_OFFLINE=1``), so the page-load refresh
marks the Hub ids as needing the internet without any network access.
"""

from __future__ import annotations

import shutil

import gradio as gr
import pytest

from biastest import public, settings
from biastest.errors import EmbeddingError
from biastest.models import catalog as C
from biastest.report.text import md_escape
from biastest.ui import model_picker as P
from tests import lm_helpers as H
from tests.test_catalog import put_in_hf_cache


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return H.build_tiny_gpt2(tmp_path_factory.mktemp("picker") / "gpt2", seed=2)


@pytest.fixture
def machine(tmp_path, gpt2_dir, monkeypatch):
    """This machine: distilgpt2 in the Hugging Face cache, a saved model and word vectors in the models folder."""
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    put_in_hf_cache(cache, "distilgpt2", gpt2_dir)
    folder = tmp_path / "models"
    shutil.copytree(gpt2_dir, folder / "my-gpt2")
    (folder / "vectors.txt").write_text("she 0.1 0.2\nhe 0.2 0.1\nnurse 0.3 0.3\nengineer 0.1 0.4\n")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv(settings.MODELS_DIR_ENV, str(folder))
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    C._scans.clear()
    C.forget_hub_status()
    yield {"cache": cache, "folder": folder}
    C._scans.clear()


def _dropdown(demo, elem_id: str):
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def _values(choices) -> list[str]:
    return [c[1] if isinstance(c, tuple | list) else c for c in choices]


def test_the_language_model_list_starts_with_this_machine_and_defaults_to_it(machine):
    from biastest.ui import gpt

    demo = gpt.build_demo()
    model = _dropdown(demo, "model-id")
    values = _values(model.choices)
    assert values[:2] == ["distilgpt2", str(machine["folder"] / "my-gpt2")]
    assert values[2:] == [r for r in gpt.SUGGESTED_MODELS if r != "distilgpt2"]
    assert model.value == "distilgpt2"  # needs no download
    labels = [c[0] for c in model.choices]
    assert labels[0] == C.LABEL_CACHED.format(ref="distilgpt2", kind="causal")
    assert labels[2] == C.LABEL_HUB.format(ref="gpt2")  # the page is built without asking the network


def test_a_public_server_lists_nothing_by_its_path(machine, monkeypatch):
    from biastest.ui import gpt

    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
    values = _values(_dropdown(gpt.build_demo(), "model-id").choices)
    assert values[0] == "distilgpt2" and not any("/" in v and v.startswith("/") for v in values)


def test_on_page_load_the_hub_ids_are_marked_as_needing_the_internet(machine):
    update, note = P.picker_update("lm")  # the session is offline: HF_HUB_OFFLINE=1
    choices = update.constructor_args["choices"]
    hub = [(label, value) for label, value in choices if value in C.CATALOGS["lm"].hub_ids and value != "distilgpt2"]
    assert hub and all(label == C.LABEL_HUB_OFFLINE.format(ref=value) for label, value in hub)
    assert choices[0] == (C.LABEL_CACHED.format(ref="distilgpt2", kind="causal"), "distilgpt2")
    works = C.MSG_WORKS_OFFLINE_LOCAL
    assert note == md_escape(" ".join([C.MSG_PICKER_OFFLINE.format(why=C.MSG_WHY_OFFLINE_ENV, works=works),
                                       C.MSG_NO_EMBEDDED.format(what="language model"),
                                       C.CATALOGS["lm"].endpoint_note]))
    assert set(update.constructor_args) == {"choices"}  # the value the user chose or typed is left alone


def test_the_page_load_refresh_is_wired_in_each_app_with_a_list(machine):
    from biastest.ui import gpt, vqa

    for demo in (gpt.build_demo(), vqa.build_demo()):
        model, note = _dropdown(demo, "model-id"), _dropdown(demo, "model-note")
        loads = [f for f in demo.fns.values() if any(t[1] == "load" for t in f.targets)]
        assert any([o._id for o in f.outputs] == [model._id, note._id] for f in loads)


def test_the_vision_list_offers_vision_models_only_and_names_them_in_its_messages(machine, tmp_path):
    from biastest.ui import vqa

    values = _values(_dropdown(vqa.build_demo(), "model-id").choices)
    assert values == list(C.CATALOGS["vlm"].hub_ids)  # the cached GPT-2 is not a vision-language model


def test_the_embedding_app_lists_files_on_this_machine_then_its_embedded_defaults(machine):
    from biastest.ui import psychophysics as app

    file_source = f"file:{machine['folder'] / 'vectors.txt'}"
    values = [v for _, v in app.source_choices(allow_paths=True)]
    assert values == [file_source, "glove-6b-50d", "minilm-l6-v2", app.SOURCE_UPLOAD, app.SOURCE_PATH]
    assert [v for _, v in app.source_choices(allow_paths=False)] == ["glove-6b-50d", "minilm-l6-v2",
                                                                       app.SOURCE_UPLOAD]
    assert app.embedding_source_id(file_source, None, "", allow_paths=True) == file_source
    with pytest.raises(EmbeddingError) as e:
        app.embedding_source_id(file_source, None, "", allow_paths=False)
    assert e.value.message == app.MSG_PATHS_DISABLED
    from biastest.models.embeddings import load_embeddings

    emb = load_embeddings(file_source)  # the listed file loads as word vectors
    assert emb.lookup_report(["nurse"]).terms[0].found


def test_a_failing_refresh_leaves_the_list_as_it_was(monkeypatch):
    def broken(*a, **k):
        raise OSError("disk gone")

    monkeypatch.setattr(C, "suggestions", broken)
    assert P.picker_update("lm") == (gr.skip(), gr.skip())
