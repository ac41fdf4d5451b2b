"""Build a model backend from a small reference record: in this process or behind an endpoint, one call.

A measure holds a :class:`ModelRef` (what the user chose: a model id with its
revision, device and precision, or an :class:`EndpointRef`) and asks the
factory for the backend of its kind; it never writes ``if endpoint is not
None``. What comes back satisfies a protocol of :mod:`biastest.models.protocols`,
and the measure calls its requests:

===========================================  =========================================  ==========================
function                                     in this process                            behind an endpoint
===========================================  =========================================  ==========================
:func:`language_model_kind`                  ``masked`` or ``causal``, from the         ``causal``
                                             configuration (no weights)
:func:`language_model`                       ``MaskedLanguageModel``                    ``EndpointCausalLM``
                                             (:class:`~.protocols.MaskedLM`) or         (``CausalLM`` with a
                                             ``CausalLanguageModel``                    tokenizer, else
                                             (:class:`~.protocols.CausalLM`)            ``TextCausalLM``)
:func:`vision_language_model`                ``ClipLikeModel`` (``ContrastiveVLM``),    ``EndpointVLM``
                                             ``VQAClassifierModel``                     (:class:`~.protocols.ChatVLM`)
                                             (``AnswerClassifierVLM``),
                                             ``GenerativeVLM`` (``AnswerGeneratorVLM``)
:func:`chat_model`                           ``LocalChatLM`` (an instruct model and     ``EndpointChatLM``
                                             its chat template,                         (``ChatLM``, the OpenAI
                                             :class:`~.protocols.ChatLM`)               chat protocol)
:func:`word_vectors`                         any embedding source                       —
                                             (:class:`~.protocols.WordVectors`)
===========================================  =========================================  ==========================

:func:`chat_model` with ``cache_dir`` puts either behind the response cache
(:class:`~biastest.models.response_cache.CachedChatLM`, also a ``ChatLM``).

In-process models load once per process through the shared
:data:`~biastest.models.cache.MODEL_CACHE` (the key: adapter kind, id, revision,
device, precision). An endpoint backend is built anew by every call: it holds
the API key in its client and counts one run's requests, time and stops, so it
is never shared between runs or users (it also refuses to be pickled).

A measure that words its progress or provenance by where the model is served
reads the reference (:attr:`ModelRef.served_by`, :attr:`ModelRef.where`), and
asks the backend which protocol it satisfies where the scoring differs
(``isinstance(lm, TextCausalLM)``, ``isinstance(vlm, ChatVLM)``), never which
class it is.

The API key is a keyword of the call, never a field of a record: a record's
:meth:`~ModelRef.dump` goes into provenance and result files, and the key must
not. The dump also writes the endpoint's address without credentials or query.

Examples
--------
>>> ref = ModelRef(model_id="my-llama", endpoint=EndpointRef(base_url="http://127.0.0.1:8000/v1"))
>>> ref.served_by, ref.dump()["endpoint"]["base_url"]
('endpoint', 'http://127.0.0.1:8000/v1')
>>> ModelRef(model_id="gpt2").dump()
{'model_id': 'gpt2', 'revision': None, 'device': 'auto', 'dtype': 'auto', 'kind': 'auto', 'endpoint': None}
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from biastest.models.cache import MODEL_CACHE, ModelCache
from biastest.models.embeddings import WordEmbeddings, load_embeddings
from biastest.models.endpoint_chat import EndpointChatLM
from biastest.models.endpoint_lm import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TIME_LIMIT,
    EndpointCausalLM,
)
from biastest.models.endpoint_vlm import EndpointVLM
from biastest.models.lm import detect_model_kind, load_language_model
from biastest.models.local_chat import LocalChatLM
from biastest.models.protocols import (
    AnswerClassifierVLM,
    AnswerGeneratorVLM,
    CausalLM,
    ChatLM,
    ChatVLM,
    ContrastiveVLM,
    MaskedLM,
    TextCausalLM,
    TextClassifier,
    WordVectors,
)
from biastest.models.response_cache import CachedChatLM
from biastest.models.text_classifier import EndpointTextClassifier, load_text_classifier
from biastest.models.vlm import load_vlm
from biastest.remote import RetryPolicy, RunLimits, safe_base_url

__all__ = [
    "EndpointRef",
    "LanguageBackend",
    "ModelRef",
    "VisionLanguageBackend",
    "chat_model",
    "language_model",
    "language_model_kind",
    "text_classifier",
    "vision_language_model",
    "word_vectors",
]

#: What :func:`language_model` returns.
LanguageBackend = MaskedLM | CausalLM | TextCausalLM
#: What :func:`vision_language_model` returns.
VisionLanguageBackend = ContrastiveVLM | AnswerClassifierVLM | AnswerGeneratorVLM | ChatVLM


@dataclass(frozen=True)
class EndpointRef:
    """Where a served model answers, and the bounds of one run against it (no key).

    Attributes
    ----------
    base_url : str
        The API root, e.g. ``http://localhost:8000/v1`` (checked against the
        public-mode policy when the backend is built).
    tokenizer : str, False or None
        Language models only: a Hub id or folder of the served model's
        tokenizer (token-id prompts); False sends text; None tries the served
        name (:class:`~biastest.models.endpoint_lm.EndpointCausalLM`).
    concurrency : int
        Requests in flight at once.
    max_requests : int
        Request budget of one run, retries included.
    time_limit : float
        Wall-clock limit of one run, in seconds.
    request_timeout : float
        Time-out of one request, in seconds (at most ``time_limit``).
    """

    base_url: str
    tokenizer: str | bool | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    max_requests: int = DEFAULT_MAX_REQUESTS
    time_limit: float = DEFAULT_TIME_LIMIT
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT

    def limits(self) -> RunLimits:
        """The run's :class:`~biastest.remote.RunLimits` (a request never outlasts the run)."""
        return RunLimits(max_requests=self.max_requests, max_seconds=float(self.time_limit),
                         request_timeout=float(min(self.request_timeout, self.time_limit)))

    @property
    def where(self) -> str:
        """The address for messages and provenance, as the backend shows it (stripped; no credentials, no query)."""
        return safe_base_url(str(self.base_url).strip())

    def dump(self) -> dict[str, Any]:
        """JSON-ready, the address without credentials or query."""
        return {**asdict(self), "base_url": safe_base_url(self.base_url)}


@dataclass(frozen=True)
class ModelRef:
    """Which model a measure tests: one in this process, or one behind an endpoint.

    Attributes
    ----------
    model_id : str
        A Hugging Face Hub id or a folder; behind an endpoint, the name the
        server serves the model under.
    revision : str or None
        Hub branch, tag or commit (of the tokenizer, behind an endpoint).
    device : str
        ``auto``, ``cpu``, ``cuda`` or ``mps`` (in this process).
    dtype : str
        ``auto``, ``float32``, ``float16`` or ``bfloat16`` (in this process).
    kind : str
        Language models: ``auto``, ``masked`` or ``causal`` (in this process).
    endpoint : EndpointRef or None
        Set for a model behind an endpoint.
    """

    model_id: str
    revision: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    kind: str = "auto"
    endpoint: EndpointRef | None = None

    @property
    def served_by(self) -> str:
        """``process`` or ``endpoint``."""
        return "process" if self.endpoint is None else "endpoint"

    @property
    def where(self) -> str | None:
        """The endpoint's address for messages and provenance (:attr:`EndpointRef.where`); None in this process."""
        return None if self.endpoint is None else self.endpoint.where

    def served_at(self) -> dict[str, str]:
        """What provenance adds for where the model is served: ``{"endpoint": address}``, or nothing here."""
        return {} if self.endpoint is None else {"endpoint": self.endpoint.where}

    def dump(self) -> dict[str, Any]:
        """JSON-ready, for provenance (never a key: the record holds none)."""
        return {"model_id": self.model_id, "revision": self.revision, "device": self.device, "dtype": self.dtype,
                "kind": self.kind, "endpoint": None if self.endpoint is None else self.endpoint.dump()}


def language_model_kind(ref: ModelRef) -> str:
    """``masked`` or ``causal``: the kind of the language model ``ref`` names, known before any weights load.

    In this process it is read from the model's configuration
    (:func:`~biastest.models.lm.detect_model_kind`), so a measure can refuse a
    method that does not apply before loading; behind an endpoint it is
    ``causal`` (the completions protocol scores a text left to right), and
    nothing is sent.

    Raises
    ------
    ModelLoadError, ModelKindError
        In this process: no such model, or not a masked or causal language model.
    """
    return "causal" if ref.endpoint is not None else detect_model_kind(ref.model_id, revision=ref.revision)


def language_model(ref: ModelRef, *, api_key: str | None = None, cache: ModelCache | None = MODEL_CACHE,
                   retry: RetryPolicy | None = None, seed: int = 0,
                   cancel: threading.Event | None = None) -> LanguageBackend:
    """The language model ``ref`` names, loaded once per process or reached at its endpoint.

    Parameters
    ----------
    ref : ModelRef
    api_key : str, optional
        The endpoint's key, held by the backend's client for this run only.
    cache : ModelCache or None
        In-process models (default: the process-wide cache; None loads without caching).
    retry, seed, cancel :
        Endpoint runs: retries with backoff (default
        :func:`~biastest.models.endpoint_lm.default_retry`), the jitter's seed,
        an event that stops the run early (what was scored is kept).

    Returns
    -------
    MaskedLanguageModel, CausalLanguageModel or EndpointCausalLM

    Raises
    ------
    ModelLoadError, ModelKindError
        In this process (:func:`~biastest.models.lm.load_language_model`).
    OptionError, PolicyError
        A bad endpoint address or one that public mode refuses.
    """
    if ref.endpoint is None:
        return load_language_model(ref.model_id, revision=ref.revision, kind=ref.kind, device=ref.device,
                                   dtype=ref.dtype, cache=cache)
    end = ref.endpoint
    return EndpointCausalLM(end.base_url, ref.model_id, api_key=api_key, tokenizer=end.tokenizer,
                            revision=ref.revision, concurrency=end.concurrency, limits=end.limits(), retry=retry,
                            seed=seed, cancel=cancel)


def vision_language_model(ref: ModelRef, *, api_key: str | None = None, cache: ModelCache | None = None,
                          retry: RetryPolicy | None = None, seed: int = 0,
                          cancel: threading.Event | None = None) -> VisionLanguageBackend:
    """The vision-language model ``ref`` names, loaded once per process or reached at its endpoint.

    Parameters are those of :func:`language_model`, except ``cache``: None
    (default) is the process-wide cache, as :func:`~biastest.models.vlm.load_vlm`
    has it. ``ref.kind`` and ``ref.endpoint.tokenizer`` are not used: the kind
    comes from the model's configuration, and a chat endpoint takes the images
    and the text as they are.

    Returns
    -------
    ClipLikeModel, VQAClassifierModel, GenerativeVLM or EndpointVLM

    Raises
    ------
    ModelLoadError, ModelKindError
        In this process (:func:`~biastest.models.vlm.load_vlm`).
    OptionError, PolicyError
        No served name, a bad endpoint address or one that public mode refuses.
    """
    if ref.endpoint is None:
        return load_vlm(ref.model_id, revision=ref.revision, device=ref.device, dtype=ref.dtype, cache=cache)
    end = ref.endpoint
    return EndpointVLM(end.base_url, ref.model_id, api_key=api_key, concurrency=end.concurrency,
                       limits=end.limits(), retry=retry, seed=seed, cancel=cancel)


def chat_model(ref: ModelRef, *, api_key: str | None = None, cache_dir: Path | None = None,
               retry: RetryPolicy | None = None, seed: int = 0, cancel: threading.Event | None = None) -> ChatLM:
    """The model that answers which ``ref`` names: in this process or at its endpoint, behind the response cache.

    Parameters
    ----------
    ref : ModelRef
        In this process: an instruct model with a chat template (``device`` and
        ``dtype`` apply; ``kind`` is not used). Behind an endpoint: the name it
        serves, at an OpenAI-compatible chat endpoint (``tokenizer`` is not used).
    api_key : str, optional
        The endpoint's key, held by the backend's client for this run only.
    cache_dir : Path, optional
        The response cache's folder
        (:func:`~biastest.models.response_cache.default_cache_dir` for the data
        dir); None asks every question.
    retry, seed, cancel :
        As :func:`language_model` (a model in this process looks at ``cancel``
        before each question).

    Returns
    -------
    LocalChatLM, EndpointChatLM, or either in a CachedChatLM

    Raises
    ------
    ModelLoadError, ModelKindError
        In this process: no such model, not a text-generation model, no chat template.
    OptionError, PolicyError
        No served name, a bad endpoint address or one that public mode refuses.
    """
    if ref.endpoint is None:
        model: ChatLM = LocalChatLM(ref.model_id, revision=ref.revision, device=ref.device, dtype=ref.dtype,
                                    cancel=cancel)
    else:
        end = ref.endpoint
        model = EndpointChatLM(end.base_url, ref.model_id, api_key=api_key, concurrency=end.concurrency,
                               limits=end.limits(), retry=retry, seed=seed, cancel=cancel)
    return model if cache_dir is None else CachedChatLM(model, cache_dir)


def word_vectors(source: str | WordEmbeddings, *, cache: ModelCache | None = None,
                 trust_pickle: bool = False) -> WordVectors:
    """The embedding source ``source`` names (:func:`~biastest.models.embeddings.load_embeddings`), loaded once.

    Word embeddings run in this process only; ``trust_pickle`` is the
    operator's opt-in for a trusted gensim pickle file (never for uploads).
    """
    return load_embeddings(source, cache=cache, trust_pickle=trust_pickle)


def text_classifier(ref: ModelRef, *, api_key: str | None = None, batch_size: int = 32,
                    cache: ModelCache | None = MODEL_CACHE, retry: RetryPolicy | None = None, seed: int = 0,
                    cancel: threading.Event | None = None) -> TextClassifier:
    """The text classifier ``ref`` names: a sequence-classification model in this process, or one behind an endpoint.

    Parameters
    ----------
    ref : ModelRef
        In this process: a Hub id or folder (``revision``, ``device``, ``dtype`` apply). Behind an endpoint:
        ``ref.endpoint.base_url`` is the full address that takes ``POST {"inputs": [...]}`` and answers label
        scores; ``model_id`` names it in messages and provenance.
    api_key : str, optional
        The endpoint's key, for this run only.
    batch_size : int
        Texts per forward pass or per request.
    cache, retry, seed, cancel :
        As :func:`language_model`.

    Returns
    -------
    LocalTextClassifier or EndpointTextClassifier

    Raises
    ------
    ModelLoadError, ModelKindError
        In this process (:func:`~biastest.models.text_classifier.load_text_classifier`).
    OptionError, PolicyError
        A bad endpoint address or one that public mode refuses.
    """
    if ref.endpoint is None:
        return load_text_classifier(ref.model_id, revision=ref.revision, device=ref.device, dtype=ref.dtype,
                                    batch_size=batch_size, cache=cache)
    end = ref.endpoint
    return EndpointTextClassifier(end.base_url, ref.model_id, api_key=api_key, batch_size=batch_size,
                                  limits=end.limits(), retry=retry, seed=seed, cancel=cancel)
