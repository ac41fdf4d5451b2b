"""A real-browser walk of the word-embedding app with three protected groups (Manzini et al.'s religion lists).

Picks the library's three-group specification, checks that step 1 names the third group, runs, and reads MAC per
group in step 3 with the reason WEAT is absent.
"""

from __future__ import annotations

import pytest

from biastest.ui import psychophysics as app
from tests.browser_helpers import chromium_browser, open_details, served

pytestmark = pytest.mark.browser

RELIGION = "Manzini 2019: Jewish vs Christian vs Muslim terms, religious stereotypes"


@pytest.fixture(scope="module")
def server():
    with served(app.build_demo(allow_server_paths=False)) as url:
        yield url


def test_three_group_library_spec_gives_mac_per_group_in_the_browser(server):
    with chromium_browser() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
        page.set_default_timeout(60_000)
        page.goto(server, wait_until="domcontentloaded")
        page.wait_for_selector("#test-kind")
        page.locator("#test-kind").get_by_text(app.KIND_WEAT).click()
        page.locator("#weat-library input").click()
        page.get_by_role("option", name=RELIGION).click()
        page.wait_for_function("document.querySelector('#weat-x textarea').value.startsWith('judaism')")
        page.locator("#spec-next").click()
        page.locator("#spec-message").get_by_text("3 groups").wait_for()
        assert "Muslim terms → Muslim stereotypes" in page.locator("#spec-message").inner_text()
        page.locator("#data-summary").get_by_text("Muslim stereotypes").wait_for()
        page.locator("#run-test").click()
        open_details(page, "weat-details")  # issue 28: the tables are in the closed Details
        page.locator("#weat-table").get_by_text("MAC contrast of 'Muslim terms'").first.wait_for()
        assert page.locator("#weat-table").get_by_text("WEAT effect size d").count() == 0
        assert "WEAT compares exactly two social groups" in page.locator("#result-summary").inner_text()
        page.locator("#download-csv").wait_for(state="visible", timeout=30_000)
