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

from pydantic import ConfigDict, field_validator, model_validator

from biastest.errors import MethodError
from biastest.measures.base import OptionsBase
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

    seed: int
    n_resamples: int = DEFAULT_N_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    batch_size: int = DEFAULT_BATCH_SIZE
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE
    concurrency: int = DEFAULT_CONCURRENCY
    max_requests: int = DEFAULT_MAX_REQUESTS
    time_limit: float = DEFAULT_TIME_LIMIT
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    clusters: str = DEFAULT_CLUSTERS
    method: str
    model_id: str
    revision: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    endpoint: str | None = None
    tokenizer: str | bool | None = None

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
