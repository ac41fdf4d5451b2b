"""The vision-language app's handlers, called directly (the browser walk is in ``test_app_vqa_browser.py``).

Uploads are real files written here (good ones in every awkward mode, bad
ones of every kind); the model is a tiny CLIP built from a config, saved and
loaded through the product's own loading path; the per-image numbers are
checked against a naive zero-shot computation written here with
``transformers`` directly.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import struct
import warnings
import zlib
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from biastest.errors import DataError, MethodError, OptionError, SpecError
from biastest.measures.vlm import report as rep
from biastest.measures.vlm import report_figures as figs
from biastest.measures.vlm.run import MSG_NO_IMAGES_FOR_TERM
from biastest.models import images as imgmod
from biastest.models.vlm import MSG_NOT_A_VLM
from biastest.report.export import round_cell
from biastest.specs import get_spec, list_specs
from biastest.ui import vqa as app
from biastest.ui.spec_step import CUSTOM, fill_from_library
from tests.store_helpers import shared_dataset_at as _dataset
from tests.store_helpers import wait_until as _wait
from tests.vlm_helpers import summarize

SEED = 20240611
SPEC_TERMS = (CUSTOM, "man", "woman", "doctor", "nurse")


# --------------------------------------------------------------------------- fixtures and builders
@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory) -> Path:
    from tests.vlm_helpers import save_tiny_clip

    return save_tiny_clip(tmp_path_factory.mktemp("vqa-app-clip") / "clip", seed=SEED)


def _save(img: Image.Image, path: Path, fmt: str = "PNG", **kw) -> Path:
    img.save(path, format=fmt, **kw)
    return path


def _rgb(colour, size=(24, 20)) -> Image.Image:
    return Image.new("RGB", size, colour)


def _session(*terms: str) -> dict:
    session, msg = app.confirm_spec(app.new_session(), *(terms or SPEC_TERMS))
    assert msg.startswith("✅")
    return session


def _huge_png(path: Path, width: int, height: int) -> Path:
    """A valid PNG header declaring width × height pixels (1-bit), with a tiny data stream."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 8))
                     + chunk(b"IEND", b""))
    return path


def _files_in(session: dict) -> list[str]:
    if not session.get("dir"):
        return []
    return sorted(p.name for p in Path(session["dir"]).rglob("*") if p.is_file())


# --------------------------------------------------------------------------- step 1
def test_predefined_spec_fills_the_boxes_and_is_kept_unedited():
    name = list_specs("bias")[0]
    boxes = fill_from_library(name)
    session, msg = app.confirm_spec(app.new_session(), name, *boxes[:4])
    assert session["spec"] == get_spec(name)
    assert msg.startswith("✅")


def test_custom_spec_problem_is_shown_inline_and_step_2_stays_locked():
    with pytest.raises(SpecError) as info:
        app.confirm_spec(app.new_session(), CUSTOM, "man", "", "doctor", "nurse")
    expected = info.value.message
    out = app.VQAApp(use_store=False).confirm_handler(app.new_session(), CUSTOM, "man", "", "doctor", "nurse")
    assert out[1] == "⚠️ " + app.escape(expected)
    assert out[0] == app.new_session()
    assert all(isinstance(v, type(gr.skip())) for v in out[2:])


def test_changing_the_spec_sets_aside_images_of_terms_no_longer_in_it(tmp_path):
    session = _session()
    session, _ = app.add_uploads(session, [_save(_rgb((200, 0, 0)), tmp_path / "a.png")], "man")
    session, _ = app.add_uploads(session, [_save(_rgb((0, 0, 200)), tmp_path / "b.png")], "woman")
    new, msg = app.confirm_spec(session, CUSTOM, "man", "girl", "doctor", "nurse")
    assert [i.image_term for i in new["images"]] == ["man"]
    assert app.MSG_DROPPED_IMAGES.format(count=1, terms="woman") in msg


# --------------------------------------------------------------------------- uploads
def test_awkward_but_valid_uploads_are_normalised_to_rgb_png(tmp_path):
    gray = _save(Image.new("L", (30, 20), 90), tmp_path / "gray.png")
    gray16 = _save(Image.fromarray(np.full((10, 12), 40000, dtype=np.uint16)), tmp_path / "gray16.png")
    rgba = Image.new("RGBA", (16, 16), (255, 0, 0, 255))
    rgba.putpixel((0, 0), (0, 0, 0, 0))  # fully transparent black must become white, not black
    rgba = _save(rgba, tmp_path / "transparent.png")
    cmyk = _save(Image.new("CMYK", (20, 20), (0, 255, 255, 0)), tmp_path / "cmyk.jpg", "JPEG")
    pal = _save(_rgb((10, 200, 10)).convert("P"), tmp_path / "palette.gif", "GIF")
    session = _session()
    new, md = app.add_uploads(session, [gray, gray16, rgba, cmyk, pal], "woman")
    assert md == "✅ " + app.escape(app.MSG_UPLOAD_ADDED.format(added=5, term="woman"))
    assert [i.image_term for i in new["images"]] == ["woman"] * 5
    assert session["images"] == []  # the handler returns a new session; the old one is unchanged
    for rec in new["images"]:
        path = Path(new["dir"]) / rec.path
        with Image.open(path) as im:
            assert (im.format, im.mode) == ("PNG", "RGB")
            assert (rec.width, rec.height) == im.size
            if rec.provenance["original_name"] == "transparent.png":
                assert im.getpixel((0, 0)) == (255, 255, 255)
                assert im.getpixel((5, 5)) == (255, 0, 0)
            if rec.provenance["original_name"] == "cmyk.jpg":
                r, g, b = im.getpixel((10, 10))
                assert r > 200 and g < 60 and b < 60  # CMYK (0, 255, 255, 0) is red
        assert rec.source == "upload" and rec.generator == "upload" and rec.spec_name == new["spec"].name
        assert rec.path == f"images/{rec.sha256}.png"


def test_bad_uploads_get_exact_messages_and_nothing_is_written(tmp_path):
    text = tmp_path / "notes.png"
    text.write_text("this is not a picture\n")
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    good = io.BytesIO()
    _rgb((1, 2, 3), (64, 64)).save(good, format="PNG")
    corrupt = tmp_path / "cut.png"
    corrupt.write_bytes(good.getvalue()[: len(good.getvalue()) // 2])
    huge = _huge_png(tmp_path / "huge.png", 10_000, 9_000)
    expected = [
        imgmod.MSG_NOT_AN_IMAGE.format(name="notes.png"),
        imgmod.MSG_IMAGE_EMPTY.format(name="empty.jpg"),
        None,  # corrupt: Pillow's own words inside our sentence, checked by pattern below
        imgmod.MSG_IMAGE_TOO_MANY_PIXELS.format(name="huge.png", width=10_000, height=9_000, megapixels=90.0,
                                                limit=imgmod.DEFAULT_MAX_PIXELS / 1e6),
    ]
    session = _session()
    with pytest.raises(DataError) as info:
        app.add_uploads(session, [text, empty, corrupt, huge], "man")
    problems = info.value.details["problems"]
    for got, want in zip(problems, expected, strict=True):
        if want is None:
            head, tail = imgmod.MSG_IMAGE_CORRUPT.split("{problem}")
            assert re.fullmatch(re.escape(head.format(name="cut.png")) + r".+" + re.escape(tail), got), got
        else:
            assert got == want
    assert info.value.message == app.MSG_NONE_ADDED.format(count=4, problems=" ".join(problems))
    assert session["dir"] is None and session["images"] == []
    # through the handler: inline message, session unchanged, no traceback
    out = app.VQAApp(use_store=False).upload_handler(session, [str(text)], "man")
    assert out[0] is session
    assert out[1] == "⚠️ " + app.escape(app.MSG_NONE_ADDED.format(count=1, problems=expected[0]))
    assert out[2] is None  # the file box is emptied: the next "Add" does not send these files again


def test_a_mixed_batch_keeps_the_good_files_and_lists_the_bad(tmp_path):
    good = _save(_rgb((9, 9, 9)), tmp_path / "good.png")
    text = tmp_path / "readme.txt"
    text.write_text("hello")
    session = _session()
    new, md = app.add_uploads(session, [good, text], "man")
    assert len(new["images"]) == 1
    assert _files_in(new) == [f"{new['images'][0].sha256}.png"]  # no partial or temporary file left
    assert app.escape(app.MSG_UPLOAD_PROBLEMS.format(count=1)) in md
    assert "- " + app.escape(imgmod.MSG_NOT_AN_IMAGE.format(name="readme.txt")) in md


def test_duplicates_terms_and_order_of_steps_are_checked(tmp_path):
    a = _save(_rgb((50, 60, 70)), tmp_path / "a.png")
    with pytest.raises(DataError) as info:
        app.add_uploads(app.new_session(), [a], "man")
    assert info.value.message == app.MSG_SPEC_FIRST
    session = _session()
    with pytest.raises(DataError) as info:
        app.add_uploads(session, [a], None)
    assert info.value.message == app.MSG_CHOOSE_TERM
    with pytest.raises(DataError) as info:
        app.add_uploads(session, [a], "nurse")
    assert info.value.message == app.MSG_TERM_NOT_IN_SPEC.format(term="nurse", terms="man, woman")
    with pytest.raises(DataError) as info:
        app.add_uploads(session, [], "man")
    assert info.value.message == app.MSG_NO_FILES
    session, _ = app.add_uploads(session, [a], "MAN")  # the spec's own spelling is recorded
    assert session["images"][0].image_term == "man"
    with pytest.raises(DataError) as info:
        app.add_uploads(session, [a], "woman")
    assert info.value.details["problems"] == [app.MSG_DUPLICATE.format(name="a.png", term="man")]


def test_two_sessions_never_share_images(tmp_path):
    s1, s2 = _session(), _session()
    s1, _ = app.add_uploads(s1, [_save(_rgb((1, 1, 1)), tmp_path / "one.png")], "man")
    assert s2["dir"] is None and app.gallery_items(s2) == []
    s2, _ = app.add_uploads(s2, [_save(_rgb((2, 2, 2)), tmp_path / "two.png")], "woman")
    assert s1["dir"] != s2["dir"]
    assert {Path(p).parent.parent for p, _ in app.gallery_items(s1)} == {Path(s1["dir"])}
    assert [c for _, c in app.gallery_items(s2)] == ["woman · upload"]
    app.discard_session(s1)
    assert not Path(s1["dir"]).exists() and Path(s2["dir"]).is_dir()
    app.discard_session(s2)


def test_gallery_remove_and_coverage_hints(tmp_path):
    session = _session()
    for i in range(3):
        session, _ = app.add_uploads(session, [_save(_rgb((i, 0, 0)), tmp_path / f"m{i}.png")], "man")
    rows, md = app.coverage_view(session)
    assert [(r["image term"], r["images in this test"], r["status"]) for r in rows] == [
        ("man", 3, "few"), ("woman", 0, "missing")]
    assert "No images yet for 'woman'" in md and "Few images" in md
    with pytest.raises(DataError) as info:
        app.remove_image(session, None)
    assert info.value.message == app.MSG_NOTHING_SELECTED
    out = app.VQAApp(use_store=False).remove_handler(session)  # inline; the gallery is not touched
    assert out[0] is session and out[1] == "⚠️ " + app.escape(app.MSG_NOTHING_SELECTED)
    assert all(isinstance(v, type(gr.skip())) for v in out[2:])
    gone = session["images"][1]
    new, msg = app.remove_image(session, 1)
    assert msg == app.MSG_REMOVED.format(term="man", name="m1.png")
    assert gone not in new["images"] and len(new["images"]) == 2
    assert not (Path(new["dir"]) / gone.path).exists()
    assert len(session["images"]) == 3  # the previous state is not mutated


# --------------------------------------------------------------------------- generation (stub service)
def test_generation_through_a_compatible_endpoint_fills_every_term(tmp_path):
    from tests.openai_stub import OpenAIStub

    session = _session()
    session, _ = app.add_uploads(session, [_save(_rgb((3, 3, 3)), tmp_path / "m.png")], "man")
    with OpenAIStub() as stub:
        new, md = app.generate_core(session, app.GEN_COMPATIBLE, "", stub.base_url, "tiny-image-model", "",
                                    "64x64", 2, "portrait", 7)
        assert stub.count("/v1/images/generations") == 3  # man needs 1 more, woman 2
    assert app.image_counts(new) == {"man": 2, "woman": 2}
    generated = [i for i in new["images"] if i.source == "generated"]
    assert {i.model for i in generated} == {"tiny-image-model"} and all(i.prompt for i in generated)
    assert "woman" in generated[-1].prompt
    assert md.strip()


def test_openai_generation_needs_a_typed_key_and_never_keeps_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-server-key-must-not-be-used")
    session = _session()
    with pytest.raises(OptionError) as info:  # the user can fix it: an inline message, not a red error
        app.generate_core(session, app.GEN_OPENAI, "  ", "", "gpt-image-1", "", "1024x1024", 1, "portrait", 0)
    assert info.value.message == app.MSG_NO_API_KEY_TYPED
    out = app.VQAApp(use_store=False).generate_handler(session, app.GEN_OPENAI, "", "", "gpt-image-1", "",
                                                       "1024x1024", 1, "portrait", 0)
    assert out[0] is session and out[1] == "⚠️ " + app.escape(app.MSG_NO_API_KEY_TYPED)
    with pytest.raises(OptionError) as info:
        app.generate_core(session, app.GEN_COMPATIBLE, "", "", "m", "", "512x512", 1, "portrait", 0)
    assert info.value.message == app.MSG_NO_BASE_URL
    with pytest.raises(MethodError) as info:
        app.generate_core(session, app.GEN_LOCAL, "", "", "", "", "512x512", 0, "portrait", 0)
    assert info.value.message == app.MSG_BAD_INT.format(name="Images per term", low=1,
                                                        high=app.MAX_PER_TERM_GENERATE, value=0)


# --------------------------------------------------------------------------- run and results
def _colour_uploads(session: dict, tmp_path: Path, per_term: int = 3) -> dict:
    rng = np.random.default_rng(SEED)
    for term, base in (("man", (220, 30, 30)), ("woman", (30, 60, 220))):
        files = []
        for k in range(per_term):
            arr = np.clip(np.array(base) + rng.normal(0, 25, size=(32, 32, 3)), 0, 255).astype(np.uint8)
            files.append(_save(Image.fromarray(arr, "RGB"), tmp_path / f"{term}{k}.png"))
        session, _ = app.add_uploads(session, files, term)
    return session


def _naive_clip(model_dir: Path, paths: list[Path], prompts: list[str]) -> np.ndarray:
    """P(prompt | image) by the textbook zero-shot recipe, one image at a time."""
    import torch
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(model_dir).eval()
    proc = CLIPProcessor.from_pretrained(model_dir)
    out = []
    with torch.no_grad():
        text = proc.tokenizer(prompts, return_tensors="pt", padding=True)
        t = model.get_text_features(**text)
        t = getattr(t, "pooler_output", t)
        t = t / t.norm(dim=-1, keepdim=True)
        for p in paths:
            with Image.open(p) as im:
                pix = proc.image_processor(images=[im.convert("RGB")], return_tensors="pt")["pixel_values"]
            v = model.get_image_features(pixel_values=pix)
            v = getattr(v, "pooler_output", v)
            v = v / v.norm(dim=-1, keepdim=True)
            logits = (model.logit_scale.exp() * v @ t.T)[0].double().numpy()
            e = np.exp(logits - logits.max())
            out.append(e / e.sum())
    return np.array(out)


@pytest.fixture(scope="module")
def ran(tiny_clip, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vqa-run")
    session = _colour_uploads(_session(), tmp)
    new = app.run_core(session, str(tiny_clip), ["a photo of a {term}"], "", "sum-prob", "", SEED, 4, 500)
    yield new
    app.discard_session(new)


def test_run_matches_a_naive_zero_shot_computation_and_the_csv(ran, tiny_clip):
    result = ran["result"]
    paths = [Path(ran["dir"]) / i.path for i in ran["images"]]
    naive = _naive_clip(tiny_clip, paths, ["a photo of a doctor", "a photo of a nurse"])
    by_sha = {i.sha256: p for i, p in zip(ran["images"], naive, strict=True)}
    groups = {i.sha256: (1 if i.image_term == "man" else 2) for i in ran["images"]}
    names = {i.sha256: i.provenance["original_name"] for i in ran["images"]}
    csv_path, json_path = rep.write_exports(result)
    with open(csv_path, newline="", encoding="utf-8-sig") as fh:
        everything = list(csv.DictReader(fh))
    rows = [r for r in everything if r["row_type"] == "image"]  # after the summary rows
    assert everything[0]["row_type"] == "summary" and everything[-len(rows):] == rows
    assert len(rows) == len(ran["images"]) == 6 and len(set(names.values())) == 6
    saved = {i["sha256"]: i for i in json.loads(Path(json_path).read_text())["images"]}
    for row in rows:
        p = by_sha[row["sha256"]]
        # the JSON keeps every digit: the naive computation's; the CSV writes them to 4 significant digits
        assert saved[row["sha256"]]["p_t1"] == pytest.approx(p[0], abs=1e-5)
        assert saved[row["sha256"]]["p_t2"] == pytest.approx(p[1], abs=1e-5)
        assert float(row["p_t1"]) == round_cell("p_t1", saved[row["sha256"]]["p_t1"])
        assert float(row["p_t2"]) == round_cell("p_t2", saved[row["sha256"]]["p_t2"])
        assert row["path"] == f"images/{row['sha256']}.png"
        # the user's own file name is kept beside the content hash (issue 28 item 7)
        assert row["file_name"] == names[row["sha256"]] and row["file_name"].endswith(".png")
        assert row["verdict"] == ("T1" if p[0] > p[1] else "T2")
        assert row["image_term"] == ("man" if groups[row["sha256"]] == 1 else "woman")
    stereo = [by_sha[s][0] if g == 1 else by_sha[s][1] for s, g in groups.items()]
    assert result.soft.score == pytest.approx(100 * np.mean(stereo), abs=1e-4)
    data = json.loads(Path(json_path).read_text())
    assert data["seed"] == SEED and data["prompt_templates"] == ["a photo of a {term}"]
    assert {i["path"] for i in data["images"]} == {r["path"] for r in rows}
    assert "base64" not in Path(json_path).read_text() and "base64" not in Path(csv_path).read_text()
    assert ran["settings"]["model_id"] == str(tiny_clip)


def test_results_view_grid_hover_and_thumbnails(ran):
    (reading, summary, bars, grid, table, pick, picked, picked_md, csv_u, json_u) = app.results_view(ran)
    # issue 28 item 4: the reading opens with the verdict; the headline number and diagnostics are the details
    assert reading.startswith("Verdict: ") and "bias score of" in reading.split("\n")[0]
    result = ran["result"]
    first = result.images[0]
    lean = "doctor (the stereotype of man)" if first.verdict == "T1" else \
        "nurse (the stereotype of woman, not of man)"
    assert pick["choices"][0] == (f"#1 · man · leans to {lean}", 0)
    assert f"- **P(nurse):** {first.p_t2:.3f}" in picked_md and f"- **leans to:** {lean}" in picked_md
    assert json_u["visible"]
    assert f"**{result.soft.score:.1f}%**" in summary
    low, high = result.headline_interval()  # pictures independent within their image terms (issue 28)
    assert f"{low:.1f}–{high:.1f}%" in summary
    trace = grid.data[0]
    assert len(trace.customdata) == 6
    assert grid.layout.meta["fields"] == ["image term", "P(doctor)", "P(nurse)", "leans to",
                                          "most probable single term", "image"]
    for img, cd in zip(result.images, trace.customdata, strict=True):
        assert cd[0] == img.image_term and cd[1] == f"{img.p_t1:.3f}" and cd[2] == f"{img.p_t2:.3f}"
        assert cd[-2] == img.image_id and cd[-1].startswith("data:image/jpeg;base64,")
        assert cd[3].startswith("doctor (" if img.verdict == "T1" else "nurse (") and cd[4] == img.answer
        assert [v for _, v in rep.image_facts(result, img)] == [html.unescape(c) for c in cd[:6]]
    assert trace.hovertemplate.startswith("<b>image term</b>: %{customdata[0]}<br><b>P(doctor)</b>")
    assert list(bars.data[0].y) == ["All images", "images of 'man'", "images of 'woman'",
                                    "target 'doctor' (stereotype of man)", "target 'nurse' (stereotype of woman)"]
    assert list(bars.data[0].x) == pytest.approx([result.soft.score, *(t.soft.score for t in result.per_image_term),
                                                  *(t.soft.score for t in result.per_target_term)])
    assert list(table.columns) == ["#", "image term", "P(doctor)", "P(nurse)", "leans to", "most probable single term",
                                   "source", "file", "generator", "image prompt", "image id"]
    assert list(table["file"]) == [i.file_name for i in result.images] and table["file"].iloc[0] == "man0.png"
    assert "path" not in table.columns and "sha256" not in table.columns  # those are in the CSV
    assert list(table["image id"]) == [i.image_id for i in result.images]
    assert picked == str(Path(ran["dir"]) / result.images[0].path)
    assert csv_u["visible"] and Path(csv_u["value"]).is_file()
    path, md = app.image_detail(ran, 3)
    assert path == str(Path(ran["dir"]) / result.images[3].path) and f"{result.images[3].p_t1:.3f}" in md


def test_zero_images_for_a_term_and_a_model_that_is_not_a_vlm(tiny_clip, tmp_path):
    from tests.vlm_helpers import save_tiny_bert

    def inline(session, *settings) -> str:
        """Mistakes the user can fix stay in step 2: the session unchanged, the message inline, nothing else."""
        out = app.run_handler(session, *settings)
        assert out[0] is session and all(isinstance(v, type(gr.skip())) for v in out[2:])
        assert out[1].startswith("⚠️ ")
        return html.unescape(out[1].removeprefix("⚠️ "))

    session = _session(CUSTOM, "man, father", "woman", "doctor", "nurse")
    session = _colour_uploads(session, tmp_path, per_term=1)
    got = inline(session, str(tiny_clip), ["a photo of a {term}"], "", "sum-prob", "", 0, 4, 200)
    assert got == MSG_NO_IMAGES_FOR_TERM.format(terms="'father'", group="Social group 1")
    bert = save_tiny_bert(tmp_path / "bert")
    session = _colour_uploads(_session(), tmp_path, per_term=1)
    got = inline(session, str(bert), ["a photo of a {term}"], "", "sum-prob", "", 0, 4, 200)
    assert got == MSG_NOT_A_VLM.format(model_id=str(bert), architecture="BertForMaskedLM")
    got = inline(session, " ", ["a photo of a {term}"], "", "sum-prob", "", 0, 4, 200)
    assert got == app.MSG_NO_MODEL.format(example=app.MODEL_SUGGESTIONS[0])
    assert inline(session, str(tiny_clip), [], "", "sum-prob", "", 0, 4, 200) == app.MSG_NO_TEMPLATE
    app.discard_session(session)


# --------------------------------------------------------------------------- shared store
def test_uploads_reach_the_shared_store_only_when_saved(tmp_path):
    from biastest.store import DatasetStore, retrieve_images

    store = DatasetStore(tmp_path / "store")
    handlers = app.VQAApp(store)
    alice = _session()
    alice, _ = app.add_uploads(alice, [_save(_rgb((120, 0, 0)), tmp_path / "a1.png"),
                                       _save(_rgb((121, 0, 0)), tmp_path / "a2.png")], "woman")
    assert retrieve_images(store, ["woman"]).per_term == {"woman": 0}  # private until saved
    bob = _session()
    with pytest.raises(DataError) as info:
        app.retrieve_from_store(bob, store, 5)
    assert info.value.message == app.MSG_STORE_EMPTY_FOR_SPEC
    out = handlers.save_handler(alice)
    alice = out[0]
    assert out[1] == app.escape(app.MSG_SAVED.format(count=2))
    assert list(out[2]["in the shared store"]) == [0, 2]  # coverage table: man 0, woman 2
    out = handlers.save_handler(alice)  # inline, not a red error
    assert out[0] is alice and out[1] == "⚠️ " + app.escape(app.MSG_NOTHING_TO_SAVE)
    stored = retrieve_images(store, ["woman"]).images
    assert {i.sha256 for i in stored} == {i.sha256 for i in alice["images"]}
    assert {i.source for i in stored} == {"upload"}
    bob, md = app.retrieve_from_store(bob, store, 1)  # at most one per term
    assert md == app.escape(app.MSG_RETRIEVED.format(added=1, already=0))
    assert [(i.image_term, i.source) for i in bob["images"]] == [("woman", "store")]
    assert bob["images"][0].provenance["store_id"] in {i.id for i in stored}
    assert bob["dir"] != alice["dir"]
    bob, md = app.retrieve_from_store(bob, store, 5)
    assert md == app.escape(app.MSG_RETRIEVED.format(added=1, already=1))
    with pytest.raises(DataError) as info:  # pictures taken from the store are not saved back
        app.save_to_store(bob, store)
    assert info.value.message == app.MSG_NOTHING_TO_SAVE
    for s in (alice, bob):
        app.discard_session(s)


# --------------------------------------------------------------------------- question recorded; HTML stays text
def test_a_vqa_model_gets_the_chosen_question_and_it_is_recorded(tmp_path):
    from tests.vlm_helpers import save_tiny_vilt

    vilt = save_tiny_vilt(tmp_path / "vilt", ["doctor", "nurse", "yes", "no"], seed=SEED)
    session = _colour_uploads(_session(), tmp_path, per_term=1)
    question = "What is this person's job?"
    new = app.run_core(session, str(vilt), ["a photo of a {term}"], "", "sum-prob", question, 0, 2, 200)
    result = new["result"]
    assert result.model_kind == "vqa-classifier" and result.question == question
    assert result.prompts == (question,) and result.prompt_templates == ()
    for img in result.images:
        assert img.p_t1 + img.p_t2 == pytest.approx(1.0)
    summary = rep.summary_markdown(result)
    assert f"the answer probabilities to the question “{question}”".replace("'", "&#x27;") in summary
    rows = {r["label"]: r for r in rep.term_rows(result)}  # one image per term: no zero-width interval
    assert rows["images of 'man'"]["n"] == 1 and rows["images of 'man'"]["ci_low"] is None
    # uploads are independent pictures within their image terms by default (issue 28); one picture per term
    # leaves each term a lonely stratum, pooled: the pictures are simply independent
    assert result.clusters == "image" and result.soft_clustered.n_strata == 1
    assert rows["All images"]["ci_low"] == result.soft.ci_low
    by_term = {r["label"]: r for r in rep.term_rows(result.with_clusters("image-term"))}  # the former default
    assert by_term["All images"]["ci_low"] is None
    assert by_term["All images"]["note"] == result.with_clusters("image-term").soft_clustered.reason
    _, json_path = rep.write_exports(result)
    assert json.loads(Path(json_path).read_text())["question"] == question
    app.discard_session(new)


def test_html_in_terms_is_shown_as_text_everywhere(tiny_clip, tmp_path):
    terms = (CUSTOM, "<i>man</i>", "wo&man", "doc<script>", "nurse")
    session = _session(*terms)
    session, _ = app.add_uploads(session, [_save(_rgb((200, 10, 10)), tmp_path / "<b>x.png")], "<i>man</i>")
    session, _ = app.add_uploads(session, [_save(_rgb((10, 10, 200)), tmp_path / "y.png")], "wo&man")
    _, md = app.coverage_view(session)
    assert "<i>" not in md
    new = app.run_core(session, str(tiny_clip), ["a photo of a {term}"], "", "sum-prob", "", 0, 2, 200)
    reading, summary, bars, grid, *_ = app.results_view(new)
    assert "<script>" not in summary + reading and "doc&lt;script&gt;" in summary
    trace = grid.data[0]
    assert {cd[0] for cd in trace.customdata} == {"&lt;i&gt;man&lt;/i&gt;", "wo&amp;man"}
    assert "<script>" not in trace.hovertemplate and "P(doc&lt;script&gt;)" in trace.hovertemplate
    assert all("<i>" not in y and "<script>" not in y for y in bars.data[0].y)
    _, details = app.image_detail(new, 0)
    assert "<i>" not in details and "&lt;i&gt;man&lt;/i&gt;" in details
    app.discard_session(new)


# --------------------------------------------------------------------------- the names and the bars' words
def _planted(group1: str, group2: str, stereotype1: str, antistereotype1: str, n_each: int = 3, **names):
    """A result on planted probabilities: every image leans to its stereotype but two lean slightly away."""
    from biastest.records import TestImage
    from biastest.spec import BiasSpec

    spec = BiasSpec.from_terms(group1=group1, group2=group2, stereotype1=stereotype1,
                               antistereotype1=antistereotype1, **names)
    terms = [spec.group1[0], spec.group2[0]] * n_each
    images = [TestImage(path=f"images/{i:03d}.png", sha256=f"{i:064x}", image_term=t) for i, t in enumerate(terms)]
    p_st = np.array([0.62, 0.58] * (n_each - 1) + [0.49, 0.49])
    k1, k2 = len(spec.attributes1), len(spec.attributes2)
    probs = np.array([[p / k1] * k1 + [(1 - p) / k2] * k2 if i % 2 == 0 else [(1 - p) / k1] * k1 + [p / k2] * k2
                      for i, p in enumerate(p_st)])
    verdicts = ["T1" if row[:k1].sum() > 0.5 else "T2" for row in probs]
    answers = [spec.attribute_terms[int(np.argmax(row))] for row in probs]
    return summarize(images=images, spec=spec, term_probabilities=probs, answers=answers, verdicts=verdicts,
                     method="clip-zero-shot", model_id="m", model_kind="clip", seed=0, n_resamples=2000,
                     clusters="image")  # images independent: the bars' bootstrap over images and sign test


def test_lists_are_named_once_from_the_users_terms():
    result = _planted("man, father", "woman", "doctor, engineer, surgeon, pilot", "nurse")
    lab = rep.labels(result)
    assert (lab.group1, lab.group2, lab.target1, lab.target2) == (
        "man / father", "woman", "doctor / engineer / surgeon +1 more", "nurse")
    named = rep.labels(_planted("man", "woman", "math, algebra", "poetry, dance", stereotype1_name="Math",
                                antistereotype1_name="Arts"))
    assert (named.target1, named.target2) == ("Math", "Arts")  # a list the user named keeps its name
    alike = rep.labels(_planted("man", "woman", "math", "poetry, dance", antistereotype1_name="math"))
    assert (alike.target1, alike.target2) == ("math (list 1)", "math (list 2)")  # never two lists alike
    for img in result.images:  # the hover label, the detail lines and the table say the same side
        facts = dict(rep.image_facts(result, img))
        side = lab.target1 if img.verdict == "T1" else lab.target2
        assert facts["leans to"].startswith(side + " (the stereotype of ")
        assert rep.image_table(result).loc[img.index, "leans to"] == facts["leans to"]
    placeholders = ("Social group", "Stereotype for group", "Anti-stereotype", "T1", "T2")
    text = rep.summary_markdown(result) + " ".join(r["label"] for r in rep.term_rows(result))
    assert not [w for w in placeholders if re.search(rf"\b{w}\b", text)]


def test_a_bar_whose_interval_and_test_disagree_says_why():
    today = _planted("man", "woman", "doctor", "nurse")
    # 6 pictures, 3 per image term: the design-based interval (within terms, widened for 4 degrees of freedom)
    # includes 50 %, as the sign test does — no disagreement to explain
    assert today.cluster_aware and today.soft_clustered.low <= 50 and not rep.term_rows(today)[0]["note"]
    # a result saved before clusters existed shows the bootstrap over images, which leaves 50 % out: it says why
    result = today.model_copy(update={"soft_clustered": None, "hard_clustered": None})
    assert result.soft.ci_low > 50 and result.soft.p_value > 0.05  # the interval leaves out 50%, p does not
    rows = rep.term_rows(result)
    want = rep.MSG_BAR_UNCONFIRMED.format(p=f"{result.soft.p_value:.3g}", n_st=4, n_anti=2, n=6)
    assert rows[0]["label"] == "All images" and rows[0]["note"] == want
    bar = figs.term_bars(result).data[0]
    k = len(bar.customdata[0]) - 1  # the note is the last column, after score_bars' own (hover lines last)
    assert f"%{{customdata[{k}]}}" in bar.hovertemplate and "%{customdata[5]}" in bar.hovertemplate
    assert bar.customdata[0][k].replace("<br>", " ").removeprefix(" <i>").removesuffix("</i>") == want
    assert "interval: bootstrap over images" in bar.customdata[0][5]
    many = _planted("man", "woman", "doctor", "nurse", n_each=20)
    assert many.soft.p_value < 0.05 and rep.term_rows(many)[0]["note"] == ""  # agreeing: no note


# --------------------------------------------------------------------------- the shared dataset, live in step 2
HUB_REPO = "stub-user/vqa-pictures"
HUB_TOKEN = "hf_stub_vqa_token_0123456789"




def _generate(handlers, session, stub, per_term=2, seed=7):
    return handlers.generate_handler(session, app.GEN_COMPATIBLE, "", stub.base_url, "tiny-image-model", "",
                                     "64x64", per_term, "portrait", seed)


def test_panel_without_a_dataset_says_sync_is_off_and_generated_pictures_stay_local(tmp_path):
    from biastest.store import retrieve_images
    from biastest.store import shared as S
    from biastest.store.importers import PUBLIC_BIASTESTGPT_REPO
    from tests.openai_stub import OpenAIStub

    ds = _dataset(tmp_path / "store").start()  # no dataset, and no connection (the suite runs offline)
    assert ds.mode == S.MODE_PUBLIC and ds.wait_pulled(20)
    handlers = app.VQAApp(dataset=ds)
    session = _session()
    panel = handlers.panel(session)
    assert panel.startswith(app.escape(S.MSG_SUMMARY_PUBLIC.format(
        repo=PUBLIC_BIASTESTGPT_REPO, pulled=S.MSG_NEVER_PULLED.format(ago="just now"))))  # tried, never reached
    assert "BIASTEST_HF_DATASET" in panel and "HF_TOKEN" in panel  # how to turn sharing on
    assert app.escape(S.MSG_UNREACHABLE.format(problem="offline")) in panel  # said plainly
    assert panel.endswith(app.escape(app.MSG_PANEL_NONE_SAVED))
    with OpenAIStub() as stub:
        out = _generate(handlers, session, stub)
    session = out[0]
    generated = [i for i in session["images"] if i.source == "generated"]
    assert len(generated) == 4
    assert out[1].endswith(app.escape(app.MSG_GENERATED_SAVED.format(count=4)))
    stored = retrieve_images(ds.store, ["man", "woman"]).images  # saved as soon as made, with their prompts
    assert {i.sha256 for i in stored} == {i.sha256 for i in generated}
    assert {i.prompt for i in stored} == {i.prompt for i in generated} and all(i.prompt for i in stored)
    assert {i.source for i in stored} == {"generated"}
    panel = handlers.panel_handler(session)
    assert app.escape(app.MSG_PANEL_SAVED_HEAD.format(n=4, counts=f"4 {S.ITEM_LOCAL}")) in panel
    assert panel.count(f": {S.ITEM_LOCAL}") == 4
    ds.stop()
    app.discard_session(session)


def test_panel_with_a_read_only_dataset_pushes_nothing(tmp_path, hub):
    from biastest.store import shared as S
    from tests.openai_stub import OpenAIStub

    ds = _dataset(tmp_path / "store", hub, repo_id=HUB_REPO).start()
    assert ds.mode == S.MODE_READ and ds.wait_pulled(20)
    handlers = app.VQAApp(dataset=ds)
    session = _session()
    assert handlers.panel(session).startswith(app.escape(S.MSG_SUMMARY_READ.format(repo=HUB_REPO,
                                                                                   pulled="pulled just now")))
    with OpenAIStub() as stub:
        session = _generate(handlers, session, stub, per_term=1)[0]
    import time

    time.sleep(0.5)
    assert not [r for r in hub.requests if "/commit/" in r[1]]  # nothing is pushed without a token
    panel = handlers.panel(session)
    assert "read-only" in panel and "set HF_TOKEN" in panel
    assert panel.count(f": {S.ITEM_LOCAL}") == 2
    ds.stop()
    app.discard_session(session)


def test_generated_pictures_reach_the_hub_and_another_server_finds_exactly_them(tmp_path, hub):
    from collections import Counter

    from biastest.store import shared as S
    from tests.openai_stub import OpenAIStub

    a = _dataset(tmp_path / "a", hub, repo_id=HUB_REPO, token=HUB_TOKEN).start()
    assert a.mode == S.MODE_SYNC and a.wait_pulled(20)
    handlers = app.VQAApp(dataset=a)
    alice = _session()
    shared_on = S.MSG_SUMMARY_SYNC.format(repo=HUB_REPO, pulled="pulled just now", pending=0, pushed=0)
    assert handlers.panel(alice).startswith(app.escape(shared_on.split(" (")[0]))  # counts move as the pusher works
    alice, _ = app.add_uploads(alice, [_save(_rgb((90, 1, 1)), tmp_path / "mine.png")], "man")
    with OpenAIStub() as stub:
        out = _generate(handlers, alice, stub)
    alice = out[0]
    generated = [i for i in alice["images"] if i.source == "generated"]
    assert len(generated) == 3  # man had an upload already
    assert out[1].endswith(app.escape(app.MSG_GENERATED_SAVED.format(count=3)))
    _wait(lambda: handlers.panel(alice).count(f": {S.ITEM_PUSHED} in commit ") == 3, what="the pushes")
    panel = handlers.panel(alice)
    states = a.item_state([f for item in alice["shared"] for f in item["files"]])
    commits = {c for _, c in states.values()}
    assert all(len(c) == 40 for c in commits)
    for c in commits:
        assert app.escape(app.MSG_PANEL_COMMIT.format(commit=c[:10])) in panel
    repo = hub.repo(HUB_REPO)
    assert {f"images/{i.sha256}.png" for i in generated} <= set(repo.files)
    rows = hub.parquet_rows(HUB_REPO, "images")
    assert sorted(r["sha256"] for r in rows) == sorted(i.sha256 for i in generated)  # the upload stays private
    for r in rows:
        assert r["source"] == "generated" and "tiny-image-model" in r["model"] and r["prompt"]
    # the upload is shared only when its user saves it
    out = handlers.save_handler(alice)
    alice = out[0]
    assert out[1] == app.escape(app.MSG_SAVED.format(count=1))
    _wait(lambda: len(hub.parquet_rows(HUB_REPO, "images")) == 4, what="the saved upload")
    a.stop()

    b = _dataset(tmp_path / "b", hub, repo_id=HUB_REPO, token=HUB_TOKEN).start()  # server B: empty, started later
    assert b.wait_pulled(30) and b.pulls.ok
    b.clock.t += 120
    bob = _session()
    out = app.VQAApp(dataset=b).retrieve_handler(bob, 10)
    bob = out[0]
    line = S.MSG_FOUND_LINE.format(n=4, what="pictures", parts=S.MSG_FROM_DATASET.format(
        n=4, repo=HUB_REPO, pulled="pulled 2 min ago"))
    assert out[1].startswith(app.escape(line))
    assert Counter(i.sha256 for i in bob["images"]) == Counter(i.sha256 for i in alice["images"])  # each once
    mine = {i.sha256: i for i in alice["images"]}
    for img in bob["images"]:
        assert img.source == "store"
        assert (img.prompt, img.model, img.seed, img.image_term) == (
            mine[img.sha256].prompt, mine[img.sha256].model, mine[img.sha256].seed, mine[img.sha256].image_term)
        assert img.provenance["store_source"] == mine[img.sha256].source
    b.stop()
    for s in (alice, bob):
        app.discard_session(s)


def test_refresh_from_the_dataset_returns_at_once_and_a_later_retrieve_sees_new_pictures(tmp_path, hub):
    import time

    from biastest.store import shared as S

    writer = _dataset(tmp_path / "w", hub, repo_id=HUB_REPO, token=HUB_TOKEN)
    reader = _dataset(tmp_path / "r", hub, repo_id=HUB_REPO, pull_interval_s=3600).start()
    assert reader.wait_pulled(20)
    handlers = app.VQAApp(dataset=reader)
    session = _session()
    out = handlers.retrieve_handler(session, 5)
    assert out[1] == "⚠️ " + app.escape(app.MSG_STORE_EMPTY_FOR_SPEC)
    from tests.openai_stub import png_bytes

    writer.store.add_images([(png_bytes(color=(1, 2, 3)), {"image_term": "woman", "source": "generated",
                                                           "prompt": "a photo of a woman"})])
    assert writer.sync.push_now().ok
    n = len(reader.pulls.history)
    hub.delay_s = 0.5  # a slow hub
    t0 = time.monotonic()
    panel = handlers.refresh_handler(session)
    assert time.monotonic() - t0 < 0.25  # the button returns while the pull runs in the background
    assert panel.startswith(app.escape(S.MSG_SUMMARY_READ.format(repo=HUB_REPO, pulled="pulled just now")))
    assert reader.wait_pulled(30) and len(reader.pulls.history) == n + 1
    hub.delay_s = 0
    out = handlers.retrieve_handler(session, 5)
    assert [(i.image_term, i.prompt) for i in out[0]["images"]] == [("woman", "a photo of a woman")]
    assert out[1].startswith(app.escape(S.MSG_FOUND_LINE.format(n=1, what="pictures", parts=S.MSG_FROM_DATASET.format(
        n=1, repo=HUB_REPO, pulled="pulled just now"))))
    reader.stop()
    app.discard_session(out[0])


# --------------------------------------------------------------------------- issue 28 item 6: errors that stay
def test_each_failure_stays_next_to_its_button_and_the_next_action_replaces_it(ran, tmp_path, monkeypatch):
    """A /vqa run that failed showed a red "Error" over an old warning: every step-2 and run handler now answers a
    failure it did not expect in its own message box (what failed, inputs kept, never the exception's text), the
    other outputs untouched; the next action's message replaces it."""
    from biastest.ui.common import MSG_UNEXPECTED_REASON, failure_message
    from biastest.ui.vqa import images as vimages
    from biastest.ui.vqa import results as vresults

    secret = "RuntimeError: /srv/private/path"
    ui = app.VQAApp(use_store=False)
    session = _session()
    good = _save(_rgb((9, 90, 9)), tmp_path / "good.png")
    settings = ("", ["a photo of a {term}"], "", "sum-prob", None, SEED, 4, 200)
    cases = [  # module, the name the handler calls, the handler's call, its action, its number of outputs
        (vimages, "confirm_spec", lambda: ui.confirm_handler(app.new_session(), *SPEC_TERMS), vimages.ACTION_CONFIRM,
         9),
        (vimages, "add_uploads", lambda: ui.upload_handler(session, [str(good)], "man"), vimages.ACTION_UPLOAD, 6),
        (vimages, "remove_image", lambda: ui.remove_handler(session), vimages.ACTION_REMOVE, 5),
        (vimages, "save_to_store", lambda: ui.save_handler(session), vimages.ACTION_SAVE, 5),
        (vresults, "run_inputs", lambda: app.run_handler(session, *settings), vresults.ACTION_RUN,
         vresults.RUN_OUTPUTS),
    ]

    def boom(*args, **kwargs):
        raise RuntimeError(secret)

    for module, name, call, action, n in cases:
        with monkeypatch.context() as m:
            m.setattr(module, name, boom)
            with pytest.warns(UserWarning):  # the toast repeats it; the box keeps it
                out = call()
        assert len(out) == n and out[1] == failure_message(action, RuntimeError()), (name, out[1])
        assert out[1].startswith("⛔ ") and MSG_UNEXPECTED_REASON[:40] in out[1] and secret not in out[1]
        assert all(isinstance(v, type(gr.skip())) for i, v in enumerate(out) if i != 1), name
        if name == "run_inputs":  # the run itself is the module fixture's, already made
            monkeypatch.setattr(vresults, "run_inputs", lambda *a, **k: ran)
        with warnings.catch_warnings():  # a mistake's own toast (nothing selected, no store) is its answer here
            warnings.simplefilter("ignore")
            again = call()
        assert len(again) == n and isinstance(again[1], str) and not again[1].startswith("⛔"), (name, again[1])
    # the run that succeeded after the failure cleared the message and opened with the verdict
    assert again[1] == "" and again[4].startswith("Verdict: ")

