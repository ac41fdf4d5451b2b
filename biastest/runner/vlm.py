"""Orchestration of the vision-language bias test (BiasTestVQA).

:func:`run_vlm_test` is what the app and the command line call: it checks the
specification and the images (every image term must belong to a group, every
group term needs at least one image, every file must be a readable image),
loads the model once through the shared cache (refusing a model that is not a
vision-language model), scores the images in batches with the method of the
model's kind (:mod:`biastest.metrics.vlm_score`) and returns a frozen
:class:`~biastest.metrics.vlm_score.VLMResult` with provenance. It writes
nothing anywhere.

Progress reaches the caller as a plain callback ``progress(done, total,
message)``; nothing here knows about Gradio.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from biastest.errors import DataError, MethodError
from biastest.metrics.vlm_score import (
    COMBINE_CHOICES,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_QUESTION,
    METHODS,
    MSG_BAD_COMBINE,
    MSG_NO_IMAGES,
    VLMResult,
    check_prompt_template,
    check_question,
    clip_term_scores,
    generative_term_scores,
    image_groups,
    summarize_vlm,
    vqa_classifier_term_scores,
)
from biastest.models.cache import ModelCache
from biastest.models.images import DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, load_image, probe_image
from biastest.models.vlm import load_vlm
from biastest.options import validate_options
from biastest.records import TestImage
from biastest.spec import BiasSpec

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MAX_IMAGES",
    "MSG_IMAGE_OUTSIDE_ROOT",
    "MSG_IMAGE_UNREADABLE",
    "MSG_NO_IMAGES_FOR_TERM",
    "MSG_NOT_AN_IMAGE_RECORD",
    "MSG_TOO_MANY_IMAGES",
    "run_vlm_test",
]

Progress = Callable[[int, int, str], None]

DEFAULT_BATCH_SIZE = 16
MAX_IMAGES = 5000
SCORING_MAX_SIDE = 512  # models look at 224–384 px; decoding larger is wasted work

MSG_NO_IMAGES_FOR_TERM = (
    "There are no images for the term(s) {terms} of {group}. Every term of both groups needs at least one image: "
    "generate, retrieve or upload images for them, or remove the term(s) from the specification."
)
MSG_IMAGE_UNREADABLE = (
    "The image '{path}' (made for '{term}') cannot be used: {reason} Remove it from the test images and run again."
)
MSG_IMAGE_OUTSIDE_ROOT = (
    "The image path '{path}' points outside the image folder. Image paths must be relative to the store folder."
)
MSG_NOT_AN_IMAGE_RECORD = "Item {index} of the test images is not an image record (got {type_name})."
MSG_TOO_MANY_IMAGES = "{count} images were given; a test may have at most {limit}. Use fewer images per term."


def _tick(progress: Progress | None, done: int, total: int, message: str) -> None:
    if progress is not None:
        progress(done, total, message)


def _resolve(root: Path, img: TestImage) -> Path:
    rel = Path(img.path)
    path = (root / rel).resolve()
    if rel.is_absolute() or not str(path).startswith(str(root.resolve()) + os.sep):
        raise DataError(MSG_IMAGE_OUTSIDE_ROOT.format(path=img.path), path=img.path)
    return path


def _check_images(images: Sequence[Any], spec: BiasSpec, root: Path) -> list[Path]:
    if not images:
        raise DataError(MSG_NO_IMAGES)
    if len(images) > MAX_IMAGES:
        raise DataError(MSG_TOO_MANY_IMAGES.format(count=len(images), limit=MAX_IMAGES))
    for i, img in enumerate(images):
        if not isinstance(img, TestImage):
            raise DataError(MSG_NOT_AN_IMAGE_RECORD.format(index=i, type_name=type(img).__name__))
    image_groups(images, spec)  # every image term belongs to a group
    have = {" ".join(img.image_term.split()).casefold() for img in images}
    for group_name, terms in spec.social_groups[:2]:
        missing = [t for t in terms if t.casefold() not in have]
        if missing:
            raise DataError(
                MSG_NO_IMAGES_FOR_TERM.format(terms=", ".join(f"'{t}'" for t in missing), group=group_name),
                missing=missing,
            )
    paths = []
    for img in images:
        path = _resolve(root, img)
        try:
            probe_image(path, name=img.path, max_pixels=DEFAULT_MAX_PIXELS, max_bytes=DEFAULT_MAX_BYTES)
        except DataError as exc:
            raise DataError(
                MSG_IMAGE_UNREADABLE.format(path=img.path, term=img.image_term, reason=exc.message), path=img.path
            ) from None
        paths.append(path)
    return paths


def run_vlm_test(
    *,
    images: Sequence[TestImage],
    image_root: str | Path,
    spec: BiasSpec,
    model_id: str,
    prompt_template: str | Sequence[str] = DEFAULT_PROMPT_TEMPLATE,
    question: str = DEFAULT_QUESTION,
    combine: str = "sum-prob",
    seed: int = 0,
    batch_size: int = DEFAULT_BATCH_SIZE,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    max_new_tokens: int = 8,
    revision: str | None = None,
    device: str = "auto",
    dtype: str = "auto",
    cache: ModelCache | None = None,
    progress: Progress | None = None,
) -> VLMResult:
    """Run the vision-language bias test of one model on a set of images.

    Parameters
    ----------
    images : sequence of TestImage
        The test images; each ``image_term`` must be a term of social group 1
        or 2 of ``spec`` (the *image terms*), and every such term needs at
        least one image.
    image_root : path
        Folder that ``TestImage.path`` is relative to (the store root).
    spec : BiasSpec
        Groups = image terms; attribute list 1/2 = target concept groups T1/T2
        (T1 = stereotype of group 1).
    model_id : str
        Hugging Face Hub id or local folder of a CLIP-like, VQA or generative
        vision-language model.
    prompt_template : str or sequence of str
        CLIP-like models: template(s) with ``{term}`` (or ``{}``).
    question : str
        VQA and generative models: the question, with optional ``{T1}``/``{T2}``.
    combine : {"sum-prob", "mean-embedding"}
        CLIP-like models: how several prompts of a group are combined.
    seed : int
        Bootstrap seed (recorded).
    batch_size : int
        Images per forward pass.
    n_resamples, confidence :
        Bootstrap settings.
    max_new_tokens : int
        Generative models: length of the model's own answer.
    revision, device, dtype :
        Model loading options.
    cache : ModelCache, optional
        Default: the process-wide model cache.
    progress : callable, optional
        ``progress(done, total, message)``.

    Returns
    -------
    VLMResult

    Raises
    ------
    SpecError
        The spec has more than two groups or attribute lists.
    DataError
        No images, an image term outside the spec, a term without images, an
        unreadable, corrupt or oversized image.
    MethodError
        Bad template, question, combine or batch size; target terms a VQA
        classifier cannot answer.
    ModelLoadError, ModelKindError
        The model cannot be loaded, or is not a vision-language model.
    """
    validate_options({"seed": seed, "n_resamples": n_resamples, "confidence": confidence, "batch_size": batch_size,
                      "max_new_tokens": max_new_tokens})
    spec.check_testable()
    if combine not in COMBINE_CHOICES:
        raise MethodError(MSG_BAD_COMBINE.format(value=combine, choices=", ".join(COMBINE_CHOICES)))
    templates = (prompt_template,) if isinstance(prompt_template, str) else tuple(prompt_template)
    templates = tuple(check_prompt_template(t) for t in templates)
    question = check_question(question)
    root = Path(image_root)
    images = list(images)
    _tick(progress, 0, len(images) or 1, "Checking images")
    paths = _check_images(images, spec, root)
    _tick(progress, 0, len(images), "Loading the model")
    model = load_vlm(model_id, revision=revision, device=device, dtype=dtype, cache=cache)
    kind = model.kind
    by_path = dict(zip(map(str, paths), images, strict=True))

    def load(path: Path):
        img = by_path[str(path)]
        try:
            return load_image(path, name=img.path, max_side=SCORING_MAX_SIDE)
        except DataError as exc:
            raise DataError(
                MSG_IMAGE_UNREADABLE.format(path=img.path, term=img.image_term, reason=exc.message), path=img.path
            ) from None

    common = {"spec": spec, "batch_size": batch_size, "progress": progress, "load": load}
    if kind == "clip":
        scores = clip_term_scores(model, paths, templates=templates, combine=combine, **common)
    elif kind == "vqa-classifier":
        scores = vqa_classifier_term_scores(model, paths, question=question, **common)
    else:
        scores = generative_term_scores(model, paths, question=question, max_new_tokens=max_new_tokens, **common)
    info = model.info
    return summarize_vlm(
        images=images,
        spec=spec,
        term_probabilities=scores.term_probabilities,
        p_t1=scores.p_t1,
        term_vs_other=scores.term_vs_other,
        answers=scores.answers,
        verdicts=scores.verdicts,
        method=METHODS[kind],
        model_id=info.model_id,
        model_revision=info.revision,
        model_kind=kind,
        architecture=info.architecture,
        combine=combine if kind == "clip" else None,
        prompt_templates=templates if kind == "clip" else (),
        question=question if kind != "clip" else None,
        prompts=scores.prompts,
        batch_size=batch_size,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        extra_provenance={
            "device": info.device,
            "dtype": info.dtype,
            "image_root_name": root.name,
            "max_new_tokens": max_new_tokens if kind == "generative" else None,
        },
    )
