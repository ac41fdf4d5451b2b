"""The options of a stereotype-score test: one checked record for the app, the command line and the audit.

Every value a user can set for the test lives here with its default (the same defaults the app, the
command line and the audit grid show), its bound (:data:`biastest.options.BOUNDS`, checked by
:class:`~biastest.measures.base.OptionsBase`) and its own check: the scoring method
(:func:`~biastest.measures.stereotype.score.get_method`), the clustering
(:func:`~biastest.measures.stereotype.clusters.check_clusters`), and, for a model behind an endpoint, that
the method can be scored there (:func:`check_endpoint_method`). All of it is checked before any model
loads. The endpoint's API key is not an option: it is given to
:func:`~biastest.measures.stereotype.run.run` for one call and never recorded.

Examples
--------
>>> o = StereotypeOptions.parse(model_id="gpt2", method="causal-sum", seed=42)
>>> o.n_resamples, o.clusters, o.batch_size
(10000, 'auto', 32)
>>> StereotypeOptions.parse(model_id="gpt2", method="causal-sum", seed=42, endpoint="http://x/v1",
...                         clusters="template").clusters
'template'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from biastest.errors import MethodError
from biastest.measures.base import OptionsBase, cli_flag
from biastest.measures.stereotype.clusters import DEFAULT_CLUSTERS, check_clusters
from biastest.measures.stereotype.score import DEFAULT_BATCH_SIZE, DEFAULT_TIE_TOLERANCE, get_method
from biastest.models.endpoint_lm import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TIME_LIMIT,
)
from biastest.models.factory import EndpointRef, ModelRef
from biastest.options import DEFAULT_CONFIDENCE, check_option

__all__ = ["DEFAULT_N_RESAMPLES", "MSG_MASKED_NEEDS_PROCESS", "StereotypeOptions", "check_endpoint_method"]

#: Bootstrap resamples of the stereotype score (the app's, the command line's and the audit's default).
DEFAULT_N_RESAMPLES = 10_000

MSG_MASKED_NEEDS_PROCESS = (
    "The scoring method '{method}' is for masked language models, which must run in this process: an endpoint gives "
    "the log-probabilities of a text read left to right, not of hidden words. Through an endpoint, use causal-sum or "
    "causal-diff-span."
)


def check_endpoint_method(method: str) -> str:
    """The method if it works through an endpoint; masked-LM methods are refused.

    Raises
    ------
    MethodError
        :data:`MSG_MASKED_NEEDS_PROCESS` for a method of masked language
        models; an unknown name gets the registry's message.

    Examples
    --------
    >>> check_endpoint_method("causal-sum")
    'causal-sum'
    >>> check_endpoint_method("pll-unmodified")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    biastest.errors.MethodError: The scoring method 'pll-unmodified' is for masked language models, which must run ...
    """
    m = get_method(method)
    if "causal" not in m.kinds:
        raise MethodError(MSG_MASKED_NEEDS_PROCESS.format(method=m.name), method=m.name)
    return m.name


class StereotypeOptions(OptionsBase):
    """Everything a stereotype-score test can be told, checked (see the module docstring).

    Attributes
    ----------
    seed : int
        Seed of the bootstrap intervals (recorded). Required.
    n_resamples, confidence :
        Bootstrap settings.
    batch_size : int
        Sequences per forward pass (prompts per request through an endpoint).
    tie_tolerance : float
        Score differences within this (nats) are ties.
    concurrency, max_requests, time_limit, request_timeout :
        Through an endpoint: requests in flight at once, the request budget (retries included), the
        overall time limit and one request's time-out, in seconds.
    clusters : {"auto", "template", "attribute-term", "pair"}
        How pairs group into independent clusters for the cluster-aware interval and test.
    keep_non_minimal : bool
        Keep pairs whose sentences differ in more than the group term and the words that agree with it
        (:mod:`biastest.generate.minimal`); by default they are left out of the test and counted. For
        reproducing published results on data sets with such pairs; recorded in the result.
    method : str
        A scoring method (:data:`~biastest.measures.stereotype.score.METHODS`); stored by its registry name.
    model_id : str
        Hub id or local folder of a masked or causal LM, or the name an endpoint serves. Required.
    revision : str, optional
        Hub revision (branch, tag, commit); also the tokenizer's through an endpoint.
    device, dtype : str
        See :func:`biastest.models.lm.load_language_model` (a model in this process only).
    endpoint : str, optional
        API root of a server that serves ``model_id`` (e.g. ``http://localhost:8000/v1``).
    tokenizer : str, False or None
        Through an endpoint: the served model's tokenizer (Hub id or folder) for token-id prompts;
        ``False`` sends text; None tries ``model_id`` and sends text if that fails.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=False, protected_namespaces=())

    seed: int = Field(
        json_schema_extra=cli_flag("--seed",
            "seed of the bootstrap intervals (default 0, as the app); recorded"))
    n_resamples: int = Field(
        DEFAULT_N_RESAMPLES, json_schema_extra=cli_flag("--bootstrap",
            "bootstrap resamples of the score's intervals (default 10000)",
            metavar="N"))
    confidence: float = Field(
        DEFAULT_CONFIDENCE, json_schema_extra=cli_flag("--confidence",
            "level of the intervals (default 0.95)",
            metavar="LEVEL"))
    batch_size: int = Field(
        DEFAULT_BATCH_SIZE, json_schema_extra=cli_flag("--batch-size",
            "sentences per forward pass, or prompts per request (default 32)"))
    tie_tolerance: float = Field(
        DEFAULT_TIE_TOLERANCE, json_schema_extra=cli_flag("--tie-tolerance",
            "score differences within this (nats) are ties"))
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
            "items that lean together, for the cluster-aware interval and test: auto (default: template, else "
            "pair; resampled within attribute terms), template, attribute-term or pair"))
    keep_non_minimal: bool = Field(
        False, json_schema_extra=cli_flag("--keep-non-minimal",
            "keep pairs that differ in more than the group term and the words agreeing with it (default: left "
            "out and counted); for reproducing published results; recorded"))
    method: str = Field(
        json_schema_extra=cli_flag("--method",
            "scoring method (list-methods --kind lm; default: the first for the model kind)"))
    model_id: str = Field(
        json_schema_extra=cli_flag("--model",
            "Hub id or local folder of the model (with --endpoint: the name the server serves)"))
    revision: str | None = Field(
        None, json_schema_extra=cli_flag("--revision",
            "Hub revision (branch, tag or commit)"))
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
            "API root of an OpenAI-compatible server that serves --model (vLLM: http://localhost:8000/v1), scored"
            " through its completions (causal-sum and causal-diff-span only)",
            metavar="URL"))
    tokenizer: str | bool | None = Field(
        None, json_schema_extra=cli_flag("--tokenizer",
            "the served model's tokenizer (Hub id or folder): token-id prompts, scores equal to in-process ones "
            "(default: try --model; 'none' sends text for the server to tokenize)",
            metavar="ID_OR_FOLDER", endpoint="only"))

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None = None, /, **more: Any) -> Self:
        """As :meth:`OptionsBase.parse`; a required number given as ``None`` gets its bound's message."""
        given = {**dict(values or {}), **more}
        for name in ("seed",):
            if name in given and given[name] is None:
                check_option(name, None)
        return super().parse(given)

    @field_validator("clusters", mode="before")
    @classmethod
    def _clusters(cls, value: Any) -> str:
        return check_clusters(value)

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> str:
        return get_method(value).name

    @model_validator(mode="after")
    def _endpoint_method(self) -> Self:
        if self.endpoint is not None:
            check_endpoint_method(self.method)  # masked-LM methods need the model in this process
        return self

    def model_ref(self) -> ModelRef:
        """The model these options name, for :func:`biastest.models.factory.language_model`."""
        endpoint = None if self.endpoint is None else EndpointRef(
            self.endpoint, tokenizer=self.tokenizer, concurrency=self.concurrency, max_requests=self.max_requests,
            time_limit=self.time_limit, request_timeout=self.request_timeout)
        return ModelRef(self.model_id, revision=self.revision, device=self.device, dtype=self.dtype,
                        endpoint=endpoint)
