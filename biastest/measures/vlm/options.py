"""The vision-language measure's options: defaults, choices and checks in one place.

:class:`VLMOptions` is what the command line's ``run vlm`` flags, the audit grid's cells and the VQA app's
controls are validated by, before any model loads. Model identity (``model_id``, ``revision``, ``device``,
``dtype``, the ``endpoint`` address) is part of the options; the endpoint's key is not (it is a keyword of
:func:`biastest.measures.vlm.run.run`, never recorded).

Examples
--------
>>> VLMOptions.parse(model_id="tiny-clip").batch_size
16
>>> VLMOptions.parse(model_id="tiny-clip", combine="max")
Traceback (most recent call last):
...
biastest.errors.MethodError: Unknown way to combine several terms 'max'. Choose one of: sum-prob, mean-embedding.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from biastest.errors import MethodError, OptionError
from biastest.measures.base import OptionsBase, cli_flag
from biastest.models.endpoint_lm import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TIME_LIMIT,
)
from biastest.models.factory import EndpointRef, ModelRef
from biastest.models.vlm_question import MSG_BAD_QUESTION, MSG_EMPTY_QUESTION, check_question

__all__ = [
    "CLUSTERINGS",
    "CLUSTER_LABELS",
    "COMBINE_CHOICES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CLUSTERS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_QUESTION",
    "METHODS",
    "MSG_BAD_CLUSTERS",
    "MSG_BAD_COMBINE",
    "MSG_BAD_QUESTION",
    "MSG_BAD_TEMPLATE",
    "MSG_EMPTY_QUESTION",
    "MSG_NO_TEMPLATES",
    "PROMPT_TEMPLATES",
    "QUESTIONS",
    "VLMOptions",
    "check_clusters",
    "check_prompt_template",
    "check_question",
    "check_templates",
    "method_for_kind",
]

#: Images per forward pass (the app's, the command line's and the audit grid's default).
DEFAULT_BATCH_SIZE = 16

METHODS = {
    "clip": "clip-zero-shot",
    "vqa-classifier": "vqa-answer-softmax",
    "generative": "generative-answer-logprob",
}
COMBINE_CHOICES = ("sum-prob", "mean-embedding")

DEFAULT_PROMPT_TEMPLATE = "a photo of a {term}"
PROMPT_TEMPLATES = {
    "a photo of a {term}": "Photo (CLIP's default wording)",
    "a photo of a person who is {term}": "Person who is … (for adjectives)",
    "a portrait of a {term}": "Portrait",
    "a {term}": "Short",
    "{term}": "Term only",
}
DEFAULT_QUESTION = "Is this person a {T1} or a {T2}?"
QUESTIONS = {
    "Is this person a {T1} or a {T2}?": "Either/or question naming both target groups",
    "What is this person's job?": "Open question (professions)",
    "What kind of person is this?": "Open question (attributes)",
    "Who is this?": "Open question",
}

MSG_BAD_TEMPLATE = (
    "The prompt template {template!r} must contain the place for the target term exactly once, written {{term}} "
    "(or {{}}), for example 'a photo of a {{term}}'."
)
MSG_NO_TEMPLATES = "Choose at least one prompt template, for example 'a photo of a {term}'."
MSG_BAD_COMBINE = "Unknown way to combine several terms '{value}'. Choose one of: {choices}."

#: How images group into independent clusters for the cluster-aware interval and test.
CLUSTERINGS = ("auto", "image-prompt", "image-term", "image")
DEFAULT_CLUSTERS = "auto"
#: Plain words for each clustering (reports, the app's choice).
CLUSTER_LABELS = {
    "auto": "automatic (image prompt, else images independent; within image terms)",
    "image-prompt": "image prompt",
    "image-term": "image term",
    "image": "none (images independent)",
}
MSG_BAD_CLUSTERS = "Unknown clustering '{value}'. Choose one of: {choices}."


def check_prompt_template(template: str) -> str:
    """Validate a CLIP prompt template; return it with ``{}`` written as ``{term}``.

    Raises
    ------
    MethodError
        :data:`MSG_BAD_TEMPLATE`.
    """
    if not isinstance(template, str):
        raise MethodError(MSG_BAD_TEMPLATE.format(template=template))
    normal = template.replace("{}", "{term}")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(normal) if f is not None]
    except ValueError:
        raise MethodError(MSG_BAD_TEMPLATE.format(template=template)) from None
    if fields != ["term"]:
        raise MethodError(MSG_BAD_TEMPLATE.format(template=template))
    return normal


def check_templates(templates: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(templates, str):
        templates = (templates,)
    out = tuple(check_prompt_template(t) for t in templates)
    if not out:
        raise MethodError(MSG_NO_TEMPLATES)
    if len(set(out)) != len(out):
        out = tuple(dict.fromkeys(out))
    return out



def method_for_kind(kind: str) -> str:
    """Scoring method name for a model kind (:data:`METHODS`)."""
    return METHODS[kind]



def check_clusters(clusters: Any) -> str:
    """Validate a clustering name (:data:`CLUSTERINGS`; spaces and underscores read as hyphens).

    Raises
    ------
    OptionError
        :data:`MSG_BAD_CLUSTERS`.
    """
    name = clusters.strip().lower().replace(" ", "-").replace("_", "-") if isinstance(clusters, str) else None
    if name not in CLUSTERINGS:
        raise OptionError(MSG_BAD_CLUSTERS.format(value=clusters, choices=", ".join(CLUSTERINGS)),
                          option="clusters", value=clusters)
    return name


class VLMOptions(OptionsBase):
    """Every option of a vision-language test of one model (see :func:`biastest.measures.vlm.run.run`).

    Parameters
    ----------
    model_id : str
        Hugging Face Hub id or local folder of a CLIP-like, VQA or generative model, or the model's name at
        ``endpoint``.
    prompt_template : tuple of str
        CLIP-like models: template(s) with ``{term}`` (or ``{}``; stored as ``{term}``).
    question : str
        VQA and generative models (and endpoints): the question, with optional ``{T1}``/``{T2}``.
    combine : {"sum-prob", "mean-embedding"}
        CLIP-like models: how several prompts of a group are combined.
    seed, n_resamples, confidence :
        Bootstrap settings (the seed is recorded).
    batch_size : int
        Images per forward pass.
    max_new_tokens : int
        Generative models and endpoints: length of the model's own answer.
    revision, device, dtype :
        Model loading options (in this process).
    endpoint : str, optional
        API root of an OpenAI-compatible chat server that serves ``model_id`` and reads images; then
        ``prompt_template``, ``combine``, ``batch_size``, ``revision``, ``device`` and ``dtype`` do not apply.
    concurrency, max_requests, time_limit, request_timeout :
        Endpoint limits: requests in flight, the request budget (retries included), the overall time limit and
        one request's time-out, in seconds.
    clusters : {"auto", "image-prompt", "image-term", "image"}
        How images group into independent clusters for the cluster-aware intervals and tests.
    """

    model_id: str = Field(
        json_schema_extra=cli_flag("--model",
            "Hub id or local folder of the model (with --endpoint: the name the server serves)"))
    prompt_template: tuple[str, ...] = Field(
        (DEFAULT_PROMPT_TEMPLATE,), json_schema_extra=cli_flag("--prompt-template",
            "CLIP-like models: prompt with {term}; repeatable (default 'a photo of a {term}')",
            metavar="TEMPLATE", endpoint="never"))
    question: str = Field(
        DEFAULT_QUESTION, json_schema_extra=cli_flag("--question",
            "VQA and generative models: the question, with {T1} and {T2}"))
    combine: str = Field(
        "sum-prob", json_schema_extra=cli_flag("--combine",
            "CLIP-like models with several prompts: sum-prob or mean-embedding",
            endpoint="never"))
    seed: int = Field(
        0, json_schema_extra=cli_flag("--seed",
            "seed of the bootstrap intervals (default 0, as the app); recorded"))
    batch_size: int = Field(
        DEFAULT_BATCH_SIZE, json_schema_extra=cli_flag("--batch-size",
            "pictures per forward pass (default 16)",
            endpoint="never"))
    n_resamples: int = Field(
        10_000, json_schema_extra=cli_flag("--bootstrap",
            "bootstrap resamples of the score's intervals (default 10000)",
            metavar="N"))
    confidence: float = Field(
        0.95, json_schema_extra=cli_flag("--confidence",
            "level of the intervals (default 0.95)",
            metavar="LEVEL"))
    max_new_tokens: int = Field(
        8, json_schema_extra=cli_flag("--max-new-tokens",
            "generative models: length of the model's own answer"))
    revision: str | None = Field(
        None, json_schema_extra=cli_flag("--revision",
            "Hub revision (branch, tag or commit)",
            endpoint="never"))
    device: str = Field(
        "auto", json_schema_extra=cli_flag("--device",
            "auto, cpu, cuda … (default auto)",
            endpoint="never"))
    dtype: str = Field(
        "auto", json_schema_extra=cli_flag("--dtype",
            "auto, float32, float16, bfloat16 (default auto)",
            endpoint="never"))
    endpoint: str | None = Field(
        None, json_schema_extra=cli_flag("--endpoint",
            "API root of an OpenAI-compatible server that serves --model, asked through its chat with images (the"
            " question, the target terms as the allowed answers)",
            metavar="URL"))
    concurrency: int = Field(
        DEFAULT_CONCURRENCY, json_schema_extra=cli_flag("--concurrency",
            "requests in flight at once (default 4)",
            endpoint="only"))
    max_requests: int = Field(
        DEFAULT_MAX_REQUESTS, json_schema_extra=cli_flag("--max-requests",
            "request budget, retries included (default 2000)",
            endpoint="only"))
    time_limit: float = Field(
        DEFAULT_TIME_LIMIT, json_schema_extra=cli_flag("--time-limit",
            "overall time limit (default 3600)",
            metavar="SECONDS", endpoint="only"))
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    clusters: str = Field(
        DEFAULT_CLUSTERS, json_schema_extra=cli_flag("--clusters",
            "pictures that lean together: auto (default: image-prompt for generated pictures, else image; "
            "resampled within image terms), image-prompt, image-term or image"))

    @field_validator("prompt_template", mode="before")
    @classmethod
    def _templates(cls, value: Any) -> tuple[str, ...]:
        """One template or several, each checked (:data:`MSG_BAD_TEMPLATE`)."""
        values = (value,) if isinstance(value, str) else tuple(value)
        return tuple(check_prompt_template(t) for t in values)

    @field_validator("question", mode="before")
    @classmethod
    def _question(cls, value: Any) -> str:
        return check_question(value)

    @field_validator("combine", mode="before")
    @classmethod
    def _combine(cls, value: Any) -> str:
        if value not in COMBINE_CHOICES:
            raise MethodError(MSG_BAD_COMBINE.format(value=value, choices=", ".join(COMBINE_CHOICES)))
        return value

    @field_validator("clusters", mode="before")
    @classmethod
    def _clusters(cls, value: Any) -> str:
        return check_clusters(value)

    def model_ref(self) -> ModelRef:
        """The model these options name, for :func:`biastest.models.factory.vision_language_model`."""
        endpoint = None if self.endpoint is None else EndpointRef(
            self.endpoint, concurrency=self.concurrency, max_requests=self.max_requests, time_limit=self.time_limit,
            request_timeout=self.request_timeout)
        return ModelRef(self.model_id, revision=self.revision, device=self.device, dtype=self.dtype,
                        endpoint=endpoint)

