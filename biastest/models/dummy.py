"""Dummy model backends for tests: deterministic, seeded, no weights, no network.

One small class per protocol of :mod:`biastest.models.protocols` (the habit of
lm-evaluation-harness's ``lm_eval/models/dummy.py``). Every number comes from a
keyed hash of the seed and the request (:func:`hashed_unit`), so the same
request gives the same answer in every process, on every machine, and two
seeds give different answers; a word's log-probability depends on the words
before it. The dummies check nothing a real model would refuse (lengths,
empty input): they exercise the plumbing of a measure, not a model.

Examples
--------
>>> lm = DummyCausalLM(seed=3)
>>> a = lm.token_log_probs([lm.encode("she is a nurse")])[0]
>>> b = DummyCausalLM(seed=3).token_log_probs([lm.encode("she is a nurse")])[0]
>>> bool((a == b).all()), a.shape, bool((a < 0).all())
(True, (4,), True)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from biastest.errors import MethodError
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest
from biastest.models.embeddings import InMemoryEmbeddings
from biastest.models.endpoint_vlm import ChatAnswer, answer_prompt, read_answer
from biastest.models.protocols import ProgressCallback
from biastest.models.vlm_question import ORDER_T1_FIRST, VERDICT_NEITHER, lists_in_order

__all__ = [
    "MSG_DUMMY_METHOD",
    "DummyAnswerClassifierVLM",
    "DummyAnswerGeneratorVLM",
    "DummyCausalLM",
    "DummyChatLM",
    "DummyChatVLM",
    "DummyContrastiveVLM",
    "DummyMaskedLM",
    "DummyTextClassifier",
    "DummyWordVectors",
    "hashed_unit",
]

MSG_DUMMY_METHOD = "The dummy causal language model scores only causal methods; got '{method}'."
_VOCAB = 50_000
_SPECIAL = 3  # ids 0, 1, 2: begin, mask, end


def hashed_unit(seed: int, *parts: Any) -> float:
    """A number in [0, 1) fixed by the seed and ``parts`` (BLAKE2b of their ``repr``; no process salt)."""
    digest = hashlib.blake2b(repr((int(seed), *parts)).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2.0**64


def _log_prob(seed: int, *parts: Any) -> float:
    return -0.1 - 5.0 * hashed_unit(seed, *parts)  # in (-5.1, -0.1]


def _vector(seed: int, key: Any, dim: int) -> np.ndarray:
    v = np.array([hashed_unit(seed, key, i) - 0.5 for i in range(dim)], dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _word_id(word: str) -> int:
    return _SPECIAL + int(hashed_unit(0, "word", word) * _VOCAB)


def _image_key(image: Any) -> Any:
    to_bytes = getattr(image, "tobytes", None)
    return hashlib.blake2b(to_bytes(), digest_size=8).hexdigest() if callable(to_bytes) else repr(image)


class _Dummy:
    kind = ""

    def __init__(self, *, seed: int = 0, model_id: str | None = None) -> None:
        self.seed = int(seed)
        self.model_id = model_id or f"dummy-{self.kind}"

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "model_kind": self.kind, "served_by": "dummy", "seed": self.seed}


# ---------------------------------------------------------------------- language models
class DummyCausalLM(_Dummy):
    """:class:`~biastest.models.protocols.CausalLM` and ``TextCausalLM``: one token per word."""

    kind = "causal"
    max_length = 64
    prefix_token_id = 0

    def encode(self, text: str) -> list[int]:
        return [_word_id(w) for w in text.split()]

    def token_log_probs(self, sequences: Sequence[Sequence[int]], *, batch_size: int = 32,
                        progress: ProgressCallback | None = None,
                        message: str = "Scoring sentences") -> list[np.ndarray | None]:
        out = [np.array([_log_prob(self.seed, tuple(s[:i]), int(t)) for i, t in enumerate(s)]) for s in sequences]
        if progress is not None:
            progress(1, 1, message)
        return out

    def check_method(self, method: str) -> str:
        if "causal" not in str(method):
            raise MethodError(MSG_DUMMY_METHOD.format(method=method), method=method)
        return str(method)

    def text_log_probs(self, texts: Sequence[str], *, batch_size: int = 32,
                       progress: ProgressCallback | None = None,
                       message: str = "Scoring sentences") -> list[tuple[tuple[str, ...], np.ndarray] | None]:
        out: list[tuple[tuple[str, ...], np.ndarray] | None] = []
        for text in texts:
            words = tuple(text.split())
            values = self.token_log_probs([self.encode(text)])[0]
            values[:1] = np.nan  # the first token has nothing before it, as an endpoint answers
            out.append((words, values))
        if progress is not None:
            progress(1, 1, message)
        return out


class _DummyTokenizer:
    """Words split on spaces, ``[MASK]`` for the mask, ids 0/2 around the sentence (with their offsets)."""

    mask_token = "[MASK]"
    mask_token_id = 1

    def __call__(self, text: str, *, add_special_tokens: bool = True,
                 return_offsets_mapping: bool = False) -> dict[str, list[Any]]:
        ids, offsets, start = [], [], 0
        for word in text.split():
            start = text.index(word, start)
            ids.append(self.mask_token_id if word == self.mask_token else _word_id(word))
            offsets.append((start, start + len(word)))
            start += len(word)
        if add_special_tokens:
            ids, offsets = [0, *ids, 2], [(0, 0), *offsets, (0, 0)]
        return {"input_ids": ids, "offset_mapping": offsets} if return_offsets_mapping else {"input_ids": ids}


class DummyMaskedLM(_Dummy):
    """:class:`~biastest.models.protocols.MaskedLM`: log P of a target depends on the unmasked sentence."""

    kind = "masked"
    max_length = 64
    tokenizer = _DummyTokenizer()

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text)["input_ids"]

    def content_positions(self, text: str, ids: Sequence[int] | None = None) -> list[int]:
        ids = self.encode(text) if ids is None else list(ids)
        return list(range(1, len(ids) - 1))

    def masked_log_probs(self, queries: Sequence[Any], *, batch_size: int = 32,
                         progress: ProgressCallback | None = None,
                         message: str = "Scoring masked tokens") -> list[np.ndarray]:
        out = []
        for q in queries:
            seen = tuple(1 if i in q.masked else t for i, t in enumerate(q.ids))
            out.append(np.array([_log_prob(self.seed, seen, p, t) for p, t in zip(q.scored, q.targets, strict=True)]))
        if progress is not None:
            progress(1, 1, message)
        return out


# ---------------------------------------------------------------------- vision-language models
class DummyContrastiveVLM(_Dummy):
    """:class:`~biastest.models.protocols.ContrastiveVLM`: unit vectors hashed from the text or image bytes."""

    kind = "clip"
    dim = 8

    def logit_scale(self) -> float:
        return 100.0

    def encode_text(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        return np.stack([_vector(self.seed, ("text", t), self.dim) for t in texts])

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        return np.stack([_vector(self.seed, ("image", _image_key(i)), self.dim) for i in images])

    @staticmethod
    def ensemble_prompts(text_embeddings: np.ndarray, *, n_templates: int,
                         sides: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        def unit(m: np.ndarray) -> np.ndarray:
            return (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)

        by_term = np.asarray(text_embeddings).reshape(-1, n_templates, text_embeddings.shape[-1]).mean(axis=1)
        side = np.asarray(sides)
        return unit(by_term), unit(np.stack([by_term[side == 1].mean(0), by_term[side == 2].mean(0)]))

    @staticmethod
    def similarities(image_embeddings: np.ndarray, text_embeddings: np.ndarray) -> np.ndarray:
        return np.asarray(image_embeddings, dtype=np.float64) @ np.asarray(text_embeddings, dtype=np.float64).T


class DummyAnswerClassifierVLM(_Dummy):
    """:class:`~biastest.models.protocols.AnswerClassifierVLM` over a fixed answer list."""

    kind = "vqa-classifier"

    def __init__(self, *, seed: int = 0, model_id: str | None = None,
                 answers: Sequence[str] = ("yes", "no", "man", "woman", "nurse", "doctor")) -> None:
        super().__init__(seed=seed, model_id=model_id)
        self.answers = tuple(answers)

    def answer_vocabulary(self) -> dict[str, int]:
        return {a: i for i, a in enumerate(self.answers)}

    def label(self, index: int) -> str:
        return self.answers[index]

    def encode_question(self, question: str) -> dict[str, Any]:
        return {"question": question}

    def answer_logits(self, images: Sequence[Any], question_tokens: dict[str, Any]) -> np.ndarray:
        q = question_tokens["question"]
        return np.array([[10 * hashed_unit(self.seed, _image_key(i), q, a) for a in self.answers] for i in images])


class DummyAnswerGeneratorVLM(_Dummy):
    """:class:`~biastest.models.protocols.AnswerGeneratorVLM`: it answers the candidate it finds likeliest."""

    kind = "generative"

    def prepare(self, question: str, candidates: Sequence[str], sample_image: Any) -> dict[str, Any]:
        return {"question_text": question, "candidates": list(candidates)}

    def candidate_logprobs(self, images: Sequence[Any], prepared: dict[str, Any]) -> np.ndarray:
        q, cands = prepared["question_text"], prepared["candidates"]
        return np.array([[_log_prob(self.seed, _image_key(i), q, c) for c in cands] for i in images])

    def generate_answers(self, images: Sequence[Any], prepared: dict[str, Any], *,
                         max_new_tokens: int = 8) -> list[str]:
        best = self.candidate_logprobs(images, prepared).argmax(axis=1)
        return [prepared["candidates"][int(j)] for j in best]


class DummyChatVLM(_Dummy):
    """:class:`~biastest.models.protocols.ChatVLM`: answers the attribute term with the highest hashed probability.

    Parameters
    ----------
    seed : int
    model_id : str, optional
    rule : callable, optional
        ``rule(image_key, listed_terms, order) -> str``: the answer text (a test plants its decision rule here —
        "always the first-listed term", refusals …); ``listed_terms`` are the allowed answers in the order the
        question names them, ``image_key`` a hash of the image's pixels. Read strictly
        (:func:`~biastest.models.endpoint_vlm.read_answer`); the hashed probabilities are kept. Default: the
        most probable term, whatever the order.
    """

    kind = "chat"
    stop_message: str | None = None

    def __init__(self, *, seed: int = 0, model_id: str | None = None,
                 rule: Callable[[Any, list[str], str], str] | None = None) -> None:
        super().__init__(seed=seed, model_id=model_id)
        self.rule = rule

    def ask(self, images: Sequence[Any], *, spec: Any, question: str, max_tokens: int = 8,
            load: Callable[[Any], Any] | None = None, progress: ProgressCallback | None = None,
            orders: Sequence[str] = (ORDER_T1_FIRST,)) -> list[ChatAnswer | None]:
        terms = list(spec.attribute_terms)
        out: list[ChatAnswer | None] = []
        for n, item in enumerate(images, start=1):
            image = load(item) if load is not None else item
            key = _image_key(image)
            logits = np.array([5 * hashed_unit(self.seed, key, question, t) for t in terms])
            p = np.exp(logits - logits.max())
            p /= p.sum()
            for order in orders:
                first, second = lists_in_order(spec, order)
                text = terms[int(p.argmax())] if self.rule is None else self.rule(key, first + second, order)
                term, outcome = read_answer(text, spec)
                verdict = outcome if term is not None else VERDICT_NEITHER
                out.append(ChatAnswer(text, term, verdict, dict(zip(terms, map(float, p), strict=True)), 1.0,
                                      "", outcome, order, answer_prompt(question, spec, order)))
            if progress is not None:
                progress(n, len(images), "Asking the dummy model")
        return out


class DummyChatLM:
    """:class:`~biastest.models.protocols.ChatLM`: answers each request by a rule the test plants.

    Parameters
    ----------
    rule : callable
        ``rule(request) -> str``: the answer text to a
        :class:`~biastest.models.chat_records.ChatRequest` (a test plants its
        decision rule here: stereotyped share, first-position share, refusals,
        answer formats). It must depend on the request only (the request's
        ``seed`` and ``sample`` are there for sampled answers), so a rerun answers the same.
    model_id : str
    """

    kind = "chat"
    stop_message: str | None = None

    def __init__(self, rule: Callable[[ChatRequest], str], *, model_id: str = "dummy-chat") -> None:
        self.rule = rule
        self.model_id = model_id
        self.requests = 0

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "model_kind": self.kind, "served_by": "dummy"}

    def chat(self, requests: Sequence[ChatRequest], *,
             progress: ProgressCallback | None = None) -> list[ChatReply | None]:
        out: list[ChatReply | None] = []
        for n, request in enumerate(requests, start=1):
            self.requests += 1
            out.append(ChatReply(status=REPLY_ANSWERED, text=self.rule(request), finish_reason="stop",
                                 served_model=self.model_id))
            if progress is not None:
                progress(n, len(requests), "Asking the dummy model")
        return out


# ---------------------------------------------------------------------- word embeddings
class DummyTextClassifier(_Dummy):
    """:class:`~biastest.models.protocols.TextClassifier`: labels NEGATIVE and POSITIVE, P(POSITIVE) a hash of the
    seed and the whole text."""

    kind = "text-classifier"
    labels = ("NEGATIVE", "POSITIVE")
    stop_message = None

    def label_scores(self, texts: Sequence[str], *, progress: ProgressCallback | None = None) -> np.ndarray:
        p = np.array([hashed_unit(self.seed, "classify", str(t)) for t in texts], dtype=np.float64)
        if progress is not None:
            progress(len(texts), len(texts), "Classifying")
        return np.column_stack([1.0 - p, p]) if len(p) else np.zeros((0, 2))


class DummyWordVectors(InMemoryEmbeddings):
    """:class:`~biastest.models.protocols.WordVectors`: a hashed unit vector for each word of ``words``."""

    def __init__(self, words: Sequence[str], *, dim: int = 16, seed: int = 0, name: str = "dummy-vectors") -> None:
        matrix = np.stack([_vector(seed, ("word", w), dim) for w in words]) if words else np.zeros((0, dim))
        super().__init__(name, list(words), matrix)
        self.seed = int(seed)
