"""Local ``diffusers`` text-to-image pipelines: loading and seeded drawing.

:func:`load_diffusion_pipeline` loads a Hub id or a local folder (written by
``save_pretrained``, with its ``model_index.json``) through
``AutoPipelineForText2Image`` in float32, once per process
(:data:`~biastest.models.cache.MODEL_CACHE`). :func:`draw` makes one image,
seeded with its own ``torch.Generator`` (the global generator is untouched);
one lock per process serialises drawing. The generator in
:mod:`biastest.generate.images` (:class:`~biastest.generate.images.LocalDiffusionGenerator`)
builds on these and never touches torch or diffusers itself.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest.errors import GenerationError, ModelKindError, ModelLoadError
from biastest.models.cache import MODEL_CACHE
from biastest.models.text_generation import resolve_model_location

__all__ = ["Drawing", "PipelineBundle", "draw", "load_diffusion_pipeline"]

MSG_NOT_TEXT_TO_IMAGE = (
    "'{model}' is not a text-to-image pipeline ({problem}). Choose a text-to-image model such as "
    "'stabilityai/sd-turbo' or a folder saved with save_pretrained."
)
MSG_PIPELINE_LOAD_FAILED = (
    "The image model '{model}' could not be loaded ({problem}). Check that the files are complete."
)
MSG_PIPELINE_HUB_UNAVAILABLE = (
    "The image model '{model}' could not be loaded from the Hugging Face Hub: either the id is wrong or this "
    "server has no network access and the model is not in its cache. Check the id, or use a local folder."
)
MSG_IMAGE_FAILED = "The local image model '{model}' failed while drawing ({problem})."

_DRAW_LOCK = threading.Lock()


@dataclass(frozen=True)
class PipelineBundle:
    """A loaded text-to-image pipeline (cached per process).

    Attributes
    ----------
    pipeline : diffusers.DiffusionPipeline
    name : str
        The Hub id or folder it was loaded from, as given.
    pipeline_class : str
        The pipeline's class name (e.g. ``StableDiffusionPipeline``).
    """

    pipeline: Any
    name: str
    pipeline_class: str


@dataclass(frozen=True)
class Drawing:
    """One image drawn by :func:`draw`.

    Attributes
    ----------
    image : PIL.Image.Image
    nsfw_flagged : bool
        Whether the pipeline's safety checker flagged (and blanked) the image.
    """

    image: Any
    nsfw_flagged: bool


def _load_pipeline(model: str, revision: str | None, device: str) -> PipelineBundle:
    import torch  # late: heavy
    from diffusers import AutoPipelineForText2Image  # late: heavy

    location, is_local = resolve_model_location(model)
    if is_local and not (Path(location) / "model_index.json").exists():
        raise ModelKindError(MSG_NOT_TEXT_TO_IMAGE.format(model=model, problem="the folder has no model_index.json"),
                             model=model)
    try:
        pipe = AutoPipelineForText2Image.from_pretrained(location, revision=revision, dtype=torch.float32)
    except OSError:
        if is_local:
            raise ModelLoadError(MSG_PIPELINE_LOAD_FAILED.format(model=model, problem="files missing or unreadable"),
                                 model=model) from None
        raise ModelLoadError(MSG_PIPELINE_HUB_UNAVAILABLE.format(model=model), model=model) from None
    except (ValueError, KeyError, AttributeError) as exc:
        raise ModelKindError(MSG_NOT_TEXT_TO_IMAGE.format(model=model, problem=type(exc).__name__),
                             model=model) from None
    except (RuntimeError, TypeError) as exc:
        raise ModelLoadError(MSG_PIPELINE_LOAD_FAILED.format(model=model, problem=type(exc).__name__),
                             model=model) from None
    pipe.to(device)
    if hasattr(pipe, "set_progress_bar_config"):
        pipe.set_progress_bar_config(disable=True)
    return PipelineBundle(pipeline=pipe, name=model, pipeline_class=type(pipe).__name__)


def load_diffusion_pipeline(model: str, *, revision: str | None = None, device: str = "cpu") -> PipelineBundle:
    """Load (once per process) a text-to-image pipeline.

    Parameters
    ----------
    model : str
        Hub id (e.g. ``stabilityai/sd-turbo``) or local directory.
    revision : str, optional
        Hub revision (branch, tag or commit).
    device : str
        ``cpu``, ``cuda`` ...

    Returns
    -------
    PipelineBundle

    Raises
    ------
    ModelLoadError
        Unknown path or id, no network, missing files.
    ModelKindError
        The folder or id is not a text-to-image pipeline.
    """
    return MODEL_CACHE.get(("text-to-image", model, revision, device), lambda: _load_pipeline(model, revision, device))


def draw(
    bundle: PipelineBundle,
    prompt: str,
    *,
    width: int,
    height: int,
    num_inference_steps: int,
    guidance_scale: float,
    seed: int | None,
) -> Drawing:
    """Draw one image for ``prompt``, seeded.

    Parameters
    ----------
    bundle : PipelineBundle
        From :func:`load_diffusion_pipeline`.
    prompt : str
    width, height : int
        Multiples of 8.
    num_inference_steps : int
    guidance_scale : float
    seed : int or None
        Seeds a CPU ``torch.Generator`` for this image (``None`` means 0).

    Returns
    -------
    Drawing

    Raises
    ------
    GenerationError
        The pipeline failed while drawing (:data:`MSG_IMAGE_FAILED`).
    """
    import torch  # late: heavy

    generator = torch.Generator(device="cpu").manual_seed(0 if seed is None else int(seed))
    try:
        with _DRAW_LOCK, torch.inference_mode():
            out = bundle.pipeline(
                prompt=prompt, height=height, width=width,
                num_inference_steps=num_inference_steps, guidance_scale=guidance_scale,
                generator=generator, output_type="pil",
            )
    except (RuntimeError, ValueError, IndexError, TypeError) as exc:
        raise GenerationError(MSG_IMAGE_FAILED.format(model=bundle.name, problem=type(exc).__name__)) from None
    flagged = getattr(out, "nsfw_content_detected", None)
    return Drawing(image=out.images[0], nsfw_flagged=bool(flagged and flagged[0]))
