"""What every measure that asks a chat model shares: the model's options and how the backend is built.

The forced-choice and BBQ measures (and any later measure that asks a model
questions) subclass :class:`ChatModelOptions` for the model (one in this
process with its chat template, or one behind an OpenAI-compatible chat
endpoint), the sampling (temperature, samples per question and order, answer
length, seed) and the response cache, and build the backend with
:func:`build_chat_model`. The API key is never an option: it is passed to
the run for one call and never recorded.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pydantic import Field

from biastest.measures.base import OptionsBase, cli_flag
from biastest.models import factory
from biastest.models.endpoint_lm import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TIME_LIMIT,
)
from biastest.models.factory import EndpointRef, ModelRef
from biastest.models.protocols import ChatLM

__all__ = ["DEFAULT_MAX_ANSWER_TOKENS", "ChatModelOptions", "build_chat_model"]

#: Answer length asked for by default: enough for a label with a few words around it.
DEFAULT_MAX_ANSWER_TOKENS = 16


class ChatModelOptions(OptionsBase):
    """The model asked and how it is asked (base of a chat measure's options).

    Attributes
    ----------
    model_id : str
        Hub id or folder of an instruct model with a chat template (in this
        process), or the name an endpoint serves. Required.
    revision, device, dtype : str
        In this process: Hub revision, device, precision.
    endpoint : str, optional
        API root of an OpenAI-compatible chat endpoint (hosted API, vLLM,
        llama.cpp, Ollama's ``/v1``).
    concurrency, max_requests, time_limit, request_timeout :
        Through an endpoint: requests in flight, the request budget (retries
        included), the run's time limit and one request's time-out (seconds).
    temperature : float
        0 (default) asks for the most likely answer; above 0 samples.
    samples : int
        Answers asked per question and order (each its own request).
    max_answer_tokens : int
        Longest answer asked for.
    top_logprobs : int
        Alternatives asked per answer token, for the soft score (0: none;
        a server that refuses the field is asked without it).
    seed : int
        Seeds the sampling (sent as the API's ``seed``), the order shuffles and
        the bootstrap; recorded. Required.
    use_cache : bool
        Read and write the response cache (a rerun asks nothing twice).
    """

    model_id: str = Field(
        json_schema_extra=cli_flag("--model",
            "Hub id or folder of an instruct model (with --endpoint: the name the server serves)"))
    revision: str | None = Field(
        None, json_schema_extra=cli_flag("--revision", "Hub revision (branch, tag or commit)", endpoint="never"))
    device: str = Field(
        "auto", json_schema_extra=cli_flag("--device", "auto, cpu, cuda … (default auto)", endpoint="never"))
    dtype: str = Field(
        "auto", json_schema_extra=cli_flag("--dtype", "auto, float32, float16, bfloat16 (default auto)",
                                           endpoint="never"))
    endpoint: str | None = Field(
        None, json_schema_extra=cli_flag("--endpoint",
            "API root of an OpenAI-compatible chat endpoint that serves --model (e.g. http://localhost:8000/v1)",
            metavar="URL"))
    concurrency: int = Field(
        DEFAULT_CONCURRENCY, json_schema_extra=cli_flag("--concurrency", "requests in flight at once (default 4)",
                                                        endpoint="only"))
    max_requests: int = Field(
        DEFAULT_MAX_REQUESTS, json_schema_extra=cli_flag("--max-requests",
            "request budget, retries included (default 2000)", endpoint="only"))
    time_limit: float = Field(
        DEFAULT_TIME_LIMIT, json_schema_extra=cli_flag("--time-limit", "overall time limit (default 3600)",
                                                       metavar="SECONDS", endpoint="only"))
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    temperature: float = Field(
        0.0, json_schema_extra=cli_flag("--temperature", "0 (default): the most likely answer; above 0 samples"))
    samples: int = Field(
        1, json_schema_extra=cli_flag("--samples", "answers asked per question and order (default 1)", metavar="K"))
    max_answer_tokens: int = Field(
        DEFAULT_MAX_ANSWER_TOKENS, json_schema_extra=cli_flag("--max-answer-tokens",
            f"longest answer asked for (default {DEFAULT_MAX_ANSWER_TOKENS})", metavar="N"))
    top_logprobs: int = Field(
        5, json_schema_extra=cli_flag("--top-logprobs",
            "alternatives asked per answer token, for the soft score (default 5; 0: none)", metavar="N"))
    seed: int = Field(
        json_schema_extra=cli_flag("--seed", "seed of the sampling, the orders and the intervals; recorded"))
    use_cache: bool = True

    def model_ref(self) -> ModelRef:
        """The model these options name, for :func:`biastest.models.factory.chat_model`."""
        endpoint = None if self.endpoint is None else EndpointRef(
            self.endpoint, concurrency=self.concurrency, max_requests=self.max_requests,
            time_limit=self.time_limit, request_timeout=self.request_timeout)
        return ModelRef(self.model_id, revision=self.revision, device=self.device, dtype=self.dtype,
                        endpoint=endpoint)


def build_chat_model(options: ChatModelOptions, *, api_key: str | None = None, cache_dir: Path | None = None,
                     cancel: threading.Event | None = None, **more: Any) -> ChatLM:
    """The chat backend the options name, behind the response cache when ``options.use_cache`` and a folder is given.

    Parameters
    ----------
    options : ChatModelOptions
    api_key : str, optional
        The endpoint's key for this run only (never recorded).
    cache_dir : Path, optional
        The response cache's folder (in the data dir); None: no cache.
    cancel : threading.Event, optional
        Stops the run early; what was answered is kept.
    """
    return factory.chat_model(options.model_ref(), api_key=api_key,
                              cache_dir=cache_dir if options.use_cache else None,
                              seed=options.seed, cancel=cancel, **more)
