"""A local server that answers questions about images through the OpenAI chat protocol, with a tiny CLIP model.

It binds ``127.0.0.1`` on an ephemeral port and answers, in background threads, as vLLM serving a
vision-language model does:

* ``POST /v1/chat/completions`` with one user message holding an image (``image_url`` with a ``data:`` URL) and a
  text. The allowed answers are read from the text's last line (``…: doctor, nurse.``, as a model reads them).
  The answerer is a **real CLIP forward pass** (``transformers``' ``CLIPModel`` and ``CLIPProcessor``, its own
  code, nothing of :mod:`biastest`): ``P(t | image) = softmax_t(logits_per_image)`` over the prompts
  ``"a photo of a {t}"``; the answer is the most probable term (greedy, as temperature 0). With ``logprobs``
  the answer's token carries ``top_logprobs`` at the answer position: each term as two tokens, ``"t"`` with
  0.8 and ``"T"`` (capitalised) with 0.2 of ``(1 − ε) · P(t)``, and two other words sharing ``ε`` (so the target
  terms hold ``1 − ε`` of the first token's probability), the ``top_logprobs`` most likely first;
* ``GET /v1/models`` (the served name) and ``GET /version``.

Every answer given is recorded in :attr:`ChatImagesStub.answered` (the answer, the CLIP probabilities, the image's
size and the SHA-256 of its RGB pixels) for naive references. Scripted faults (each consumed once, in order,
before any ``always`` action): ``status`` (e.g. 429 with ``Retry-After``, 500), ``sleep`` (answer after
``seconds``), ``hang`` (never answer; closed after ``seconds`` or when the stub stops, at most
:data:`HANG_MAX_SECONDS`), ``garbage`` (a 200 body that is not JSON), ``no_logprobs`` (``logprobs: null``, as a
server that does not give them), ``refuse_logprobs`` (HTTP 400 to a request that asks for log-probabilities, as a
server that cannot give them; it stays in force for the requests without them, which are answered), ``answer``
(answer ``text`` instead, tokenized by words, the CLIP terms still among the first token's alternatives),
``no_terms`` (answer "I don't know." with no target term among the alternatives), ``article`` (answer ``"A
<term>"``: the article first, the terms' distribution at the second token), ``model`` (answer under another model
name), ``logprob`` (the answer's token has the log-probability ``float(text)``: an impossible 5, nan or inf). A
planted decision rule (:attr:`ChatImagesStub.rule`, for every request without an action):
``rule(terms, probabilities, pixels) -> str`` gets the allowed answers in the order the question lists them, CLIP's
probabilities of them and the SHA-256 of the image's RGB pixels, and returns the answer text (tokenized by words,
the CLIP terms among the first token's alternatives, as ``answer``).
Every request is recorded (path, lower-cased headers, JSON body); ``max_in_flight`` is the most chat
requests handled at once.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.served_stub import HANG_MAX_SECONDS, Action, ServedStub, _Handler

__all__ = ["Action", "ChatImagesStub", "HANG_MAX_SECONDS"]

#: Probability the two words that are not target terms share at the answer position.
EPSILON = 0.05
OTHER_WORDS = ("I", "Sorry")
PROMPT_TEMPLATE = "a photo of a {}"
_ALLOWED = re.compile(r":\s*([^\n:]+?)\.\s*$")


class ChatImagesStub(ServedStub):
    """Serve the CLIP model saved in ``model_dir`` as a chat model that reads images, under ``served_name``.

    Use as a context manager::

        with ChatImagesStub(folder, served_name="tiny-llava") as stub:
            ...  # stub.base_url is http://127.0.0.1:PORT/v1
    """

    route = "/v1/chat/completions"

    def __init__(self, model_dir: str | Path, *, served_name: str = "tiny-llava", version: str = "stub-vl-1.0",
                 fingerprint: str = "fp_stub_vl") -> None:
        import torch
        from transformers import CLIPModel, CLIPProcessor

        self.processor = CLIPProcessor.from_pretrained(model_dir)
        self.model = CLIPModel.from_pretrained(model_dir, dtype=torch.float32).eval()
        super().__init__(served_name=served_name, version=version, fingerprint=fingerprint)
        self.answered: list[dict[str, Any]] = []
        self.rule: Callable[[list[str], list[float], str], str] | None = None

    def reset(self) -> None:
        """Forget scripted actions, the planted rule, recorded requests and answers, and counters."""
        super().reset()
        with self._lock:
            self.answered.clear()
            self.rule = None

    # ------------------------------------------------------------ the answerer
    def probabilities(self, image, terms: list[str]) -> list[float]:
        """CLIP's zero-shot ``P(t | image)`` over ``"a photo of a {t}"`` (one forward pass)."""
        import torch

        inputs = self.processor(text=[PROMPT_TEMPLATE.format(t) for t in terms], images=[image],
                                return_tensors="pt", padding=True)
        with self._forward_lock, torch.inference_mode():
            logits = self.model(**inputs).logits_per_image[0].double()
        return torch.softmax(logits, dim=-1).tolist()

    @staticmethod
    def _entry(token: str, logprob: float, top: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8")), "top_logprobs": top or []}

    def _first_token(self, terms: list[str], probs: list[float], k: int, *, with_terms: bool = True
                     ) -> list[dict[str, Any]]:
        """The answer position's alternatives, most likely first (``k`` of them)."""
        alts: list[tuple[str, float]] = []
        if with_terms:
            for t, p in zip(terms, probs, strict=True):
                mass = (1.0 - EPSILON) * p
                alts += [(t, 0.8 * mass), (t[:1].upper() + t[1:], 0.2 * mass)]
            alts += [(w, EPSILON / len(OTHER_WORDS)) for w in OTHER_WORDS]
        else:
            alts += [(w, 1.0 / len(OTHER_WORDS)) for w in OTHER_WORDS]
        alts = [(tok, p) for tok, p in alts if p > 0]
        alts.sort(key=lambda a: -a[1])
        return [self._entry(tok, math.log(p)) for tok, p in alts[:k]]

    def _answer(self, body: dict[str, Any], action: Action | None) -> dict[str, Any]:
        from PIL import Image

        content = body["messages"][-1]["content"]
        url = next(p["image_url"]["url"] for p in content if p.get("type") == "image_url")
        text = next(p["text"] for p in content if p.get("type") == "text")
        header, _, data = url.partition(",")
        assert header == "data:image/png;base64", header
        raw = base64.b64decode(data)
        image = Image.open(io.BytesIO(raw))
        image.load()
        assert image.format == "PNG" and image.mode == "RGB"
        terms = [t.strip() for t in _ALLOWED.search(text).group(1).split(",")]
        probs = self.probabilities(image, terms)
        best = max(range(len(terms)), key=lambda i: probs[i])
        k = int(body.get("top_logprobs") or 0)
        kind = action.kind if action is not None else ""
        pixels = hashlib.sha256(image.tobytes()).hexdigest()
        if not kind and self.rule is not None:
            action, kind = Action("answer", text=self.rule(terms, probs, pixels)), "answer"
        first = self._first_token(terms, probs, k, with_terms=kind != "no_terms") if k else []
        if kind == "answer":
            words = re.findall(r"\s*\S+", action.text)
            tokens = [self._entry(words[0], first[0]["logprob"] if first else -0.1, first)]
            tokens += [self._entry(w, -0.05) for w in words[1:]]
            answer = action.text
        elif kind == "no_terms":
            answer = "I don't know."
            tokens = [self._entry("I", first[0]["logprob"] if first else -0.7, first),
                      self._entry(" don't", -0.1), self._entry(" know", -0.1), self._entry(".", -0.1)]
        elif kind == "article":
            answer = "A " + terms[best]
            lead = [self._entry("A", math.log(0.9)), self._entry("The", math.log(0.1))][:k]
            spaced = [{**e, "token": " " + e["token"], "bytes": list((" " + e["token"]).encode())} for e in first]
            tokens = [self._entry("A", math.log(0.9), lead),
                      self._entry(" " + terms[best], math.log(0.8 * (1 - EPSILON) * probs[best]), spaced)]
        else:
            answer = terms[best]
            tokens = [self._entry(terms[best], math.log(0.8 * (1 - EPSILON) * probs[best]), first)]
        with self._lock:
            self.answered.append({"answer": answer, "terms": terms, "probabilities": probs, "size": image.size,
                                  "pixels": pixels, "prompt": text})
        logprobs = {"content": tokens} if body.get("logprobs") and kind != "no_logprobs" else None
        if logprobs is not None and kind == "logprob":  # an impossible value (5, nan, inf) on the answer's token
            tokens[0] = {**tokens[0], "logprob": float(action.text)}
        return {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
            "model": action.model if kind == "model" else self.served_name,
            "system_fingerprint": self.fingerprint,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "logprobs": logprobs, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 600, "completion_tokens": len(tokens), "total_tokens": 600 + len(tokens)},
        }

    # ------------------------------------------------------------ serving
    def _respond(self, handler: _Handler, body: dict[str, Any], action: Action | None) -> None:
        if action is not None and action.kind == "refuse_logprobs" and body.get("logprobs"):
            handler.send_json(400, {"object": "error", "message": "logprobs are not supported for this model",
                                    "type": "BadRequestError", "code": 400})
            return
        if self._wrong_model(handler, body):
            return
        handler.send_json(200, self._answer(body, action))
