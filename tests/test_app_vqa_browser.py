"""Real browser walks through the vision-language app (headless Chromium, a tiny local CLIP).

The first walk: spec → upload pictures through the page → run → hover a
square of the per-image grid and read its label (and the thumbnail card) →
download the CSV and check its rows against the library run on the same
pictures → a second user sees none of the first user's pictures → "New bias
test". Screenshots of each tab go to ``SCREENSHOTS/vqa_*.png``.

The others are served as the suite serves the app, under the ``/vqa`` mount of
:func:`biastest.ui.serve.build_server`, where a file address must carry the
prefix: step 2's mistakes (inline, a yellow toast, the gallery kept and still
clickable, the file box emptied after an "Add"), and the results as a reader
meets them (the picked image loads; one set of names, from the user's own
terms, in the summary, the bars, the hover label and the detail panel; bar
and grid labels measured in the page: none overlaps, none is cut off).
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from biastest.report.export import round_cell
from tests.browser_helpers import (
    SCREENSHOTS,
    chromium_browser,
    first_line,
    free_port,
    open_details,
    served,
    served_apps,
)

pytestmark = pytest.mark.browser

SEED = 77
TERMS = {"man": (210, 40, 40), "woman": (40, 70, 210)}
PER_TERM = 3


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory) -> Path:
    from tests.vlm_helpers import save_tiny_clip

    return save_tiny_clip(tmp_path_factory.mktemp("vqa-browser-clip") / "clip", seed=SEED)


def _pictures(folder: Path) -> dict[str, list[Path]]:
    """Small noisy PNGs per image term (one is RGBA, one grayscale: the page must take them too)."""
    rng = np.random.default_rng(SEED)
    out: dict[str, list[Path]] = {}
    folder.mkdir(parents=True, exist_ok=True)
    for term, base in TERMS.items():
        out[term] = []
        for k in range(PER_TERM):
            arr = np.clip(np.array(base) + rng.normal(0, 30, size=(40, 48, 3)), 0, 255).astype(np.uint8)
            img = Image.fromarray(arr, "RGB")
            if k == 1:
                img = img.convert("RGBA")
            if k == 2 and term == "woman":
                img = img.convert("L")
            path = folder / f"{term}_{k}.png"
            img.save(path)
            out[term].append(path)
    return out


def _expected(tiny_clip: Path, pictures: dict[str, list[Path]], root: Path, spec=None, n_resamples: int = 1000):
    """The library's own run on the same (normalised) pictures, outside the app (the app's default settings)."""
    from biastest.models.images import normalise_image_bytes
    from biastest.records import TestImage
    from biastest.spec import BiasSpec
    from tests.vlm_helpers import run_vlm

    (root / "images").mkdir(parents=True)
    images = []
    for term, paths in pictures.items():
        for p in paths:
            png, w, h = normalise_image_bytes(p)
            sha = hashlib.sha256(png).hexdigest()
            (root / "images" / f"{sha}.png").write_bytes(png)
            images.append(TestImage(path=f"images/{sha}.png", sha256=sha, image_term=term, width=w, height=h))
    spec = spec or BiasSpec.from_terms(group1="man", group2="woman", stereotype1="doctor", antistereotype1="nurse")
    return run_vlm(images=images, image_root=root, spec=spec, model_id=str(tiny_clip), seed=0,
                        n_resamples=n_resamples)


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.blur()


def _choose(page, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option, exact=True).click()


def _fill_spec(page) -> None:
    for elem_id, value in (("spec-group1", "man"), ("spec-group2", "woman"), ("spec-stereotype1", "doctor"),
                           ("spec-antistereotype1", "nurse")):
        _fill(page, elem_id, value)


def _upload(page, term: str, files: list[Path], n_total: int) -> None:
    _choose(page, "upload-term", term)
    page.locator("#upload-files input[type=file]").set_input_files([str(f) for f in files])
    page.locator("#upload-files").get_by_text(files[-1].stem, exact=True).first.wait_for(timeout=20_000)
    page.click("#upload-add")
    page.locator("#upload-message").get_by_text(f"Added {len(files)} image(s) for '{term}'").wait_for(
        timeout=30_000)
    page.wait_for_function(
        f"document.querySelectorAll('#image-gallery img').length >= {n_total}", timeout=20_000)


def test_browser_walk_spec_upload_run_hover_download_reset(tiny_clip, tmp_path):
    from biastest.store import DatasetStore
    from biastest.ui.vqa import build_demo

    pictures = _pictures(tmp_path / "pictures")
    expected = _expected(tiny_clip, pictures, tmp_path / "expected")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    demo = build_demo(store=DatasetStore(tmp_path / "store"))
    with served(demo) as url, chromium_browser() as browser:
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#spec-group1").wait_for()

        # step 1: a custom specification, validated inline
        _fill_spec(page)
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
        page.screenshot(path=str(SCREENSHOTS / "vqa_spec.png"), full_page=True)
        page.click("#spec-next")
        page.locator("#coverage-summary").get_by_text("No images yet").wait_for()

        # step 2: upload pictures for each image term through the page; choose the model
        _upload(page, "man", pictures["man"], PER_TERM)
        _upload(page, "woman", pictures["woman"], 2 * PER_TERM)
        page.locator("#coverage-summary").get_by_text("6").first.wait_for()
        assert page.locator("#image-gallery img").count() == 2 * PER_TERM
        model_box = page.locator("#model-id input").first
        model_box.fill(str(tiny_clip))
        model_box.press("Enter")
        model_box.blur()
        page.screenshot(path=str(SCREENSHOTS / "vqa_data.png"), full_page=True)
        page.click("#run-test")

        # step 3: results, opening with the verdict sentence (issue 28 item 4); the numbers behind it in Details
        page.locator("#result-summary").get_by_text("Verdict:").first.wait_for(timeout=60_000)
        verdict = first_line(page, "#result-summary")
        assert verdict.startswith("Verdict: ") and "bias score of" in verdict, verdict
        assert not page.locator("#result-details-text").is_visible()
        open_details(page, "result-details")
        page.locator("#result-details-text").get_by_text("Bias score").wait_for(timeout=60_000)
        page.locator("#vqa-image-grid .scatterlayer .point").first.wait_for()
        points = page.locator("#vqa-image-grid .scatterlayer .point")
        assert points.count() == 2 * PER_TERM
        points.first.scroll_into_view_if_needed()
        box = points.first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_selector(".hovertext", timeout=10_000)
        lines = page.locator(".hovertext tspan").all_text_contents()
        first = expected.images[0]  # grid order = result order: the man pictures first, as uploaded
        text = " | ".join(lines)
        assert "image term: man" in text
        assert f"P(doctor): {first.p_t1:.3f}" in text and f"P(nurse): {first.p_t2:.3f}" in text
        lean = "doctor (the stereotype of man)" if first.verdict == "T1" else \
            "nurse (the stereotype of woman, not of man)"
        assert f"leans to: {lean}" in text
        card = page.locator("#vqa-hover-card img.bt-card-img")
        page.wait_for_function(
            "() => (document.querySelector('#vqa-hover-card img.bt-card-img')?.src || '')"
            ".startsWith('data:image/jpeg;base64,')", timeout=10_000)
        assert card.get_attribute("data-image-id") == first.image_id
        assert "image term: man" in page.locator("#vqa-hover-card .bt-card-text").inner_text()
        page.screenshot(path=str(SCREENSHOTS / "vqa_results.png"), full_page=True)

        with page.expect_download() as dl:
            page.click("#download-csv")
        with open(dl.value.path(), newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.DictReader(fh) if r["row_type"] == "image"]  # after the summary rows
        want = {i.sha256: i for i in expected.images}
        assert len(rows) == len(want) == 2 * PER_TERM
        for row in rows:
            exp = want[row["sha256"]]
            assert row["image_term"] == exp.image_term
            assert float(row["p_t1"]) == round_cell("p_t1", exp.p_t1)  # as the CSV writes it
            assert float(row["p_t2"]) == round_cell("p_t2", exp.p_t2)
            assert row["verdict"] == exp.verdict and row["path"] == f"images/{exp.sha256}.png"

        # a second user sees none of the first user's pictures
        other = browser.new_context().new_page()
        other.goto(url, wait_until="domcontentloaded")
        other.locator("#spec-group1").wait_for()
        _fill_spec(other)
        other.click("#spec-next")
        other.locator("#coverage-summary").get_by_text("No images yet").wait_for()
        assert other.locator("#image-gallery img").count() == 0
        other.context.close()

        # New bias test: back to step 1 with empty boxes, later steps locked
        page.click("#new-test-3")
        page.wait_for_function(
            "() => { const b = document.querySelector('#spec-group1 textarea, #spec-group1 input');"
            " return b && b.value === ''; }", timeout=10_000)
        assert page.locator("#spec-next").is_visible()
        assert page.get_by_role("tab", name="2 · Test data").is_disabled()
        assert page.get_by_role("tab", name="3 · Results").is_disabled()
        ctx.close()


# --------------------------------------------------------------------------- served as the suite serves it: /vqa
@contextmanager
def served_suite(prefix: str = "vqa") -> Iterator[str]:
    """The suite's server with only this app, mounted at ``/<prefix>``; yields the app's address (ending in ``/``)."""
    with served_apps((prefix,)) as base:
        yield f"{base}{prefix}/"


#: The spec of the mounted walks: several terms per list, one of them a phrase (a long bar label).
MULTI = {"spec-group1": "man, father", "spec-group2": "woman", "spec-stereotype1": "doctor, engineer",
         "spec-antistereotype1": "nurse, a person who takes care of children"}
MULTI_TERMS = {"man": (210, 40, 40), "father": (190, 60, 50), "woman": (40, 70, 210)}

TOASTS = "() => [...document.querySelectorAll('.toast-body')].map(t => t.className)"
OVERLAPS = """(sel) => {
  const r = [...document.querySelectorAll(sel)].map(t => t.getBoundingClientRect());
  const out = [];
  for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++) {
    const w = Math.min(r[i].right, r[j].right) - Math.max(r[i].left, r[j].left);
    const h = Math.min(r[i].bottom, r[j].bottom) - Math.max(r[i].top, r[j].top);
    if (w > 0 && h > 0) out.push([i, j, Math.round(w), Math.round(h)]);
  }
  return [r.length, out];
}"""
INSIDE = """(sel) => [...document.querySelectorAll(sel)].map(t => {
  const b = t.getBoundingClientRect(), s = t.closest('svg.main-svg').getBoundingClientRect();
  return [t.textContent, b.left >= s.left - 0.5 && b.right <= s.right + 0.5 && b.top >= s.top - 0.5
          && b.bottom <= s.bottom + 0.5];
})"""
PLACEHOLDERS = ("Social group", "Stereotype for group", "Anti-stereotype", "T1", "T2", "verdict")


def _mounted_page(browser, url: str):
    page = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1000}).new_page()
    page.set_default_timeout(30_000)
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#spec-group1").wait_for()
    return page


HOVER_LINES = """() => {
  const t = document.querySelector('.hovertext text.nums');
  if (!t) return null;
  const lines = [...t.querySelectorAll('tspan.line')];
  return lines.length ? lines.map(l => l.textContent) : [t.textContent];
}"""


def _hover(page, x: float, y: float) -> str:
    """Move away (no label left), then over ``(x, y)``: the hover label's lines, joined by spaces."""
    page.mouse.move(1, 1)
    page.wait_for_selector(".hovertext", state="detached", timeout=10_000)
    page.mouse.move(x, y)
    page.wait_for_selector(".hovertext", timeout=10_000)
    return " ".join(page.evaluate(HOVER_LINES))


def _toasts_are_yellow(page) -> None:
    """A toast came, and none is red (mistakes the user can fix are warnings)."""
    page.locator(".toast-body").first.wait_for(timeout=10_000)
    classes = page.evaluate(TOASTS)
    assert classes and all("warning" in c and "error" not in c for c in classes), classes
    for close in page.locator(".toast-close").all():
        close.click()


def test_step_2_mistakes_stay_inline_and_the_gallery_keeps_answering(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))  # an empty shared store
    from biastest.ui import vqa

    pictures = _pictures(tmp_path / "pictures")
    notes = tmp_path / "notes.png"
    notes.write_text("this is not a picture\n")
    with served_suite() as url, chromium_browser() as browser:
        page = _mounted_page(browser, url)

        # step 1: the boxes are named as the messages name them
        _fill(page, "spec-group1", "man")
        _fill(page, "spec-stereotype1", "doctor")
        _fill(page, "spec-antistereotype1", "nurse")
        page.locator("#spec-message").get_by_text("Social group 2 is empty").wait_for()
        assert page.locator("#spec-group2 label").inner_text().startswith("Social group 2")
        _fill(page, "spec-antistereotype1", "")
        _fill(page, "spec-group2", "woman")
        page.locator("#spec-message").get_by_text("Anti-stereotype for group 1 is empty").wait_for()
        assert page.locator("#spec-antistereotype1 label").inner_text().startswith("Anti-stereotype for group 1")
        _fill(page, "spec-antistereotype1", "nurse")
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
        page.click("#spec-next")
        page.locator("#coverage-summary").get_by_text("No images yet").wait_for()

        # the shared store is empty: said next to its button, in a yellow toast
        page.locator("#store-section").get_by_text("Pictures from the shared store").first.click()
        page.click("#store-retrieve")
        page.locator("#store-message").get_by_text("⚠️ " + vqa.MSG_STORE_EMPTY_FOR_SPEC).wait_for()
        _toasts_are_yellow(page)

        # generation without a key: said next to its button
        page.locator("#generate-section").get_by_text("Generate pictures").first.click()
        page.click("#gen-run")
        page.locator("#gen-message").get_by_text("⚠️ " + vqa.MSG_NO_API_KEY_TYPED).wait_for()
        _toasts_are_yellow(page)

        # a failed "Add" empties the file box: the next "Add" (for another term) sends only its own files
        _choose(page, "upload-term", "man")
        page.locator("#upload-files input[type=file]").set_input_files([str(notes)])
        page.locator("#upload-files").get_by_text("notes", exact=True).first.wait_for(timeout=20_000)
        page.click("#upload-add")
        page.locator("#upload-message").get_by_text("None of the 1 file(s) could be added").wait_for()
        _toasts_are_yellow(page)
        page.locator("#upload-files").get_by_text("notes", exact=True).first.wait_for(state="detached",
                                                                                      timeout=10_000)
        _upload(page, "woman", pictures["woman"], PER_TERM)
        assert page.locator("#upload-message").inner_text().strip() == "✅ " + vqa.MSG_UPLOAD_ADDED.format(
            added=PER_TERM, term="woman")

        # "Remove" with nothing selected: an inline message, the gallery stays (and stays clickable)
        page.click("#remove-image")
        page.locator("#gallery-message").get_by_text("⚠️ " + vqa.MSG_NOTHING_SELECTED).wait_for()
        _toasts_are_yellow(page)
        assert page.locator("#image-gallery img").count() == PER_TERM
        page.locator("#image-gallery img").nth(1).click(timeout=5_000)
        page.locator("#gallery-message").get_by_text("Selected: an image of woman").wait_for()
        page.click("#remove-image")
        page.locator("#gallery-message").get_by_text(
            vqa.MSG_REMOVED.format(term="woman", name="woman_1.png")).wait_for()
        page.wait_for_function(f"document.querySelectorAll('#image-gallery img').length === {PER_TERM - 1}")
        page.context.close()


def test_results_under_the_mount_read_in_one_set_of_names(tiny_clip, tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    from biastest.measures.vlm import report as rep
    from biastest.spec import BiasSpec

    rng = np.random.default_rng(SEED)
    pictures: dict[str, list[Path]] = {}
    (tmp_path / "pictures").mkdir()
    for term, base in MULTI_TERMS.items():
        pictures[term] = []
        for k in range(PER_TERM):
            arr = np.clip(np.array(base) + rng.normal(0, 30, size=(40, 48, 3)), 0, 255).astype(np.uint8)
            path = tmp_path / "pictures" / f"{term}_{k}.png"
            Image.fromarray(arr, "RGB").save(path)
            pictures[term].append(path)
    spec = BiasSpec.from_terms(group1=MULTI["spec-group1"], group2=MULTI["spec-group2"],
                               stereotype1=MULTI["spec-stereotype1"], antistereotype1=MULTI["spec-antistereotype1"])
    expected = _expected(tiny_clip, pictures, tmp_path / "expected", spec=spec, n_resamples=10_000)
    lab = rep.labels(expected)
    assert (lab.group1, lab.target1, lab.target2) == ("man / father", "doctor / engineer",
                                                      "nurse / a person who takes care of children")
    with served_suite() as url, chromium_browser() as browser:
        page = _mounted_page(browser, url)
        for elem_id, value in MULTI.items():
            _fill(page, elem_id, value)
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
        page.click("#spec-next")
        page.locator("#coverage-summary").get_by_text("No images yet").wait_for()
        total = 0
        for term, files in pictures.items():
            total += len(files)
            _upload(page, term, files, total)
        model_box = page.locator("#model-id input").first
        model_box.fill(str(tiny_clip))
        model_box.press("Enter")
        model_box.blur()
        page.click("#run-test")
        page.locator("#result-summary").get_by_text("Verdict:").first.wait_for(timeout=90_000)
        open_details(page, "result-details")
        page.locator("#result-details-text").get_by_text("Bias score").wait_for(timeout=90_000)
        page.locator("#vqa-image-grid .scatterlayer .point").first.wait_for()

        # 1. the picked image loads under the mount (its address carries /vqa), also after picking another
        loaded = ("() => { const i = document.querySelector('#vqa-picked-image img');"
                  " return !!i && i.complete && i.naturalWidth > 0 && i.src.includes('/vqa/'); }")
        page.wait_for_function(loaded, timeout=15_000)
        first_src = page.locator("#vqa-picked-image img").get_attribute("src")
        page.locator("#vqa-pick input").first.click()
        page.get_by_role("option").nth(4).click()
        page.wait_for_function(f"() => (document.querySelector('#vqa-picked-image img')?.src || '') !== "
                               f"{first_src!r}", timeout=15_000)
        page.wait_for_function(loaded, timeout=15_000)

        # 2. one set of names, from the user's terms: the hover label and the detail panel say the same
        page.locator("#vqa-pick input").first.click()
        page.get_by_role("option").first.click()
        page.locator("#vqa-picked-details").get_by_text("image term: man").wait_for()
        page.locator("#vqa-image-grid .scatterlayer .point").first.scroll_into_view_if_needed()
        box = page.locator("#vqa-image-grid .scatterlayer .point").first.bounding_box()
        hover = _hover(page, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        details = page.locator("#vqa-picked-details").inner_text()
        first = expected.images[0]
        for field, value in rep.image_facts(expected, first):
            assert f"{field}: {value}" in hover, (field, value, hover)
            assert f"{field}: {value}" in details, (field, value, details)
        assert rep.leans_to(first, lab).split(" (")[0] in (lab.target1, lab.target2)
        page.locator("#vqa-hover-card .bt-card-text").get_by_text(f"leans to: {rep.leans_to(first, lab)}").wait_for()
        summary = "\n".join(page.locator(f"#{i}").inner_text() for i in ("result-summary", "result-details-text"))
        bar_labels = page.locator("#vqa-term-bars .ytick text").all_text_contents()
        for text in (hover, details, summary, " ".join(bar_labels)):
            assert not [w for w in PLACEHOLDERS if re.search(rf"\b{w}\b", text)], text
        assert "doctor / engineer for pictures of man / father" in summary
        # the summary reads in short parts, not one dense paragraph
        parts = page.evaluate("() => [...document.querySelectorAll('#result-summary p, #result-summary li, "
                              "#result-details-text p, #result-details-text li')]"
                              ".map(e => e.innerText.split(/\\s+/).length)")
        assert len(parts) >= 6 and max(parts) <= 50, parts

        # a bar whose interval leaves out 50% but whose exact test is not significant says why, in its hover
        rows = rep.term_rows(expected)
        noted = [i for i, r in enumerate(rows) if r["note"].startswith("Why the interval and p disagree")]
        assert noted, "the tiny model's lean on 3 pictures per term should give such a bar"
        row = rows[noted[0]]
        page.locator("#vqa-term-bars .nsewdrag").first.scroll_into_view_if_needed()
        drag = page.locator("#vqa-term-bars .nsewdrag").first.bounding_box()
        text = _hover(page, drag["x"] + drag["width"] * row["score"] / 200,
                      drag["y"] + drag["height"] * (noted[0] + 0.5) / len(rows))
        assert row["label"] in text and "Why the interval and p disagree" in text, text
        assert f"p = {rep._p(row['p_value'])}" in text

        # 4. labels measured in the page: no bar or grid label overlaps another or is cut off; table columns
        count, overlaps = page.evaluate(OVERLAPS, "#vqa-term-bars .ytick text")
        assert count == len(rows) and overlaps == [], overlaps
        count, overlaps = page.evaluate(OVERLAPS, "#vqa-image-grid .xtick text")
        assert count == len(MULTI_TERMS) and overlaps == [], overlaps
        for sel in ("#vqa-image-grid .gtitle", "#vqa-term-bars .gtitle", "#vqa-term-bars .ytick text",
                    "#vqa-image-grid .cbaxis text"):
            cut = [t for t, inside in page.evaluate(INSIDE, sel) if not inside]
            assert cut == [], (sel, cut)
        headers = [h.strip() for h in page.locator("#vqa-image-table thead th").all_inner_texts()]
        assert headers[:5] == ["#", "image term", f"P({lab.target1})", f"P({lab.target2})", "leans to"], headers
        assert "path" not in headers and "sha256" not in headers
        with page.expect_download() as dl:  # the CSV keeps them
            page.click("#download-csv")
        with open(dl.value.path(), newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh))
        assert {"path", "sha256", "p_t1", "verdict"} <= set(header)
        page.context.close()


def test_two_servers_share_generated_pictures_through_the_dataset(tmp_path):
    """Server A (empty store) generates pictures in Chromium; they reach the Hub stand-in; server B, started
    afterwards with an empty store and the same dataset, finds exactly those pictures in its step 2.

    Each server is its own process (``app_vqa.py``, as a Space runs it), with its own store, talking to the
    Hub stand-in (tests/hub_stub.py, in this process) through ``HF_ENDPOINT``; pictures come from the OpenAI
    stand-in (tests/openai_stub.py). The stand-in takes every file inline in the commit (no LFS/Xet upload).
    """
    import os
    import sys
    from collections import Counter

    from biastest.store import DatasetStore, retrieve_images
    from biastest.store import shared as S
    from biastest.ui import vqa
    from tests.hub_stub import StubHub
    from tests.openai_stub import OpenAIStub
    from tests.test_serve import running

    repo, token = "stub-user/shared-pictures", "hf_stub_browser_token_0123456789"

    def env(name: str, port: int) -> dict[str, str]:
        out = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        out.update(GRADIO_ANALYTICS_ENABLED="False", HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0",
                   HF_HOME=str(tmp_path / f"hf_home_{name}"), HF_ENDPOINT=hub.url, BIASTEST_HF_DATASET=repo,
                   HF_TOKEN=token, BIASTEST_DATA_DIR=str(tmp_path / f"store_{name}"), PORT=str(port),
                   BIASTEST_HOST="127.0.0.1")
        return out

    def step_2(page, url: str) -> None:
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#spec-group1").wait_for(timeout=60_000)
        _fill_spec(page)
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for(timeout=30_000)
        page.click("#spec-next")
        page.locator("#coverage-summary").get_by_text("No images yet").wait_for(timeout=30_000)
        page.locator("#dataset-panel").get_by_text(f"Shared dataset {repo}: pulled").wait_for(timeout=60_000)

    with StubHub() as hub, OpenAIStub() as stub, chromium_browser() as browser:
        port_a = free_port()
        url_a = f"http://127.0.0.1:{port_a}/"
        with running([sys.executable, "app_vqa.py"], env("a", port_a), url_a, tmp_path / "a.log"):
            page = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
            step_2(page, url_a)
            page.locator("#dataset-panel").get_by_text(vqa.MSG_PANEL_NONE_SAVED).wait_for(timeout=10_000)
            page.locator("#generate-section").get_by_text("Generate pictures").first.click()
            page.get_by_text("An OpenAI-compatible image service (its web address)").click()
            _fill(page, "gen-url", stub.base_url)
            _fill(page, "gen-model", "tiny-image-model")
            _fill(page, "gen-per-term", "2")
            page.click("#gen-run")
            page.locator("#gen-message").get_by_text(vqa.MSG_GENERATED_SAVED.format(count=4)).wait_for(
                timeout=90_000)
            page.wait_for_function("document.querySelectorAll('#image-gallery img').length === 4", timeout=20_000)
            # the panel follows each picture until the pusher has it in a commit of the dataset
            panel = page.locator("#dataset-panel")
            panel.get_by_text(vqa.MSG_PANEL_SAVED_HEAD.format(n=4, counts=f"4 {S.ITEM_PUSHED}")).wait_for(
                timeout=90_000)
            assert panel.inner_text().count(f": {S.ITEM_PUSHED} in commit ") == 4
            page.screenshot(path=str(SCREENSHOTS / "vqa_shared_dataset_a.png"), full_page=True)
            page.context.close()
        made = retrieve_images(DatasetStore(tmp_path / "store_a"), ["man", "woman"]).images
        assert len(made) == 4 and {i.source for i in made} == {"generated"}
        rows = hub.parquet_rows(repo, "images")
        assert Counter(r["sha256"] for r in rows) == Counter(i.sha256 for i in made)  # each once
        assert {f"images/{i.sha256}.png" for i in made} <= set(hub.repo(repo).files)

        port_b = free_port()
        url_b = f"http://127.0.0.1:{port_b}/"
        with running([sys.executable, "app_vqa.py"], env("b", port_b), url_b, tmp_path / "b.log"):
            page = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
            step_2(page, url_b)
            page.locator("#store-section").get_by_text("Pictures from the shared store").first.click()
            page.click("#store-retrieve")
            message = page.locator("#store-message")
            message.get_by_text(vqa.MSG_RETRIEVED.format(added=4, already=0)).wait_for(timeout=30_000)
            found = S.MSG_FOUND_LINE.format(n=4, what="pictures", parts=S.MSG_FROM_DATASET.format(
                n=4, repo=repo, pulled="pulled "))
            assert message.inner_text().startswith(found.split("pulled ")[0] + "pulled ")
            page.wait_for_function("document.querySelectorAll('#image-gallery img').length === 4", timeout=20_000)
            page.screenshot(path=str(SCREENSHOTS / "vqa_shared_dataset_b.png"), full_page=True)
            page.context.close()
        got = retrieve_images(DatasetStore(tmp_path / "store_b"), ["man", "woman"]).images
        assert Counter(i.sha256 for i in got) == Counter(i.sha256 for i in made)  # exactly those, no duplicates
        mine = {i.sha256: i for i in made}
        for img in got:  # provenance intact
            a = mine[img.sha256]
            assert (img.image_term, img.prompt, img.model, img.seed, img.source, img.generator) == (
                a.image_term, a.prompt, a.model, a.seed, a.source, a.generator)
            assert img.provenance.get("generated_sha256") == a.provenance.get("generated_sha256")
        assert token not in (tmp_path / "a.log").read_text() + (tmp_path / "b.log").read_text()


#: Which components show Gradio's red "Error" pill (a handler raised): the ids of their blocks.
ERROR_PILLS = """() => [...document.querySelectorAll('[data-testid="status-tracker"] .error')]
  .map(e => (e.closest('[id]') || {}).id || '?')"""


def _type_model(page, name: str) -> None:
    box = page.locator("#model-id input").first
    box.fill(name)
    box.press("Enter")
    box.blur()


def test_a_failed_run_says_why_beside_run_over_no_old_warning_and_the_next_run_clears_it(tiny_clip, tmp_path,
                                                                                            monkeypatch):
    """Issue 28 item 6: a /vqa run that failed showed a red "Error" over the old warning; now the reason replaces
    the old message next to the Run button, nothing turns red, and the next run clears it."""
    from biastest.store import DatasetStore
    from biastest.ui.common import MSG_UNEXPECTED_REASON
    from biastest.ui.vqa import build_demo
    from biastest.ui.vqa import results as vresults

    pictures = _pictures(tmp_path / "pictures")
    demo = build_demo(store=DatasetStore(tmp_path / "store"))
    with served(demo) as url, chromium_browser() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
        page.set_default_timeout(30_000)
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#spec-group1").wait_for()
        _fill_spec(page)
        page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
        page.click("#spec-next")
        page.locator("#coverage-summary").get_by_text("No images yet").wait_for()
        # an old message under the button: a run without pictures is a mistake, said inline
        _type_model(page, str(tiny_clip))
        page.click("#run-test")
        page.locator("#run-message").get_by_text("⚠️").first.wait_for()
        old = page.locator("#run-message").inner_text()
        _upload(page, "man", pictures["man"], PER_TERM)
        _upload(page, "woman", pictures["woman"], 2 * PER_TERM)
        # the next run fails in a way the page did not expect
        original = vresults.run_inputs
        monkeypatch.setattr(vresults, "run_inputs", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("/srv/x")))
        page.click("#run-test")
        page.locator("#run-message").get_by_text("The test did not work").wait_for()
        said = page.locator("#run-message").inner_text()
        assert said.startswith("⛔") and MSG_UNEXPECTED_REASON.split(":")[0] in said and "/srv/x" not in said
        assert old.strip() not in said and "⚠️" not in said  # the old warning is gone, not shown under an error
        assert page.evaluate(ERROR_PILLS) == []  # nothing turned red
        # and the next run, which works, clears the message and opens step 3 with its verdict
        monkeypatch.setattr(vresults, "run_inputs", original)
        page.click("#run-test")
        page.locator("#result-summary").get_by_text("Verdict:").first.wait_for(timeout=90_000)
        assert page.locator("#run-message").inner_text().strip() == ""
