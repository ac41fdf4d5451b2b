"""Real-browser walk of the word-embedding app's 2AFC of a text classifier on words the embedding lacks (issue 25).

Step 1: a 2AFC specification with full names and a cue phrase GloVe does not have (mostly missing words): it goes on
to step 2 with the embedding's refusal as a warning; the embedding's "Run the test" meets that refusal. Step 2's
"Which model?" → a text classifier behind an HTTP endpoint: a tiny classifier built here with a planted group effect
(a sentence with a first-cue term scores higher), served by the loopback :class:`tests.classifier_helpers.
LabelScoresStub` (private mode), scoring the occupations design's sentences ("… Ms. Qzxsmith …" / "… Mr.
Qzxsmith …") for every name. Step 3: the headline (the planted effect found: the first cue wins), the per-target
table with every name, the CSV read back with its UTF-8 BOM (no key, a comparison row per name). Every wait is
scaled by ``WAIT_SCALE`` (:mod:`tests.browser_helpers`).
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from biastest import public
from biastest.ui import psychophysics as app
from tests.browser_helpers import SCREENSHOTS, chromium_browser, served
from tests.classifier_helpers import HashNullClassifier, LabelScoresStub

pytestmark = pytest.mark.browser

KEY = "sk-clf-browser-SECRET-7c3e"
TIMEOUT = 30_000
BOM = b"\xef\xbb\xbf"
TARGETS = "software developer, Lakeisha Qzxwell, Dashawn Qzxby, Brantley Qzxton"
CUES = "Ms. Qzxsmith/Mr. Qzxsmith, woman/man"


class FavoursCue1(HashNullClassifier):
    """The null classifier plus a planted effect: a sentence with a first-cue term scores higher (logit + 1.5)."""

    def label_scores(self, texts, *, progress=None):
        out = []
        for t in texts:
            z = (1.5 if ("Ms." in t or "woman" in t.split()) else 0.0) + self._eps(t)
            p = 1.0 / (1.0 + math.exp(-z))
            out.append([1.0 - p, p])
        return np.asarray(out)


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.blur()


def test_a_text_classifier_scores_names_the_embedding_cannot_test(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with LabelScoresStub(FavoursCue1(3)) as stub, served(app.build_demo(allow_server_paths=False)) as url, \
            chromium_browser() as browser:
        page = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000}).new_page()
        page.set_default_timeout(TIMEOUT)
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_selector("#twoafc-targets")
        page.locator("#twoafc-targets textarea").fill(TARGETS)
        page.locator("#twoafc-cues textarea").fill(CUES)
        _fill(page, "twoafc-cue1-name", "female")
        _fill(page, "twoafc-cue2-name", "male")
        page.locator("#spec-next").click()
        # step 2 opens: the embedding's refusal is a warning, not a dead end
        summary = page.locator("#data-summary")
        summary.get_by_text("The embedding cannot test this specification").wait_for()
        assert "text classifier" in summary.inner_text()
        page.click("#run-test")  # the embedding's own run meets the refusal, next to its button
        page.locator("#run-message").get_by_text("The embedding cannot test this specification").wait_for()

        page.locator("#model-kind").get_by_text("A text classifier").click()
        page.locator("#classifier-run").wait_for(state="visible")
        page.locator("#run-test").wait_for(state="hidden")
        page.locator("#classifier-where").get_by_text("A classifier behind an HTTP endpoint").click()
        page.locator("#classifier-url").wait_for(state="visible")
        _fill(page, "classifier-model", "planted-clf")
        _fill(page, "classifier-url", stub.url)
        _fill(page, "classifier-key", KEY)
        assert page.locator("#classifier-key input").first.get_attribute("type") == "password"
        page.click("#classifier-run")

        headline = page.locator("#classifier-headline")
        headline.get_by_text("Classifier 2AFC on 4 targets").first.wait_for(timeout=120_000)
        assert page.locator("#classifier-message").inner_text().strip().startswith("✅")
        sent = {r["headers"].get("authorization") for r in stub.requests}
        assert sent == {f"Bearer {KEY}"}
        page.screenshot(path=str(SCREENSHOTS / "psychophysics_classifier_names.png"), full_page=True)
        with page.expect_download() as dl:
            page.click("#classifier-download-csv")
        with open(dl.value.path(), "rb") as fh:
            raw = fh.read()
        assert raw.startswith(BOM) and KEY.encode() not in raw
        rows = [r for r in csv.DictReader(raw[len(BOM):].decode("utf-8").splitlines()) if r["row_type"] == "comparison"]
        assert {r["target"] for r in rows} == {t.strip() for t in TARGETS.split(",")}
        first = [r for r in rows if "Qzxsmith" in " ".join(str(v) for v in r.values())]
        assert first and sum(r["outcome"] == "cue-1" for r in first) > sum(r["outcome"] == "cue-2" for r in first)
