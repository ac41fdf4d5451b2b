"""Sentence generation with a local ``transformers`` text-generation model.

Any causal (decoder) language model works — a Hub id (downloaded once into
the Hugging Face cache, when the network allows) or a local directory saved
with ``save_pretrained``. Loading, prompt encoding and seeded generation live
in :mod:`biastest.models.text_generation` (models load once per process
through :data:`~biastest.models.cache.MODEL_CACHE`); this module adds the
generator's settings, the context-length check and the answer clean-up.

Prompting: models with a chat template get the messages through it (with
the generation prompt); others get the message contents joined by blank
lines and a final new line, and only the first line of their continuation
is kept (base models ramble on). Seeding: the same seed gives the same
answer and the global random generator is left untouched (see
:func:`biastest.models.text_generation.generate`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from biastest.errors import GenerationError
from biastest.generate.base import REJECT_EMPTY, TextGenerator
from biastest.models.text_generation import encode_prompt, generate, load_text_model
from biastest.remote import MalformedAnswer

__all__ = ["LocalTextGenerator"]

log = logging.getLogger(__name__)

MSG_BAD_SETTING = "The setting {name} must be {allowed}, got {value!r}."
MSG_PROMPT_TOO_LONG = (
    "The prompt is {n_prompt} tokens long and {n_new} more are asked for, but the model '{model}' reads at most "
    "{limit} tokens. Choose the 'plain' prompt, fewer new tokens, or a model with a longer context."
)


class LocalTextGenerator(TextGenerator):
    """Sentences from a local ``transformers`` causal LM.

    Parameters
    ----------
    model : str
        Hub id or local directory.
    temperature : float
        Sampling temperature; 0 means greedy decoding.
    max_new_tokens : int
    top_p : float
    revision : str, optional
    device : str

    Raises
    ------
    GenerationError
        A setting out of range (:data:`MSG_BAD_SETTING`).
    ModelLoadError, ModelKindError
        From :func:`biastest.models.text_generation.load_text_model`.
    """

    kind = "local-transformers"

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.8,
        max_new_tokens: int = 60,
        top_p: float = 0.95,
        revision: str | None = None,
        device: str = "cpu",
    ) -> None:
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise GenerationError(MSG_BAD_SETTING.format(name="max_new_tokens", allowed="a whole number above 0",
                                                         value=max_new_tokens))
        if isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature < 0:
            raise GenerationError(MSG_BAD_SETTING.format(name="temperature", allowed="a number of at least 0",
                                                         value=temperature))
        self.model = model
        self.revision = revision
        self.device = device
        self.temperature = float(temperature)
        self.max_new_tokens = max_new_tokens
        self.top_p = float(top_p)
        self._bundle = load_text_model(model, revision=revision, device=device)

    def _complete(self, messages: Sequence[Mapping[str, str]], *, seed: int | None, timeout: float) -> str:
        bundle = self._bundle
        prompt = encode_prompt(bundle, messages)
        if bundle.max_length is not None and prompt.n_tokens + self.max_new_tokens > bundle.max_length:
            raise GenerationError(MSG_PROMPT_TOO_LONG.format(n_prompt=prompt.n_tokens, n_new=self.max_new_tokens,
                                                             model=self.model, limit=bundle.max_length))
        text = generate(bundle, prompt, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                        top_p=self.top_p, seed=seed, device=self.device)
        if not bundle.has_chat_template:
            lines = [ln for ln in text.strip().splitlines() if ln.strip()]
            text = lines[0] if lines else ""
        if not text.strip():
            raise MalformedAnswer(REJECT_EMPTY)
        return text

    def describe(self) -> dict[str, Any]:
        return {"generator": self.kind, "model": self.model, "revision": self.revision,
                "temperature": self.temperature, "max_new_tokens": self.max_new_tokens, "top_p": self.top_p,
                "model_type": self._bundle.model_type}
