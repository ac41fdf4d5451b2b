"""The Stop button in a real browser (headless Chromium): the language-model app against a slow stub.

Generate swaps itself for Stop while the run goes on; Stop ends the run, the sentences made before it
are in the table with the "Stopped on request" message, and the buttons swap back.
"""

from __future__ import annotations

import re

import pytest

from biastest.generate import base
from biastest.runner.services import MSG_NEED_BASE_URL
from tests.browser_helpers import chromium_browser, served
from tests.openai_stub import Action, OpenAIStub

pytestmark = pytest.mark.browser

SPEC_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"
CHAT = "/v1/chat/completions"


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.blur()


def test_stop_button_keeps_the_sentences_and_swaps_back(tmp_path, monkeypatch):
    from biastest.ui.gpt import build_demo

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    with OpenAIStub() as stub, served(build_demo()) as url, chromium_browser() as browser:
        stub.always("chat", Action("sleep", seconds=0.3))
        page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
        page.set_default_timeout(30_000)
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#spec-library input").first.click()
        page.get_by_role("option", name=SPEC_NAME, exact=True).click()
        page.wait_for_function(
            "() => (document.querySelector('#spec-group1 textarea, #spec-group1 input')?.value || '') !== ''"
        )
        page.click("#spec-next")
        page.get_by_text("Generate new sentences with a language model").click()
        page.get_by_text("A run stops by itself after 5 minutes").wait_for()
        page.get_by_label("Any OpenAI-compatible server (vLLM, Ollama, LM Studio) by address").check()
        # a run that fails at once (no address yet) gives the Generate button back too
        page.click("#gen-run")
        page.get_by_text(MSG_NEED_BASE_URL).first.wait_for()
        page.locator("#gen-stop").wait_for(state="hidden")
        page.wait_for_function("() => !document.querySelector('#gen-run')?.disabled")
        page.locator(".toast-close").evaluate_all("els => els.forEach(e => e.click())")

        _fill(page, "gen-base-url", stub.base_url)
        _fill(page, "gen-model", "stub-model")
        _fill(page, "gen-per-attribute", "2")
        assert not page.locator("#gen-stop").is_visible()

        page.click("#gen-run")
        page.locator("#gen-stop").wait_for(state="visible")
        assert page.locator("#gen-run").is_disabled()  # no second run while one goes on
        for _ in range(200):  # bounded: at most 10 s
            if stub.count(CHAT) >= 3:
                break
            page.wait_for_timeout(50)
        assert stub.count(CHAT) >= 3
        page.click("#gen-stop")

        message = page.locator("#gen-message").get_by_text("Stopped on request")
        message.wait_for(timeout=10_000)
        text = message.inner_text()
        kept = int(re.search(r"(\d+) new sentences were kept", text).group(1))
        assert kept >= 2
        assert text.startswith(base.MSG_RUN_CANCELLED.split("{", 1)[0])
        page.wait_for_function(
            f"((document.querySelector('#pairs-table')?.innerText || '').match(/\\[T\\]/g) || []).length >= {kept}"
        )
        page.locator("#gen-stop").wait_for(state="hidden")
        assert page.locator("#gen-run").is_enabled()
