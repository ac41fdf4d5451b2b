"""A real browser (headless Chromium) through the language-model app with the model behind an endpoint, offline.

The server is offline (``HF_HUB_OFFLINE=1`` in the test session) and its Hugging Face cache (in ``tmp_path``, the
real layout) holds one language model. Step 2's model list shows it first, marked as on this machine and chosen,
and, once the page has loaded, every suggested Hub id marked as needing the internet, with a line saying the Hub
cannot be reached. Then the user imports sentence pairs, chooses "A model behind an endpoint", types the address of
a local completions server (:mod:`tests.completions_stub`: a tiny GPT-2 doing real forward passes), its served name
and a key, and runs the test: the results say where the model was scored, the JSON download names the endpoint and
records the key as ``***``, and the key appears nowhere on the page but in its password box.
"""

from __future__ import annotations

import csv
import json

import pytest

from tests.browser_helpers import SCREENSHOTS, chromium_browser, first_line, open_details, served

pytestmark = pytest.mark.browser

SEED = 17
LIBRARY_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"
KEY = "sk-browser-endpoint-SECRET-5c2d"
ATTRIBUTES = ("math", "algebra", "poetry", "dance")


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.blur()


def _pairs_csv(path) -> None:
    """A BiasTestGPT pairs file: 8 minimal pairs about the spec's terms."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["group_term", "template", "sent_att_1", "sent_att_2", "att_term_1", "att_term_2", "label_1",
                    "label_2"])
        for a in ATTRIBUTES:
            w.writerow([a, f"[T] likes {a}.", f"He likes {a}.", f"She likes {a}.", "he", "she", "stereotype",
                        "anti-stereotype"])
            w.writerow([a, f"The [T] studied {a}.", f"The woman studied {a}.", f"The man studied {a}.", "woman",
                        "man", "stereotype", "anti-stereotype"])


def test_offline_picker_then_a_run_through_the_endpoint(tmp_path, monkeypatch):
    import huggingface_hub.constants

    from biastest import public, settings
    from biastest.models import catalog as C
    from biastest.ui.gpt import build_demo
    from tests.completions_stub import CompletionsStub
    from tests.lm_helpers import build_tiny_gpt2
    from tests.test_catalog import put_in_hf_cache

    gpt2_dir = build_tiny_gpt2(tmp_path / "gpt2", seed=SEED)
    put_in_hf_cache(tmp_path / "hub", "distilgpt2", gpt2_dir)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv(settings.MODELS_DIR_ENV, raising=False)
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    C._scans.clear()
    C.forget_hub_status()
    pairs_file = tmp_path / "pairs.csv"
    _pairs_csv(pairs_file)
    with (CompletionsStub(gpt2_dir, served_name=str(gpt2_dir)) as stub, served(build_demo()) as url,
          chromium_browser() as browser):
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#spec-library input").first.click()
        page.get_by_role("option", name=LIBRARY_NAME, exact=True).click()
        page.wait_for_function(
            "() => (document.querySelector('#spec-group1 textarea, #spec-group1 input')?.value || '')"
            ".startsWith('male, man')")
        page.click("#spec-next")
        page.locator("#data-testing").get_by_text("Testing:").wait_for()

        # the model list, offline: this machine first (and chosen), the Hub ids marked as needing the internet
        page.locator("#model-note").get_by_text("cannot be reached from this server").wait_for()
        assert page.locator("#model-id input").first.input_value() == C.LABEL_CACHED.format(ref="distilgpt2",
                                                                                          kind="causal")
        page.locator("#model-id input").first.click()
        options = [o.removeprefix("✓").strip() for o in page.get_by_role("option").all_inner_texts()]  # ✓: chosen
        page.keyboard.press("Escape")
        assert options[0] == C.LABEL_CACHED.format(ref="distilgpt2", kind="causal")
        hub = options[1:]
        assert len(hub) == len(C.CATALOGS["lm"].hub_ids) - 1
        assert all(o.endswith("· Hub, needs the internet (unreachable now)") for o in hub), hub
        note = page.locator("#model-note").inner_text()
        assert "The models marked 'on this machine' work." in note and "A model behind an endpoint" in note
        page.screenshot(path=str(SCREENSHOTS / "gpt_model_picker_offline.png"), full_page=True)

        # sentence pairs from a file
        page.get_by_text("Import sentence pairs from a file").click()
        page.locator("#import-file input[type=file]").set_input_files(str(pairs_file))
        page.click("#import-run")
        page.locator("#import-message").get_by_text("Imported 8 sentence pairs").wait_for()

        # a model behind an endpoint: the list gives way to the endpoint's fields
        page.locator("#model-where").get_by_text("A model behind an endpoint").click()
        page.locator("#endpoint-url").wait_for(state="visible")
        assert not page.locator("#model-id").is_visible()
        _fill(page, "endpoint-url", stub.base_url)
        _fill(page, "endpoint-model", str(gpt2_dir))
        _fill(page, "endpoint-key", KEY)
        assert page.locator("#endpoint-key input").first.get_attribute("type") == "password"
        page.click("#data-run")
        page.locator("#results-reading").get_by_text("Verdict:").first.wait_for(timeout=60_000)
        open_details(page, "results-details")  # issue 28: where it was scored is among the details
        summary = page.locator("#results-summary")
        summary.get_by_text("Scored through the endpoint").wait_for(timeout=60_000)
        assert stub.base_url in summary.inner_text() and "token ids" in summary.inner_text()
        assert "Tested 8 sentence pairs" in page.locator("#run-message").inner_text()
        assert {r["headers"].get("authorization") for r in stub.requests if r["path"] == "/v1/completions"} == {
            f"Bearer {KEY}"}
        page.screenshot(path=str(SCREENSHOTS / "gpt_endpoint_results.png"), full_page=True)
        with page.expect_download() as dl:
            page.click("#download-json")
        saved = open(dl.value.path(), encoding="utf-8").read()
        assert KEY not in saved
        model = json.loads(saved)["provenance"]["model"]
        assert (model["endpoint"], model["served_by"], model["api_key"]) == (stub.base_url, "endpoint", "***")
        html = page.content()
        assert KEY not in html  # the password box's value is a property, not in the page's markup

        # issue 28 item 5: the tokenizer box; 'none' sends text, and the summary opens with "not comparable"
        assert "not comparable" not in summary.inner_text().lower()
        page.get_by_role("tab", name="2 · Test data").click()
        assert page.locator("#endpoint-tokenizer input, #endpoint-tokenizer textarea").first.input_value() == ""
        _fill(page, "endpoint-tokenizer", "none")
        page.click("#data-run")
        summary.get_by_text("Not comparable with in-process scores of the same model").wait_for(timeout=60_000)
        first = summary.inner_text().strip().split("\n")[0]
        assert "Not comparable with in-process scores" in first, first
        # issue 28 item 4: the reading's first line is the verdict, which gives none and claims nothing
        verdict = first_line(page, "#results-reading")
        assert verdict.startswith("Verdict: no verdict — ") and "not comparable" in verdict, verdict
        assert "significant" not in page.locator("#results-reading").inner_text()
        assert "text split into tokens by the server" in summary.inner_text()
        ctx.close()
