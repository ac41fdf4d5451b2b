"""A real browser (headless Chromium) through the vision-language app with the model behind an endpoint.

The user fills step 1, uploads pictures, chooses "A model behind an endpoint" in step 2, types the address of a
local chat-with-images server (:mod:`tests.chat_images_stub`: a tiny CLIP answering with the more probable target
term and its log-probabilities), its served name and a key, and runs the test. The results name the endpoint, the
score shown is the library's in-process CLIP score on the same pictures, the JSON download records the endpoint and
the key as ``***``, the key reached the server, and it is nowhere on the page but in its password box, nor in any
file the app wrote (the session's folders, Gradio's cache, the shared store).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.browser_helpers import SCREENSHOTS, chromium_browser, open_details, served
from tests.test_app_vqa_browser import _expected, _fill, _fill_spec, _pictures, _upload

pytestmark = pytest.mark.browser

SEED = 23
SERVED = "llava-hf/llava-1.5-7b-hf"
KEY = "sk-vqa-browser-endpoint-SECRET-93be"


def _files_holding(folder: Path, secret: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and secret in p.read_bytes()] if folder.is_dir() else []


def test_a_run_through_the_endpoint(tmp_path, monkeypatch):
    from gradio.utils import get_upload_folder

    from biastest import public, workdir
    from biastest.store import DatasetStore
    from biastest.ui.vqa import build_demo
    from tests.chat_images_stub import ChatImagesStub
    from tests.vlm_helpers import save_tiny_clip

    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    clip_dir = save_tiny_clip(tmp_path / "clip", seed=SEED)
    pictures = _pictures(tmp_path / "pictures")
    expected = _expected(clip_dir, pictures, tmp_path / "expected", n_resamples=10_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with (ChatImagesStub(clip_dir, served_name=SERVED) as stub,
          served(build_demo(store=DatasetStore(tmp_path / "store"))) as url, chromium_browser() as browser):
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        page.goto(url, wait_until="domcontentloaded")
        _fill_spec(page)
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
        page.click("#spec-next")
        total = 0
        for term, files in pictures.items():
            total += len(files)
            _upload(page, term, files, total)

        # a model behind an endpoint: the model list gives way to the endpoint's fields
        page.locator("#model-where").get_by_text("A model behind an endpoint").click()
        page.locator("#endpoint-url").wait_for(state="visible")
        assert not page.locator("#model-id").is_visible()
        _fill(page, "endpoint-url", stub.base_url)
        _fill(page, "endpoint-model", SERVED)
        _fill(page, "endpoint-key", KEY)
        assert page.locator("#endpoint-key input").first.get_attribute("type") == "password"
        page.click("#run-test")
        page.locator("#result-summary").get_by_text("Verdict:").first.wait_for(timeout=90_000)
        open_details(page, "result-details")  # issue 28: where it was asked is among the details
        summary = page.locator("#result-details-text")
        summary.get_by_text("Where: asked through the endpoint").wait_for(timeout=90_000)
        text = summary.inner_text()
        assert stub.base_url in text and f"answered as {SERVED}" in text
        shown = float(re.search(r"Bias score: ([0-9.]+)%", text).group(1))
        assert abs(shown - expected.soft.score) <= 0.051  # the in-process CLIP score of the same pictures
        assert f"{expected.hard.score:.1f}% stereotyped" in text
        assert stub.count() == 2 * total  # every picture asked in both orders
        assert {r["headers"].get("authorization") for r in stub.requests
                if r["path"] == "/v1/chat/completions"} == {f"Bearer {KEY}"}
        page.locator("#vqa-image-grid .scatterlayer .point").first.wait_for()
        page.screenshot(path=str(SCREENSHOTS / "vqa_endpoint_results.png"), full_page=True)
        with page.expect_download() as dl:
            page.click("#download-json")
        saved = Path(dl.value.path()).read_bytes()
        assert KEY.encode() not in saved
        model = json.loads(saved)["provenance"]["model"]
        assert (model["endpoint"], model["served_by"], model["api_key"]) == (stub.base_url, "endpoint", "***")
        assert model["served_model"] == SERVED and model["logprobs"] == "asked"
        assert KEY not in page.content()  # the password box's value is a property, not in the page's markup
        written = [p for folder in (workdir.process_dir(), Path(get_upload_folder()), tmp_path / "store")
                   for p in _files_holding(Path(folder), KEY.encode())]
        assert written == []
        ctx.close()
