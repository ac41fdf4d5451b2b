"""The honest model picker: what is on this machine, what is embedded, what needs the Hub, and fast offline answers.

A Hugging Face cache is built in ``tmp_path`` with the real layout (``models--org--name/blobs/<sha256>``,
``snapshots/<commit>/<file>`` as relative symlinks to the blobs, ``refs/main``) and scanned through
``huggingface_hub.scan_cache_dir``; a models folder (``BIASTEST_MODELS_DIR``) holds saved models and word-vector
files. The Hub probe is checked against 127.0.0.1 only: a port that refuses, a server that answers, one that fails,
and a probe that never returns (the caller is answered without waiting for it; no timed asserts).
"""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from biastest import public, settings
from biastest.errors import ModelLoadError
from biastest.models import catalog as C
from biastest.models.base import resolve_model_source
from tests import lm_helpers as H

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


def put_in_hf_cache(cache: Path, repo_id: str, folder: Path, *, commit: str = COMMIT) -> Path:
    """Store ``folder``'s files as huggingface_hub does: content-addressed blobs, a snapshot of symlinks, a ref."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    for src in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = src.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / src.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def _files(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """Saved tiny models: a causal LM, a masked LM, a headless BERT, a CLIP."""
    from tests import vlm_helpers as V

    base = tmp_path_factory.mktemp("catalog_models")
    return {
        "gpt2": H.build_tiny_gpt2(base / "gpt2", seed=5),
        "bert": H.build_tiny_bert(base / "bert", seed=5),
        "headless": H.build_headless_bert(base / "headless", seed=5),
        "clip": V.save_tiny_clip(base / "clip"),
    }


@pytest.fixture
def cache(tmp_path, models) -> Path:
    """A Hugging Face cache holding: a causal LM, a CLIP, a BERT without its head, a config-only repo, a sentence
    encoder and a dataset."""
    root = tmp_path / "hf" / "hub"
    put_in_hf_cache(root, "distilgpt2", models["gpt2"])
    put_in_hf_cache(root, "openai/clip-vit-base-patch32", models["clip"])
    put_in_hf_cache(root, "someone/bert-headless", models["headless"])
    only_config = _files(tmp_path / "cfg_only", {"config.json": (models["gpt2"] / "config.json").read_text()})
    put_in_hf_cache(root, "someone/config-only", only_config)
    encoder = _files(tmp_path / "st", {"config.json": '{"model_type": "bert", "architectures": ["BertModel"]}',
                                       "modules.json": "[]", "model.safetensors": "x"})
    put_in_hf_cache(root, "sentence-transformers/all-MiniLM-L6-v2", encoder)
    dataset = root / "datasets--someone--data" / "snapshots" / COMMIT
    dataset.mkdir(parents=True)
    return root


@pytest.fixture
def folder(tmp_path, models) -> Path:
    """A models folder: a causal LM, an org/masked LM, word vectors, a pickle, an empty folder, a hidden one."""
    root = tmp_path / "models"
    shutil.copytree(models["gpt2"], root / "my-gpt2")
    shutil.copytree(models["bert"], root / "lab" / "my-bert")
    _files(root / "vectors", {"small.txt": "a 0.1 0.2\nb 0.3 0.4\n", "trusted.kv": "pickle", "notes.md": "x"})
    (root / "empty").mkdir()
    shutil.copytree(models["gpt2"], root / ".hidden")
    return root


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Private mode, no kept scans or probe answers between tests."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    C.forget_hub_status()
    C._scans.clear()
    yield
    C.forget_hub_status()
    C._scans.clear()


@pytest.fixture
def hub_offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def hub_allowed(monkeypatch):
    """huggingface_hub's offline switch off, so the probe runs (against 127.0.0.1 only)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- what is on this machine
def test_the_cache_scan_offers_complete_models_of_the_apps_own_kind(cache):
    lm = C.scan_hf_cache("lm", cache_dir=cache)
    assert [(m.reference, m.kind, m.where, m.is_path) for m in lm] == [("distilgpt2", "causal", "cache", False)]
    vlm = C.scan_hf_cache("vlm", cache_dir=cache)
    assert [(m.reference, m.kind) for m in vlm] == [("openai/clip-vit-base-patch32", "clip")]
    emb = C.scan_hf_cache("embeddings", cache_dir=cache)
    snapshot = cache / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / COMMIT
    assert [(m.reference, m.kind, m.is_path) for m in emb] == [
        (f"sentence-transformers:{snapshot}", "sentence encoder", True)]


def test_a_missing_cache_is_an_empty_list(tmp_path):
    assert C.scan_hf_cache("lm", cache_dir=tmp_path / "nothing") == []


def test_the_newest_snapshot_of_a_repo_decides(tmp_path, models):
    root = tmp_path / "hub"
    put_in_hf_cache(root, "lab/model", models["clip"], commit=COMMIT)
    newer = put_in_hf_cache(root, "lab/model", models["gpt2"], commit=OTHER_COMMIT)
    for p in newer.iterdir():  # the gpt2 snapshot is the newer one (blob times)
        os.utime(p.resolve(), (2e9, 2e9))
    assert [m.reference for m in C.scan_hf_cache("lm", cache_dir=root)] == ["lab/model"]
    assert C.scan_hf_cache("vlm", cache_dir=root) == []


def test_the_models_folder_offers_saved_models_and_safe_word_vector_files(folder):
    lm = C.scan_models_dir("lm", folder=folder)
    assert [(m.name, m.kind, m.reference, m.is_path) for m in lm] == [
        ("lab/my-bert", "masked", str(folder / "lab" / "my-bert"), True),
        ("my-gpt2", "causal", str(folder / "my-gpt2"), True),
    ]
    assert C.scan_models_dir("vlm", folder=folder) == []
    emb = C.scan_models_dir("embeddings", folder=folder)
    assert [(m.name, m.reference) for m in emb] == [("vectors/small.txt", f"file:{folder / 'vectors' / 'small.txt'}")]


def test_the_models_folder_comes_from_the_environment(folder, monkeypatch):
    monkeypatch.setenv(settings.MODELS_DIR_ENV, str(folder))
    assert [m.name for m in C.scan_models_dir("lm")] == ["lab/my-bert", "my-gpt2"]
    monkeypatch.setenv(settings.MODELS_DIR_ENV, str(folder / "missing"))
    C._scans.clear()
    assert C.scan_models_dir("lm") == []


def test_public_mode_offers_nothing_by_its_path_on_the_server(cache, folder):
    private = C.local_models("lm", public=False, cache_dir=cache, folder=folder)
    assert [m.reference for m in private] == ["distilgpt2", str(folder / "lab" / "my-bert"), str(folder / "my-gpt2")]
    assert [m.reference for m in C.local_models("lm", public=True, cache_dir=cache, folder=folder)] == ["distilgpt2"]
    assert C.local_models("embeddings", public=True, cache_dir=cache, folder=folder) == []


def test_a_public_server_decides_from_its_policy(cache, folder, monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
    assert [m.reference for m in C.local_models("lm", cache_dir=cache, folder=folder)] == ["distilgpt2"]


# ----------------------------------------------------------------------------- the list
def test_the_list_puts_this_machine_first_then_embedded_then_the_hub_each_once(cache, folder):
    entries = C.suggestions("lm", public=False, cache_dir=cache, folder=folder)
    assert [s.origin for s in entries[:3]] == ["local"] * 3
    assert {s.origin for s in entries[3:]} == {"hub"}
    assert entries[0] == C.Suggestion("distilgpt2", C.LABEL_CACHED.format(ref="distilgpt2", kind="causal"), "local",
                                      True)
    assert entries[1].label == C.LABEL_FOLDER.format(name="lab/my-bert", kind="masked")
    hub = [s.value for s in entries if s.origin == "hub"]
    assert hub == [r for r in C.CATALOGS["lm"].hub_ids if r != "distilgpt2"]  # the cached one is listed once
    assert entries[3].label == C.LABEL_HUB.format(ref="gpt2") and entries[3].works_now


def test_offline_the_hub_ids_are_marked_as_needing_the_internet(cache, folder):
    down = C.HubStatus(False, "https://huggingface.co", C.MSG_WHY_OFFLINE_ENV, 0.0)
    entries = C.suggestions("vlm", hub=down, public=False, cache_dir=cache, folder=folder)
    assert entries[0].value == "openai/clip-vit-base-patch32" and entries[0].works_now
    rest = entries[1:]
    assert [s.value for s in rest] == list(C.CATALOGS["vlm"].hub_ids[1:])
    assert all(not s.works_now and s.label == C.LABEL_HUB_OFFLINE.format(ref=s.value) for s in rest)
    note = C.picker_note("vlm", entries, down)
    assert note == " ".join([C.MSG_PICKER_OFFLINE.format(why=C.MSG_WHY_OFFLINE_ENV, works=C.MSG_WORKS_OFFLINE_LOCAL),
                             C.MSG_NO_EMBEDDED.format(what="vision-language model"), C.CATALOGS["vlm"].endpoint_note])


def test_the_embedding_app_lists_its_embedded_defaults_and_says_it_has_no_hub_models(tmp_path):
    entries = C.suggestions("embeddings", public=False, cache_dir=tmp_path / "none", folder=tmp_path / "none")
    assert [(s.value, s.origin, s.works_now) for s in entries] == [
        ("glove-6b-50d", "embedded", True), ("minilm-l6-v2", "embedded", True)]
    assert entries[0].label.endswith("· embedded, works offline")
    assert C.picker_note("embeddings", entries, None) == C.MSG_NO_HUB_MODELS


def test_with_nothing_local_and_no_hub_the_note_says_nothing_can_be_tested_but_through_an_endpoint(tmp_path):
    down = C.HubStatus(False, "https://huggingface.co", "x", 0.0)
    entries = C.suggestions("lm", hub=down, public=False, cache_dir=tmp_path / "none", folder=tmp_path / "none")
    works = C.MSG_NOTHING_OFFLINE.format(what="language model", or_endpoint=" (or test one behind an endpoint)")
    assert C.picker_note("lm", entries, down) == " ".join(
        [C.MSG_PICKER_OFFLINE.format(why="x", works=works), C.MSG_NO_EMBEDDED.format(what="language model"),
         C.CATALOGS["lm"].endpoint_note])
    assert C.picker_note("lm", entries, None).startswith(C.MSG_PICKER_ONLINE)


def test_the_default_is_the_first_model_that_needs_no_download(cache, folder, tmp_path):
    assert C.default_reference("lm", public=False, cache_dir=cache, folder=folder) == "distilgpt2"
    assert C.default_reference("lm", public=False, cache_dir=tmp_path / "x", folder=tmp_path / "x") == "gpt2"
    assert C.default_reference("embeddings", public=True, cache_dir=cache, folder=folder) == "glove-6b-50d"


# ----------------------------------------------------------------------------- can the Hub be reached?
def test_hf_hub_offline_answers_at_once_without_a_probe(hub_offline, monkeypatch):
    monkeypatch.setattr(C, "_probe", lambda *a: pytest.fail("probed although HF_HUB_OFFLINE is set"))
    status = C.hub_status()
    assert (status.reachable, status.why) == (False, C.MSG_WHY_OFFLINE_ENV)


def test_a_refusing_port_is_offline_and_the_probe_waits_at_most_2_s(hub_allowed, monkeypatch):
    import urllib.request

    assert C.HUB_PROBE_TIMEOUT <= 2.0
    timeouts = []
    real = urllib.request.urlopen

    def spy(request, *, timeout):
        timeouts.append(timeout)
        return real(request, timeout=timeout)

    monkeypatch.setattr(urllib.request, "urlopen", spy)
    endpoint = f"http://127.0.0.1:{_free_port()}"
    status = C.hub_status(endpoint=endpoint, timeout=30)  # a larger wait is lowered to the probe's bound
    assert (status.reachable, status.why) == (False, C.MSG_WHY_NO_CONNECTION.format(endpoint=endpoint))
    assert timeouts == [C.HUB_PROBE_TIMEOUT]
    monkeypatch.setenv("HF_ENDPOINT", endpoint + "/")
    assert C.hub_status() is status  # the same address from HF_ENDPOINT: the kept answer, no second probe
    assert timeouts == [C.HUB_PROBE_TIMEOUT]


class _Handler(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_HEAD(self):
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(("status", "reachable"), [(200, True), (401, True), (503, False)])
def test_a_hub_that_answers_is_reachable_unless_it_fails(hub_allowed, status, reachable):
    handler = type("H", (_Handler,), {"status": status})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        got = C.hub_status(endpoint=endpoint)
        assert got.reachable is reachable
        assert got.why == ("" if reachable else C.MSG_WHY_STATUS.format(endpoint=endpoint, status=status))
        assert C.hub_status(endpoint=endpoint, max_age=0) is not got  # an old answer is probed again
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_probe_that_never_answers_does_not_hold_the_caller(hub_allowed, monkeypatch):
    release = threading.Event()
    started = threading.Event()

    def stuck(endpoint, timeout):
        started.set()
        release.wait(10)  # bounded
        return True, ""

    monkeypatch.setattr(C, "_probe", stuck)
    try:
        status = C.hub_status(endpoint="http://127.0.0.1:9", timeout=0.2)
        assert started.is_set() and not release.is_set()  # answered while the probe was still waiting
        assert (status.reachable, status.why) == (
            False, C.MSG_WHY_NO_ANSWER.format(endpoint="http://127.0.0.1:9", seconds=0.2))
    finally:
        release.set()


# ----------------------------------------------------------------------------- loading while offline
def test_offline_a_hub_id_that_is_not_cached_fails_at_once_with_a_message_of_the_apps_kind(hub_offline, cache,
                                                                                           monkeypatch):
    import huggingface_hub.constants

    from biastest.models.lm import load_language_model
    from biastest.models.vlm import load_vlm

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    with pytest.raises(ModelLoadError) as e:
        load_language_model("gpt2", cache=None)
    assert e.value.message == C.MSG_HUB_OFFLINE.format(model_id="gpt2", why=C.MSG_WHY_OFFLINE_ENV,
                                                       what="language model")
    with pytest.raises(ModelLoadError) as e:
        load_vlm("Salesforce/blip-vqa-base", cache=None)
    assert e.value.message == C.MSG_HUB_OFFLINE.format(model_id="Salesforce/blip-vqa-base",
                                                       why=C.MSG_WHY_OFFLINE_ENV, what="vision-language model")


def test_offline_a_cached_hub_id_loads_from_its_snapshot_and_keeps_its_id_and_commit(hub_offline, cache,
                                                                                     monkeypatch):
    import huggingface_hub.constants

    from biastest.models.lm import load_language_model

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    source = resolve_model_source("distilgpt2")
    snapshot = cache / "models--distilgpt2" / "snapshots" / COMMIT
    assert (source.model_id, source.location, source.is_local) == ("distilgpt2", str(snapshot), True)
    lm = load_language_model("distilgpt2", cache=None, device="cpu")
    assert lm.describe()["model_id"] == "distilgpt2" and lm.describe()["model_revision"] == COMMIT


def test_when_the_hub_can_be_reached_a_hub_id_is_left_to_the_hub(monkeypatch):
    monkeypatch.setattr(C, "hub_status", lambda: C.HubStatus(True, "https://huggingface.co", "", 0.0))
    source = resolve_model_source("gpt2")
    assert (source.location, source.is_local) == ("gpt2", False)


def test_each_apps_load_messages_name_models_of_its_own_kind(tmp_path):
    from biastest.models.base import MSG_FOLDER_NOT_FOUND
    from biastest.models.lm import load_language_model
    from biastest.models.vlm import load_vlm

    missing = str(tmp_path / "nothing")
    with pytest.raises(ModelLoadError) as e:
        load_vlm(missing, cache=None)
    assert e.value.message == MSG_FOLDER_NOT_FOUND.format(path=missing,
                                                          examples=C.CATALOGS["vlm"].examples_text())
    assert "gpt2" not in e.value.message and "clip" in e.value.message
    with pytest.raises(ModelLoadError) as e:
        load_language_model(missing, cache=None)
    assert "'gpt2' or 'bert-base-uncased'" in e.value.message and "clip" not in e.value.message
