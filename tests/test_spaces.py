"""Space assembly: front matter, app file, package and pinned requirements."""

from __future__ import annotations

import pytest
import yaml

from biastest.errors import BiastestError
from biastest.spaces import MSG_APP_MISSING, MSG_BAD_REPO, MSG_UNKNOWN_APP, SPACE_APPS, assemble_space, deploy_space
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("app", sorted(SPACE_APPS))
def test_space_front_matter_is_complete(app):
    text = (REPO_ROOT / "spaces" / app / "README.md").read_text()
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["sdk"] == "gradio"
    assert meta["app_file"] == SPACE_APPS[app]
    assert str(meta["python_version"]) == "3.11"
    pinned = dict(
        line.split("==") for line in (REPO_ROOT / "requirements.txt").read_text().splitlines() if "==" in line
    )
    assert meta["sdk_version"] == pinned["gradio"]
    assert len(meta["short_description"]) <= 60


def test_assemble_copies_what_a_space_needs(tmp_path):
    app = next((a for a, f in SPACE_APPS.items() if (REPO_ROOT / f).exists()), None)
    if app is None:
        with pytest.raises(BiastestError) as err:
            assemble_space("gpt", tmp_path)
        assert err.value.message == MSG_APP_MISSING.format(path="app_gpt.py", name="gpt")
        return
    files = assemble_space(app, tmp_path)
    assert "README.md" in files and SPACE_APPS[app] in files and "requirements.txt" in files
    assert "biastest/spec.py" in files and "biastest/specs/biastestgpt_core.json" in files
    assert not any("__pycache__" in f for f in files)


def test_bad_names_are_refused(tmp_path, monkeypatch):
    with pytest.raises(BiastestError) as err:
        assemble_space("nope", tmp_path)
    assert err.value.message == MSG_UNKNOWN_APP.format(name="nope", choices="gpt, vqa, psychophysics")
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    with pytest.raises(BiastestError) as err:
        deploy_space("gpt", repo_id="no-slash")
    assert err.value.message == MSG_BAD_REPO.format(repo="no-slash")


def test_deploy_uploads_the_assembled_space_to_the_stub_hub(tmp_path, monkeypatch):
    import huggingface_hub

    from tests.hub_stub import StubHub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the stub is local
    app = next((a for a, f in SPACE_APPS.items() if (REPO_ROOT / f).exists()), None)
    assert app is not None, "no app file in this checkout"
    token = "hf_space_deploy_secret_123"
    with StubHub() as hub:
        hub.tokens = {token}
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", token)
        result = deploy_space(app, repo_id="stub-user/biastest-space", endpoint=hub.url)
        repo = hub.repo("stub-user/biastest-space", repo_type="space")
        expected = assemble_space(app, tmp_path / "expected")
        assert sorted(repo.files) == sorted(result.files) == expected
        assert repo.files["README.md"] == (REPO_ROOT / "spaces" / app / "README.md").read_bytes()
        assert repo.files[SPACE_APPS[app]] == (REPO_ROOT / SPACE_APPS[app]).read_bytes()
        assert not any(token.encode() in data for data in repo.files.values())


@pytest.mark.parametrize("app", sorted(SPACE_APPS))
def test_each_space_and_the_helper_say_how_to_turn_sharing_on(app, tmp_path, capsys):
    from biastest.spaces import MSG_SHARING, main

    text = (REPO_ROOT / "spaces" / app / "README.md").read_text()
    assert "| `BIASTEST_HF_DATASET` | a **variable** |" in text and "| `HF_TOKEN` | a **secret** |" in text
    assert "Without `BIASTEST_HF_DATASET`" in text
    assert main(["build", app, "--out", str(tmp_path / app)]) == 0
    assert capsys.readouterr().out.strip().endswith(MSG_SHARING)
