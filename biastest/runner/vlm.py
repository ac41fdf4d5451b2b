"""Orchestration of the vision-language bias test (BiasTestVQA).

:func:`run_vlm_test` is what the app and the command line call: it checks the
specification and the images (every image term must belong to a group, every
group term needs at least one image, every file must be a readable image),
loads the model once through the shared cache (refusing a model that is not a
vision-language model), scores the images in batches with the method of the
model's kind (:mod:`biastest.metrics.vlm_score`) and returns a frozen
:class:`~biastest.metrics.vlm_score.VLMResult` with provenance. It writes
nothing anywhere.

With ``endpoint=`` the model runs on a server instead (vLLM serving LLaVA or
Qwen-VL, a hosted GPT-4o-class model): every image is asked the question
through the OpenAI chat protocol (:class:`biastest.models.endpoint_vlm.EndpointVLM`),
the answers give the hard scores and, where the endpoint gives
log-probabilities, the soft ones; images the run stopped before asking about
are listed in :attr:`~biastest.metrics.vlm_score.VLMResult.not_scored`, and
what a reader must know is in :attr:`~biastest.metrics.vlm_score.VLMResult.notes`.

Progress reaches the caller as a plain callback ``progress(done, total,
message)``; nothing here knows about Gradio.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biastest.errors import DataError, MethodError
from biastest.metrics.vlm_score import (
    COMBINE_CHOICES,
    DEFAULT_CLUSTERS,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_QUESTION,
    METHODS,
    MSG_BAD_COMBINE,
    MSG_NO_IMAGES,
    VLMResult,
    check_clusters,
    check_prompt_template,
    check_question,
    clip_term_scores,
    generative_term_scores,
    image_groups,
    summarize_vlm,
    vqa_classifier_term_scores,
)
from biastest.models.cache import ModelCache
from biastest.models.endpoint_lm import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TIME_LIMIT,
)
from biastest.models.images import DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, load_image, probe_image
from biastest.models.vlm import load_vlm
from biastest.options import validate_options
from biastest.records import TestImage
from biastest.remote import RetryPolicy, RunLimits
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
MSG_PROGRESS_ENDPOINT = "Asking the model '{model_id}' at {where}…"
#: How many different answers that named neither list a note quotes.
NEITHER_EXAMPLES = 3


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
    endpoint: str | None = None,
    api_key: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_requests: int = DEFAULT_MAX_REQUESTS,
    time_limit: float = DEFAULT_TIME_LIMIT,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    retry: RetryPolicy | None = None,
    cancel: threading.Event | None = None,
    clusters: str = DEFAULT_CLUSTERS,
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
    endpoint : str, optional
        API root of an OpenAI-compatible chat server that serves ``model_id``
        and reads images (e.g. ``http://localhost:8000/v1``): the question is
        asked there (one image per request) and ``prompt_template``,
        ``combine``, ``batch_size``, ``revision``, ``device``, ``dtype`` and
        ``cache`` do not apply; ``max_new_tokens`` is the longest answer.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).
    concurrency, max_requests, time_limit, request_timeout :
        Requests in flight at once, the request budget (retries included), the
        overall time limit and one request's time-out, in seconds. When a
        limit stops the run, the images not answered are left out of the
        scores and listed in ``not_scored``.
    retry : RetryPolicy, optional
        Retries on 429, 5xx, time-outs (default
        :func:`biastest.models.endpoint_lm.default_retry`).
    cancel : threading.Event, optional
        Set to stop an endpoint run early, keeping what was answered.
    clusters : {"auto", "image-prompt", "image-term", "image"}
        How images group into independent clusters for the cluster-aware intervals and tests
        (:func:`biastest.metrics.vlm_score.resolve_clusters`; ``auto``: the image prompt when every image has
        one, else the image term). Checked before the model loads.

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
    OptionError, PolicyError
        A bad endpoint address or setting, an unknown clustering, or one public mode refuses.
    EndpointError
        The endpoint answered for no image, or answered unusably (another
        model, an unreadable answer, a refused picture).
    """
    validate_options({"seed": seed, "n_resamples": n_resamples, "confidence": confidence, "batch_size": batch_size,
                      "max_new_tokens": max_new_tokens})
    if endpoint is not None:
        validate_options({"concurrency": concurrency, "max_requests": max_requests, "time_limit": time_limit,
                          "request_timeout": request_timeout})
    clusters = check_clusters(clusters)
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
    if endpoint is not None:
        from biastest.models.endpoint_vlm import EndpointVLM

        vlm = EndpointVLM(
            endpoint, model_id, api_key=api_key, concurrency=concurrency,
            limits=RunLimits(max_requests=max_requests, max_seconds=float(time_limit),
                             request_timeout=float(min(request_timeout, time_limit))),
            retry=retry, seed=seed, cancel=cancel,
        )
        _tick(progress, 0, len(images), MSG_PROGRESS_ENDPOINT.format(model_id=vlm.model_id, where=vlm.where))
        answers = vlm.ask(paths, spec=spec, question=question, max_tokens=max_new_tokens,
                          load=_loader(paths, images), progress=progress)
        return _endpoint_result(vlm, answers, images=images, spec=spec, question=question, seed=seed,
                                n_resamples=n_resamples, confidence=confidence, root=root,
                                max_new_tokens=max_new_tokens, clusters=clusters)
    _tick(progress, 0, len(images), "Loading the model")
    model = load_vlm(model_id, revision=revision, device=device, dtype=dtype, cache=cache)
    kind = model.kind
    common = {"spec": spec, "batch_size": batch_size, "progress": progress,
              "load": _loader(paths, images, max_side=SCORING_MAX_SIDE)}
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
        clusters=clusters,
        extra_provenance={
            "device": info.device,
            "dtype": info.dtype,
            "image_root_name": root.name,
            "max_new_tokens": max_new_tokens if kind == "generative" else None,
        },
    )


def _loader(paths: Sequence[Path], images: Sequence[TestImage], *,
            max_side: int | None = None) -> Callable[[Path], Any]:
    """Path → RGB image (at most ``max_side`` pixels on the longer side), with the image's name in any message."""
    by_path = dict(zip(map(str, paths), images, strict=True))
    kwargs = {} if max_side is None else {"max_side": max_side}

    def load(path: Path):
        img = by_path[str(path)]
        try:
            return load_image(path, name=img.path, **kwargs)
        except DataError as exc:
            raise DataError(
                MSG_IMAGE_UNREADABLE.format(path=img.path, term=img.image_term, reason=exc.message), path=img.path
            ) from None

    return load


def _endpoint_result(vlm: Any, answers: Sequence[Any], *, images: Sequence[TestImage], spec: BiasSpec, question: str,
                     seed: int, n_resamples: int, confidence: float, root: Path, max_new_tokens: int,
                     clusters: str = DEFAULT_CLUSTERS) -> VLMResult:
    """The result of the images the endpoint answered for; the others are listed as not scored."""
    from biastest.models import endpoint_vlm as ev

    kept = [i for i, a in enumerate(answers) if a is not None]
    got = [answers[i] for i in kept]
    terms = spec.attribute_terms
    probs = np.full((len(got), len(terms)), np.nan)
    for row, a in enumerate(got):
        if a.probabilities is not None:
            probs[row] = [a.probabilities[t] for t in terms]
    has_soft = [a.probabilities is not None for a in got]
    notes: list[str] = [vlm.stop_message] if vlm.stop_message else []
    n_soft = sum(has_soft)
    if n_soft == 0:
        notes.append(ev.MSG_LOGPROBS_REFUSED.format(where=vlm.where, model=vlm.model_id,
                                                    status=vlm.logprobs_refused_status)
                     if vlm.logprobs_refused_status is not None
                     else ev.MSG_NO_LOGPROBS.format(where=vlm.where, model=vlm.model_id))
    elif n_soft < len(got):
        reasons = "; ".join(f"{why}: {count}" for why, count in Counter(a.note for a in got if a.note).most_common())
        notes.append(ev.MSG_SOME_WITHOUT_PROBABILITY.format(count=len(got) - n_soft, total=len(got), reasons=reasons,
                                                            rest=n_soft))
    neither = Counter(a.text for a in got if a.verdict == "neither")
    if neither:
        examples = ", ".join(f"{text!r} ({count})" for text, count in neither.most_common(NEITHER_EXAMPLES))
        examples += " …" if len(neither) > NEITHER_EXAMPLES else ""
        notes.append(ev.MSG_NEITHER_ANSWERS.format(count=sum(neither.values()), total=len(got), examples=examples))
    masses = sorted(a.target_mass for a in got if a.target_mass is not None)
    probabilities = (ev.MSG_NOTE_SOFT.format(k=vlm.top_logprobs, low=masses[0], high=masses[-1],
                                             median=float(np.median(masses))) if masses else None)
    not_scored = [{"path": images[i].path, "image_id": images[i].id, "image_term": images[i].image_term,
                   "reason": vlm.stop_why or ""} for i, a in enumerate(answers) if a is None]
    return summarize_vlm(
        images=[images[i] for i in kept],
        spec=spec,
        term_probabilities=probs,
        soft_available=has_soft,
        image_notes=[a.note for a in got],
        answers=[a.text for a in got],
        verdicts=[a.verdict for a in got],
        method=ev.ENDPOINT_METHOD,
        model_id=vlm.model_id,
        model_revision=None,
        model_kind=ev.ENDPOINT_KIND,
        architecture="served: OpenAI chat with images",
        question=question,
        prompts=(vlm.prompt,),
        batch_size=1,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        not_scored=not_scored,
        notes=notes,
        clusters=clusters,
        extra_provenance={
            "endpoint": vlm.where,
            "model": vlm.describe(),
            "image_root_name": root.name,
            "max_new_tokens": max_new_tokens,
            "n_images_asked": len(answers),
            "n_images_with_probabilities": n_soft,
            "probabilities": probabilities,
        },
    )
