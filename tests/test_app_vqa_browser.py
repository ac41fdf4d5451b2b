"""A real browser walk through the vision-language app (headless Chromium, a tiny local CLIP).

Spec → upload pictures through the page → run → hover a square of the
per-image grid and read its label (and the thumbnail card) → download the CSV
and check its rows against the library run on the same pictures → a second
user sees none of the first user's pictures → "New bias test". Screenshots
of each tab go to ``docs/screenshots/vqa_*.png``.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.browser_helpers import SCREENSHOTS, chromium_browser, served

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


def _expected(tiny_clip: Path, pictures: dict[str, list[Path]], root: Path):
    """The library's own run on the same (normalised) pictures, outside the app."""
    from biastest.models.images import normalise_image_bytes
    from biastest.records import TestImage
    from biastest.runner.vlm import run_vlm_test
    from biastest.spec import BiasSpec

    (root / "images").mkdir(parents=True)
    images = []
    for term, paths in pictures.items():
        for p in paths:
            png, w, h = normalise_image_bytes(p)
            sha = hashlib.sha256(png).hexdigest()
            (root / "images" / f"{sha}.png").write_bytes(png)
            images.append(TestImage(path=f"images/{sha}.png", sha256=sha, image_term=term, width=w, height=h))
    spec = BiasSpec.from_terms(group1="man", group2="woman", stereotype1="doctor", antistereotype1="nurse")
    return run_vlm_test(images=images, image_root=root, spec=spec, model_id=str(tiny_clip), seed=0,
                        n_resamples=1000)


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

        # step 3: results
        page.locator("#result-summary").get_by_text("Bias score").wait_for(timeout=60_000)
        page.locator("#vqa-image-grid .scatterlayer .point").first.wait_for()
        points = page.locator("#vqa-image-grid .scatterlayer .point")
        assert points.count() == 2 * PER_TERM
        box = points.first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_selector(".hovertext", timeout=10_000)
        lines = page.locator(".hovertext tspan").all_text_contents()
        first = expected.images[0]  # grid order = result order: the man pictures first, as uploaded
        text = " | ".join(lines)
        assert "image term: man" in text
        assert f"P(doctor): {first.p_t1:.3f}" in text and f"P(nurse): {first.p_t2:.3f}" in text
        assert f"verdict: {'doctor' if first.verdict == 'T1' else 'nurse'}" in text
        card = page.locator("#vqa-hover-card img.bt-card-img")
        page.wait_for_function(
            "() => (document.querySelector('#vqa-hover-card img.bt-card-img')?.src || '')"
            ".startsWith('data:image/jpeg;base64,')", timeout=10_000)
        assert card.get_attribute("data-image-id") == first.image_id
        assert "image term: man" in page.locator("#vqa-hover-card .bt-card-text").inner_text()
        page.screenshot(path=str(SCREENSHOTS / "vqa_results.png"), full_page=True)

        with page.expect_download() as dl:
            page.click("#download-csv")
        with open(dl.value.path(), newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        want = {i.sha256: i for i in expected.images}
        assert len(rows) == len(want) == 2 * PER_TERM
        for row in rows:
            exp = want[row["sha256"]]
            assert row["image_term"] == exp.image_term
            assert float(row["p_t1"]) == pytest.approx(exp.p_t1, abs=1e-6)
            assert float(row["p_t2"]) == pytest.approx(exp.p_t2, abs=1e-6)
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
        assert page.get_by_role("tab", name="2 · Images and model").is_disabled()
        assert page.get_by_role("tab", name="3 · Results").is_disabled()
        ctx.close()
