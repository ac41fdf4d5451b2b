"""Orchestration of the vision-language bias test (BiasTestVQA).

:func:`run` is what the app, the command line and the audit call: it checks the
specification and the images (every image term must belong to a group, every
group term needs at least one image, every file must be a readable image),
gets the model from the factory (:func:`biastest.models.factory.vision_language_model`:
loaded once through the shared cache, refusing a model that is not a
vision-language model, or reached at an endpoint), scores the images with the
method of the protocol the model satisfies (:mod:`biastest.measures.vlm.score`)
and returns a frozen
:class:`~biastest.measures.vlm.result.VLMResult` with provenance. It writes
nothing anywhere.

With an ``endpoint`` in the options the model runs on a server instead (vLLM serving LLaVA or
Qwen-VL, a hosted GPT-4o-class model): the factory gives a
:class:`~biastest.models.protocols.ChatVLM`, and every image is asked the question
through the OpenAI chat protocol (:class:`biastest.models.endpoint_vlm.EndpointVLM`)
**in both orders** (target list 1 named first, then list 2 first): the answers,
read strictly into a list, a refusal or an unparseable answer, give the hard
scores — the stereotyped share among parseable answers, refusals and
unparseable answers counted, quoted and reported apart, never as a side — with
the position bias and the order consistency (:mod:`biastest.measures.vlm.chat`);
where the endpoint gives log-probabilities, the soft ones (averaged over the two
orders). Images the run stopped before any answer about are listed in
:attr:`~biastest.measures.vlm.result.VLMResult.not_scored`, and
what a reader must know is in :attr:`~biastest.measures.vlm.result.VLMResult.notes`.

Progress reaches the caller as a plain callback ``progress(done, total,
message)``; nothing here knows about Gradio.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.measures.vlm.chat import image_verdict
from biastest.measures.vlm.options import METHODS, VLMOptions
from biastest.measures.vlm.result import OrderAnswer, VLMResult
from biastest.measures.vlm.score import (
    clip_term_scores,
    generative_term_scores,
    image_groups,
    vqa_classifier_term_scores,
)
from biastest.measures.vlm.summary import MSG_NO_IMAGES, ImageAnswers, ModelSettings, summarize_vlm
from biastest.models import endpoint_vlm as ev
from biastest.models.answers import REFUSED, UNPARSEABLE
from biastest.models.cache import ModelCache
from biastest.models.factory import vision_language_model
from biastest.models.images import DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, load_image, probe_image
from biastest.models.protocols import AnswerClassifierVLM, ChatVLM, ContrastiveVLM
from biastest.models.vlm_question import ORDERS
from biastest.records import TestImage
from biastest.remote import RetryPolicy
from biastest.spec import BiasSpec

__all__ = [
    "MAX_IMAGES",
    "MSG_ANSWER_COUNT",
    "MSG_IMAGE_OUTSIDE_ROOT",
    "MSG_IMAGE_UNREADABLE",
    "MSG_NO_IMAGES_FOR_TERM",
    "MSG_NOT_AN_IMAGE_RECORD",
    "MSG_TOO_MANY_IMAGES",
    "VLMItems",
    "run",
]

Progress = Callable[[int, int, str], None]

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
MSG_PROGRESS_LOADING = "Loading the model"
MSG_PROGRESS_ENDPOINT = "Asking the model '{model_id}' at {where}…"
#: What the progress says while the model is made ready, by where it is served (:attr:`ModelRef.served_by`).
MSG_PROGRESS_MODEL = {"process": MSG_PROGRESS_LOADING, "endpoint": MSG_PROGRESS_ENDPOINT}
MSG_ANSWER_COUNT = (
    "The model gave {answers} answers for {images} images; it should give one per image and order. Nothing was "
    "scored."
)
MSG_ONE_ORDER_PROBABILITY = (
    "{count} of {total} images have a probability from one order only (the other order's answer had none: "
    "{reasons}); their soft score is that order's, not the mean of both."
)

#: How many different refusals (unparseable answers) a note quotes.
NEITHER_EXAMPLES = 3


@dataclass(frozen=True)
class VLMItems:
    """What a vision-language test is run on.

    Parameters
    ----------
    images : sequence of TestImage
        The test images; each ``image_term`` must be a term of social group 1 or 2 of ``spec`` (the *image
        terms*), and every such term needs at least one image.
    image_root : path
        Folder that ``TestImage.path`` is relative to (the store root).
    spec : BiasSpec
        Groups = image terms; attribute list 1/2 = target concept groups T1/T2 (T1 = stereotype of group 1).
    """

    images: Sequence[TestImage]
    image_root: str | Path
    spec: BiasSpec


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


def run(
    options: VLMOptions,
    items: VLMItems,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    api_key: str | None = None,
    cache: ModelCache | None = None,
    retry: RetryPolicy | None = None,
) -> VLMResult:
    """Run the vision-language bias test of one model on a set of images.

    Parameters
    ----------
    options : VLMOptions
        The model (in this process, or at ``options.endpoint``), its prompts or question, the bootstrap and
        the endpoint limits (checked when the options were made, before any model loads).
    items : VLMItems
        The images, the folder they are relative to, and the specification.
    progress : callable, optional
        ``progress(done, total, message)``.
    cancel : threading.Event, optional
        Set to stop an endpoint run early, keeping what was answered.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).
    cache : ModelCache, optional
        Default: the process-wide model cache.
    retry : RetryPolicy, optional
        Endpoint retries on 429, 5xx, time-outs (default :func:`biastest.models.endpoint_lm.default_retry`).
        When a limit stops an endpoint run, the images not answered are left out of the scores and listed in
        ``not_scored``.

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
    o = options
    spec = items.spec
    spec.check_testable()
    root = Path(items.image_root)
    images = list(items.images)
    _tick(progress, 0, len(images) or 1, "Checking images")
    paths = _check_images(images, spec, root)
    ref = o.model_ref()
    _tick(progress, 0, len(images), MSG_PROGRESS_MODEL[ref.served_by].format(model_id=str(ref.model_id).strip(),
                                                                            where=ref.where))
    model = vision_language_model(ref, api_key=api_key, cache=cache, retry=retry, seed=o.seed, cancel=cancel)
    if isinstance(model, ChatVLM):
        answers = model.ask(paths, spec=spec, question=o.question, max_tokens=o.max_new_tokens,
                            load=_loader(paths, images), progress=progress, orders=ORDERS)
        return _endpoint_result(model, answers, images=images, spec=spec, options=o, root=root)
    return _in_process_result(model, paths, images=images, spec=spec, options=o, root=root, progress=progress)


def _in_process_result(model: Any, paths: list[Path], *, images: list[TestImage], spec: BiasSpec,
                       options: VLMOptions, root: Path, progress: Progress | None) -> VLMResult:
    """Score every image with the method of the model's protocol, and summarise."""
    o = options
    kind = model.kind
    common = {"spec": spec, "batch_size": o.batch_size, "progress": progress,
              "load": _loader(paths, images, max_side=SCORING_MAX_SIDE)}
    if isinstance(model, ContrastiveVLM):
        scores = clip_term_scores(model, paths, templates=o.prompt_template, combine=o.combine, **common)
    elif isinstance(model, AnswerClassifierVLM):
        scores = vqa_classifier_term_scores(model, paths, question=o.question, **common)
    else:
        scores = generative_term_scores(model, paths, question=o.question, max_new_tokens=o.max_new_tokens,
                                        **common)
    info = model.info
    clip = kind == "clip"
    said = ImageAnswers(scores.term_probabilities, scores.answers, scores.verdicts, p_t1=scores.p_t1,
                        term_vs_other=scores.term_vs_other)
    asked = ModelSettings(METHODS[kind], info.model_id, model_revision=info.revision, model_kind=kind,
                          architecture=info.architecture, combine=o.combine if clip else None,
                          prompt_templates=o.prompt_template if clip else (), question=None if clip else o.question,
                          prompts=scores.prompts, batch_size=o.batch_size)
    return summarize_vlm(
        images, spec, said, asked, seed=o.seed, n_resamples=o.n_resamples, confidence=o.confidence,
        clusters=o.clusters,
        extra_provenance={
            "device": info.device,
            "dtype": info.dtype,
            "image_root_name": root.name,
            "max_new_tokens": o.max_new_tokens if kind == "generative" else None,
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


def _quoted(got: Sequence[Any], outcome: str) -> tuple[int, str]:
    """How many answers had ``outcome``, and the most frequent of their texts, quoted with their counts."""
    texts = Counter(a.text for a in got if a.outcome == outcome)
    examples = ", ".join(f"{text!r} ({count})" for text, count in texts.most_common(NEITHER_EXAMPLES))
    return sum(texts.values()), examples + (" …" if len(texts) > NEITHER_EXAMPLES else "")


def _by_image(answers: Sequence[Any], n_images: int, spec: BiasSpec) -> list[list[Any]]:
    """The flat answers (image by image, :data:`ORDERS` each) as one list of answers per image.

    An answer without an outcome (a model that does not read its answers) is read here
    (:func:`~biastest.models.endpoint_vlm.read_answer`).
    """
    k = len(answers) // n_images if n_images else 0
    if k * n_images != len(answers) or k not in (1, len(ORDERS)):
        raise DataError(MSG_ANSWER_COUNT.format(answers=len(answers), images=n_images))
    read = [a if a is None or a.outcome else replace(a, outcome=ev.read_answer(a.text, spec)[1]) for a in answers]
    return [read[i * k:(i + 1) * k] for i in range(n_images)]


def _order_answers(per_image: Sequence[Any], group: int, spec: BiasSpec, prompts: dict[str, str]
                   ) -> list[OrderAnswer]:
    """What each order of one image was asked and answered (:class:`OrderAnswer`)."""
    out = []
    for order, a in zip(ORDERS, per_image, strict=False):
        if a is None:
            out.append(OrderAnswer(order=order, question=prompts.get(order, ""), outcome=ev.ANSWER_NOT_ANSWERED))
            continue
        p = None
        if a.probabilities is not None:
            p1 = sum(a.probabilities[t] for t in spec.attributes1)
            p = float(p1 if group == 1 else 1.0 - p1)
        out.append(OrderAnswer(order=a.order, question=a.prompt or prompts.get(a.order, ""), answer=a.text,
                               outcome=a.outcome, p_stereotyped=p))
    return out


def _endpoint_result(vlm: Any, answers: Sequence[Any], *, images: Sequence[TestImage], spec: BiasSpec,
                     options: VLMOptions, root: Path) -> VLMResult:
    """The result of the images the endpoint answered for; images without any answer are listed as not scored."""
    per_image = _by_image(answers, len(images), spec)
    kept = [i for i, a in enumerate(per_image) if any(x is not None for x in a)]
    groups = image_groups(images, spec)
    terms = spec.attribute_terms
    prompts = dict(getattr(vlm, "prompts", {}) or {})
    probs = np.full((len(kept), len(terms)), np.nan)
    has_soft, image_notes, by_order, verdicts, first_texts = [], [], [], [], []
    one_order: list[str] = []  # why an image's probability comes from one order only
    for row, i in enumerate(kept):
        said = [a for a in per_image[i] if a is not None]
        with_p = [a for a in said if a.probabilities is not None]
        if with_p:  # the orders' mean (the probabilities of the orders that have one)
            probs[row] = np.mean([[a.probabilities[t] for t in terms] for a in with_p], axis=0)
        has_soft.append(bool(with_p))
        image_notes.append("" if with_p else next((a.note for a in said if a.note), ""))
        if with_p and len(with_p) < len(said):
            one_order.append(next((a.note for a in said if a.probabilities is None and a.note), ""))
        by_order.append(_order_answers(per_image[i], groups[i], spec, prompts))
        verdicts.append(image_verdict([a.outcome for a in said]))
        first_texts.append(said[0].text)
    got = [a for i in kept for a in per_image[i] if a is not None]
    notes: list[str] = [vlm.stop_message] if vlm.stop_message else []
    n_soft = sum(has_soft)
    if n_soft == 0:
        notes.append(ev.MSG_LOGPROBS_REFUSED.format(where=vlm.where, model=vlm.model_id,
                                                    status=vlm.logprobs_refused_status)
                     if vlm.logprobs_refused_status is not None
                     else ev.MSG_NO_LOGPROBS.format(where=vlm.where, model=vlm.model_id))
    elif n_soft < len(kept):
        reasons = "; ".join(f"{why}: {count}" for why, count in
                            Counter(n for n, h in zip(image_notes, has_soft, strict=True) if not h and n).most_common())
        notes.append(ev.MSG_SOME_WITHOUT_PROBABILITY.format(count=len(kept) - n_soft, total=len(kept),
                                                            reasons=reasons, rest=n_soft))
    if one_order:
        reasons = "; ".join(f"{why or 'no log-probabilities'}: {count}"
                            for why, count in Counter(one_order).most_common())
        notes.append(MSG_ONE_ORDER_PROBABILITY.format(count=len(one_order), total=len(kept), reasons=reasons))
    for outcome, message in ((REFUSED, ev.MSG_REFUSED_ANSWERS), (UNPARSEABLE, ev.MSG_UNPARSEABLE_ANSWERS)):
        count, examples = _quoted(got, outcome)
        if count:
            notes.append(message.format(count=count, total=len(got), examples=examples))
    masses = sorted(a.target_mass for a in got if a.target_mass is not None)
    probabilities = (ev.MSG_NOTE_SOFT.format(k=vlm.top_logprobs, low=masses[0], high=masses[-1],
                                             median=float(np.median(masses))) if masses else None)
    not_scored = [{"path": images[i].path, "image_id": images[i].id, "image_term": images[i].image_term,
                   "reason": vlm.stop_why or ""} for i in range(len(images)) if i not in set(kept)]
    said = ImageAnswers(probs, first_texts, verdicts, soft_available=has_soft, image_notes=image_notes,
                        by_order=by_order)
    asked = ModelSettings(ev.ENDPOINT_METHOD, vlm.model_id, model_kind=ev.ENDPOINT_KIND,
                          architecture="served: OpenAI chat with images", question=options.question,
                          prompts=tuple(prompts.values()) or (vlm.prompt,), batch_size=1)
    return summarize_vlm(
        [images[i] for i in kept], spec, said, asked, seed=options.seed, n_resamples=options.n_resamples,
        confidence=options.confidence, not_scored=not_scored, notes=notes, clusters=options.clusters,
        extra_provenance={
            "endpoint": vlm.where,
            "model": vlm.describe(),
            "image_root_name": root.name,
            "max_new_tokens": options.max_new_tokens,
            "n_images_asked": len(images),
            "n_questions_asked": len(answers),
            "orders": list(ORDERS),
            "n_images_with_probabilities": n_soft,
            "probabilities": probabilities,
        },
    )
