"""What kind of model a configuration describes, decided from its architecture (never from the model's name).

The language-model adapters (:mod:`biastest.models.lm`: ``masked`` or
``causal``), the vision-language adapters (:mod:`biastest.models.vlm`:
``clip``, ``vqa-classifier``, ``generative``) and the model lists of
:mod:`biastest.models.catalog` (which kind of model a cached ``config.json``
is) all decide the kind here. This module sits below all three, so the
catalog can classify configurations without importing the adapters (which
import :mod:`biastest.models.base`, which asks the catalog for examples and
the Hub's state).

transformers is imported inside the functions: importing this module (and the
catalog, on every app start) must not load transformers' model registry.

Examples
--------
>>> lm_kind_of({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
'causal'
>>> lm_kind_of({"model_type": "bert", "architectures": ["BertModel"]}) is None
True
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

from biastest.errors import ModelKindError

__all__ = [
    "MSG_ENCODER_DECODER",
    "MSG_NOT_A_LANGUAGE_MODEL",
    "detect_kind",
    "detect_vlm_kind",
    "lm_kind_of",
    "lm_mapping_names",
    "vlm_kind_of",
]

MSG_NOT_A_LANGUAGE_MODEL = (
    "The model '{model_id}' (type '{model_type}') is not a language model that can score sentences: it is neither "
    "a masked language model (like bert-base-uncased) nor a causal one (like gpt2). Choose a language model."
)
MSG_ENCODER_DECODER = (
    "The model '{model_id}' (type '{model_type}') is an encoder-decoder model; the stereotype score needs a masked "
    "language model (like bert-base-uncased) or a causal one (like gpt2). Choose one of those."
)

_TEXT_ENCODER_ONLY_SUFFIXES = ("VisionModel", "TextModel", "VisionModelWithProjection", "TextModelWithProjection")
_CONFIG_KEYS = ("model_type", "architectures", "is_encoder_decoder", "is_decoder")


# ---------------------------------------------------------------------- language models
def lm_mapping_names() -> tuple[dict[str, str], dict[str, str]]:
    """transformers' masked-LM and causal-LM mappings: model type → class name."""
    from transformers.models.auto.modeling_auto import (  # late: transformers is heavy (module docstring)
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    return dict(MODEL_FOR_MASKED_LM_MAPPING_NAMES), dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def detect_kind(config: Any, *, model_id: str = "") -> str:
    """The language-model kind of a configuration: ``"masked"`` or ``"causal"``.

    Rules, in order: an encoder-decoder model is refused; an architecture
    named in ``config.architectures`` that is one of transformers' causal-LM
    classes gives ``causal``, a masked-LM class gives ``masked``; otherwise
    ``config.model_type`` is looked up in the masked-LM and causal-LM
    mappings (a type in both is causal only if ``config.is_decoder``).

    Raises
    ------
    ModelKindError
        :data:`MSG_NOT_A_LANGUAGE_MODEL` or :data:`MSG_ENCODER_DECODER`.
    """
    masked, causal = lm_mapping_names()
    model_type = str(getattr(config, "model_type", "") or "")
    if getattr(config, "is_encoder_decoder", False):
        raise ModelKindError(MSG_ENCODER_DECODER.format(model_id=model_id, model_type=model_type), model_id=model_id)
    causal_classes, masked_classes = set(causal.values()), set(masked.values())
    for arch in getattr(config, "architectures", None) or ():
        if arch in causal_classes:
            return "causal"
        if arch in masked_classes:
            return "masked"
    in_masked, in_causal = model_type in masked, model_type in causal
    if in_masked and in_causal:
        return "causal" if getattr(config, "is_decoder", False) else "masked"
    if in_masked:
        return "masked"
    if in_causal:
        return "causal"
    raise ModelKindError(MSG_NOT_A_LANGUAGE_MODEL.format(model_id=model_id, model_type=model_type), model_id=model_id)


def lm_kind_of(config: dict[str, Any]) -> str | None:
    """'masked' or 'causal' for a language model with its prediction head; None otherwise."""
    try:
        kind = detect_kind(SimpleNamespace(**{k: config.get(k) for k in _CONFIG_KEYS}))
    except ModelKindError:
        return None
    archs = [str(a) for a in config.get("architectures") or ()]
    masked, causal = lm_mapping_names()
    if archs and not set(archs) & (set(masked.values()) | set(causal.values())):
        return None  # e.g. BertModel: a checkpoint without the head the scoring needs
    return kind


# ---------------------------------------------------------------------- vision-language models
def _candidate_classes(config: Any) -> list[type]:
    """Model classes named by the config (``architectures``), then the Auto mappings' defaults."""
    import transformers  # late: transformers is heavy (module docstring)
    from transformers.models.auto import modeling_auto as ma  # late: heavy

    out: list[type] = []
    for name in getattr(config, "architectures", None) or ():
        cls = getattr(transformers, str(name), None)
        if isinstance(cls, type):
            out.append(cls)
    mappings = (
        ma.MODEL_FOR_VISUAL_QUESTION_ANSWERING_MAPPING_NAMES,
        ma.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        ma.MODEL_MAPPING_NAMES,
    )
    model_type = getattr(config, "model_type", None)
    for mapping in mappings:
        name = mapping.get(model_type) if model_type else None
        if isinstance(name, tuple | list):
            name = name[0] if name else None
        cls = getattr(transformers, str(name), None) if name else None
        if isinstance(cls, type) and cls not in out:
            out.append(cls)
    return out


def _accepts(cls: type, name: str) -> bool:
    try:
        return name in inspect.signature(cls.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - defensive
        return False


def _kind_of_class(cls: type, config: Any) -> str | None:
    from transformers.models.auto import modeling_auto as ma  # late: transformers is heavy

    name = cls.__name__
    if name.endswith(_TEXT_ENCODER_ONLY_SUFFIXES):
        return None
    if hasattr(cls, "get_image_features") and hasattr(cls, "get_text_features"):
        return "clip"
    vqa_classes = set(ma.MODEL_FOR_VISUAL_QUESTION_ANSWERING_MAPPING_NAMES.values())
    can_generate = bool(getattr(cls, "can_generate", lambda: False)())
    if name in vqa_classes and not can_generate:
        return "vqa-classifier"
    if can_generate and _accepts(cls, "pixel_values") and _accepts(cls, "input_ids"):
        return "generative"
    return None


def detect_vlm_kind(config: Any) -> tuple[str, type] | None:
    """Decide the vision-language kind of a model from its configuration.

    Parameters
    ----------
    config : transformers.PretrainedConfig

    Returns
    -------
    (kind, class) or None
        ``kind`` in :data:`biastest.models.vlm.VLM_KINDS` and the transformers model class to load;
        None when the model is not a vision-language model.
    """
    for cls in _candidate_classes(config):
        kind = _kind_of_class(cls, config)
        if kind is not None:
            return kind, cls
    return None


def vlm_kind_of(config: dict[str, Any]) -> str | None:
    """The vision-language kind (``clip``, ``vqa-classifier``, ``generative``) of a ``config.json``; None otherwise."""
    try:
        found = detect_vlm_kind(SimpleNamespace(**{k: config.get(k) for k in _CONFIG_KEYS}))
    except Exception:  # an unknown architecture name: not one this app can load
        return None
    return None if found is None else found[0]
