"""Image generation for vision-language bias tests.

Generators: :class:`OpenAIImageGenerator` (``gpt-image-1`` answers base64;
DALL-E 2/3 are asked for ``b64_json``), :class:`OpenAICompatibleImageGenerator`
(any server speaking ``/v1/images/generations``; ``url`` answers are
downloaded) and :class:`LocalDiffusionGenerator` (a ``diffusers``
text-to-image pipeline, Hub id or local folder, via
``AutoPipelineForText2Image``; seeded with a ``torch.Generator``; loading and
drawing live in :mod:`biastest.models.diffusion`).

:func:`generate_images` generates what each image term is missing, with the
same limits, retries, budget, progress and report as sentence generation,
and returns PNG bytes with their prompt, generator, model and seed
(:class:`GeneratedImage`); the caller writes them to the store
(:meth:`GeneratedImage.to_test_image` builds the record). Prompts come from
the BiasTestVQA paper (appendix C.2); see
:data:`~biastest.generate.prompts.IMAGE_PROMPTS`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import logging
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, UnidentifiedImageError

from biastest.errors import GenerationError
from biastest.generate.base import (
    REJECT_EMPTY,
    STOP_ATTEMPTS,
    STOP_COMPLETED,
    STOP_ERROR,
    GenerationReport,
    ImageGenerator,
    ProgressCallback,
    report_message,
)
from biastest.generate.openai_chat import _OpenAIClientMixin
from biastest.generate.prompts import get_image_prompt
from biastest.generate.sentences import count_key
from biastest.models.diffusion import draw, load_diffusion_pipeline
from biastest.provenance import provenance
from biastest.records import TestImage
from biastest.remote import (
    REJECT_MALFORMED,
    MalformedAnswer,
    RetryPolicy,
    RunLimits,
    RunState,
    RunStopped,
    download,
    translate_openai_error,
)

__all__ = [
    "GeneratedImage",
    "ImageRun",
    "OpenAIImageGenerator",
    "OpenAICompatibleImageGenerator",
    "LocalDiffusionGenerator",
    "plan_missing_images",
    "generate_images",
    "to_png",
    "REJECT_NOT_AN_IMAGE",
    "REJECT_FILTERED",
]

log = logging.getLogger(__name__)

REJECT_NOT_AN_IMAGE = "not_an_image"
REJECT_FILTERED = "filtered"

MSG_PROGRESS_START = "Generating {total} images for {terms} terms…"
MSG_PROGRESS_ITEM = "Image {done} of {total}: '{term}'"
MSG_PROGRESS_DONE = "Done: {accepted} new images."
MSG_BAD_SIZE = "The image size must be two whole numbers of at least {minimum}, got {value!r}."
MSG_BAD_TERMS = "Give at least one image term (e.g. nurse, plumber)."
MSG_BAD_COUNT = "The number of images per term must be a whole number of at least 0, got {value!r}."
MSG_BAD_SEED = "An image run needs a whole-number seed so that it can be repeated, got {value!r}."

MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024


def to_png(data: bytes) -> tuple[bytes, int, int]:
    """Check that ``data`` is an image and return it as PNG with its size.

    PNG input is returned unchanged; other formats are converted.

    Raises
    ------
    MalformedAnswer
        ``empty`` or ``not_an_image``.
    """
    if not data:
        raise MalformedAnswer(REJECT_EMPTY)
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            fmt, (w, h) = img.format, img.size
            if fmt == "PNG":
                return data, w, h
            buf = io.BytesIO()
            img.convert("RGBA" if img.mode in ("RGBA", "LA", "P") else "RGB").save(buf, format="PNG")
            return buf.getvalue(), w, h
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise MalformedAnswer(REJECT_NOT_AN_IMAGE) from None


@dataclass(frozen=True)
class GeneratedImage:
    """One generated image, ready for the store.

    Attributes
    ----------
    png : bytes
        The image as PNG (excluded from ``to_dict``).
    sha256 : str
        Hash of ``png`` (the store's file name).
    image_term, prompt, prompt_name, generator, model : str
    width, height : int
    seed : int or None
        The seed the image was drawn with (None when the service cannot be
        seeded; the run seed is then in ``provenance``).
    spec_name : str
    provenance : dict
    """

    png: bytes = field(repr=False)
    sha256: str
    image_term: str
    prompt: str
    prompt_name: str
    generator: str
    model: str
    width: int
    height: int
    seed: int | None
    spec_name: str = ""
    provenance: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_test_image(self, path: str | None = None) -> TestImage:
        """The store record for this image (``path`` default ``images/<sha256>.png``)."""
        return TestImage(
            path=path or f"images/{self.sha256}.png", sha256=self.sha256, image_term=self.image_term,
            prompt=self.prompt, generator=self.generator, model=self.model, width=self.width, height=self.height,
            seed=self.seed, source="generated", spec_name=self.spec_name,
            provenance={**self.provenance, "prompt_name": self.prompt_name},
        )

    def to_dict(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "image_term": self.image_term, "prompt": self.prompt,
                "prompt_name": self.prompt_name, "generator": self.generator, "model": self.model,
                "width": self.width, "height": self.height, "seed": self.seed, "spec_name": self.spec_name,
                "bytes": len(self.png), "provenance": self.provenance}


@dataclass(frozen=True)
class ImageRun:
    """The result of :func:`generate_images`: new images and the report."""

    images: tuple[GeneratedImage, ...]
    report: GenerationReport

    def to_dict(self) -> dict[str, Any]:
        return {"images": [i.to_dict() for i in self.images], "report": self.report.to_dict()}


def _check_size(size: Sequence[int], minimum: int = 8) -> tuple[int, int]:
    try:
        w, h = size
    except (TypeError, ValueError):
        raise GenerationError(MSG_BAD_SIZE.format(minimum=minimum, value=size)) from None
    for v in (w, h):
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise GenerationError(MSG_BAD_SIZE.format(minimum=minimum, value=size))
    return int(w), int(h)


# -------------------------------------------------------------- OpenAI API
class OpenAIImageGenerator(_OpenAIClientMixin, ImageGenerator):
    """Images from the OpenAI image API.

    Parameters
    ----------
    model : str
        ``gpt-image-1`` (answers base64), ``dall-e-3`` or ``dall-e-2``
        (asked for ``b64_json``).
    api_key : str, optional
        The user's key for this session (default: ``OPENAI_API_KEY``).
    size : (int, int)
        Width and height; the service accepts only some sizes (e.g.
        1024×1024).
    quality : str, optional
        Passed through (``standard``/``hd`` for DALL-E 3; ``low``/``medium``/
        ``high`` for gpt-image-1).
    request_timeout : float
    base_url : str, optional
        Only for tests and proxies of the official API.
    """

    kind = "openai-image"
    honours_seed = False

    def __init__(
        self,
        model: str = "gpt-image-1",
        *,
        api_key: str | None = None,
        size: Sequence[int] = (1024, 1024),
        quality: str | None = None,
        request_timeout: float = 120.0,
        base_url: str | None = None,
    ) -> None:
        self.model = model
        self.width, self.height = _check_size(size)
        self.quality = quality
        self._init_client(api_key=api_key, base_url=base_url, require_key=self._requires_key(),
                          organization=None, timeout=request_timeout)

    def _requires_key(self) -> bool:
        return True

    def _params(self, seed: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "n": 1, "size": f"{self.width}x{self.height}"}
        if not self.model.startswith("gpt-image"):
            params["response_format"] = "b64_json"  # gpt-image models always answer base64 and refuse this
        if self.quality:
            params["quality"] = self.quality
        return params

    def _generate(self, prompt: str, *, seed: int | None, timeout: float) -> bytes:
        try:
            response = self._client.images.generate(prompt=prompt, timeout=timeout, **self._params(seed))
            data = response.data or []
        except Exception as exc:
            mapped = translate_openai_error(exc, where=self.where, model=self.model)
            if isinstance(mapped, GenerationError) and getattr(exc, "code", None) == "content_policy_violation":
                raise MalformedAnswer(REJECT_FILTERED) from None
            if mapped is exc:
                raise
            raise mapped from None
        if not data:
            raise MalformedAnswer(REJECT_MALFORMED)
        item = data[0]
        b64 = getattr(item, "b64_json", None)
        if b64:
            try:
                return base64.b64decode(b64, validate=True)
            except (binascii.Error, ValueError):
                raise MalformedAnswer(REJECT_NOT_AN_IMAGE) from None
        url = getattr(item, "url", None)
        if url:
            return self._download(url, timeout)
        raise MalformedAnswer(REJECT_EMPTY)

    def _download(self, url: str, timeout: float) -> bytes:
        """The image an answer points to, through the one outbound client: the address the service answered
        with and every redirect are checked and pinned (:func:`biastest.remote.download`)."""
        return download(url, timeout=timeout, max_bytes=MAX_DOWNLOAD_BYTES)

    def describe(self) -> dict[str, Any]:
        return {"generator": self.kind, "model": self.model, "width": self.width, "height": self.height,
                "quality": self.quality, "endpoint": self.where, "honours_seed": self.honours_seed}


class OpenAICompatibleImageGenerator(OpenAIImageGenerator):
    """Images from any server speaking ``/v1/images/generations``.

    Parameters
    ----------
    base_url : str
    model : str
    api_key : str, optional
        Only if the server wants one; ``OPENAI_API_KEY`` is never sent here.
    send_seed : bool
        Send each image's seed as an extra ``seed`` field (some servers,
        e.g. LocalAI, honour it; the official API rejects unknown fields).
    size, request_timeout : as :class:`OpenAIImageGenerator`.
    """

    kind = "openai-compatible-image"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        size: Sequence[int] = (512, 512),
        send_seed: bool = False,
        request_timeout: float = 120.0,
    ) -> None:
        self.send_seed = send_seed
        self.honours_seed = send_seed
        super().__init__(model, api_key=api_key, size=size, request_timeout=request_timeout, base_url=base_url)

    def _requires_key(self) -> bool:
        return False

    def _params(self, seed: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "n": 1, "size": f"{self.width}x{self.height}",
                                  "response_format": "b64_json"}
        if self.send_seed and seed is not None:
            params["extra_body"] = {"seed": int(seed)}
        return params


# -------------------------------------------------------------- diffusers
class LocalDiffusionGenerator(ImageGenerator):
    """Images from a local ``diffusers`` text-to-image pipeline.

    Parameters
    ----------
    model : str
        Hub id (e.g. ``stabilityai/sd-turbo``) or local directory.
    size : (int, int)
        Width and height (multiples of 8).
    num_inference_steps : int
    guidance_scale : float
    revision : str, optional
    device : str

    Raises
    ------
    ModelLoadError, ModelKindError
        From :func:`biastest.models.diffusion.load_diffusion_pipeline`.
    """

    kind = "local-diffusers"
    honours_seed = True

    def __init__(
        self,
        model: str,
        *,
        size: Sequence[int] = (512, 512),
        num_inference_steps: int = 25,
        guidance_scale: float = 7.5,
        revision: str | None = None,
        device: str = "cpu",
    ) -> None:
        self.model = model
        self.width, self.height = _check_size(size)
        self.num_inference_steps = int(num_inference_steps)
        self.guidance_scale = float(guidance_scale)
        self.revision = revision
        self.device = device
        self._bundle = load_diffusion_pipeline(model, revision=revision, device=device)

    def _generate(self, prompt: str, *, seed: int | None, timeout: float) -> bytes:
        drawing = draw(self._bundle, prompt, width=self.width, height=self.height,
                       num_inference_steps=self.num_inference_steps, guidance_scale=self.guidance_scale, seed=seed)
        if drawing.nsfw_flagged:
            raise MalformedAnswer(REJECT_FILTERED)
        buf = io.BytesIO()
        drawing.image.save(buf, format="PNG")
        return buf.getvalue()

    def describe(self) -> dict[str, Any]:
        return {"generator": self.kind, "model": self.model, "revision": self.revision, "width": self.width,
                "height": self.height, "num_inference_steps": self.num_inference_steps,
                "guidance_scale": self.guidance_scale, "pipeline": self._bundle.pipeline_class,
                "honours_seed": True}


# ------------------------------------------------------------ orchestration
def plan_missing_images(
    terms: Sequence[str],
    *,
    existing_counts: Mapping[str, int] | None = None,
    target_per_term: int | None = None,
    min_per_term: int = 1,
) -> dict[str, int]:
    """How many images each term still needs (balanced up to the best-covered term by default)."""
    clean = [t.strip() for t in terms if isinstance(t, str) and t.strip()]
    if not clean:
        raise GenerationError(MSG_BAD_TERMS)
    given = [*(existing_counts or {}).values(), min_per_term]
    if target_per_term is not None:
        given.append(target_per_term)
    for v in given:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise GenerationError(MSG_BAD_COUNT.format(value=v))
    counts = {count_key(k): v for k, v in (existing_counts or {}).items()}
    unique = list(dict.fromkeys(clean))
    have = {t: counts.get(count_key(t), 0) for t in unique}
    target = max(max(have.values(), default=0), min_per_term) if target_per_term is None else target_per_term
    return {t: max(0, target - have[t]) for t in unique}


def generate_images(
    terms: Sequence[str],
    generator: ImageGenerator,
    *,
    seed: int,
    existing_counts: Mapping[str, int] | None = None,
    target_per_term: int | None = None,
    min_per_term: int = 1,
    prompt: str = "portrait",
    spec_name: str = "",
    limits: RunLimits | None = None,
    retry: RetryPolicy | None = None,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> ImageRun:
    """Generate the images each term is missing.

    Parameters
    ----------
    terms : sequence of str
        Image terms (e.g. professions, or the social-group terms).
    generator : ImageGenerator
    seed : int
        Seeds the per-image seeds (used by generators that honour them) and
        the backoff jitter.
    existing_counts, target_per_term, min_per_term :
        See :func:`plan_missing_images`.
    prompt : str
        Name of an image prompt (``portrait``, ``face``, ``working``).
    spec_name : str
    limits, retry, progress, cancel :
        As for :func:`~biastest.generate.sentences.generate_sentences`.

    Returns
    -------
    ImageRun
        PNG images with prompt, generator, model and seed, and the report.
        Terms are served round-robin, so a run cut short covers them evenly.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GenerationError(MSG_BAD_SEED.format(value=seed))
    template = get_image_prompt(prompt)
    limits = limits or RunLimits()
    retry = retry or RetryPolicy()
    wanted = plan_missing_images(terms, existing_counts=existing_counts, target_per_term=target_per_term,
                                 min_per_term=min_per_term)
    rng = random.Random(seed)
    run = RunState(limits, retry, seed=seed, cancel=cancel)
    total = sum(wanted.values())
    left = dict(wanted)
    accepted = dict.fromkeys(wanted, 0)
    rejected: dict[str, int] = {}
    seen: set[str] = set()
    images: list[GeneratedImage] = []
    base_prov = provenance(method="image-generation", run_seed=seed, prompt_name=template.name, spec=spec_name,
                           limits=limits.to_dict(), **generator.describe())
    done, gave_up = 0, False
    stop_reason, stop_error = STOP_COMPLETED, None

    def notify(message: str) -> None:
        if progress is not None:
            progress(done, total, message)

    notify(MSG_PROGRESS_START.format(total=total, terms=sum(1 for v in wanted.values() if v)))
    try:
        while any(v > 0 for v in left.values()):
            for term in [t for t in wanted if left[t] > 0]:
                notify(MSG_PROGRESS_ITEM.format(done=done + 1, total=total, term=term))
                text = template.render(term)
                result = None
                for attempt in range(1, limits.attempts_per_item + 1):
                    image_seed = rng.randrange(2**31)
                    try:
                        raw = generator.ask(text, run=run, seed=image_seed)
                        png, w, h = to_png(raw)
                    except MalformedAnswer as exc:
                        rejected[exc.reason] = rejected.get(exc.reason, 0) + 1
                        continue
                    digest = hashlib.sha256(png).hexdigest()
                    if digest in seen:
                        rejected["duplicate"] = rejected.get("duplicate", 0) + 1
                        continue
                    result = (png, w, h, digest, image_seed, attempt)
                    break
                done += 1
                left[term] -= 1
                if result is None:
                    gave_up = True
                    continue
                png, w, h, digest, image_seed, attempt = result
                seen.add(digest)
                accepted[term] += 1
                recorded_seed = image_seed if generator.honours_seed else None
                images.append(GeneratedImage(
                    png=png, sha256=digest, image_term=term, prompt=text, prompt_name=template.name,
                    generator=generator.kind, model=generator.model, width=w, height=h, seed=recorded_seed,
                    spec_name=spec_name, provenance={**base_prov, "seed": recorded_seed, "attempt": attempt},
                ))
    except RunStopped as stop:
        stop_reason = stop.reason
    except GenerationError as exc:
        stop_reason, stop_error = STOP_ERROR, exc
        log.warning("image generation stopped: %s", type(exc).__name__)
    if stop_reason == STOP_COMPLETED and gave_up:
        stop_reason = STOP_ATTEMPTS
    missing = {t: wanted[t] - accepted[t] for t in wanted}
    n = sum(accepted.values())
    message = report_message(stop_reason, accepted=n, missing=missing, rejected=rejected, items="images",
                             unit="term", run=run, error=stop_error)
    report = GenerationReport(
        accepted=n, rejected=rejected, requested=dict(wanted), missing=missing, requests_used=run.requests_used,
        max_requests=limits.max_requests, transient_failures=dict(run.transient), elapsed_s=round(run.elapsed, 3),
        stopped_because=stop_reason, message=message, items="images", seed=seed, provenance=base_prov,
    )
    notify(MSG_PROGRESS_DONE.format(accepted=n))
    return ImageRun(tuple(images), report)
