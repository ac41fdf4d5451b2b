"""The per-session image store of the vision-language app: step 1's spec, the pictures, uploads, the shared store.

All per-user data lives in one dictionary that ``gr.State`` holds (the
*session*). A session's images — uploaded, generated or copied from the
shared store — live in the session's own temporary folder (created on its
first image, removed when the session ends or the user starts a new test),
so two users never see each other's pictures; they reach the shared store
only when the user asks. Every image is validated and normalised to RGB PNG
(corrupt, non-image, oversized, grayscale, transparent and CMYK files are
handled with a message) and written atomically, so nothing is ever
half-written. Functions here return a new session (the old one is never
mutated, except by :func:`add_image`, which works on a copy) and raise typed
errors whose messages are the ``MSG_*`` constants below.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biastest import public, workdir
from biastest.errors import DataError, MethodError
from biastest.measures.vlm import report as rep
from biastest.models.images import normalise_image_bytes
from biastest.records import TestImage
from biastest.spec import BiasSpec
from biastest.store import retrieve_images
from biastest.ui.common import current_session_id, escape
from biastest.ui.spec_step import spec_from_inputs, spec_summary

__all__ = [
    "MAX_SESSION_IMAGES",
    "SESSION_PREFIX",
    "add_image",
    "add_uploads",
    "confirm_spec",
    "coverage_frame",
    "coverage_view",
    "discard_session",
    "gallery_items",
    "image_counts",
    "new_session",
    "remove_image",
    "retrieve_from_store",
    "save_generated",
    "save_to_store",
    "session_root",
    "store_counts",
]

MAX_SESSION_IMAGES = 1000
SESSION_PREFIX = "biastest-vqa-session-"

MSG_SPEC_FIRST = "Complete step 1 first: check the specification and press “Next: test data”."
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
MSG_BAD_INT = "{name} must be a whole number between {low} and {high}; got {value!r}."
MSG_DROPPED_IMAGES = (
    "{count} image(s) made for terms that are not in the new specification were set aside: {terms}."
)
MSG_RETRIEVED = "Took {added} picture(s) from the shared store ({already} were already among the test images)."
MSG_STORE_EMPTY_FOR_SPEC = (
    "The shared store has no pictures for these image terms yet. Generate or upload some instead."
)
MSG_NOTHING_TO_SAVE = "There are no new uploaded or generated pictures to save: all are already in the shared store."
MSG_SAVED = (
    "Saved {count} picture(s) to the shared store. Everyone who uses this store can now retrieve them for their "
    "tests."
)
MSG_GENERATED_SAVED = (
    "Saved {count} generated picture(s) to the shared store (with their prompts and provenance); the “Shared "
    "dataset” panel above says whether they are shared."
)
MSG_GENERATED_NOT_SAVED = (
    "The generated pictures are in your test but could not be saved to the shared store: {problem}"
)


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


# --------------------------------------------------------------------------- session and its images
def new_session() -> dict[str, Any]:
    """A fresh per-user session (what ``gr.State`` holds); no folder until the first image."""
    return {"spec": None, "dir": None, "images": [], "saved": [], "shared": [], "selected": None, "result": None,
            "settings": None}


def _copy(session: dict[str, Any] | None) -> dict[str, Any]:
    base = new_session()
    if session:
        base.update(session)
    base["images"] = list(base["images"])
    base["saved"] = list(base.get("saved") or [])
    base["shared"] = list(base.get("shared") or [])
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


def coverage_frame(rows: list[dict[str, Any]]):
    """The coverage rows as a DataFrame (fixed columns, also when empty)."""
    import pandas as pd

    cols = ["image term", "group", "images in this test"]
    if rows and "in the shared store" in rows[0]:
        cols.append("in the shared store")
    return pd.DataFrame(rows, columns=[*cols, "status"])


# --------------------------------------------------------------------------- shared store
def retrieve_from_store(session: dict[str, Any], store, per_term: Any, *,
                        found_line: Callable[[list[str]], str] | None = None) -> tuple[dict[str, Any], str]:
    """Copy up to ``per_term`` pictures per image term from the shared store into the session.

    Pictures are taken in store order (no randomness); each is validated and
    normalised like an upload; the store's record is kept in the provenance.
    ``found_line`` (given the store ids of every picture found for the spec's
    image terms) says where they come from
    (:meth:`~biastest.store.shared.SharedDataset.found_line`); its line opens the report.
    """
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
    if found_line is not None:
        lines.insert(0, escape(found_line([rec.id for rec in found.images])) + "\n")
    lines += [f"- {escape(m)}" for m in problems]
    return new, "\n".join(lines)


def _save(new: dict[str, Any], store, todo: list[TestImage]) -> None:
    """Write ``todo`` to the store (all validated before any write); remember them and the store files written.

    ``new["shared"]`` gets one entry per picture: its image term, source and the store-relative files that
    hold it (the image file and the images-table shard with its row), whose sync state the panel shows.
    """
    root = session_root(new)
    items = [
        ((root / i.path).read_bytes(),
         {"image_term": i.image_term, "prompt": i.prompt, "generator": i.generator, "model": i.model, "seed": i.seed,
          "source": i.source, "spec_name": i.spec_name, "provenance": dict(i.provenance)})
        for i in todo
    ]
    records = store.add_images(items)
    shards = store.shards_of("images", [r.id for r in records])
    new["saved"] = [*new["saved"], *(i.sha256 for i in todo)]
    new["shared"] = [*new["shared"], *(
        {"sha256": r.sha256, "term": r.image_term, "source": r.source,
         "files": [r.path, *([shards[r.id]] if r.id in shards else [])]}
        for r in records
    )]


def save_to_store(session: dict[str, Any], store) -> tuple[dict[str, Any], str]:
    """Save the session's uploaded (and any unsaved generated) pictures to the shared store, at the user's request."""
    new = _copy(session)
    _spec(new)
    todo = [i for i in new["images"] if i.source in ("upload", "generated") and i.sha256 not in new["saved"]]
    if not todo:
        raise DataError(MSG_NOTHING_TO_SAVE)
    _save(new, store, todo)
    return new, MSG_SAVED.format(count=len(todo))


def save_generated(session: dict[str, Any], store) -> tuple[dict[str, Any], int]:
    """Save the session's generated pictures not saved yet to the shared store (done as soon as they are made).

    Uploads are left alone: they are saved only when their user asks (:func:`save_to_store`). Returns the new
    session and how many pictures were saved.
    """
    new = _copy(session)
    todo = [i for i in new["images"] if i.source == "generated" and i.sha256 not in new["saved"]]
    if todo:
        _save(new, store, todo)
    return new, len(todo)


def _int_in(value: Any, *, name: str, low: int, high: int) -> int:
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise MethodError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value)) from None
    if not f.is_integer() or not low <= f <= high:
        raise MethodError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value))
    return int(f)
