"""Real-browser walk of the word-embedding app's 2AFC of a text classifier (headless Chromium through Playwright).

A custom 2AFC specification (eight BLS occupations, three gendered cue pairs), then step 2's "Which model?" → a text
classifier behind the loopback label-scores stub (private mode) whose scores follow the planted rule of
:class:`tests.classifier_helpers.RuleClassifier`. Checked: the classifier's fields replace the embedding's, the run
fills step 3 (headline, the hover of the per-target figure and of the labour-statistics scatter), the CSV holds one
row per comparison and no key, and "Compare with another classifier" compares two classifiers on the same targets.
Every wait is scaled by ``WAIT_SCALE`` (:mod:`tests.browser_helpers`).
"""

from __future__ import annotations

import csv

import pytest

from biastest import public
from biastest.ui import psychophysics as app
from tests.browser_helpers import SCREENSHOTS, chromium_browser, served
from tests.classifier_helpers import LabelScoresStub, RuleClassifier
from tests.test_app_psychophysics_chat_browser import TIMEOUT, _fill, _hover_first_point
from tests.twoafc_chat_helpers import BLS

pytestmark = pytest.mark.browser

KEY = "sk-psy-clf-browser-SECRET-3c9d"
TARGETS = list(BLS)[:8]
N_COMPARISONS = len(TARGETS) * 3 * 4  # targets × cue pairs × templates


def test_a_text_classifier_scores_the_occupations_through_the_app(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with LabelScoresStub(RuleClassifier(seed=4)) as stub, served(app.build_demo(allow_server_paths=False)) as url, \
            chromium_browser() as browser:
        page = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000}).new_page()
        page.set_default_timeout(TIMEOUT)
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_selector("#twoafc-targets")
        page.locator("#twoafc-targets textarea").fill(", ".join(TARGETS))
        page.locator("#twoafc-cues textarea").fill("woman/man, she/he, her/him")
        page.locator("#spec-next").click()
        page.locator("#data-summary").get_by_text(f"{len(TARGETS)} of {len(TARGETS)} found").wait_for()

        page.locator("#model-kind").get_by_text("A text classifier").click()
        page.locator("#classifier-run").wait_for(state="visible")
        page.locator("#run-test").wait_for(state="hidden")
        page.locator("#classifier-where").get_by_text("A classifier behind an HTTP endpoint").click()
        page.locator("#classifier-url").wait_for(state="visible")
        _fill(page, "classifier-model", "rule-clf")
        _fill(page, "classifier-url", stub.url)
        _fill(page, "classifier-key", KEY)
        page.click("#classifier-run")

        headline = page.locator("#classifier-headline")
        headline.get_by_text("Pearson r with % women").first.wait_for(timeout=60_000)
        assert f"Classifier 2AFC on {len(TARGETS)} targets" in headline.inner_text()
        sent = {r["headers"].get("authorization") for r in stub.requests}
        assert sent == {f"Bearer {KEY}"}
        hover = _hover_first_point(page, "classifier-targets-plot")
        assert "ties" in hover and any(t in hover for t in TARGETS), hover
        hover = _hover_first_point(page, "classifier-labour-plot")
        assert "% women" in hover and any(t in hover for t in TARGETS), hover
        page.screenshot(path=str(SCREENSHOTS / "psychophysics_classifier_results.png"), full_page=True)

        with page.expect_download() as dl:
            page.click("#classifier-download-csv")
        text = open(dl.value.path(), encoding="utf-8").read()
        assert KEY not in text
        with open(dl.value.path(), newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.DictReader(fh) if r["row_type"] == "comparison"]
        assert len(rows) == N_COMPARISONS and {r["target"] for r in rows} == set(TARGETS)

        # compare with another classifier (the same endpoint, another name): paired per target
        page.locator("#classifier-compare").get_by_text("Compare with another classifier").first.click()
        page.locator("#classifier-compare-where").get_by_text("A classifier behind an HTTP endpoint").click()
        page.locator("#classifier-compare-url").wait_for(state="visible")
        _fill(page, "classifier-compare-model", "rule-clf-again")
        _fill(page, "classifier-compare-url", stub.url)
        page.click("#classifier-compare-add")
        page.locator("#classifier-compare-message").get_by_text("2 classifiers compared").wait_for(timeout=60_000)
        assert page.locator("#classifier-compare-forest .scatterlayer .point").count() > 0
