"""Browser walk: WEAT 8 on GloVe, compared with this embedding hard-debiased (step 3), then the Bayesian estimate
compared with it (the difference of each contrast with its HPDI: plot hovered, CSV downloaded)."""

from __future__ import annotations

import csv

import pytest

from biastest.ui import psychophysics as app
from tests.browser_helpers import chromium_browser, open_details, served

WEAT8 = "WEAT 8: Science vs arts, male vs female terms"
DEBIASED = "glove-6b-50d + hard-debias(bolukbasi2016)"


@pytest.fixture(scope="module")
def server():
    with served(app.build_demo(allow_server_paths=False)) as url:
        yield url


def pick(page, dropdown_id: str, option: str) -> None:
    page.locator(f"#{dropdown_id} input").click()
    page.get_by_role("option", name=option).click()


def test_weat_and_the_bayesian_estimate_compared_with_the_debiased_embedding(server, tmp_path):
    with chromium_browser() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True).new_page()
        page.set_default_timeout(60_000)
        page.goto(server, wait_until="domcontentloaded")
        page.wait_for_selector("#test-kind")
        page.locator("#test-kind").get_by_text(app.KIND_WEAT).click()
        pick(page, "weat-library", WEAT8)
        page.wait_for_function("document.querySelector('#weat-x textarea').value.startsWith('science')")
        page.locator("#spec-next").click()
        page.locator("#data-summary").get_by_text("Science").wait_for()
        page.locator("#run-test").click()
        open_details(page, "weat-details")  # issue 28: WEAT's table is in the closed Details
        page.locator("#weat-table").get_by_text("WEAT effect size d").wait_for()

        # step 3's comparison: the debiased embedding is the first choice
        page.locator("#compare-section").get_by_text("Compare with another embedding").first.click()
        assert page.locator("#compare-source input").input_value().startswith("This embedding, hard-debiased")
        page.click("#compare-add")
        page.locator("#compare-message").get_by_text("Added").wait_for()
        points = page.locator("#compare-forest .scatterlayer .point")
        points.nth(1).wait_for()
        assert DEBIASED in page.locator("#compare-section").inner_text()

        # the Bayesian estimate, then its comparison with the debiased embedding
        page.locator("#bayes-section").get_by_text("Bayesian estimate with control groups").first.click()
        for key, value in (("draws", "200"), ("tune", "100"), ("chains", "1")):
            box = page.locator(f"#bayes-{key} input")
            box.fill(value)
            box.press("Tab")
        page.locator("#bayes-time-limit input").fill("0.001")  # one sampler run each: this walks the wiring
        page.locator("#bayes-time-limit input").press("Tab")
        page.locator("#bayes-run").click()
        page.locator("#bayes-status").get_by_text("Bayesian estimate").first.wait_for(timeout=300_000)
        page.locator("#bayes-compare").get_by_text("Compare with another embedding").first.click()
        page.locator("#bayes-compare-run").click()
        page.locator("#bayes-compare-plot .nsewdrag").wait_for(timeout=300_000)
        status = page.locator("#bayes-compare-status").inner_text()
        assert DEBIASED in status or "NOT converge" in status
        assert "minus glove-6b-50d" in page.locator("#bayes-compare-reading").inner_text()
        point = page.locator("#bayes-compare-plot .scatterlayer .point").first
        point.scroll_into_view_if_needed()
        box = point.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_selector(".hovertext")
        hover = " ".join(page.locator(".hovertext tspan").all_text_contents())
        assert "difference" in hover and "interval" in hover
        with page.expect_download() as info:
            page.locator("#bayes-compare-csv").click()
        path = tmp_path / "cmp.csv"
        info.value.save_as(path)
        rows = list(csv.DictReader(path.open(encoding="utf-8-sig")))
        assert {r["second"] for r in rows} == {DEBIASED} and {r["first"] for r in rows} == {"glove-6b-50d"}
        assert any(r["protected_word"] == "(overall)" for r in rows)
