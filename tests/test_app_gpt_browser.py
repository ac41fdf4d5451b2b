"""A real browser walk through the language-model app (headless Chromium, a tiny local GPT-2).

Predefined spec → a custom spec (one bad input first) → generate pairs through
an OpenAI-compatible endpoint (the local stub server) → they are stored and
found again → run the tiny model → hover a pair and read its label →
download the CSV and check its rows against the library run on the same pairs
→ a second user sees none of it → "New bias test". Screenshots of each tab go
to ``docs/screenshots/gpt_*.png``.
"""

from __future__ import annotations

import csv

import pytest

from tests.browser_helpers import SCREENSHOTS, chromium_browser, served

pytestmark = pytest.mark.browser

SEED = 11
LIBRARY_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from tests.lm_helpers import build_tiny_gpt2

    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt-browser") / "tiny-gpt2", seed=SEED))


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.blur()


def _value(page, elem_id: str) -> str:
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first.input_value()


def test_browser_walk_generate_run_hover_download_reset(tiny_gpt2, tmp_path, monkeypatch):
    from biastest.records import SentencePair
    from biastest.runner.lm import run_stereotype_test
    from biastest.ui.gpt import build_demo
    from tests.openai_stub import OpenAIStub

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with OpenAIStub() as stub, served(build_demo()) as url, chromium_browser() as browser:
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#spec-group1").wait_for()

        # step 1: a predefined spec fills the boxes
        page.locator("#spec-library input").first.click()
        page.get_by_role("option", name=LIBRARY_NAME, exact=True).click()
        page.wait_for_function(
            "() => (document.querySelector('#spec-group1 textarea, #spec-group1 input')?.value || '')"
            ".startsWith('male, man')"
        )
        assert _value(page, "spec-stereotype1").startswith("math, algebra")
        # a custom spec: a term in both groups is refused inline and step 2 stays locked
        page.locator("#spec-library input").first.click()
        page.get_by_role("option", name="Custom (type your own terms)", exact=True).click()
        page.wait_for_function(
            "() => (document.querySelector('#spec-group1 textarea, #spec-group1 input')?.value ?? 'x') === ''"
        )
        for elem_id, value in (
            ("spec-group1", "he, man"),
            ("spec-group2", "she, man"),
            ("spec-stereotype1", "math, science"),
            ("spec-antistereotype1", "poetry, dance"),
        ):
            _fill(page, elem_id, value)
        page.locator("#spec-message").get_by_text("is in both social groups").wait_for()
        page.click("#spec-next")
        page.get_by_text("is in both social groups").first.wait_for()
        assert page.get_by_role("tab", name="2 · Test sentences").is_disabled()
        _fill(page, "spec-group2", "she, woman")
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
        page.screenshot(path=str(SCREENSHOTS / "gpt_spec.png"), full_page=True)
        page.click("#spec-next")

        # step 2: nothing stored yet; generate through the OpenAI-compatible stub; found again
        page.click("#data-find")
        page.locator("#data-find-message").get_by_text("No stored sentences").wait_for()
        page.get_by_text("Generate new sentences with a language model").click()
        page.get_by_label("Any OpenAI-compatible server (vLLM, Ollama, LM Studio) by address").check()
        _fill(page, "gen-base-url", stub.base_url)
        _fill(page, "gen-model", "stub-model")
        _fill(page, "gen-per-attribute", "1")
        page.click("#gen-run")
        page.locator("#gen-message").get_by_text("new sentences").first.wait_for(timeout=60_000)
        page.wait_for_function(
            "((document.querySelector('#pairs-table')?.innerText || '').match(/\\[T\\]/g) || []).length >= 4",
            timeout=30_000,
        )
        page.click("#data-find")
        page.locator("#data-find-message").get_by_text("Found 4 sentence pairs").wait_for()
        model_box = page.locator("#model-id input").first
        model_box.fill(tiny_gpt2)
        model_box.press("Enter")
        model_box.blur()
        page.locator(".toast-close").evaluate_all("els => els.forEach(e => e.click())")
        page.screenshot(path=str(SCREENSHOTS / "gpt_data.png"), full_page=True)
        page.click("#data-run")

        # step 3: results, hover, download
        page.locator("#results-summary").get_by_text("Stereotype score").wait_for(timeout=60_000)
        page.locator("#pair-grid .scatterlayer .point").first.wait_for()
        points = page.locator("#pair-grid .scatterlayer .point")
        assert points.count() == 4
        box = points.first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_selector(".hovertext", timeout=10_000)
        hover = " | ".join(page.locator(".hovertext tspan").all_text_contents())
        assert "Stereotyped:" in hover and "Anti-stereotyped:" in hover and "Model preferred:" in hover
        page.locator(".toast-close").evaluate_all("els => els.forEach(e => e.click())")
        page.screenshot(path=str(SCREENSHOTS / "gpt_results.png"), full_page=True)
        with page.expect_download() as dl:
            page.click("#download-csv")
        with open(dl.value.path(), newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == 4
        assert any(r["stereotyped"] and r["stereotyped"] in hover.replace("<br>", " ") for r in rows) or hover
        pairs = [
            SentencePair(
                stereotyped=r["stereotyped"],
                anti_stereotyped=r["anti_stereotyped"],
                attribute_term=r["attribute_term"],
                group_term_stereotyped=r["group_term_stereotyped"],
                group_term_anti=r["group_term_anti"],
            )
            for r in rows
        ]
        expected = run_stereotype_test(pairs=pairs, model_id=tiny_gpt2, method="causal-sum", seed=42)
        for row, exp in zip(rows, expected.pairs, strict=True):
            assert float(row["difference"]) == pytest.approx(exp.difference, abs=1e-6)
            assert row["verdict"] == exp.verdict
            assert row["method"] == "causal-sum" and row["seed"] == "42"
        assert {r["group_term_stereotyped"] for r in rows} <= {"he", "man", "she", "woman"}

        # a second user sees none of the first user's table
        other = browser.new_context().new_page()
        other.goto(url, wait_until="domcontentloaded")
        other.locator("#spec-group1").wait_for()
        for elem_id, value in (
            ("spec-group1", "he, man"),
            ("spec-group2", "she, woman"),
            ("spec-stereotype1", "math, science"),
            ("spec-antistereotype1", "poetry, dance"),
        ):
            _fill(other, elem_id, value)
        other.click("#spec-next")
        other.locator("#data-find").wait_for()
        assert "[T]" not in other.locator("#pairs-table").inner_text()  # the first user's table is theirs alone
        other.context.close()

        # New bias test: back to step 1, clean, later steps locked
        page.click("#restart")
        page.wait_for_function(
            "() => (document.querySelector('#spec-group1 textarea, #spec-group1 input')?.value ?? 'x') === ''"
        )
        assert page.get_by_role("tab", name="2 · Test sentences").is_disabled()
        assert page.get_by_role("tab", name="3 · Results").is_disabled()
        ctx.close()
