"""Real-browser walk of the word-embedding app's psychometric curves of a chat model, and its comparison.

Step 1 (a custom 2AFC specification), step 2's "Which model?" → a chat model behind the loopback
:class:`tests.chat_stub.ChatStub` (private mode) whose answers follow a planted psychometric curve per context
(:class:`tests.psychometric_helpers.PlantedPsychometricResponder`: the nurse context moves the PSE from 0.5 to 0.35),
then the "Psychometric curves" section: contexts typed, the cost shown before anything is asked, "Fit the curves".
Step 3: the readings, the curves figure (hover), the PSE/JND/shift table, the CSV (read back with its UTF-8 BOM,
one row per question, no key). Then "Compare with another chat model": a second stub (nurse PSE 0.10) asked the same
questions; the comparison's forest plot (hover), its table and its CSV (BOM, both models). Every wait is scaled by
``WAIT_SCALE`` (:mod:`tests.browser_helpers`).
"""

from __future__ import annotations

import csv

import pytest

from biastest import public
from biastest.continuum import name_continuum
from biastest.models.chat_records import ChatRequest
from biastest.ui import psychophysics as app
from tests.browser_helpers import SCREENSHOTS, chromium_browser, served
from tests.chat_stub import ChatStub
from tests.psychometric_helpers import PlantedPsychometricResponder

pytestmark = pytest.mark.browser

KEY_A, KEY_B = "sk-curves-browser-SECRET-a1", "sk-curves-browser-SECRET-b2"
NEUTRAL, NURSE = "{stimulus} is a person.", "{stimulus} is a nurse."
N_QUESTIONS = len(name_continuum()) * 2 * 2  # stimuli × contexts × orders (1 sample)
TIMEOUT = 30_000
BOM = b"\xef\xbb\xbf"


def _rule(nurse_pse: float, seed: int):
    alphas = {s.text: s.alpha for s in name_continuum().stimuli}
    subject = PlantedPsychometricResponder(alphas, {NEUTRAL: (0.5, 10.0), NURSE: (nurse_pse, 10.0)},
                                           cues=("man", "woman"), q=0.2, seed=seed, refusal_rate=0.05)

    def rule(messages, seed) -> str:
        return subject(ChatRequest(tuple((m["role"], m["content"]) for m in messages), seed=seed))

    return rule


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


def _download(page, button: str) -> bytes:
    with page.expect_download() as dl:
        page.click(f"#{button}")
    with open(dl.value.path(), "rb") as fh:
        return fh.read()


def _rows(raw: bytes) -> list[dict]:
    assert raw.startswith(BOM)  # a download for people: Excel reads α, Δ and − right
    return list(csv.DictReader(raw[len(BOM):].decode("utf-8").splitlines()))


def test_a_chat_models_curves_and_their_comparison_through_the_app(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with ChatStub(_rule(0.35, 1), served_name="stub-a") as stub_a, \
            ChatStub(_rule(0.10, 2), served_name="stub-b") as stub_b, \
            served(app.build_demo(allow_server_paths=False)) as url, chromium_browser() as browser:
        page = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000}).new_page()
        page.set_default_timeout(TIMEOUT)
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_selector("#twoafc-targets")
        page.locator("#twoafc-targets textarea").fill("nurse, engineer, teacher")
        page.locator("#twoafc-cues textarea").fill("woman/man")
        page.locator("#spec-next").click()
        page.locator("#data-summary").get_by_text("3 of 3 found").wait_for()

        page.locator("#model-kind").get_by_text("A chat model (asks it questions)").click()
        page.locator("#chat-where").get_by_text("A model behind a chat endpoint").click()
        page.locator("#chat-url").wait_for(state="visible")
        _fill(page, "chat-model", "stub-a")
        _fill(page, "chat-url", stub_a.base_url)
        _fill(page, "chat-key", KEY_A)
        page.get_by_text("Psychometric curves of this chat model").click()
        _fill(page, "curves-contexts", f"{NEUTRAL}\n{NURSE}")
        _fill(page, "curves-bootstrap", "100")
        page.locator("#curves-cost").get_by_text(f"{N_QUESTIONS:,} questions").wait_for()
        assert stub_a.count() == 0  # the cost is shown before anything is asked
        page.click("#curves-run")

        readings = page.locator("#curves-readings")
        readings.get_by_text("PSE").first.wait_for(timeout=120_000)
        assert "Asked stub-a" in page.locator("#curves-message").inner_text()
        assert stub_a.count() == N_QUESTIONS
        hover = _hover_first_point(page, "curves-plot")
        assert "is a" in hover and "α" in hover, hover
        table = page.locator("#curves-table").inner_text()
        assert "is a nurse." in table and "is a person." in table
        page.screenshot(path=str(SCREENSHOTS / "psychophysics_curves_results.png"), full_page=True)
        rows = _rows(_download(page, "curves-download-csv"))
        assert sum(r["row_type"] == "answer" for r in rows) == N_QUESTIONS
        assert KEY_A not in "".join(str(v) for r in rows for v in r.values())

        # compare with another chat model: the same questions asked of stub-b
        page.get_by_text("Compare with another chat model").last.click()
        page.locator("#curves-compare-where").get_by_text("A model behind a chat endpoint").click()
        page.locator("#curves-compare-url").wait_for(state="visible")
        _fill(page, "curves-compare-model", "stub-b")
        _fill(page, "curves-compare-url", stub_b.base_url)
        _fill(page, "curves-compare-key", KEY_B)
        page.click("#curves-compare-add")
        page.locator("#curves-compare-message").get_by_text("Asked stub-b the same").wait_for(timeout=120_000)
        assert stub_b.count() == N_QUESTIONS
        sent = {r["headers"].get("authorization") for r in stub_b.requests if r["path"] == "/v1/chat/completions"}
        assert sent == {f"Bearer {KEY_B}"}
        assert "difference of shifts" in page.locator("#curves-compare-reading").inner_text()
        hover = _hover_first_point(page, "curves-compare-forest")
        assert "stub-" in hover and "fit" in hover, hover
        assert "is a nurse." in page.locator("#curves-compare-table").inner_text()
        page.screenshot(path=str(SCREENSHOTS / "psychophysics_curves_compare.png"), full_page=True)
        rows = _rows(_download(page, "curves-compare-download-csv"))
        assert {r["model"] for r in rows if r["row_type"] == "model"} == {"stub-a", "stub-b"}
        nurse = next(r for r in rows if r["row_type"] == "pair" and r["context"] == NURSE)
        assert float(nurse["shift_diff"]) < 0  # the planted nurse shift of stub-b is larger (−0.40 vs −0.15)
        text = "".join(str(v) for r in rows for v in r.values())
        assert KEY_A not in text and KEY_B not in text
