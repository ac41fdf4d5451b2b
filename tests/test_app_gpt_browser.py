"""A real browser walk through the language-model app (headless Chromium, a tiny local GPT-2).

The walk: a predefined spec (readable library names) → a custom spec (one bad input first) → step 2 names the
terms → nothing stored yet → generate pairs through an OpenAI-compatible endpoint (the local stub server): the
stale "nothing stored" message goes, the coverage table stays, updated → they are found again → the table reads
(headers in words, none broken mid-word, nothing wider than the page) and the method and prompt dropdowns show
their whole choice → an edited pair that no longer differs only in the group term is refused inline before any
model loads → run the tiny model → the hover of each pair names it as the axes do → download the CSV and check its
rows against the library run on the same pairs → a second user sees none of it → "New bias test". Screenshots of
each tab go to ``tests.browser_helpers.SCREENSHOTS`` (``gpt_*.png``).

A second test: a run with zero pairs answers at once, inline, while another user's test holds the model (the
issue's 300 s of silence), a run with pairs says it waits for the model, and bars at 0 % can be hovered.
"""

from __future__ import annotations

import csv
import threading
import time

import pytest

from biastest.report.export import round_cell
from tests.browser_helpers import SCREENSHOTS, chromium_browser, first_line, hover_text, open_details, served

pytestmark = pytest.mark.browser

SEED = 11
LIBRARY_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"
CUSTOM_TERMS = (
    ("spec-group1", "he, man"),
    ("spec-group2", "she, woman"),
    ("spec-stereotype1", "math, science"),
    ("spec-antistereotype1", "poetry, dance"),
)

#: Every word drawn in a table header (a hyphenated word counts as its parts, as a line may end at a hyphen), and
#: on how many lines it is drawn.
HEADER_WORD_LINES = """() => [...document.querySelectorAll('#pairs-table th')].flatMap(th => {
    const out = [], walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode, re = /[^\\s-]+-?/g;
        let m;
        while ((m = re.exec(node.textContent))) {
            const range = document.createRange();
            range.setStart(node, m.index);
            range.setEnd(node, m.index + m[0].length);
            const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
            if (tops.size) out.push([m[0], tops.size]);  // words drawn (not the hidden labels)
        }
    }
    return out;
})"""
PAGE_AND_TABLE_WIDTH = """() => ({page: document.documentElement.scrollWidth, window: window.innerWidth,
    table: document.querySelector('#pairs-table').getBoundingClientRect().right})"""


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


def _close_toasts(page) -> None:
    page.locator(".toast-close").evaluate_all("els => els.forEach(e => e.click())")


def _custom_spec(page) -> None:
    for elem_id, value in CUSTOM_TERMS:
        _fill(page, elem_id, value)
    page.locator("#spec-message").get_by_text("Specification is valid").wait_for()


def _edit_cell(page, old_text: str, new_text: str) -> None:
    """Double-click the table cell showing ``old_text`` and type ``new_text`` into it."""
    page.locator("#pairs-table .body-cell").filter(has_text=old_text).first.dblclick()
    editor = page.locator("#pairs-table .body-cell textarea").first
    editor.fill(new_text)
    editor.press("Enter")
    page.locator("#pairs-table .body-cell").filter(has_text=new_text).first.wait_for()


def _tick_at(page, axis: str, centre: float) -> str:
    """The text of the ``axis`` ('x' or 'y') tick label of the pair grid nearest to ``centre`` (page pixels)."""
    return page.evaluate(
        """([axis, centre]) => {
            const ticks = [...document.querySelectorAll(`#pair-grid .${axis}tick text`)].map(t => {
                const r = t.getBoundingClientRect();
                return [Math.abs((axis === 'x' ? r.left + r.width / 2 : r.top + r.height / 2) - centre), t.textContent];
            });
            ticks.sort((a, b) => a[0] - b[0]);
            return ticks.length ? ticks[0][1] : null;
        }""",
        [axis, centre],
    )


def test_browser_walk_generate_run_hover_download_reset(tiny_gpt2, tmp_path, monkeypatch):
    from biastest.measures.stereotype import report
    from biastest.records import SentencePair
    from biastest.store import shared as S
    from biastest.ui.gpt import MSG_NOTHING_FOUND, MSG_PANEL_ITEM, MSG_PANEL_NONE_SAVED, build_demo
    from tests.lm_helpers import run_pairs
    from tests.openai_stub import OpenAIStub

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with OpenAIStub() as stub, served(build_demo()) as url, chromium_browser() as browser:
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#spec-group1").wait_for()

        # step 1: the library reads in one style, without raw file names; a predefined spec fills the boxes
        page.locator("#spec-library input").first.click()
        options = page.get_by_role("option").all_inner_texts()
        assert LIBRARY_NAME in options and "WEAT 7: Math vs arts, male vs female terms" in options
        assert [o for o in options if "_" in o] == []
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
        for elem_id, value in CUSTOM_TERMS:
            _fill(page, elem_id, "she, man" if elem_id == "spec-group2" else value)
        page.locator("#spec-message").get_by_text("is in both social groups").wait_for()
        page.click("#spec-next")
        page.get_by_text("is in both social groups").first.wait_for()
        assert page.get_by_role("tab", name="2 · Test data").is_disabled()
        _fill(page, "spec-group2", "she, woman")
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
        page.screenshot(path=str(SCREENSHOTS / "gpt_spec.png"), full_page=True)
        page.click("#spec-next")

        # step 2 says what is tested, in the user's terms
        testing = page.locator("#data-testing")
        testing.get_by_text("he, man vs she, woman, with math, science vs poetry, dance").wait_for()
        # nothing stored yet; generate through the OpenAI-compatible stub: the stale message goes, coverage stays
        # the "Shared dataset" panel: no dataset here (offline), so sharing is off and it says how to turn it on
        panel = page.locator("#dataset-panel")
        panel.get_by_text(MSG_PANEL_NONE_SAVED).wait_for(timeout=20_000)
        assert "BIASTEST_HF_DATASET" in panel.inner_text()
        page.click("#data-find")
        page.locator("#data-find-message").get_by_text(MSG_NOTHING_FOUND).wait_for()
        page.locator("#data-coverage").get_by_text("thin: generate more").first.wait_for()
        page.get_by_text("Generate new sentences with a language model").click()
        page.get_by_label("Any OpenAI-compatible server (vLLM, Ollama, LM Studio) by address").check()
        prompt_box = page.locator("#gen-prompt input").first
        assert prompt_box.input_value() == "with-context"
        assert prompt_box.evaluate("e => e.scrollWidth <= e.clientWidth")  # the choice is shown whole
        assert page.locator("#gen-prompt-info").inner_text().startswith("Names both terms")
        _fill(page, "gen-base-url", stub.base_url)
        _fill(page, "gen-model", "stub-model")
        _fill(page, "gen-per-attribute", "1")
        page.click("#gen-run")
        page.locator("#gen-message").get_by_text("new sentences").first.wait_for(timeout=60_000)
        page.wait_for_function(
            "((document.querySelector('#pairs-table')?.innerText || '').match(/\\[T\\]/g) || []).length >= 4",
            timeout=30_000,
        )
        page.wait_for_function("() => document.querySelector('#data-find-message').innerText.trim() === ''")
        coverage = page.locator("#data-coverage").inner_text()
        assert "math\t1" in coverage and "dance\t1" in coverage, coverage  # updated, not removed
        panel.get_by_text(MSG_PANEL_ITEM.format(sentences=4, pairs=4, model="stub-model", state=S.ITEM_LOCAL)
                          ).wait_for(timeout=20_000)  # this session's sentences and where they are
        page.click("#data-find")
        page.locator("#data-find-message").get_by_text("Found 4 sentence pairs").wait_for()
        find_text = page.locator("#data-find-message").inner_text()  # and where they come from
        assert S.MSG_FOUND_LINE.format(n=4, what="sentences", parts=S.MSG_FROM_HERE.format(n=4)) in find_text
        page.wait_for_function("() => document.querySelector('#gen-message').innerText.trim() === ''")

        # the table reads: headers in words, no word broken across lines, nothing wider than the page
        headers = page.locator("#pairs-table th").all_inner_texts()
        assert [h.strip() for h in headers if h.strip()] == list(report.PAIR_HEADERS.values())
        for width in (1280, 900):
            page.set_viewport_size({"width": width, "height": 1000})
            page.wait_for_timeout(300)
            broken = [(word, lines) for word, lines in page.evaluate(HEADER_WORD_LINES) if lines != 1]
            assert broken == [], f"header words broken at {width} px: {broken}"
            sizes = page.evaluate(PAGE_AND_TABLE_WIDTH)
            assert sizes["page"] <= sizes["window"] and sizes["table"] <= sizes["window"], sizes
        page.set_viewport_size({"width": 1280, "height": 1000})
        # the scoring method shows its whole (short) choice, with the description beside it
        method_box = page.locator("#method input").first
        assert method_box.input_value() == "causal-sum (causal models)"
        assert method_box.evaluate("e => e.scrollWidth <= e.clientWidth")
        assert "Log-probability of the whole sentence" in page.locator("#method-info").inner_text()

        model_box = page.locator("#model-id input").first
        model_box.fill(tiny_gpt2)
        model_box.press("Enter")
        model_box.blur()
        _close_toasts(page)
        page.screenshot(path=str(SCREENSHOTS / "gpt_data.png"), full_page=True)

        # an edited pair that differs in more than the group term is tested without it: the run leaves it out and
        # the summary counts it (issue 28: minimal pairs enforced, a "keep anyway" choice beside Run)
        anti_column = report.PAIR_COLUMNS.index("anti_stereotyped")
        original = page.locator(f"#pairs-table .body-cell[data-col='{anti_column}']").first.inner_text().strip()
        edited = original.rstrip(".") + " for =cmd|' /C calc'!A0."
        _edit_cell(page, original, edited)
        assert page.locator("#keep-non-minimal input").is_visible() and not page.locator(
            "#keep-non-minimal input").is_checked()
        page.click("#data-run")
        # issue 28 item 4: step 3 opens with the verdict sentence; the numbers behind it are in the closed Details
        page.locator("#results-reading").get_by_text("Verdict:").first.wait_for(timeout=60_000)
        assert first_line(page, "#results-reading").startswith("Verdict: "), first_line(page, "#results-reading")
        assert not page.locator("#results-summary").is_visible()  # folded away until asked for
        open_details(page, "results-details")
        page.locator("#results-summary").get_by_text("left out: not minimal").first.wait_for(timeout=60_000)
        _close_toasts(page)
        page.get_by_role("tab", name="2 · Test data").click()
        _edit_cell(page, edited, original)
        page.click("#data-run")
        page.wait_for_function(  # the new run's summary, with every pair in it
            "() => { const s = document.querySelector('#results-summary'); "
            "return s && s.innerText.includes('Stereotype score') && !s.innerText.includes('not minimal'); }",
            timeout=60_000)

        # step 3: results; each pair's hover names it as the axes do
        page.locator("#results-summary").get_by_text("Stereotype score").wait_for(timeout=60_000)
        reading = page.locator("#results-reading").inner_text()
        assert first_line(page, "#results-reading").startswith("Verdict: ") and "stereotype score of" in reading
        page.locator("#pair-grid .scatterlayer .point").first.wait_for()
        points = page.locator("#pair-grid .scatterlayer .point")
        assert points.count() == 4
        page.locator("#pair-grid .nsewdrag").first.scroll_into_view_if_needed()  # as a user scrolls to it
        hovers = []
        for i in range(4):
            box = points.nth(i).bounding_box()
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            page.mouse.move(x, y)
            page.wait_for_selector(".hovertext", timeout=10_000)
            lines = page.locator(".hovertext tspan").all_text_contents()
            pair = next(line for line in lines if line.startswith("Pair:"))
            assert pair == f"Pair: {_tick_at(page, 'y', y)} of '{_tick_at(page, 'x', x)}'", (pair, lines)
            hovers.append(" | ".join(lines))
            page.mouse.move(0, 0)
        hover = hovers[0]
        assert "Stereotyped:" in hover and "Anti-stereotyped:" in hover and "Model preferred:" in hover
        # generated pairs carry templates: the headline counts them as clusters, too few here for an interval
        summary_text = page.locator("#results-summary").inner_text()
        assert "scored pairs in 4 clusters (by template)" in summary_text and "design effect" in summary_text
        assert "no interval: too few clusters" in summary_text and "Magnitude: mean Δ log-probability" in summary_text
        _close_toasts(page)
        page.screenshot(path=str(SCREENSHOTS / "gpt_results.png"), full_page=True)
        with page.expect_download() as dl:
            page.click("#download-csv")
        with open(dl.value.path(), newline="", encoding="utf-8-sig") as fh:
            every = list(csv.DictReader(fh))
        rows = [r for r in every if r["row_type"] == "pair"]  # after the summary rows the CSV starts with
        assert len(rows) == 4 and every[0]["row_type"] == "summary" and every[0]["seed"] == "0"
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
        assert original in {r["anti_stereotyped"] for r in rows}  # the restored sentence was the one tested
        expected = run_pairs(pairs=pairs, model_id=tiny_gpt2, method="causal-sum", seed=0)
        for row, exp in zip(rows, expected.pairs, strict=True):
            assert float(row["difference"]) == round_cell("difference", exp.difference)  # as the CSV writes it
            assert row["verdict"] == exp.verdict
            assert row["method"] == "causal-sum" and row["seed"] == "0"
        assert {r["group_term_stereotyped"] for r in rows} <= {"he", "man", "she", "woman"}
        # step 3's clusters choice recomputes the summary without the model
        page.locator("#clusters input").first.click()
        page.get_by_role("option", name="None: treat every pair as independent", exact=True).click()
        page.locator("#results-summary").get_by_text("the 4 pairs are treated as independent").wait_for()

        # a second user sees none of the first user's table
        other = browser.new_context().new_page()
        other.goto(url, wait_until="domcontentloaded")
        other.locator("#spec-group1").wait_for()
        _custom_spec(other)
        other.click("#spec-next")
        other.locator("#data-find").wait_for()
        assert "[T]" not in other.locator("#pairs-table").inner_text()  # the first user's table is theirs alone
        other.context.close()

        # New bias test: back to step 1, clean, later steps locked
        page.click("#restart")
        page.wait_for_function(
            "() => (document.querySelector('#spec-group1 textarea, #spec-group1 input')?.value ?? 'x') === ''"
        )
        assert page.get_by_role("tab", name="2 · Test data").is_disabled()
        assert page.get_by_role("tab", name="3 · Results").is_disabled()
        ctx.close()


def _anti_only_pairs_csv(path, model: str) -> None:
    """A BiasTestGPT pairs file whose every pair the tiny model scores anti-stereotyped (every bar at 0 %)."""
    from biastest.records import SentencePair
    from tests.lm_helpers import run_pairs

    pairs = [
        SentencePair(stereotyped=f"{g1.capitalize()} likes {attr}.", attribute_term=attr, group_term_stereotyped=g1,
                     anti_stereotyped=f"{g2.capitalize()} likes {attr}.", group_term_anti=g2)
        for attr in ("math", "science", "poetry", "dance")
        for g1, g2 in (("he", "she"), ("man", "woman"))
    ]
    scored = run_pairs(pairs=pairs, model_id=model, method="causal-sum", seed=1)
    assert all(p.verdict in ("stereotyped", "anti-stereotyped") for p in scored.pairs), "a tie: pick other sentences"
    rows = ["group_term,template,sent_att_1,sent_att_2,att_term_1,att_term_2,label_1,label_2"]
    for p, s in zip(pairs, scored.pairs, strict=True):
        flip = s.verdict == "stereotyped"  # swap the sides so that the model prefers the anti-stereotyped one
        sides = [(p.stereotyped, p.group_term_stereotyped), (p.anti_stereotyped, p.group_term_anti)]
        (st, gs), (an, ga) = sides[::-1] if flip else sides
        rows.append(f"{p.attribute_term},[T] likes {p.attribute_term}.,{st},{an},{gs},{ga},stereotype,anti-stereotype")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _step_2(page, url: str, csv_path=None) -> None:
    page.set_default_timeout(30_000)
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#spec-group1").wait_for()
    _custom_spec(page)
    page.click("#spec-next")
    page.locator("#data-testing").get_by_text("he, man vs she, woman").wait_for()  # step 2 is drawn
    if csv_path is not None:
        _import(page, csv_path)


def _import(page, csv_path) -> None:
    page.get_by_text("Import sentence pairs from a file").click()
    page.locator("#import-file").wait_for()
    page.locator("#import-file input[type=file]").set_input_files(str(csv_path))
    page.locator("#import-file").get_by_text(csv_path.stem).wait_for()  # uploaded (the name shows, in parts)
    page.locator("#import-run").click()
    page.locator("#import-message").get_by_text("Imported 8 sentence pairs").wait_for()


def test_browser_zero_pair_run_answers_while_another_test_runs_and_zero_bars_hover(tiny_gpt2, tmp_path,
                                                                                     monkeypatch):
    """Issue 15 finding 9: a zero-pair run waited, silent, for the model slot another test held.

    The run now checks its inputs first and answers inline at once; a run with pairs says it is waiting for the
    model; and bars at 0 % (every pair here is scored anti-stereotyped) can be hovered.
    """
    from biastest.measures.stereotype import report
    from biastest.measures.stereotype import run as lm_run
    from biastest.ui.gpt import MSG_ACTION_FAILED, MSG_WAITING_FOR_MODEL, build_demo
    from biastest.ui.gpt.handlers import ACTION_RUN

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    pairs_csv = tmp_path / "anti_pairs.csv"
    _anti_only_pairs_csv(pairs_csv, tiny_gpt2)
    release, scoring = threading.Event(), threading.Event()
    real = lm_run.run_lm_test

    def held(**kwargs):  # another user's test, holding the model until the test lets it go
        scoring.set()
        release.wait(timeout=90)
        return real(**kwargs)

    monkeypatch.setattr(lm_run, "run_lm_test", held)
    with served(build_demo()) as url, chromium_browser() as browser:
        busy = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
        _step_2(busy, url, pairs_csv)
        busy.locator("#model-id input").first.fill(tiny_gpt2)
        busy.locator("#model-id input").first.press("Enter")
        busy.click("#data-run")
        assert scoring.wait(timeout=30)

        page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
        _step_2(page, url)
        started = time.monotonic()
        page.click("#data-run")  # zero pairs
        page.locator("#run-message").get_by_text(report.MSG_TABLE_EMPTY).wait_for(timeout=10_000)
        assert time.monotonic() - started < 10
        page.locator(".toast-body.warning").first.wait_for()
        assert page.locator(".toast-body.error").count() == 0
        # with pairs, the run says it waits for the model, in step 2 where the user is
        _import(page, pairs_csv)
        page.wait_for_function("() => document.querySelector('#run-message').innerText.trim() === ''")
        page.locator("#model-id input").first.fill(tiny_gpt2)
        page.locator("#model-id input").first.press("Enter")
        page.click("#data-run")
        page.get_by_text(MSG_WAITING_FOR_MODEL).first.wait_for(timeout=10_000)
        release.set()
        for p in (busy, page):
            p.locator("#results-reading").get_by_text("Verdict:").first.wait_for(timeout=60_000)
        page.locator("#run-message").get_by_text("Tested 8 sentence pairs").wait_for(state="attached")  # in step 2
        # a model that cannot be loaded: the reason stays beside the run button (issue 28), not only in a toast
        page.get_by_role("tab", name="2 · Test data").click()
        page.locator("#model-id input").first.fill(str(tmp_path / "no-such-model"))
        page.locator("#model-id input").first.press("Enter")
        page.click("#data-run")
        page.locator("#run-message").get_by_text(MSG_ACTION_FAILED.format(action=ACTION_RUN, reason="")
                                                 .strip()).wait_for()
        assert "no-such-model" in page.locator("#run-message").inner_text()

        # every bar is at 0 %: hovering its row shows it
        bars = busy.locator("#attribute-bars")
        bars.locator(".nsewdrag").first.wait_for()
        hovered = set()
        for row in range(4):
            lines = hover_text(busy, bars, fx=0.5, fy=(row + 0.5) / 4)
            assert "stereotype score (%): 0.0" in lines, lines
            hovered.add(lines[0])
            busy.mouse.move(0, 0)
        assert hovered == {"math", "science", "poetry", "dance"}
