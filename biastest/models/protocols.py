"""What a measure asks of a model: small protocols, one per kind of request.

A measure never asks *which* class it holds (a model in this process, one behind
an endpoint, a dummy in a test); it asks for a protocol and calls its request
methods. The protocols follow lm-evaluation-harness's ``lm_eval.api.model.LM``
(an interface of a handful of request methods) but are
:class:`typing.Protocol` classes, checked structurally: a backend satisfies one
by having its members, without inheriting from it. Each is
``runtime_checkable``, so ``isinstance(model, CausalLM)`` tells a measure (and
a test) whether a backend answers those requests. Such a check looks at the
*presence* of the members only, not at their signatures: the signatures below
are the contract, and ``tests/test_model_protocols.py`` runs every backend
through it. Presence is looked up with :func:`inspect.getattr_static` (as
Python 3.12 does; 3.11 reads each attribute, and reading
:class:`~biastest.models.endpoint_lm.EndpointCausalLM`'s ``max_length`` asks
the server), so an ``isinstance`` check never sends a request.

Every backend is a :class:`ModelBackend`: a ``model_id``, a ``kind`` and
``describe()`` (JSON-ready provenance, never a key). Then, by request:

================================  =============================================  ===================================
protocol                          requests                                       backends
================================  =============================================  ===================================
:class:`CausalLM`                 ``encode``, ``token_log_probs`` (token ids →   ``lm.CausalLanguageModel``,
                                  per-token log P), ``max_length``               ``endpoint_lm.EndpointCausalLM``,
                                                                                 ``dummy.DummyCausalLM``
:class:`TextCausalLM`             ``text_log_probs`` (the server tokenizes),     ``EndpointCausalLM``,
                                  ``check_method``                               ``DummyCausalLM``
:class:`MaskedLM`                 ``encode``, ``content_positions``,             ``lm.MaskedLanguageModel``,
                                  ``masked_log_probs``, ``tokenizer``            ``dummy.DummyMaskedLM``
:class:`ContrastiveVLM`           ``encode_text``, ``encode_images``,            ``vlm.ClipLikeModel``,
                                  ``ensemble_prompts``, ``similarities``,        ``dummy.DummyContrastiveVLM``
                                  ``logit_scale``
:class:`AnswerClassifierVLM`      ``answer_vocabulary``, ``label``,              ``vlm.VQAClassifierModel``,
                                  ``encode_question``, ``answer_logits``         ``dummy.DummyAnswerClassifierVLM``
:class:`AnswerGeneratorVLM`       ``prepare``, ``candidate_logprobs``,           ``vlm.GenerativeVLM``,
                                  ``generate_answers``                           ``dummy.DummyAnswerGeneratorVLM``
:class:`ChatVLM`                  ``ask`` (one chat answer per image)            ``endpoint_vlm.EndpointVLM``,
                                                                                 ``dummy.DummyChatVLM``
:class:`ChatLM`                   ``chat`` (one raw text answer per request)     ``endpoint_chat.EndpointChatLM``,
                                                                                 ``local_chat.LocalChatLM``,
                                                                                 ``response_cache.CachedChatLM``,
                                                                                 ``dummy.DummyChatLM``
:class:`TextClassifier`           ``labels``, ``label_scores`` (texts →          ``text_classifier``: its
                                  label probabilities, NaN rows unscored)        ``LocalTextClassifier`` and
                                                                                 ``EndpointTextClassifier``,
                                                                                 ``dummy.DummyTextClassifier``
:class:`WordVectors`              ``vectors``, ``lookup_report``,                ``embeddings.WordEmbeddings`` and
                                  ``vocabulary``, ``matrix``, ``describe``       its backends, ``DummyWordVectors``
================================  =============================================  ===================================

The vision-language protocols differ by request because the models answer
different questions: a CLIP-like model gives image-text similarities, a VQA
classifier logits over its answer vocabulary, a generative model the
log-probability of each candidate answer, and a model behind a chat endpoint
only its answer (with the log-probabilities of its first tokens where the
server gives them). A measure picks its scoring by the protocol the backend
satisfies; :mod:`biastest.models.factory` builds the backend from a reference.

Adding a model backend
----------------------
1. Pick the protocol whose requests the new backend can answer (or, for a new
   kind of request, add a protocol here with the fewest members a measure needs).
2. Write the class anywhere under :mod:`biastest.models`; it need not inherit
   from the protocol. Return numpy arrays (float64 log-probabilities), never
   tensors; a sentence or image the backend could not score is ``None`` in the
   answer (the measure lists it as not scored), never a made-up value.
3. Let :mod:`biastest.models.factory` build it from a reference record, and add
   it to ``tests/test_model_protocols.py`` (``isinstance`` against its protocol
   and a run of its requests). :mod:`biastest.models.dummy` is a one-screen
   example of each.

Examples
--------
>>> from biastest.models.dummy import DummyCausalLM
>>> lm = DummyCausalLM(seed=1)
>>> isinstance(lm, CausalLM), isinstance(lm, MaskedLM)
(True, False)
>>> [round(float(v), 2) for v in lm.token_log_probs([lm.encode("a nurse")])[0]]
[-4.71, -0.33]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "AnswerClassifierVLM",
    "AnswerGeneratorVLM",
    "CausalLM",
    "ChatLM",
    "ChatVLM",
    "ContrastiveVLM",
    "MaskedLM",
    "ModelBackend",
    "ProgressCallback",
    "TextCausalLM",
    "TextClassifier",
    "WordVectors",
    "protocol_members",
]

#: ``progress(done, total, message)``: how far a batched request has come.
ProgressCallback = Callable[[int, int, str], None]

_ABSENT = object()


def protocol_members(protocol: type) -> frozenset[str]:
    """The public members a protocol asks for: annotated attributes and methods, its bases' included."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base in (Protocol, object) or not base.__dict__.get("_is_protocol", False):
            continue
        names.update(inspect.get_annotations(base))
        names.update(k for k, v in base.__dict__.items() if callable(v) or isinstance(v, property))
    return frozenset(n for n in names if not n.startswith("_"))


class _StaticProtocolMeta(type(Protocol)):  # type: ignore[misc]
    """``isinstance`` against a runtime protocol by presence of members, read statically (no property runs)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if not cls.__dict__.get("_is_runtime_protocol", False):
            return super().__instancecheck__(instance)
        return all(inspect.getattr_static(instance, name, _ABSENT) is not _ABSENT for name in protocol_members(cls))


@runtime_checkable
class ModelBackend(Protocol, metaclass=_StaticProtocolMeta):
    """What every model backend has: a name, a kind and a description for provenance.

    Attributes
    ----------
    model_id : str
        The model as the user named it (Hub id, folder, served name).
    kind : str
        ``masked``, ``causal`` (language models); ``clip``, ``vqa-classifier``,
        ``generative``, ``endpoint`` (vision-language models).
    """

    model_id: str
    kind: str

    def describe(self) -> dict[str, Any]:
        """JSON-ready provenance (model id, revision, device or endpoint …); never an API key."""
        ...


# ---------------------------------------------------------------------- language models
@runtime_checkable
class CausalLM(ModelBackend, Protocol):
    """A left-to-right language model that gives the log-probability of each token of a sentence.

    Attributes
    ----------
    max_length : int
        Most tokens one sequence may have, its begin token included.
    """

    max_length: int

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (the begin token is added when scoring)."""
        ...

    def token_log_probs(
        self,
        sequences: Sequence[Sequence[int]],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
        message: str = "Scoring sentences",
    ) -> list[np.ndarray | None]:
        """``log P(t_i | begin, t_1..t_{i-1})`` for each token of each sequence (float64, natural log).

        ``None`` for a sequence the backend stopped before scoring (an endpoint's limit).
        """
        ...


@runtime_checkable
class TextCausalLM(ModelBackend, Protocol):
    """A causal language model that tokenizes the text itself (an endpoint without a local tokenizer)."""

    def check_method(self, method: str) -> str:
        """The scoring method's name if this backend can score it; raises ``MethodError`` otherwise."""
        ...

    def text_log_probs(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
        message: str = "Scoring sentences",
    ) -> list[tuple[tuple[str, ...], np.ndarray] | None]:
        """Per text: its tokens as the backend shows them and ``log P`` of each (``nan`` for the first)."""
        ...


@runtime_checkable
class MaskedLM(ModelBackend, Protocol):
    """A masked language model that gives the log-probability of hidden tokens.

    Attributes
    ----------
    max_length : int
        Most tokens one sequence may have, special tokens included.
    tokenizer : object
        A transformers-style tokenizer: ``mask_token`` and
        ``tokenizer(text, add_special_tokens=True, return_offsets_mapping=True)``
        (the template-mask method places the mask by character offsets).
    """

    max_length: int
    tokenizer: Any

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with the special tokens (``[CLS] … [SEP]``)."""
        ...

    def content_positions(self, text: str, ids: Sequence[int] | None = None) -> list[int]:
        """Positions in :meth:`encode`'s ids that hold the text's own tokens (not the added special ones)."""
        ...

    def masked_log_probs(
        self,
        queries: Sequence[Any],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
        message: str = "Scoring masked tokens",
    ) -> list[np.ndarray]:
        """Per :class:`~biastest.models.lm.MaskedQuery`: log P of its targets at its scored (masked) positions."""
        ...


# ---------------------------------------------------------------------- vision-language models
@runtime_checkable
class ContrastiveVLM(ModelBackend, Protocol):
    """A dual encoder (CLIP-like): images and texts in one space, compared by cosine similarity."""

    def logit_scale(self) -> float:
        """The model's temperature: similarities times this are the logits of its softmax."""
        ...

    def encode_text(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Unit-length text embeddings, one row per text."""
        ...

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """Unit-length image embeddings, one row per RGB image."""
        ...

    def ensemble_prompts(self, text_embeddings: np.ndarray, *, n_templates: int,
                         sides: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Prompt-ensembled term embeddings and the two classes' embeddings (templates averaged)."""
        ...

    def similarities(self, image_embeddings: np.ndarray, text_embeddings: np.ndarray) -> np.ndarray:
        """Cosine similarity of every image with every text."""
        ...


@runtime_checkable
class AnswerClassifierVLM(ModelBackend, Protocol):
    """Visual question answering as classification over a fixed answer vocabulary (ViLT)."""

    def answer_vocabulary(self) -> dict[str, int]:
        """Answer text → index of its logit."""
        ...

    def label(self, index: int) -> str:
        """The answer text of a logit index."""
        ...

    def encode_question(self, question: str) -> dict[str, Any]:
        """The question's tokens, prepared once per run."""
        ...

    def answer_logits(self, images: Sequence[Any], question_tokens: dict[str, Any]) -> np.ndarray:
        """Logits over the answer vocabulary, one row per image."""
        ...


@runtime_checkable
class AnswerGeneratorVLM(ModelBackend, Protocol):
    """A model that writes an answer about an image (BLIP VQA, GIT, captioners)."""

    def prepare(self, question: str, candidates: Sequence[str], sample_image: Any) -> dict[str, Any]:
        """The question and candidate answers tokenized once per run."""
        ...

    def candidate_logprobs(self, images: Sequence[Any], prepared: dict[str, Any]) -> np.ndarray:
        """log P(candidate answer | image, question): one row per image, one column per candidate."""
        ...

    def generate_answers(self, images: Sequence[Any], prepared: dict[str, Any], *,
                         max_new_tokens: int = 8) -> list[str]:
        """The answer the model writes for each image (greedy)."""
        ...


@runtime_checkable
class ChatVLM(ModelBackend, Protocol):
    """A vision-language model behind a chat endpoint: one answer per image and order, with first-token logprobs.

    Attributes
    ----------
    stop_message : str or None
        Why the last :meth:`ask` stopped before every image was answered (None when it did not).
    """

    stop_message: str | None

    def ask(self, images: Sequence[Any], *, spec: Any, question: str, max_tokens: int = 8,
            load: Callable[[Any], Any] | None = None,
            progress: ProgressCallback | None = None, orders: Sequence[str] = ("T1 first",)) -> list[Any]:
        """One :class:`~biastest.models.endpoint_vlm.ChatAnswer` per image and order (None: not answered).

        Image by image, each image's answers in ``orders``' order
        (:data:`~biastest.models.vlm_question.ORDERS`: the target lists named as written, or swapped).
        """
        ...


# ---------------------------------------------------------------------- models that only answer
@runtime_checkable
class ChatLM(ModelBackend, Protocol):
    """A model that answers in text (a chat endpoint, a hosted API, a local instruct model).

    Each :class:`~biastest.models.chat_records.ChatRequest` is answered by one
    :class:`~biastest.models.chat_records.ChatReply` (its raw text, never a
    parsed choice) or None when the run stopped before asking it
    (:attr:`stop_message` says why); what was answered is kept.

    Attributes
    ----------
    stop_message : str or None
        Why the last :meth:`chat` stopped before every request was answered (None when it did not).
    """

    stop_message: str | None

    def chat(self, requests: Sequence[Any], *, progress: ProgressCallback | None = None) -> list[Any]:
        """One :class:`~biastest.models.chat_records.ChatReply` (or None: not asked) per request, in order."""
        ...


# ---------------------------------------------------------------------- text classifiers
@runtime_checkable
class TextClassifier(ModelBackend, Protocol):
    """A text classifier (sentiment, toxicity …) that gives a probability per label for each text.

    Attributes
    ----------
    labels : tuple of str
        The model's labels, in the order of :meth:`label_scores`' columns.
    stop_message : str or None
        Why the last :meth:`label_scores` left texts unscored (None when it did not).
    """

    labels: tuple[str, ...]
    stop_message: str | None

    def label_scores(self, texts: Sequence[str], *, progress: ProgressCallback | None = None) -> np.ndarray:
        """``(len(texts), len(labels))`` float64 probabilities; a row of NaN for a text that was not scored."""
        ...


# ---------------------------------------------------------------------- word embeddings
@runtime_checkable
class WordVectors(Protocol, metaclass=_StaticProtocolMeta):
    """Word or term embeddings: vectors of terms, a per-term lookup report, the vocabulary.

    Attributes
    ----------
    name : str
        The source id.
    dim : int
        Vector dimension.
    """

    name: str
    dim: int

    def vectors(self, terms: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """The found terms' vectors (float32, one row each, in order) and the missing terms."""
        ...

    def lookup_report(self, terms: Sequence[str]) -> Any:
        """How each term was looked up (:class:`~biastest.models.embeddings.LookupReport`)."""
        ...

    def vocabulary(self) -> Sequence[str]:
        """The words with a vector (``EmbeddingError`` for a source without a fixed vocabulary)."""
        ...

    def matrix(self) -> np.ndarray:
        """All vectors, one row per vocabulary word."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-ready provenance."""
        ...
