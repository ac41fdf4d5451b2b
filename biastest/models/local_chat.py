"""A model that only answers, in this process: an instruct model through ``transformers`` and its chat template.

:class:`LocalChatLM` satisfies :class:`~biastest.models.protocols.ChatLM`, so
a chat measure runs end to end offline on an instruct model (Qwen2.5-Instruct,
Llama-3-Instruct, SmolLM-Instruct …) exactly as on one behind an endpoint.
For each :class:`~biastest.models.chat_records.ChatRequest`:

1. the messages go through the tokenizer's **chat template** with the
   generation prompt (:func:`~biastest.models.text_generation.encode_prompt`);
   a model without a chat template is refused when it is built
   (:data:`MSG_NO_CHAT_TEMPLATE`), before anything is generated: a base model
   would only continue the text, not answer it;
2. the answer is generated (:func:`~biastest.models.text_generation.generate_scored`)
   **greedily** at temperature 0, otherwise **sampled** at the request's
   temperature (no nucleus or top-k cut), with torch's generator seeded for this request
   alone from (seed, sample) (:func:`~biastest.models.chat_records.sampling_seed`,
   0 for an unseeded request): the same request gives the same answer whatever
   else is asked, in whatever order or batch;
3. with ``top_logprobs > 0``, each answer token's ``k`` most likely tokens' text
   → log P under the model (the softmax of its logits, before temperature), the
   chosen token's included — the shape the chat endpoints give.

``finish_reason`` is ``stop`` (the model wrote its end token) or ``length``.
A question whose prompt and answer would not fit the model's context, or on
which the model fails, is a failed reply (``ChatReply.failed``) and the run
goes on. The model loads once per process through
:data:`~biastest.models.cache.MODEL_CACHE` (:func:`~biastest.models.text_generation.load_text_model`).
A stop signal is looked at before each question; when it ends a run the
questions not asked are None and :attr:`LocalChatLM.stop_message` says why.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from biastest.errors import GenerationError, ModelKindError
from biastest.models.base import dtype_name, select_device
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest, sampling_seed
from biastest.models.protocols import ProgressCallback
from biastest.models.text_generation import encode_prompt, generate_scored, load_text_model

__all__ = [
    "MSG_LOCAL_PARTIAL",
    "MSG_NO_CHAT_TEMPLATE",
    "MSG_REPLY_FAILED",
    "MSG_REPLY_TOO_LONG",
    "LocalChatLM",
]

MSG_NO_CHAT_TEMPLATE = (
    "The model '{model}' has no chat template, so it cannot be asked questions: it would only continue the text. "
    "Choose an instruct or chat model (for example Qwen/Qwen2.5-0.5B-Instruct), or serve it behind a chat endpoint."
)
MSG_LOCAL_PARTIAL = (
    "The run was stopped on request: {missing} of {total} questions were not asked; they have no answer and are "
    "listed as not asked. Run again to ask them."
)
#: A failed reply's ``error``: the prompt and the answer do not fit the model's context.
MSG_REPLY_TOO_LONG = (
    "the question is {n_prompt} tokens and {n_new} more were asked for; the model reads at most {limit}"
)
#: A failed reply's ``error``: the model failed while answering.
MSG_REPLY_FAILED = "the model failed while answering ({problem})"
MSG_PROGRESS = "Asking the model"


class LocalChatLM:
    """An instruct model in this process, asked through its chat template (see the module).

    Parameters
    ----------
    model : str
        Hub id or folder of a causal LM whose tokenizer has a chat template.
    revision : str, optional
        Hub revision.
    device : str
        ``auto``, ``cpu``, ``cuda`` or ``mps``.
    dtype : str
        ``auto``, ``float32``, ``float16`` or ``bfloat16``.
    cancel : threading.Event, optional
        Set it to stop a run before its next question (what was answered is kept).

    Raises
    ------
    ModelLoadError
        No such model, no network and not cached, a bad device or precision.
    ModelKindError
        Not a text-generation model, or no chat template (:data:`MSG_NO_CHAT_TEMPLATE`).
    """

    kind: ClassVar[str] = "chat"

    def __init__(self, model: str, *, revision: str | None = None, device: str = "auto", dtype: str = "auto",
                 cancel: threading.Event | None = None) -> None:
        self.model_id = model
        self.revision = revision
        self.device = str(select_device(device))
        self.dtype = dtype
        self._bundle = load_text_model(model, revision=revision, device=self.device, dtype=dtype)
        if not self._bundle.has_chat_template:
            raise ModelKindError(MSG_NO_CHAT_TEMPLATE.format(model=model), model=model)
        self._cancel = cancel
        self.stop_message: str | None = None
        self.stopped_because: str | None = None
        self.counts = {"questions": 0, "answered": 0, "failed": 0, "not_asked": 0}

    def _answer(self, request: ChatRequest) -> ChatReply:
        bundle = self._bundle
        prompt = encode_prompt(bundle, [{"role": r, "content": c} for r, c in request.messages])
        limit = bundle.max_length
        if limit is not None and prompt.n_tokens + request.max_tokens > limit:
            return ChatReply.failed(MSG_REPLY_TOO_LONG.format(n_prompt=prompt.n_tokens, n_new=request.max_tokens,
                                                              limit=limit))
        seed = sampling_seed(request)
        try:
            out = generate_scored(bundle, prompt, max_new_tokens=request.max_tokens, temperature=request.temperature,
                                  top_p=1.0, top_k=0, seed=0 if seed is None else seed,
                                  device=self.device, top_logprobs=request.top_logprobs)
        except GenerationError as exc:
            return ChatReply.failed(MSG_REPLY_FAILED.format(problem=exc.message))
        return ChatReply(status=REPLY_ANSWERED, text=out.text, finish_reason=out.finish_reason,
                         top_logprobs=out.top_logprobs, served_model=self.model_id,
                         extra={"answer_tokens": len(out.token_ids), "prompt_tokens": prompt.n_tokens})

    def chat(self, requests: Sequence[ChatRequest], *,
             progress: ProgressCallback | None = None) -> list[ChatReply | None]:
        """One :class:`ChatReply` per request, in order (None: not asked, the run was stopped)."""
        requests = list(requests)
        for r in requests:
            if not isinstance(r, ChatRequest):
                raise TypeError(f"a chat model answers ChatRequest objects, not {type(r).__name__}")
        self.stop_message = self.stopped_because = None
        self.counts["questions"] += len(requests)
        replies: list[ChatReply | None] = [None] * len(requests)
        for i, request in enumerate(requests):
            if self._cancel is not None and self._cancel.is_set():
                missing = len(requests) - i
                self.counts["not_asked"] += missing
                self.stopped_because = "cancelled"
                self.stop_message = MSG_LOCAL_PARTIAL.format(missing=missing, total=len(requests))
                break
            replies[i] = reply = self._answer(request)
            self.counts["answered" if reply.status == REPLY_ANSWERED else "failed"] += 1
            if progress is not None:
                progress(i + 1, len(requests), MSG_PROGRESS)
        return replies

    def describe(self) -> dict[str, Any]:
        """JSON-ready provenance: the model, its chat template's SHA-256, how answers are generated, the counts."""
        template = self._bundle.tokenizer.chat_template
        template = template if isinstance(template, str) else repr(template)
        return {
            "model_id": self.model_id,
            "model_revision": self.revision,
            "model_kind": self.kind,
            "served_by": "process",
            "model_type": self._bundle.model_type,
            "device": self.device,
            "dtype": dtype_name(next(self._bundle.model.parameters()).dtype),
            "chat_template_sha256": hashlib.sha256(template.encode("utf-8")).hexdigest(),
            "generation": "greedy at temperature 0; else sampled at the request's temperature (no top-p or top-k "
                          "cut) with torch's generator seeded per request from (seed, sample)",
            "top_logprobs": "log-softmax of the model's logits at each answer token (before temperature)",
            "max_length": self._bundle.max_length,
            "questions": dict(self.counts),
            "complete": self.stopped_because is None,
            "stopped_because": self.stopped_because,
            "stop_message": self.stop_message,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_id!r}, device={self.device!r})"
