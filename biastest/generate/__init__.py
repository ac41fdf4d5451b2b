"""Test-data generators: sentences (OpenAI, OpenAI-compatible, local) and images.

Generators return records and a report; they never write to the store (the
caller passes the records on). Typical use::

    from biastest.generate import OpenAIChatGenerator, SentenceSettings, generate_sentences

    gen = OpenAIChatGenerator("gpt-4o-mini", api_key=key_from_the_user)
    run = generate_sentences(spec, gen, SentenceSettings(seed=42), existing_counts=counts_from_retrieval,
                             progress=lambda done, total, msg: ...)
    store.add(run.sentences, run.pairs)          # the store's API
    print(run.report.message)

Generator kinds are named in :data:`TEXT_GENERATORS` and
:data:`IMAGE_GENERATORS` (fill dropdowns from them); prompts in
:data:`~biastest.generate.prompts.SENTENCE_PROMPTS` and
:data:`~biastest.generate.prompts.IMAGE_PROMPTS`. Heavy libraries (openai,
torch, transformers, diffusers) are imported only when a generator is built.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from biastest.errors import GenerationError
from biastest.generate.base import (
    GenerationReport,
    ImageGenerator,
    SentenceRules,
    TextGenerator,
)
from biastest.generate.counterfactual import Counterfactual, check_rewrite, swap_counterfactual
from biastest.generate.prompts import (
    IMAGE_PROMPTS,
    SENTENCE_PROMPTS,
    get_image_prompt,
    get_sentence_prompt,
)
from biastest.generate.sentences import SentenceRun, SentenceSettings, generate_sentences, plan_missing

__all__ = [
    "GenerationReport",
    "ImageGenerator",
    "SentenceRules",
    "TextGenerator",
    "Counterfactual",
    "check_rewrite",
    "swap_counterfactual",
    "IMAGE_PROMPTS",
    "SENTENCE_PROMPTS",
    "get_image_prompt",
    "get_sentence_prompt",
    "SentenceRun",
    "SentenceSettings",
    "generate_sentences",
    "plan_missing",
    "TEXT_GENERATORS",
    "IMAGE_GENERATORS",
    "make_text_generator",
    "make_image_generator",
    "OpenAIChatGenerator",
    "OpenAICompatibleGenerator",
    "LocalTextGenerator",
    "OpenAIImageGenerator",
    "OpenAICompatibleImageGenerator",
    "LocalDiffusionGenerator",
    "GeneratedImage",
    "ImageRun",
    "generate_images",
    "plan_missing_images",
]

MSG_UNKNOWN_GENERATOR = "There is no {kind} generator called '{name}'.{hint} Available: {available}."

#: Text generator kinds → (module, class, one-line description).
TEXT_GENERATORS: dict[str, tuple[str, str, str]] = {
    "openai": ("biastest.generate.openai_chat", "OpenAIChatGenerator", "OpenAI chat model (your API key)"),
    "openai-compatible": ("biastest.generate.openai_chat", "OpenAICompatibleGenerator",
                          "Any OpenAI-compatible server (vLLM, Ollama, LM Studio) by address"),
    "local-transformers": ("biastest.generate.local", "LocalTextGenerator",
                           "A local transformers text-generation model (Hub id or folder)"),
}

#: Image generator kinds → (module, class, one-line description).
IMAGE_GENERATORS: dict[str, tuple[str, str, str]] = {
    "openai-image": ("biastest.generate.images", "OpenAIImageGenerator", "OpenAI gpt-image-1 / DALL-E (your key)"),
    "openai-compatible-image": ("biastest.generate.images", "OpenAICompatibleImageGenerator",
                                "Any server speaking /v1/images/generations, by address"),
    "local-diffusers": ("biastest.generate.images", "LocalDiffusionGenerator",
                        "A local diffusers text-to-image model (Hub id or folder)"),
}

#: Names imported on first use (``__getattr__``), like the registries above: importing biastest.generate does not
#: load the generators' modules and the model backends behind them.
_LAZY = {
    "OpenAIChatGenerator": "biastest.generate.openai_chat",
    "OpenAICompatibleGenerator": "biastest.generate.openai_chat",
    "LocalTextGenerator": "biastest.generate.local",
    "OpenAIImageGenerator": "biastest.generate.images",
    "OpenAICompatibleImageGenerator": "biastest.generate.images",
    "LocalDiffusionGenerator": "biastest.generate.images",
    "GeneratedImage": "biastest.generate.images",
    "ImageRun": "biastest.generate.images",
    "generate_images": "biastest.generate.images",
    "plan_missing_images": "biastest.generate.images",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)


def _make(registry: dict[str, tuple[str, str, str]], kind: str, name: str, options: dict[str, Any]) -> Any:
    if name not in registry:
        close = difflib.get_close_matches(str(name), list(registry), n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise GenerationError(MSG_UNKNOWN_GENERATOR.format(kind=kind, name=name, hint=hint,
                                                           available=", ".join(registry)), name=name)
    module, cls, _ = registry[name]
    return getattr(importlib.import_module(module), cls)(**options)


def make_text_generator(name: str, options: dict[str, Any]) -> TextGenerator:
    """Build the text generator registered as ``name`` with constructor ``options``."""
    return _make(TEXT_GENERATORS, "text", name, options)


def make_image_generator(name: str, options: dict[str, Any]) -> ImageGenerator:
    """Build the image generator registered as ``name`` with constructor ``options``."""
    return _make(IMAGE_GENERATORS, "image", name, options)
