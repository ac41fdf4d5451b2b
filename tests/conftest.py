"""Shared test fixtures.

Tests print their seeds; tests that need ``../shared/data`` skip with a clear
reason when that folder is absent (a user's fresh clone has no ``../shared``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tests write only to temporary folders: apps built without a store of their own use this one, never the user's
# ~/.cache/biastest/store (tests that need their own store set BIASTEST_DATA_DIR themselves).
os.environ.setdefault("BIASTEST_DATA_DIR", tempfile.mkdtemp(prefix="biastest-test-store-"))

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BIASTEST_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data folder {SHARED_DATA} is absent (only present beside the project checkout)")
    return SHARED_DATA


@pytest.fixture
def online(monkeypatch, tmp_path):
    """huggingface_hub may talk to the local Hub stand-in (the test session is offline by default)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    for var in ("HF_TOKEN", "BIASTEST_HF_DATASET", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def hub(online):
    """The Hub stand-in (tests/hub_stub.py), a real HTTP server on 127.0.0.1, with huggingface_hub let through."""
    from tests.hub_stub import StubHub

    with StubHub() as stub:
        yield stub
