"""The vision-language app: does a CLIP, ViLT, BLIP or GIT model tie pictures of groups to stereotypes?

Three gated tabs (specification → images and model → results). All per-user
data lives in one ``gr.State`` dictionary (the *session*). A session's images
— uploaded, generated or copied from the shared store — live in the
session's own temporary folder (created on its first image, removed when the
session ends or the user starts a new test), so two users never see each
other's pictures; they reach the shared store only when the user asks.
Every image is validated and normalised to RGB PNG (corrupt, non-image,
oversized, grayscale, transparent and CMYK files are handled with a message)
and written atomically, so nothing is ever half-written. Each handler is
wrapped with :func:`~biastest.ui.common.user_errors`; an API key typed by the
user is passed to the generator for that one request and never kept in the
session, a file or a log. The report layer (:mod:`biastest.report.vqa`)
turns the typed result into text, tables and figures; this module only wires
components.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import gradio as gr

from biastest import public, workdir
from biastest.errors import DataError, GenerationError, MethodError, SpecError, StoreError
from biastest.generate.prompts import IMAGE_PROMPTS
from biastest.metrics.vlm_score import (
    COMBINE_CHOICES,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_QUESTION,
    PROMPT_TEMPLATES,
    QUESTIONS,
)
from biastest.models.images import normalise_image_bytes
from biastest.records import TestImage
from biastest.report import vqa as rep
from biastest.runner.services import GENERATION_MAX_SECONDS, IMAGE_REQUEST_TIMEOUT, generation_limits
from biastest.spec import BiasSpec
from biastest.ui.common import (
    current_session_id,
    end_session_files_on_unload,
    escape,
    gated_tabs_reset,
    gradio_cache_policy,
    option_value,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)
from biastest.ui.spec_step import (
    CUSTOM,
    build_spec_inputs,
    fill_from_library,
    spec_from_inputs,
    spec_summary,
    wire_validation,
)
from biastest.ui.stop import StopControl, time_limit_hint

log = logging.getLogger("biastest.ui.vqa")

__all__ = [
    "GEN_COMPATIBLE",
    "GEN_LOCAL",
    "GEN_OPENAI",
    "MAX_SESSION_IMAGES",
    "MODEL_SUGGESTIONS",
    "VQAApp",
    "add_generated",
    "add_image",
    "add_uploads",
    "build_demo",
    "confirm_spec",
    "discard_session",
    "gallery_items",
    "generate_core",
    "image_counts",
    "new_session",
    "remove_image",
    "results_view",
    "retrieve_from_store",
    "run_core",
    "save_to_store",
    "session_root",
]

MODEL_SUGGESTIONS = (
    "openai/clip-vit-base-patch32",
    "dandelin/vilt-b32-finetuned-vqa",
    "Salesforce/blip-vqa-base",
    "microsoft/git-base-vqav2",
)
GEN_OPENAI = "openai"
GEN_COMPATIBLE = "compatible"
GEN_LOCAL = "local"
GEN_CHOICES = (
    ("OpenAI images (your own API key, used for this request only)", GEN_OPENAI),
    ("An OpenAI-compatible image service (its web address)", GEN_COMPATIBLE),
    ("A local diffusers model (Hub id or folder)", GEN_LOCAL),
)
IMAGE_SIZES = ("256x256", "512x512", "768x768", "1024x1024")
DEFAULT_OPENAI_IMAGE_MODEL = "gpt-image-1"
MAX_SESSION_IMAGES = 1000
MAX_PER_TERM_GENERATE = 50
SESSION_PREFIX = "biastest-vqa-session-"

MSG_SPEC_FIRST = "Complete step 1 first: check the specification and press “Continue to the images”."
MSG_NO_FILES = "Choose one or more picture files to upload first."
MSG_CHOOSE_TERM = "Choose the image term these pictures show (for example 'woman') before adding them."
MSG_TERM_NOT_IN_SPEC = (
    "'{term}' is not an image term of this specification. Choose one of: {terms}."
)
MSG_UPLOAD_ADDED = "Added {added} image(s) for '{term}'."
MSG_UPLOAD_PROBLEMS = "{count} file(s) were not added:"
MSG_NONE_ADDED = "None of the {count} file(s) could be added. {problems}"
MSG_DUPLICATE = "'{name}' is already among the test images (for '{term}'), so it was not added again."
MSG_TOO_MANY_IMAGES = (
    "A test can hold at most {limit} images; {count} are here already. Remove some before adding more."
)
MSG_NOTHING_SELECTED = "Click an image in the gallery first, then press “Remove the selected image”."
MSG_REMOVED = "Removed the image of '{term}' ({name})."
MSG_NO_IMAGES_YET = "No images yet: retrieve, generate or upload pictures for every image term."
MSG_NO_MODEL = "Type or choose the model to test (a Hugging Face Hub id such as {example}, or a local folder)."
MSG_NO_TEMPLATE = "Choose at least one prompt template, or type your own with {{term}}."
MSG_NO_API_KEY_TYPED = (
    "Type your OpenAI API key to generate images with OpenAI. It is used for this request only and never stored."
)
MSG_NO_BASE_URL = "Type the web address of the image service, for example http://localhost:8000/v1."
MSG_NO_GENERATOR_MODEL = "Type the name of the image model to use (for example {example})."
MSG_BAD_SIZE = "Choose an image size such as 512x512, got {value!r}."
MSG_BAD_INT = "{name} must be a whole number between {low} and {high}; got {value!r}."
MSG_GENERATED = "{report}"
MSG_GENERATED_UNUSABLE = "{count} generated picture(s) could not be used ({added} were added):"
MSG_DROPPED_IMAGES = (
    "{count} image(s) made for terms that are not in the new specification were set aside: {terms}."
)
MSG_RUN_FIRST = "Run the test in step 2 first."
MSG_RETRIEVED = "Took {added} picture(s) from the shared store ({already} were already among the test images)."
MSG_STORE_EMPTY_FOR_SPEC = (
    "The shared store has no pictures for these image terms yet. Generate or upload some instead."
)
MSG_NOTHING_TO_SAVE = "There are no new uploaded or generated pictures to save: all are already in the shared store."
MSG_SAVED = (
    "Saved {count} picture(s) to the shared store. Everyone who uses this store can now retrieve them for their "
    "tests."
)


# --------------------------------------------------------------------------- session and its images
def new_session() -> dict[str, Any]:
    """A fresh per-user session (what ``gr.State`` holds); no folder until the first image."""
    return {"spec": None, "dir": None, "images": [], "saved": [], "selected": None, "result": None,
            "settings": None}


def _copy(session: dict[str, Any] | None) -> dict[str, Any]:
    base = new_session()
    if session:
        base.update(session)
    base["images"] = list(base["images"])
    base["saved"] = list(base.get("saved") or [])
    return base


def session_root(session: dict[str, Any]) -> Path:
    """The session's private image folder (``<root>/images/<sha256>.png``), created on first use.

    It lies in the Gradio session's folder (:func:`biastest.workdir.session_dir`),
    which goes when the session ends; outside a Gradio event, in a folder of its own.
    Each use marks it as used (the age sweeper counts from the last change).
    """
    if not session.get("dir") or not Path(session["dir"]).is_dir():
        owner = current_session_id() or f"local-{uuid.uuid4().hex}"
        session["dir"] = tempfile.mkdtemp(prefix=SESSION_PREFIX, dir=workdir.session_dir(owner))
    root = Path(session["dir"])
    (root / "images").mkdir(exist_ok=True)
    try:
        os.utime(root)
    except OSError:
        pass
    return root


def discard_session(session: dict[str, Any] | None) -> None:
    """Delete the session's private folder (called when a session ends or a new test starts)."""
    folder = (session or {}).get("dir")
    if folder and Path(folder).name.startswith(SESSION_PREFIX):
        shutil.rmtree(folder, ignore_errors=True)


def image_counts(session: dict[str, Any]) -> dict[str, int]:
    """Images per image term in the session."""
    out: dict[str, int] = {}
    for img in session.get("images") or []:
        out[img.image_term] = out.get(img.image_term, 0) + 1
    return out


def _spec(session: dict[str, Any] | None) -> BiasSpec:
    spec = (session or {}).get("spec")
    if spec is None:
        raise DataError(MSG_SPEC_FIRST)
    return spec


def _canonical_term(spec: BiasSpec, term: str | None) -> str:
    if not term or not str(term).strip():
        raise DataError(MSG_CHOOSE_TERM)
    want = " ".join(str(term).split()).casefold()
    for t in spec.group_terms:
        if t.casefold() == want:
            return t
    raise DataError(MSG_TERM_NOT_IN_SPEC.format(term=term, terms=", ".join(spec.group_terms)))


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (never a half-written file)."""
    if path.is_file():
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".incoming-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_image(
    session: dict[str, Any],
    source: str | os.PathLike[str] | bytes,
    *,
    name: str,
    term: str,
    generator: str,
    source_kind: str,
    prompt: str = "",
    model: str = "",
    seed: int | None = None,
    provenance: dict[str, Any] | None = None,
) -> TestImage:
    """Validate, normalise (RGB PNG, no metadata) and add one image to the session (mutates ``session``).

    Raises
    ------
    DataError
        The file is not a usable image (:mod:`biastest.models.images` messages),
        is already in the session (:data:`MSG_DUPLICATE`), or the session is
        full (:data:`MSG_TOO_MANY_IMAGES`). Nothing is written then.
    """
    spec = _spec(session)
    term = _canonical_term(spec, term)
    if len(session["images"]) >= MAX_SESSION_IMAGES:
        raise DataError(MSG_TOO_MANY_IMAGES.format(limit=MAX_SESSION_IMAGES, count=len(session["images"])))
    png, width, height = normalise_image_bytes(source, name=name)
    digest = hashlib.sha256(png).hexdigest()
    for img in session["images"]:
        if img.sha256 == digest:
            raise DataError(MSG_DUPLICATE.format(name=name, term=img.image_term), duplicate=True)
    root = session_root(session)
    rel = f"images/{digest}.png"
    _write_atomic(root / rel, png)
    record = TestImage(
        path=rel, sha256=digest, image_term=term, prompt=prompt, generator=generator, model=model, width=width,
        height=height, seed=seed, source=source_kind, spec_name=spec.name,
        provenance={"original_name": name, **(provenance or {})},
    )
    session["images"].append(record)
    return record


def _file_path(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value) or None
    if isinstance(value, dict):
        value = value.get("path") or value.get("name")
        return str(value) if value else None
    return str(getattr(value, "path", None) or getattr(value, "name", "")) or None


def add_uploads(session: dict[str, Any], files: Any, term: str | None) -> tuple[dict[str, Any], str]:
    """Add uploaded files for one image term; returns the new session and a Markdown report.

    Good files are added, bad ones are listed with the reason (each file is
    all-or-nothing). When no file could be added a :class:`DataError` is
    raised (:data:`MSG_NONE_ADDED`).
    """
    new = _copy(session)
    spec = _spec(new)
    term = _canonical_term(spec, term)
    paths = [p for p in (_file_path(f) for f in (files if isinstance(files, (list, tuple)) else [files])) if p]
    if not paths:
        raise DataError(MSG_NO_FILES)
    public.check_upload(paths)  # at most 100 files of at most 50 MB in one upload
    added, problems = 0, []
    for p in paths:
        name = Path(p).name
        try:
            add_image(new, p, name=name, term=term, generator="upload", source_kind="upload")
            added += 1
        except DataError as exc:
            problems.append(exc.message)
    if not added:
        raise DataError(MSG_NONE_ADDED.format(count=len(paths), problems=" ".join(problems)), problems=problems)
    lines = [f"✅ {escape(MSG_UPLOAD_ADDED.format(added=added, term=term))}"]
    if problems:
        lines.append(f"<span class='bt-warn'>⚠ {escape(MSG_UPLOAD_PROBLEMS.format(count=len(problems)))}</span>")
        lines += [f"- {escape(m)}" for m in problems]
    return new, "\n".join(lines)


def remove_image(session: dict[str, Any], index: int | None) -> tuple[dict[str, Any], str]:
    """Remove the image at ``index`` (gallery order) from the session and its folder."""
    new = _copy(session)
    if index is None or not 0 <= int(index) < len(new["images"]):
        raise DataError(MSG_NOTHING_SELECTED)
    img = new["images"].pop(int(index))
    if new.get("dir") and not any(i.sha256 == img.sha256 for i in new["images"]):
        (Path(new["dir"]) / img.path).unlink(missing_ok=True)
    new["selected"] = None
    return new, MSG_REMOVED.format(term=img.image_term, name=img.provenance.get("original_name", img.path))


def gallery_items(session: dict[str, Any]) -> list[tuple[str, str]]:
    """(file path, caption) per session image, in session order."""
    root = session.get("dir")
    if not root:
        return []
    return [
        (str(Path(root) / img.path), f"{img.image_term} · {img.source}")
        for img in session.get("images") or []
    ]


def store_counts(store, spec: BiasSpec | None) -> dict[str, int] | None:
    """Pictures per image term in the shared store (None without a store)."""
    if store is None or spec is None:
        return None
    from biastest.store import retrieve_images

    return dict(retrieve_images(store, list(spec.group_terms)).per_term)


def coverage_view(session: dict[str, Any], store=None) -> tuple[list[dict[str, Any]], str]:
    """Rows and Markdown of images per image term (with a hint where few), and the store's counts."""
    spec = session.get("spec")
    if spec is None:
        return [], ""
    rows = rep.coverage_rows(spec.group1, spec.group2, image_counts(session),
                             group_names=(spec.group1_name, spec.group2_name),
                             store_counts=store_counts(store, spec))
    return rows, rep.coverage_markdown(rows) if session.get("images") else escape(MSG_NO_IMAGES_YET)


# --------------------------------------------------------------------------- shared store
def retrieve_from_store(session: dict[str, Any], store, per_term: Any) -> tuple[dict[str, Any], str]:
    """Copy up to ``per_term`` pictures per image term from the shared store into the session.

    Pictures are taken in store order (no randomness); each is validated and
    normalised like an upload; the store's record is kept in the provenance.
    """
    from biastest.store import retrieve_images

    new = _copy(session)
    spec = _spec(new)
    limit = _int_in(per_term, name="Pictures per term", low=1, high=MAX_SESSION_IMAGES)
    found = retrieve_images(store, list(spec.group_terms))
    if not found.images:
        raise DataError(MSG_STORE_EMPTY_FOR_SPEC)
    taken: dict[str, int] = {}
    added = already = 0
    problems = []
    for rec in found.images:
        term = _canonical_term(spec, rec.image_term)
        if taken.get(term, 0) >= limit:
            continue
        taken[term] = taken.get(term, 0) + 1
        if any(i.provenance.get("store_id") == rec.id for i in new["images"]):
            already += 1
            continue
        try:
            add_image(new, store.read_image(rec), name=Path(rec.path).name, term=term, generator=rec.generator,
                      source_kind="store", prompt=rec.prompt, model=rec.model, seed=rec.seed,
                      provenance={"store_id": rec.id, "store_path": rec.path, "store_source": rec.source,
                                  "store_provenance": dict(rec.provenance or {})})
            added += 1
        except DataError as exc:
            if exc.details.get("duplicate"):
                already += 1
            else:
                problems.append(exc.message)
    lines = [escape(MSG_RETRIEVED.format(added=added, already=already))]
    lines += [f"- {escape(m)}" for m in problems]
    return new, "\n".join(lines)


def save_to_store(session: dict[str, Any], store) -> tuple[dict[str, Any], str]:
    """Save the session's uploaded and generated pictures to the shared store (all validated before any write)."""
    new = _copy(session)
    _spec(new)
    todo = [i for i in new["images"] if i.source in ("upload", "generated") and i.sha256 not in new["saved"]]
    if not todo:
        raise DataError(MSG_NOTHING_TO_SAVE)
    root = session_root(new)
    items = [
        ((root / i.path).read_bytes(),
         {"image_term": i.image_term, "prompt": i.prompt, "generator": i.generator, "model": i.model, "seed": i.seed,
          "source": i.source, "spec_name": i.spec_name, "provenance": dict(i.provenance)})
        for i in todo
    ]
    store.add_images(items)
    new["saved"] = [*new["saved"], *(i.sha256 for i in todo)]
    return new, MSG_SAVED.format(count=len(todo))


# --------------------------------------------------------------------------- generation
def _size(value: str | None) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in str(value).lower().split("x"))
    except (TypeError, ValueError):
        raise GenerationError(MSG_BAD_SIZE.format(value=value)) from None
    return w, h


def _int_in(value: Any, *, name: str, low: int, high: int) -> int:
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise MethodError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value)) from None
    if not f.is_integer() or not low <= f <= high:
        raise MethodError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value))
    return int(f)


def make_generator(source: str, *, api_key: str | None, base_url: str | None, model: str | None,
                   local_model: str | None, size: str | None):
    """The image generator the user chose (the key goes into the client only)."""
    from biastest.generate.images import (
        LocalDiffusionGenerator,
        OpenAICompatibleImageGenerator,
        OpenAIImageGenerator,
    )

    wh = _size(size)
    model = (model or "").strip()
    if source == GEN_OPENAI:
        key = (api_key or "").strip()
        if not key:
            raise GenerationError(MSG_NO_API_KEY_TYPED)
        return OpenAIImageGenerator(model or DEFAULT_OPENAI_IMAGE_MODEL, api_key=key, size=wh)
    if source == GEN_COMPATIBLE:
        if not (base_url or "").strip():
            raise GenerationError(MSG_NO_BASE_URL)
        if not model:
            raise GenerationError(MSG_NO_GENERATOR_MODEL.format(example="stable-diffusion"))
        return OpenAICompatibleImageGenerator(base_url.strip(), model, api_key=(api_key or "").strip() or None,
                                              size=wh)
    if not (local_model or "").strip():
        raise GenerationError(MSG_NO_GENERATOR_MODEL.format(example="stabilityai/sd-turbo"))
    return LocalDiffusionGenerator(public.check_model_reference(local_model), size=wh)


def add_generated(session: dict[str, Any], images: Any) -> tuple[int, list[str]]:
    """Add generated images (:class:`~biastest.generate.images.GeneratedImage`) to the session (mutates it)."""
    added, problems = 0, []
    for gi in images:
        try:
            add_image(
                session, gi.png, name=f"{gi.image_term} ({gi.generator})", term=gi.image_term,
                generator=gi.generator, source_kind="generated", prompt=gi.prompt, model=gi.model, seed=gi.seed,
                provenance={**gi.provenance, "prompt_name": gi.prompt_name, "generated_sha256": gi.sha256},
            )
            added += 1
        except DataError as exc:
            problems.append(exc.message)
    return added, problems


def generate_core(
    session: dict[str, Any],
    source: str,
    api_key: str | None,
    base_url: str | None,
    model: str | None,
    local_model: str | None,
    size: str | None,
    per_term: Any,
    prompt_name: str,
    seed: Any,
    *,
    progress=None,
    cancel: threading.Event | None = None,
    max_seconds: float = GENERATION_MAX_SECONDS,
) -> tuple[dict[str, Any], str]:
    """Generate images until every image term has ``per_term`` images; returns the session and the report.

    The run ends early when ``cancel`` is set (the Stop button) or after ``max_seconds``; the images made before
    that are added to the session all the same, and the report says why the run stopped and how many were kept.
    """
    from biastest.generate.images import generate_images

    new = _copy(session)
    spec = _spec(new)
    target = _int_in(per_term, name="Images per term", low=1, high=MAX_PER_TERM_GENERATE)
    seed_i = option_value("seed", seed)
    generator = make_generator(source, api_key=api_key, base_url=base_url, model=model, local_model=local_model,
                               size=size)
    run = generate_images(list(spec.group_terms), generator, seed=seed_i, existing_counts=image_counts(new),
                          target_per_term=target, prompt=prompt_name or "portrait", spec_name=spec.name,
                          progress=progress, cancel=cancel,
                          limits=generation_limits(request_timeout=IMAGE_REQUEST_TIMEOUT, max_seconds=max_seconds))
    added, problems = add_generated(new, run.images)
    lines = [escape(MSG_GENERATED.format(report=run.report.message))]
    if problems:
        lines.append(escape(MSG_GENERATED_UNUSABLE.format(count=len(problems), added=added)))
        lines += [f"- {escape(m)}" for m in problems]
    return new, "\n".join(lines)


# --------------------------------------------------------------------------- step 1
def confirm_spec(session: dict[str, Any], library: str, g1: str, g2: str, a1: str, a2: str) -> tuple[dict, str]:
    """Validate step 1 and keep the spec; images of terms no longer in the spec are set aside."""
    spec = spec_from_inputs(library, g1, g2, a1, a2).check_testable()
    new = _copy(session)
    new["spec"] = spec
    new["result"] = None
    keep = [i for i in new["images"] if spec.group_of(i.image_term) is not None]
    dropped = [i for i in new["images"] if spec.group_of(i.image_term) is None]
    new["images"] = keep
    new["selected"] = None
    msg = spec_summary(spec)
    if dropped:
        terms = sorted({i.image_term for i in dropped})
        msg += "\n\n" + escape(MSG_DROPPED_IMAGES.format(count=len(dropped), terms=", ".join(terms)))
    return new, msg


# --------------------------------------------------------------------------- run and results
def _templates(selected: Any, custom: str | None) -> list[str]:
    out = [t for t in (selected or []) if t]
    if custom and custom.strip():
        out.append(custom.strip())
    if not out:
        raise MethodError(MSG_NO_TEMPLATE)
    return list(dict.fromkeys(out))


def run_core(
    session: dict[str, Any],
    model_id: str | None,
    templates: Any,
    custom_template: str | None,
    combine: str | None,
    question: str | None,
    seed: Any,
    batch_size: Any,
    n_resamples: Any,
    *,
    progress=None,
) -> dict[str, Any]:
    """Run the test on the session's images; returns the session with its result."""
    from biastest.runner.vlm import run_vlm_test

    new = _copy(session)
    spec = _spec(new)
    model_id = (model_id or "").strip()
    if not model_id:
        raise MethodError(MSG_NO_MODEL.format(example=MODEL_SUGGESTIONS[0]))
    model_id = public.check_model_reference(model_id)  # a public server loads Hub models only
    if not new["images"]:
        raise DataError(MSG_NO_IMAGES_YET)
    settings = {
        "model_id": model_id,
        "prompt_template": _templates(templates, custom_template),
        "question": (question or "").strip() or DEFAULT_QUESTION,
        "combine": combine or COMBINE_CHOICES[0],
        "seed": option_value("seed", seed),
        "batch_size": option_value("batch_size", batch_size),
        "n_resamples": option_value("n_resamples", n_resamples),
    }
    result = run_vlm_test(images=list(new["images"]), image_root=session_root(new), spec=spec,
                          progress=progress, **settings)
    new.update(result=result, settings=settings)
    return new


def _image_choices(result) -> list[tuple[str, int]]:
    return [
        (f"#{i + 1} · {img.image_term} · P(T1) {img.p_t1:.2f} · {img.verdict}", i)
        for i, img in enumerate(result.images)
    ]


def image_detail(session: dict[str, Any], index: Any) -> tuple[str | None, str]:
    """Path and Markdown details of result image ``index`` (None, "" when there is none)."""
    result = (session or {}).get("result")
    if result is None or index is None or not 0 <= int(index) < len(result.images):
        return None, ""
    img = result.images[int(index)]
    t1, t2 = rep.target_names(result)
    path = Path(session["dir"]) / img.path if session.get("dir") else None
    probs = ", ".join(f"P({escape(t)}) = {p:.3f}" for t, p in img.term_probabilities.items())
    md = (
        f"**Image term:** {escape(img.image_term)} (group {img.image_group}) · **id** `{escape(img.image_id)}`\n\n"
        f"**P({escape(t1)})** = {img.p_t1:.3f} · **P({escape(t2)})** = {img.p_t2:.3f} · "
        f"**verdict:** {escape(img.verdict)} ({escape(img.outcome)}) · **answer:** {escape(img.answer)}\n\n"
        f"Per target term: {probs}"
    )
    return (str(path) if path is not None and path.is_file() else None), md


def results_view(session: dict[str, Any]) -> tuple:
    """Values of the result components (see ``result_outputs`` in :func:`build_demo`)."""
    result = session["result"]
    root = Path(session["dir"])
    thumbs = {img.image_id: rep.thumbnail_uri(root / img.path) for img in result.images}
    csv_path, json_path = rep.write_exports(result, folder=session_export_dir("biastest-vqa-"))
    choices = _image_choices(result)
    first_path, first_md = image_detail(session, 0 if choices else None)
    return (
        rep.summary_markdown(result),
        rep.term_bars(result),
        rep.image_grid(result, thumbnails=thumbs),
        rep.image_table(result),
        gr.update(choices=choices, value=0 if choices else None),
        first_path,
        first_md,
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


# --------------------------------------------------------------------------- handlers
def coverage_frame(rows: list[dict[str, Any]]):
    """The coverage rows as a DataFrame (fixed columns, also when empty)."""
    import pandas as pd

    cols = ["image term", "group", "images in this test"]
    if rows and "in the shared store" in rows[0]:
        cols.append("in the shared store")
    return pd.DataFrame(rows, columns=[*cols, "status"])


class VQAApp:
    """The step-2 handlers, bound to the shared store (a service built once per process, never user data).

    Parameters
    ----------
    store : DatasetStore, optional
        The shared store. Default: a :class:`~biastest.store.DatasetStore` at
        its default folder, opened on first use.
    use_store : bool
        False: no shared store at all (no retrieval, no saving).
    generation_seconds : float
        Time limit of one image-generation run (the Stop button, :attr:`stops`, ends a run sooner; both keep the
        images made until then).
    """

    def __init__(self, store=None, *, use_store: bool = True,
                 generation_seconds: float = GENERATION_MAX_SECONDS) -> None:
        self._store = store
        self._use_store = use_store or store is not None
        self._lock = threading.Lock()
        self.generation_seconds = generation_seconds
        self.stops = StopControl()

    @property
    def has_store(self) -> bool:
        return self._use_store

    def store(self):
        """The shared store (opened on first use); None when the app has none."""
        if not self._use_store:
            return None
        with self._lock:
            if self._store is None:
                from biastest.store import DatasetStore

                self._store = DatasetStore(writer="app_vqa")
            return self._store

    def _store_or_none(self):
        try:
            return self.store()
        except StoreError:
            log.warning("the shared store cannot be opened; counts are shown without it", exc_info=True)
            return None

    def step2_view(self, session: dict[str, Any]) -> tuple:
        rows, md = coverage_view(session, self._store_or_none())
        return coverage_frame(rows), md, gallery_items(session)

    @user_errors
    def confirm_handler(self, session, library, g1, g2, a1, a2):
        """Step 1 → step 2: inline ⚠️ message (and a toast) on a problem; unlock the images tab otherwise."""
        try:
            new, msg = confirm_spec(session, library, g1, g2, a1, a2)
        except (SpecError, DataError) as exc:
            gr.Warning(exc.message)
            skip = gr.skip()
            return (session, f"⚠️ {escape(exc.message)}", *(skip,) * 7)
        tabs, tab2 = unlock_step("data")
        terms = list(new["spec"].group_terms)
        return (new, msg, tabs, tab2, gr.Tab(interactive=False), gr.update(choices=terms, value=terms[0]),
                *self.step2_view(new))

    @user_errors
    def upload_handler(self, session, files, term):
        """Add uploaded pictures for one image term: inline report; a toast when some or all were refused."""
        try:
            new, md = add_uploads(session, files, term)
        except DataError as exc:
            gr.Warning(exc.message)
            return (session, f"⚠️ {escape(exc.message)}", gr.skip(), gr.skip(), gr.skip(), gr.skip())
        if "bt-warn" in md:
            gr.Warning(MSG_UPLOAD_PROBLEMS.format(count=md.count("\n- ")))
        return (new, md, None, *self.step2_view(new))

    @user_errors
    def generate_handler(self, session, source, api_key, base_url, model, local_model, size, per_term, prompt_name,
                         seed, request: gr.Request = None, progress=gr.Progress()):
        """Generate the missing images for every image term (the key is used for this request only).

        The session's Stop button (:attr:`stops`) or the time limit ends the run early; the images made until
        then are added all the same.
        """
        with self.stops.running(request) as cancel:
            new, md = generate_core(session, source, api_key, base_url, model, local_model, size, per_term,
                                    prompt_name, seed, progress=progress_callback(progress), cancel=cancel,
                                    max_seconds=self.generation_seconds)
        return (new, md, *self.step2_view(new))

    @user_errors
    def remove_handler(self, session):
        """Remove the selected gallery image."""
        new, msg = remove_image(session, (session or {}).get("selected"))
        return (new, escape(msg), *self.step2_view(new))

    @user_errors
    def retrieve_handler(self, session, per_term):
        """Copy pictures from the shared store into this session."""
        new, md = retrieve_from_store(session, self.store(), per_term)
        return (new, md, *self.step2_view(new))

    @user_errors
    def save_handler(self, session):
        """Save this session's uploaded and generated pictures to the shared store."""
        new, msg = save_to_store(session, self.store())
        return (new, escape(msg), *self.step2_view(new))


@user_errors
def gallery_select_handler(session, evt: gr.SelectData):
    """Remember which gallery image is selected."""
    new = _copy(session)
    new["selected"] = evt.index if isinstance(evt.index, int) else None
    img = new["images"][new["selected"]] if new["selected"] is not None and new["selected"] < len(new["images"]) \
        else None
    md = "" if img is None else f"Selected: an image of **{escape(img.image_term)}** ({escape(img.source)})."
    return new, md


@user_errors
def run_handler(session, model_id, templates, custom_template, combine, question, seed, batch_size, n_resamples,
                progress=gr.Progress()):
    """Step 2 → results: run, render, unlock the results tab."""
    new = run_core(session, model_id, templates, custom_template, combine, question, seed, batch_size, n_resamples,
                   progress=progress_callback(progress))
    tabs, tab3 = unlock_step("results")
    return (new, "", tabs, tab3, *results_view(new))


@user_errors
def detail_handler(session, index):
    """The picked result image and its details."""
    return image_detail(session, index)


@user_errors
def table_select_handler(session, evt: gr.SelectData):
    """A click on a row of the per-image table picks that image."""
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if (session or {}).get("result") is None or row is None:
        return gr.skip()
    return int(row)


@user_errors
def on_generator(source: str):
    """Show the inputs of the chosen image generator."""
    return (
        gr.update(visible=source in (GEN_OPENAI, GEN_COMPATIBLE),
                  label="OpenAI API key (used for this request only, never stored)" if source == GEN_OPENAI
                  else "API key of the service (optional)"),
        gr.update(visible=source == GEN_COMPATIBLE),
        gr.update(visible=source in (GEN_OPENAI, GEN_COMPATIBLE),
                  value=DEFAULT_OPENAI_IMAGE_MODEL if source == GEN_OPENAI else ""),
        gr.update(visible=source == GEN_LOCAL),
        gr.update(value="1024x1024" if source == GEN_OPENAI else "512x512"),
    )


# --------------------------------------------------------------------------- layout
HEADER = """
# Vision-language models: do pictures of groups get stereotyped answers?

Test whether an AI model that looks at pictures (CLIP, ViLT, BLIP, GIT …) links pictures of one social group
to a stereotype more than pictures of another. You name the **image terms** (what the pictures show, e.g.
*man* / *woman*) and two **target concepts** (e.g. *doctor* / *nurse*). For every picture the model gives the
probability of each target concept; the **bias score** is the average probability of the stereotypical concept
(50% = no preference). Pictures come from the shared store, from an image generator, or from your own uploads —
your uploads stay private to your session until you choose to share them.
"""

SPEC_HELP = (
    "**Image terms** are what the pictures show (one list per social group). **Target concepts** are the two "
    "lists every picture is classified into; the first is the stereotype of group 1, the second the stereotype of "
    "group 2."
)

HOVER_CARD_TEMPLATE = (
    "<div class='bt-hover-card' style='min-height:180px'>"
    "<img class='bt-card-img' alt='picture of the hovered square' "
    "style='display:none;max-width:100%;width:160px;image-rendering:auto;border-radius:8px'/>"
    "<div class='bt-card-text' style='font-size:0.92em;white-space:pre-line'>${value}</div></div>"
)
HOVER_CARD_HINT = "Hover over (or click) a square of the grid to see its picture here."

# Plotly hover labels cannot show images: this attaches a plotly_hover listener to the grid and shows the
# hovered point's thumbnail (the data: URI in its last customdata column) and its details in the card.
HOVER_CARD_JS = r"""
const PLOT = '#vqa-image-grid', CARD = '#vqa-hover-card';
const plain = (s) => new DOMParser().parseFromString(String(s ?? ''), 'text/html').documentElement.textContent;
function show(ev) {
  const pt = ev && ev.points && ev.points[0];
  const card = document.querySelector(CARD);
  const gd = document.querySelector(PLOT + ' .js-plotly-plot');
  if (!pt || !card) return;
  const cd = pt.customdata || [];
  const meta = (gd && gd.layout && gd.layout.meta) || {};
  const img = card.querySelector('img.bt-card-img'), box = card.querySelector('.bt-card-text');
  const uri = String(cd[cd.length - 1] || '');
  if (img) {
    if (uri.startsWith('data:image/')) { img.src = uri; img.style.display = 'block'; }
    else { img.removeAttribute('src'); img.style.display = 'none'; }
    img.dataset.imageId = String(cd[cd.length - 2] || '');
  }
  if (box) {
    box.textContent = ['image term: ' + plain(cd[1]), 'P(' + (meta.t1 || 'T1') + '): ' + plain(cd[2]),
      'P(' + (meta.t2 || 'T2') + '): ' + plain(cd[3]), 'verdict: ' + plain(cd[4]), 'image: ' + plain(cd[0])
    ].join('\n');
  }
}
window.__btVqaShow = show;
function attach() {
  const gd = document.querySelector(PLOT + ' .js-plotly-plot');
  if (!gd || typeof gd.on !== 'function') return;
  const has = gd._ev && typeof gd._ev.listeners === 'function'
    ? gd._ev.listeners('plotly_hover').includes(window.__btVqaShow) : gd.__btVqa === true;
  if (!has) {
    gd.on('plotly_hover', window.__btVqaShow);
    gd.on('plotly_click', window.__btVqaShow);
    gd.__btVqa = true;
  }
}
if (!window.__btVqaTimer) { window.__btVqaTimer = setInterval(attach, 300); }
"""


def build_demo(*, store=None, use_store: bool = True,
               generation_seconds: float = GENERATION_MAX_SECONDS) -> gr.Blocks:
    """The app's Blocks (no queue, no launch: :func:`biastest.ui.serve.configure_queue` does that).

    Parameters
    ----------
    store : DatasetStore, optional
        The shared store to retrieve pictures from and save them to (default:
        the store at ``$BIASTEST_DATA_DIR``, opened on first use).
    use_store : bool
        False hides retrieval and saving (no shared store at all).
    generation_seconds : float
        Time limit of one image-generation run (the Stop button ends a run sooner; both keep what was made).
    """
    handlers = VQAApp(store, use_store=use_store, generation_seconds=generation_seconds)
    with gr.Blocks(title="biastest · vision-language models", delete_cache=gradio_cache_policy()) as demo:
        session = gr.State(new_session(), delete_callback=discard_session)
        gr.Markdown(HEADER, elem_id="app-header")
        with gr.Tabs(selected="spec", elem_id="steps") as tabs:
            # ------------------------------------------------------------- step 1
            with gr.Tab("1 · Specification", id="spec", elem_id="tab-spec") as tab1:
                gr.Markdown(SPEC_HELP, elem_classes=["bt-hint"])
                spec_in = build_spec_inputs(
                    kinds=("bias",),
                    labels={
                        "group1": "Image terms of group 1 (what the pictures show)",
                        "group2": "Image terms of group 2",
                        "stereotype1": "Target concepts T1 (stereotype of group 1)",
                        "antistereotype1": "Target concepts T2 (stereotype of group 2)",
                    },
                )
                with gr.Row():
                    next1 = gr.Button("Continue to the images →", variant="primary", elem_id="spec-next")
                    new1 = gr.Button("New bias test", elem_id="new-test-1")

            # ------------------------------------------------------------- step 2
            with gr.Tab("2 · Images and model", id="data", interactive=False, elem_id="tab-data") as tab2:
                gr.Markdown("### Images for every image term")
                coverage_md = gr.Markdown("", elem_id="coverage-summary")
                coverage_df = gr.Dataframe(label="Images per image term", interactive=False,
                                           elem_id="coverage-table")
                with gr.Accordion("Pictures from the shared store", open=False, visible=handlers.has_store,
                                  elem_id="store-section"):
                    gr.Markdown(
                        "The shared store holds pictures that users of this server saved for others (the column "
                        "“in the shared store” above counts them). They are copied into your test; nothing in the "
                        "store changes.",
                        elem_classes=["bt-hint"],
                    )
                    with gr.Row():
                        store_n = gr.Number(10, precision=0, label="Pictures per image term (at most)",
                                            elem_id="store-per-term")
                        store_btn = gr.Button("Take pictures from the shared store", elem_id="store-retrieve")
                    store_md = gr.Markdown("", elem_id="store-message")
                with gr.Accordion("Upload your own pictures", open=True, elem_id="upload-section"):
                    gr.Markdown(
                        "Choose the image term the pictures show, pick the files (PNG, JPEG, WebP, GIF, BMP, TIFF) "
                        "and press **Add**. Pictures are checked and converted to colour PNG without metadata; "
                        "damaged, non-image or very large files are refused with a reason. They stay in your "
                        "session only.",
                        elem_classes=["bt-hint"],
                    )
                    with gr.Row():
                        upload_term = gr.Dropdown([], label="These pictures show", elem_id="upload-term")
                        upload_files = gr.File(label="Picture files", file_count="multiple", type="filepath",
                                               elem_id="upload-files")
                    upload_btn = gr.Button("Add these pictures", elem_id="upload-add")
                    upload_md = gr.Markdown("", elem_id="upload-message")
                with gr.Accordion("Generate pictures", open=False, elem_id="generate-section"):
                    gen_source = gr.Radio([(label, value) for label, value in GEN_CHOICES], value=GEN_OPENAI,
                                          label="Image generator", elem_id="gen-source")
                    with gr.Row():
                        gen_key = gr.Textbox(label="OpenAI API key (used for this request only, never stored)",
                                             type="password", elem_id="gen-key")
                        gen_url = gr.Textbox(label="Web address of the image service",
                                             placeholder="http://localhost:8000/v1", visible=False,
                                             elem_id="gen-url")
                        gen_model = gr.Textbox(label="Image model", value=DEFAULT_OPENAI_IMAGE_MODEL,
                                               elem_id="gen-model")
                        gen_local = gr.Textbox(label="Local diffusers model (Hub id or folder)",
                                               placeholder="stabilityai/sd-turbo", visible=False,
                                               elem_id="gen-local")
                    with gr.Row():
                        gen_size = gr.Dropdown(list(IMAGE_SIZES), value="1024x1024", label="Image size",
                                               elem_id="gen-size")
                        gen_n = gr.Number(4, precision=0, label="Pictures per image term (in total)",
                                          elem_id="gen-per-term")
                        gen_prompt = gr.Dropdown(
                            [(f"{p.name}: “{p.template}”", p.name) for p in IMAGE_PROMPTS.values()],
                            value="portrait", label="Prompt", elem_id="gen-prompt")
                        gen_seed = gr.Number(0, precision=0, label="Seed", elem_id="gen-seed")
                    gr.Markdown(time_limit_hint(generation_seconds), elem_classes=["bt-hint"])
                    with gr.Row():
                        gen_btn = gr.Button("Generate the missing pictures", elem_id="gen-run")
                        gen_stop = StopControl.button("gen-stop")
                    gen_md = gr.Markdown("", elem_id="gen-message")
                gallery = gr.Gallery(label="Test images (click one to select it)", columns=8, height=300,
                                     allow_preview=False, elem_id="image-gallery")
                with gr.Row():
                    remove_btn = gr.Button("Remove the selected image", elem_id="remove-image")
                    save_btn = gr.Button("Save my uploaded and generated pictures to the shared store",
                                         visible=handlers.has_store, elem_id="save-to-store")
                gallery_md = gr.Markdown("", elem_id="gallery-message")

                gr.Markdown("### The model to test")
                model_id = gr.Dropdown(list(MODEL_SUGGESTIONS), value=MODEL_SUGGESTIONS[0], allow_custom_value=True,
                                       label="Model (Hugging Face Hub id or local folder)",
                                       info="CLIP-like, visual question answering (ViLT) or image-to-text (BLIP, GIT); "
                                            "its kind is read from its configuration.",
                                       elem_id="model-id")
                with gr.Row():
                    templates = gr.CheckboxGroup(
                        [(f"{label}: “{tpl}”", tpl) for tpl, label in PROMPT_TEMPLATES.items()],
                        value=[DEFAULT_PROMPT_TEMPLATE],
                        label="Prompt templates (CLIP-like models)",
                        elem_id="prompt-templates",
                    )
                    with gr.Column():
                        custom_template = gr.Textbox(label="Your own prompt template (with {term})",
                                                     placeholder="a picture of a {term}", elem_id="custom-template")
                        question = gr.Dropdown(
                            [(f"{q} — {label}", q) for q, label in QUESTIONS.items()], value=DEFAULT_QUESTION,
                            allow_custom_value=True, label="Question (VQA and image-to-text models)",
                            info="{T1} and {T2} are replaced by the target concepts.", elem_id="question")
                with gr.Accordion("Settings", open=False):
                    with gr.Row():
                        combine = gr.Radio(list(COMBINE_CHOICES), value=COMBINE_CHOICES[0],
                                           label="Several terms in a concept (CLIP-like)",
                                           info="sum-prob: add their probabilities; mean-embedding: average their "
                                                "text embeddings first.", elem_id="combine")
                        seed = gr.Number(0, precision=0, label="Seed (repeat it to get the same numbers)",
                                         elem_id="seed")
                        batch = gr.Number(16, precision=0, label="Images per batch", elem_id="batch-size")
                        n_boot = gr.Number(10_000, precision=0, label="Bootstrap samples for the intervals",
                                           elem_id="n-bootstrap")
                run_md = gr.Markdown("", elem_id="run-message")
                with gr.Row():
                    run_btn = gr.Button("Run the test →", variant="primary", elem_id="run-test")
                    new2 = gr.Button("New bias test", elem_id="new-test-2")

            # ------------------------------------------------------------- step 3
            with gr.Tab("3 · Results", id="results", interactive=False, elem_id="tab-results") as tab3:
                summary_md = gr.Markdown("", elem_id="result-summary")
                bars = gr.Plot(label="Bias score per term", elem_id="vqa-term-bars")
                with gr.Row():
                    with gr.Column(scale=3):
                        grid = gr.Plot(label="Every image", elem_id="vqa-image-grid")
                    with gr.Column(scale=1, min_width=200):
                        gr.HTML(HOVER_CARD_HINT, html_template=HOVER_CARD_TEMPLATE, js_on_load=HOVER_CARD_JS,
                                elem_id="vqa-hover-card")
                        pick = gr.Dropdown([], label="Or pick an image", elem_id="vqa-pick")
                        picked = gr.Image(label="Picked image", type="filepath", interactive=False, height=200,
                                          elem_id="vqa-picked-image")
                        picked_md = gr.Markdown("", elem_id="vqa-picked-details")
                table = gr.Dataframe(label="Per image (click a row to see it)", interactive=False,
                                     elem_id="vqa-image-table")
                with gr.Row():
                    csv_btn = gr.DownloadButton("Download CSV", visible=False, elem_id="download-csv")
                    json_btn = gr.DownloadButton("Download JSON", visible=False, elem_id="download-json")
                new3 = gr.Button("New bias test", elem_id="new-test-3")

        # ----------------------------------------------------------------- wiring
        spec_boxes = [spec_in.library, *spec_in.term_boxes]
        spec_in.library.change(user_errors(fill_from_library), spec_in.library,
                               [*spec_in.term_boxes, spec_in.message], queue=False)
        # one queued listener for every box, one event at a time: answers cannot overtake each other
        wire_validation(spec_in, concurrency_id="vqa-spec-validate")
        step2_view = [coverage_df, coverage_md, gallery]
        next1.click(handlers.confirm_handler, [session, *spec_boxes],
                    [session, spec_in.message, tabs, tab2, tab3, upload_term, *step2_view])
        upload_btn.click(handlers.upload_handler, [session, upload_files, upload_term],
                         [session, upload_md, upload_files, *step2_view])
        gen_source.change(on_generator, gen_source, [gen_key, gen_url, gen_model, gen_local, gen_size], queue=False)
        handlers.stops.wire(demo, generate_btn=gen_btn, stop_btn=gen_stop, fn=handlers.generate_handler,
                            inputs=[session, gen_source, gen_key, gen_url, gen_model, gen_local, gen_size, gen_n,
                                    gen_prompt, gen_seed],
                            outputs=[session, gen_md, *step2_view], api_name="generate_images",
                            concurrency_id="vqa-generate", concurrency_limit=1)
        gallery.select(gallery_select_handler, session, [session, gallery_md], queue=False)
        remove_btn.click(handlers.remove_handler, session, [session, gallery_md, *step2_view])
        store_btn.click(handlers.retrieve_handler, [session, store_n], [session, store_md, *step2_view])
        save_btn.click(handlers.save_handler, session, [session, gallery_md, *step2_view],
                       concurrency_id="vqa-store", concurrency_limit=1)
        result_outputs = [summary_md, bars, grid, table, pick, picked, picked_md, csv_btn, json_btn]
        run_btn.click(run_handler,
                      [session, model_id, templates, custom_template, combine, question, seed, batch, n_boot],
                      [session, run_md, tabs, tab3, *result_outputs],
                      concurrency_id="vqa-model", concurrency_limit=1)
        pick.change(detail_handler, [session, pick], [picked, picked_md], queue=False)
        table.select(table_select_handler, session, pick, queue=False)

        # New bias test: back to step 1, every input and output cleared, a fresh session (old images deleted)
        resets: list[tuple[Any, Any]] = [
            (spec_in.library, CUSTOM), *((b, "") for b in spec_in.term_boxes), (spec_in.message, ""),
            (coverage_md, ""), (coverage_df, coverage_frame([])), (store_n, 10), (store_md, ""),
            (upload_term, gr.update(choices=[], value=None)),
            (upload_files, None), (upload_md, ""), (gen_source, GEN_OPENAI), (gen_key, ""), (gen_url, ""),
            (gen_model, DEFAULT_OPENAI_IMAGE_MODEL), (gen_local, ""), (gen_size, "1024x1024"), (gen_n, 4),
            (gen_prompt, "portrait"), (gen_seed, 0), (gen_md, ""), (gallery, []), (gallery_md, ""),
            (model_id, MODEL_SUGGESTIONS[0]), (templates, [DEFAULT_PROMPT_TEMPLATE]), (custom_template, ""),
            (question, DEFAULT_QUESTION), (combine, COMBINE_CHOICES[0]), (seed, 0), (batch, 16), (n_boot, 10_000),
            (run_md, ""), (summary_md, ""), (bars, None), (grid, None), (table, None),
            (pick, gr.update(choices=[], value=None)), (picked, None), (picked_md, ""),
            (csv_btn, gr.update(value=None, visible=False)), (json_btn, gr.update(value=None, visible=False)),
        ]
        reset_outputs = [session, tabs, tab2, tab3, *(c for c, _ in resets)]

        def reset(old):
            discard_session(old)
            return (new_session(), *gated_tabs_reset(), *(v for _, v in resets))

        for btn in (new1, new2, new3):
            btn.click(user_errors(reset), session, reset_outputs, queue=False)
        end_session_files_on_unload(demo)
        del tab1
    return demo
