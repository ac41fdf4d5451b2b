"""Text classifiers as black boxes: a Hugging Face sequence-classification model in process, or one behind an HTTP
endpoint that returns label scores.

Both satisfy :class:`~biastest.models.protocols.TextClassifier`: ``labels`` (the model's label names, in column
order) and ``label_scores(texts)`` → a ``(n, k)`` float64 array of probabilities, one row per text; a text that
was not scored (the endpoint stopped answering, the run was stopped) is a row of NaN, never a made-up value.

* :class:`LocalTextClassifier` — ``AutoModelForSequenceClassification`` from a Hub id or a folder (loaded once per
  process through :data:`~biastest.models.cache.MODEL_CACHE`); the probabilities are the softmax of the logits
  (the sigmoid of each logit for a model configured ``multi_label_classification``); texts are scored in batches
  with padding and the attention mask, truncated to the model's length.
* :class:`EndpointTextClassifier` — ``POST {"inputs": [text, …]}`` to the address given, answered by one list of
  ``{"label", "score"}`` per text (the Hugging Face Inference API's and text-embeddings-inference ``/predict``'s
  form). Every request goes through :mod:`biastest.remote` (public-mode address check, pinned connections); 429,
  5xx, time-outs, broken connections and garbled answers are retried with backoff under one
  :class:`~biastest.remote.RunState` (request budget, time limit, stop signal). The labels are those of the first
  answer; every later answer must give the same labels.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import httpx2
import numpy as np

from biastest.errors import EndpointError, ModelKindError, OptionError
from biastest.models.base import (
    check_local_weights,
    commit_hash,
    load_config,
    model_cache_key,
    quiet_transformers,
    resolve_model_source,
    select_device,
    select_dtype,
    translate_load_error,
)
from biastest.models.cache import MODEL_CACHE, ModelCache
from biastest.models.protocols import ProgressCallback
from biastest.remote import (
    STOP_CANCELLED,
    RetryPolicy,
    RunLimits,
    RunState,
    RunStopped,
    TransientError,
    check_base_url,
    http_client,
    safe_base_url,
)

__all__ = [
    "MSG_BAD_CLASSIFIER_URL",
    "MSG_ENDPOINT_LABELS_CHANGED",
    "MSG_ENDPOINT_REFUSED",
    "MSG_ENDPOINT_STOPPED",
    "MSG_NOT_A_CLASSIFIER",
    "MSG_NO_TEXTS",
    "EndpointTextClassifier",
    "LocalTextClassifier",
    "load_text_classifier",
    "parse_label_scores",
]

MSG_NOT_A_CLASSIFIER = (
    "The model '{model}' is not a text-classification model (its configuration names {architectures}). Choose a "
    "sequence-classification model, e.g. distilbert-base-uncased-finetuned-sst-2-english."
)
MSG_BAD_CLASSIFIER_URL = (
    "The classifier address {value!r} is not a web address. Give the full address that takes "
    "POST {{\"inputs\": [...]}}, e.g. http://localhost:8080/predict."
)
MSG_ENDPOINT_REFUSED = "The classifier at {where} refused the request (HTTP {status}). Check the address and the key."
MSG_ENDPOINT_LABELS_CHANGED = (
    "The classifier at {where} answered with labels {got} after answering with {first}; the run cannot tell which "
    "score is which."
)
MSG_ENDPOINT_STOPPED = (
    "The classifier endpoint stopped the run ({reason}): {missing} of {total} texts were not scored; they are left "
    "out and counted, never guessed."
)
MSG_NO_TEXTS = "There are no texts to classify."
#: The text sent once to learn an endpoint's labels when none were asked yet.
PROBE_TEXT = "This is a sentence."


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class LocalTextClassifier:
    """A sequence-classification model in this process (see the module docstring).

    Built by :func:`load_text_classifier`; ``model``, ``tokenizer`` and ``config`` are the transformers objects.
    """

    kind: ClassVar[str] = "text-classifier"

    def __init__(self, *, model: Any, tokenizer: Any, config: Any, model_id: str, revision: str | None,
                 device: Any, batch_size: int = 32) -> None:
        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.model_id, self.revision, self.device = model_id, revision, device
        self.batch_size = int(batch_size)
        id2label = dict(getattr(config, "id2label", None) or {})
        n = int(getattr(config, "num_labels", len(id2label)) or len(id2label))
        self.labels: tuple[str, ...] = tuple(str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}")))
                                             for i in range(n))
        self.multi_label = getattr(config, "problem_type", None) == "multi_label_classification"
        self.stop_message: str | None = None

    def logits(self, texts: Sequence[str]) -> np.ndarray:
        """The model's logits, ``(n, k)`` float64, in batches of :attr:`batch_size`."""
        import torch  # late: heavy

        out = []
        limit = getattr(self.tokenizer, "model_max_length", None)
        limit = limit if isinstance(limit, int) and 0 < limit < 100_000 else None
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start:start + self.batch_size])
            enc = self.tokenizer(chunk, padding=True, truncation=limit is not None, max_length=limit,
                                 return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.no_grad():
                out.append(self.model(**enc).logits.detach().to("cpu", dtype=torch.float64).numpy())
        return np.concatenate(out, axis=0) if out else np.zeros((0, len(self.labels)))

    def label_scores(self, texts: Sequence[str], *, progress: ProgressCallback | None = None) -> np.ndarray:
        """Probabilities per label: softmax of the logits (sigmoid per label for a multi-label model)."""
        logits = self.logits(texts)
        if progress is not None:
            progress(len(texts), len(texts), "Classifying the sentences")
        if self.multi_label:
            return 1.0 / (1.0 + np.exp(-logits))
        return _softmax(logits)

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "revision": self.revision, "kind": self.kind, "labels": list(self.labels),
                "device": str(self.device), "served_by": "process",
                "scores": "sigmoid per label" if self.multi_label else "softmax of the logits"}


def _load(source: Any, *, device: Any, dtype: Any, batch_size: int) -> LocalTextClassifier:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer  # late: heavy

    quiet_transformers()
    config = load_config(source)
    architectures = list(getattr(config, "architectures", None) or [])
    if architectures and not any(a.endswith("ForSequenceClassification") for a in architectures):
        raise ModelKindError(MSG_NOT_A_CLASSIFIER.format(model=source.model_id, architectures=", ".join(architectures)),
                             model=source.model_id)
    check_local_weights(source)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.location, **source.pretrained_kwargs())
    except Exception as exc:
        raise translate_load_error(exc, source=source, what="tokenizer") from None
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            source.location, config=config, dtype=select_dtype(dtype, device=device, config=config),
            **source.pretrained_kwargs())
    except ValueError as exc:
        if "Unrecognized configuration class" in str(exc):
            raise ModelKindError(MSG_NOT_A_CLASSIFIER.format(model=source.model_id,
                                                             architectures=config.model_type),
                                 model=source.model_id) from None
        raise translate_load_error(exc, source=source) from None
    except Exception as exc:
        raise translate_load_error(exc, source=source) from None
    model.eval()
    model.to(device)
    return LocalTextClassifier(model=model, tokenizer=tokenizer, config=config, model_id=source.model_id,
                               revision=commit_hash(source, config, model) or source.revision, device=device,
                               batch_size=batch_size)


def load_text_classifier(model_id: str, *, revision: str | None = None, device: Any = "auto", dtype: Any = "auto",
                         batch_size: int = 32, cache: ModelCache | None = MODEL_CACHE) -> LocalTextClassifier:
    """A sequence-classification model from a Hub id or a folder, loaded once per process.

    Raises
    ------
    ModelLoadError
        No such model, no network and not cached, no weights (the messages of :mod:`biastest.models.base`).
    ModelKindError
        Not a sequence-classification model (:data:`MSG_NOT_A_CLASSIFIER`).
    """
    source = resolve_model_source(model_id, revision=revision)
    dev = select_device(device)
    key = (*model_cache_key("text-classifier", source, device=dev, dtype=dtype), str(batch_size))

    def loader() -> LocalTextClassifier:
        return _load(source, device=dev, dtype=dtype, batch_size=batch_size)

    return loader() if cache is None else cache.get(key, loader)


# --------------------------------------------------------------------------- behind an endpoint
def parse_label_scores(data: Any, n: int) -> list[dict[str, float]]:
    """The ``n`` answers of a label-scores API as ``{label: score}``; raises ``ValueError`` on anything else.

    Accepts ``[[{"label", "score"}, …], …]`` (one list per text) and, for one text, the flat ``[{"label",
    "score"}, …]``.

    >>> parse_label_scores([[{"label": "POS", "score": 0.9}, {"label": "NEG", "score": 0.1}]], 1)
    [{'POS': 0.9, 'NEG': 0.1}]
    """
    if not isinstance(data, list):
        raise ValueError("not a list")
    if n == 1 and data and all(isinstance(d, dict) for d in data):
        data = [data]
    if len(data) != n:
        raise ValueError("wrong number of answers")
    rows = []
    for row in data:
        if not isinstance(row, list) or not row:
            raise ValueError("not a list of labels")
        scores: dict[str, float] = {}
        for entry in row:
            if not isinstance(entry, dict) or not isinstance(entry.get("label"), str):
                raise ValueError("no label")
            score = entry.get("score")
            if isinstance(score, bool) or not isinstance(score, int | float) or not np.isfinite(score):
                raise ValueError("no score")
            scores[entry["label"]] = float(score)
        rows.append(scores)
    return rows


class EndpointTextClassifier:
    """A classifier behind an HTTP endpoint that returns label scores (see the module docstring).

    Parameters
    ----------
    url : str
        The full address that takes ``POST {"inputs": [...]}`` (checked with the public-mode policy).
    model_id : str
        A name for the model (messages, provenance); the request does not send it.
    api_key : str, optional
        Sent as ``Authorization: Bearer …``; never recorded.
    batch_size : int
        Texts per request.
    limits : RunLimits
    retry : RetryPolicy, optional
    seed : int
        Seeds the backoff jitter.
    cancel : threading.Event, optional
    """

    kind: ClassVar[str] = "text-classifier-endpoint"

    def __init__(self, url: str, model_id: str = "", *, api_key: str | None = None, batch_size: int = 32,
                 limits: RunLimits | None = None, retry: RetryPolicy | None = None, seed: int = 0,
                 cancel: threading.Event | None = None) -> None:
        if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
            raise OptionError(MSG_BAD_CLASSIFIER_URL.format(value=str(url)[:100]))
        self.url = check_base_url(url.strip())
        self.model_id = model_id or safe_base_url(self.url)
        self._key = api_key
        self.batch_size = int(batch_size)
        self.limits = limits or RunLimits(max_requests=2000, max_seconds=3600.0, request_timeout=120.0)
        self.retry = retry or RetryPolicy(max_retries=3, initial_delay=0.5, factor=2.0, max_delay=10.0)
        self._seed = seed
        self._cancel = cancel
        self._labels: tuple[str, ...] | None = None
        self.stop_message: str | None = None
        self.requests = 0
        self.transient: dict[str, int] = {}

    @property
    def where(self) -> str:
        return safe_base_url(self.url)

    def _post(self, texts: list[str], timeout: float) -> list[dict[str, float]]:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        try:
            with http_client(timeout) as client:
                response = client.post(self.url, content=json.dumps({"inputs": texts}), headers=headers)
        except httpx2.TimeoutException:
            raise TransientError("timeout") from None
        except httpx2.TransportError:
            raise TransientError("connection") from None
        status = response.status_code
        if status == 429 or status >= 500:
            retry_after = response.headers.get("retry-after")
            try:
                wait = float(retry_after) if retry_after is not None else None
            except ValueError:
                wait = None
            raise TransientError("rate_limit" if status == 429 else "server_error", retry_after=wait, status=status)
        if not 200 <= status < 300:
            raise EndpointError(MSG_ENDPOINT_REFUSED.format(where=self.where, status=status))
        try:
            return parse_label_scores(response.json(), len(texts))
        except ValueError:  # a garbled answer (a proxy's error page, a cut body): worth another try
            raise TransientError("malformed", status=status) from None

    def _ask(self, run: RunState, texts: list[str]) -> list[dict[str, float]]:
        return run.call(lambda timeout: self._post(texts, timeout), what="text classifier")

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels of the first answer (one request with :data:`PROBE_TEXT` when nothing was asked yet)."""
        if self._labels is None:
            run = RunState(self.limits, self.retry, seed=self._seed, cancel=self._cancel)
            try:
                self._labels = tuple(self._ask(run, [PROBE_TEXT])[0])
            finally:
                self._count(run)
        return self._labels

    def _count(self, run: RunState) -> None:
        self.requests += run.requests_used
        for kind, count in run.transient.items():
            self.transient[kind] = self.transient.get(kind, 0) + count

    def label_scores(self, texts: Sequence[str], *, progress: ProgressCallback | None = None) -> np.ndarray:
        """Probabilities per label as the endpoint gives them; NaN rows for texts the run did not score."""
        labels = self.labels
        out = np.full((len(texts), len(labels)), np.nan)
        run = RunState(self.limits, self.retry, seed=self._seed, cancel=self._cancel)
        self.stop_message = None
        done = 0
        try:
            for start in range(0, len(texts), self.batch_size):
                chunk = [str(t) for t in texts[start:start + self.batch_size]]
                rows = self._ask(run, chunk)
                for i, row in enumerate(rows):
                    if set(row) != set(labels):
                        raise EndpointError(MSG_ENDPOINT_LABELS_CHANGED.format(
                            where=self.where, got=sorted(row)[:10], first=list(labels)))
                    out[start + i] = [row[label] for label in labels]
                done += len(chunk)
                if progress is not None:
                    progress(done, len(texts), "Classifying the sentences")
        except RunStopped as exc:
            reason = STOP_CANCELLED if exc.reason == STOP_CANCELLED else exc.reason
            self.stop_message = MSG_ENDPOINT_STOPPED.format(reason=reason, missing=len(texts) - done,
                                                            total=len(texts))
        finally:
            self._count(run)
        return out

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "kind": self.kind, "endpoint": self.where, "served_by": "endpoint",
                "labels": list(self._labels or ()), "requests": self.requests, "transient": dict(self.transient),
                "batch_size": self.batch_size}
