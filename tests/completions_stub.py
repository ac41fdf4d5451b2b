"""A local server that serves a causal language model through the OpenAI completions protocol.

It binds ``127.0.0.1`` on an ephemeral port and answers, in background threads, as vLLM does:

* ``POST /v1/completions`` with ``echo``, ``logprobs`` and ``max_tokens=1``: the prompt may be a string, a
  list of strings, a list of token ids or a list of lists of token ids (one choice per prompt, in order). Text
  is tokenized with the tokenizer's default special tokens (``add_bos=True`` prepends the begin token, as a
  Llama-style tokenizer does). Each choice's ``logprobs.token_logprobs`` is ``null`` for the first prompt
  token, then ``log P(t_j | t_<j)`` from a **real forward pass** of the ``transformers`` model (its own code:
  right-padded batch, ``log_softmax``; nothing of :mod:`biastest`), then the greedy next token's;
  ``tokens`` are the decoded tokens and ``text_offset`` their cumulative offsets;
* ``GET /v1/models`` (the served name and ``max_model_len``) and ``GET /version``.

Scripted faults (each consumed once, in order, before any ``always`` action): ``status`` (e.g. 429 with
``Retry-After``, 500), ``sleep`` (answer after ``seconds``), ``hang`` (hold the request, never answer; closed
after ``seconds`` or when the stub stops, at most :data:`HANG_MAX_SECONDS`), ``garbage`` (a 200 body that is not
JSON), ``null_logprobs`` (``token_logprobs: null``, as a server that cannot give prompt log-probabilities),
``no_echo`` (only the generated token's log-probability), ``logprob`` (the prompt's first scored token gets the
log-probability ``float(text)``: an impossible 5, nan or inf), ``extra_token`` (one log-probability too many, as a
server that added its own begin token) and ``model`` (answer under another model name). Every request is
recorded (path, lower-cased headers, JSON body); ``max_in_flight`` is the most completions requests handled at
once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.served_stub import HANG_MAX_SECONDS, Action, ServedStub, _Handler

__all__ = ["Action", "CompletionsStub", "HANG_MAX_SECONDS"]


class CompletionsStub(ServedStub):
    """Serve the causal LM saved in ``model_dir`` under ``served_name``.

    Use as a context manager::

        with CompletionsStub(folder, served_name="tiny-gpt2") as stub:
            ...  # stub.base_url is http://127.0.0.1:PORT/v1
    """

    route = "/v1/completions"

    def __init__(self, model_dir: str | Path, *, served_name: str = "tiny-gpt2", add_bos: bool = False,
                 version: str = "stub-1.0", fingerprint: str = "fp_stub") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        super().__init__(served_name=served_name, version=version, fingerprint=fingerprint)
        self.add_bos = add_bos
        self.max_model_len = int(getattr(self.model.config, "n_positions", 0) or
                                 getattr(self.model.config, "max_position_embeddings", 0) or 0) or None
        self.pad_id = next(v for v in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id, 0) if v is not None)

    # ------------------------------------------------------------ the model
    def tokenize(self, text: str) -> list[int]:
        """The server's tokens of a text prompt (default special tokens, plus the begin token if ``add_bos``)."""
        ids = [int(i) for i in self.tokenizer(text)["input_ids"]]
        if self.add_bos:
            tok = self.tokenizer
            bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
            ids = [int(bos), *ids]
        return ids

    def forward(self, prompts: list[list[int]]) -> list[tuple[list[float | None], int]]:
        """Prompt-token log-probabilities (``None`` first) and the greedy next token, per prompt.

        One right-padded batch through the model; ``log_softmax`` of the logits, read at each next token.
        """
        import torch

        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(prompts), width), dtype=torch.long)
        for b, p in enumerate(prompts):
            ids[b, : len(p)] = torch.tensor(p)
            attn[b, : len(p)] = 1
        lengths = torch.tensor([len(p) for p in prompts])
        with self._forward_lock, torch.inference_mode():
            logp = torch.log_softmax(self.model(input_ids=ids, attention_mask=attn).logits.float(), dim=-1)
            prompt_lp = logp[:, :-1].gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).tolist()
            next_lp, next_id = logp[torch.arange(len(prompts)), lengths - 1].max(dim=-1)
        out = []
        for b, p in enumerate(prompts):
            values: list[float | None] = [None, *prompt_lp[b][: len(p) - 1], float(next_lp[b])]
            out.append((values, int(next_id[b])))
        return out

    def _completion(self, body: dict[str, Any], action: Action | None) -> dict[str, Any]:
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompt = [prompt]
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            prompt = [prompt]
        prompts = [self.tokenize(p) if isinstance(p, str) else [int(t) for t in p] for p in prompt]
        computed = self.forward(prompts)
        choices = []
        for i, (ids, (values, nxt)) in enumerate(zip(prompts, computed, strict=True)):
            all_ids = [*ids, nxt]
            tokens = [self.tokenizer.decode([t]) for t in all_ids]
            offsets, pos = [], 0
            for t in tokens:
                offsets.append(pos)
                pos += len(t)
            logprobs: dict[str, Any] | None = {"tokens": tokens, "token_logprobs": values, "text_offset": offsets,
                                               "top_logprobs": None}
            if action is not None and action.kind == "null_logprobs":
                logprobs = {"tokens": tokens, "token_logprobs": None, "text_offset": offsets, "top_logprobs": None}
            elif action is not None and action.kind == "no_echo":
                logprobs = {"tokens": tokens[-1:], "token_logprobs": values[-1:], "text_offset": [0],
                            "top_logprobs": None}
            elif action is not None and action.kind == "logprob":  # an impossible value: 5, nan, inf …
                logprobs["token_logprobs"] = [values[0], float(action.text), *values[2:]]
            elif action is not None and action.kind == "extra_token":
                logprobs = {"tokens": ["<s>", *tokens], "token_logprobs": [None, -1.0, *values[1:]],
                            "text_offset": [0, *offsets], "top_logprobs": None}
            choices.append({"index": i, "text": "".join(tokens), "logprobs": logprobs, "finish_reason": "length"})
        n_prompt = sum(len(p) for p in prompts)
        return {
            "id": "cmpl-stub", "object": "text_completion", "created": int(time.time()),
            "model": action.model if action is not None and action.kind == "model" else body.get("model"),
            "system_fingerprint": self.fingerprint,
            "choices": list(reversed(choices)),  # out of order on purpose: clients must read "index"
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(prompts),
                      "total_tokens": n_prompt + len(prompts)},
        }

    # ------------------------------------------------------------ serving
    def _model_entry(self) -> dict[str, Any]:
        return {**super()._model_entry(), "max_model_len": self.max_model_len}

    def _respond(self, handler: _Handler, body: dict[str, Any], action: Action | None) -> None:
        if self._wrong_model(handler, body):
            return
        if not body.get("prompt"):
            handler.send_json(400, {"object": "error", "message": "empty prompt", "type": "BadRequestError",
                                    "code": 400})
            return
        handler.send_json(200, self._completion(body, action))
