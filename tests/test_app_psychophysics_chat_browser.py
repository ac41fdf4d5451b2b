"""Real-browser walk of the word-embedding app's 2AFC of a chat model (headless Chromium through Playwright).

A custom 2AFC specification (six BLS occupations, two gendered cue pairs), then step 2's "Which model?" → a chat
model behind the loopback :class:`tests.chat_stub.ChatStub` (private mode), whose answers follow the planted rule of
``tests/twoafc_chat_helpers.py``. Checked: the embedding's options and button give way to the chat model's fields,
the cost is shown before anything is asked, the run fills step 3 with the readings first, the hover of the
P(cue 1) figure and of the labour-statistics scatter, and the CSV download holds one row per question, no key.
Every wait is scaled by ``WAIT_SCALE`` (:mod:`tests.browser_helpers`).
"""

from __future__ import annotations

import csv

import pytest

from biastest import public
from biastest.ui import psychophysics as app
from tests.browser_helpers import SCREENSHOTS, chromium_browser, served
from tests.chat_stub import ChatStub
from tests.twoafc_chat_helpers import BLS, planted_answer

pytestmark = pytest.mark.browser

KEY = "sk-psy-browser-SECRET-9a1f"
SERVED = "stub-chat"
TARGETS = list(BLS)[:6]
N_QUESTIONS = len(TARGETS) * 2 * 2  # targets × cue pairs × orders
TIMEOUT = 30_000


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.blur()


def _hover_first_point(page, plot: str) -> str:
    point = page.locator(f"#{plot} .scatterlayer .point").first
    point.wait_for()
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(".hovertext", timeout=10_000)
    text = " | ".join(page.locator(".hovertext tspan").all_text_contents())
    page.mouse.move(0, 0)
    return text


def test_a_chat_model_answers_the_2afc_questions_through_the_app(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))

    def rule(messages, seed) -> str:
        return planted_answer(messages[-1]["content"], seed, q=0.2)

    with ChatStub(rule, served_name=SERVED) as stub, served(app.build_demo(allow_server_paths=False)) as url, \
            chromium_browser() as browser:
        page = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000}).new_page()
        page.set_default_timeout(TIMEOUT)
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_selector("#twoafc-targets")
        page.locator("#twoafc-targets textarea").fill(", ".join(TARGETS))
        page.locator("#twoafc-cues textarea").fill("woman/man, she/he")
        page.locator("#spec-next").click()
        page.locator("#data-summary").get_by_text(f"{len(TARGETS)} of {len(TARGETS)} found").wait_for()

        # "Which model?": the chat model's fields and button replace the embedding's
        page.locator("#model-kind").get_by_text("A chat model (asks it questions)").click()
        page.locator("#chat-run").wait_for(state="visible")
        page.locator("#run-test").wait_for(state="hidden")
        assert not page.locator("#replicate-mode").is_visible()
        page.locator("#chat-where").get_by_text("A model behind a chat endpoint").click()
        page.locator("#chat-url").wait_for(state="visible")
        assert "{option_a}" in page.locator("#chat-template-text textarea").first.input_value()
        _fill(page, "chat-model", SERVED)
        _fill(page, "chat-url", stub.base_url)
        _fill(page, "chat-key", KEY)
        assert page.locator("#chat-key input").first.get_attribute("type") == "password"
        # the cost, before anything is asked
        page.locator("#chat-cost").get_by_text(f"This run asks {N_QUESTIONS} questions").wait_for()
        assert stub.count() == 0 and not page.locator("#chat-confirm").is_visible()
        page.screenshot(path=str(SCREENSHOTS / "psychophysics_chat_model.png"), full_page=True)
        page.click("#chat-run")

        # step 3: the readings first, then the figures with hover, then the downloads
        readings = page.locator("#chat-readings")
        readings.get_by_text("When it chose").first.wait_for(timeout=60_000)
        lines = [line for line in readings.inner_text().splitlines() if line.strip()]
        assert lines[0].startswith("Verdict: ")  # issue 28 item 4: the reading opens with the verdict
        assert lines[1].startswith(f"When it chose, {SERVED} picked the")
        assert f"Asked {SERVED} {N_QUESTIONS} questions" in page.locator("#chat-message").inner_text()
        assert stub.count() == N_QUESTIONS
        sent = {r["headers"].get("authorization") for r in stub.requests if r["path"] == "/v1/chat/completions"}
        assert sent == {f"Bearer {KEY}"}
        assert not page.locator("#pse-plot").is_visible()  # the embedding's results are hidden

        hover = _hover_first_point(page, "chat-p-plot")
        assert "answers that chose" in hover and any(t in hover for t in TARGETS), hover
        hover = _hover_first_point(page, "chat-labour-plot")
        assert "% women" in hover and any(t in hover for t in TARGETS), hover
        page.screenshot(path=str(SCREENSHOTS / "psychophysics_chat_results.png"), full_page=True)

        with page.expect_download() as dl:
            page.click("#chat-download-csv")
        text = open(dl.value.path(), encoding="utf-8").read()
        assert KEY not in text
        with open(dl.value.path(), newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh))
        answers = [r for r in rows if r["row_type"] == "answer"]
        assert rows[0]["row_type"] == "summary" and len(answers) == N_QUESTIONS
        assert {r["target"] for r in answers} == set(TARGETS) and all(r["user"] and r["answer"] for r in answers)
