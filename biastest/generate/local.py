"""Sentence generation with a local ``transformers`` text-generation model.

Any causal (decoder) language model works — a Hub id (downloaded once into
the Hugging Face cache, when the network allows) or a local directory saved
with ``save_pretrained``. Models load once per process through
:data:`~biastest.models.cache.MODEL_CACHE`.

Prompting: models with a chat template get the messages through it (with
the generation prompt); others get the message contents joined by blank
lines and a final new line, and only the first line of their continuation
is kept (base models ramble on). Seeding: each request runs under
``torch.random.fork_rng`` with ``torch.manual_seed(seed)``, so the same seed
gives the same answer and the global generator is left untouched; one lock
per process serialises generation so concurrent users cannot interleave
seeds.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest.errors import GenerationError, ModelKindError, ModelLoadError
from biastest.generate.base import REJECT_EMPTY, MalformedAnswer, TextGenerator
from biastest.models.cache import MODEL_CACHE

__all__ = ["LocalTextGenerator", "TextModelBundle", "load_text_model", "resolve_model_location"]

log = logging.getLogger(__name__)

MSG_PATH_NOT_FOUND = (
    "There is no model folder at '{path}'. Check the path, or give a Hugging Face model id such as "
    "'Qwen/Qwen2.5-0.5B-Instruct'."
)
MSG_NOT_A_MODEL_FOLDER = (
    "The folder '{path}' does not hold a model (no config.json or model_index.json). Choose the folder that "
    "save_pretrained wrote."
)
MSG_HUB_UNAVAILABLE = (
    "The model '{model}' could not be loaded from the Hugging Face Hub: either the id is wrong or this "
    "server has no network access and the model is not in its cache. Check the id, or use a local folder."
)
MSG_NOT_TEXT_GENERATION = (
    "'{model}' is a {model_type} model, which cannot write text. Choose a text-generation (causal, "
    "decoder) model such as GPT-2, Llama, Qwen or Mistral."
)
MSG_NO_TOKENIZER = "The model '{model}' has no usable tokenizer files. Use a model folder that includes its tokenizer."
MSG_LOAD_FAILED = "The model '{model}' could not be loaded ({problem}). Check that the files are complete."
MSG_BAD_SETTING = "The setting {name} must be {allowed}, got {value!r}."
MSG_PROMPT_TOO_LONG = (
    "The prompt is {n_prompt} tokens long and {n_new} more are asked for, but the model '{model}' reads at most "
    "{limit} tokens. Choose the 'plain' prompt, fewer new tokens, or a model with a longer context."
)
MSG_GENERATION_FAILED = "The local model '{model}' failed while writing text ({problem})."

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")
_GENERATE_LOCK = threading.Lock()


def resolve_model_location(model: str) -> tuple[str, bool]:
    """Return ``(location, is_local)`` for a Hub id or a local folder.

    Raises
    ------
    ModelLoadError
        A path that does not exist, or a folder that holds no model.
    """
    if not isinstance(model, str) or not model.strip():
        raise ModelLoadError(MSG_PATH_NOT_FOUND.format(path=model))
    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir() or not ((path / "config.json").exists() or (path / "model_index.json").exists()):
            raise ModelLoadError(MSG_NOT_A_MODEL_FOLDER.format(path=model))
        return str(path), True
    looks_like_path = model.startswith(("/", ".", "~")) or "\\" in model or not _REPO_ID.match(model)
    if looks_like_path:
        raise ModelLoadError(MSG_PATH_NOT_FOUND.format(path=model))
    return model, False


@dataclass(frozen=True)
class TextModelBundle:
    """A loaded causal LM with its tokenizer (cached per process)."""

    model: Any
    tokenizer: Any
    name: str
    model_type: str
    has_chat_template: bool
    max_length: int | None


def _load_text_model(model: str, revision: str | None, device: str) -> TextModelBundle:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    location, is_local = resolve_model_location(model)
    try:
        config = AutoConfig.from_pretrained(location, revision=revision)
    except OSError:
        if is_local:
            raise ModelLoadError(MSG_NOT_A_MODEL_FOLDER.format(path=model), model=model) from None
        raise ModelLoadError(MSG_HUB_UNAVAILABLE.format(model=model), model=model) from None
    except ValueError as exc:
        raise ModelLoadError(MSG_LOAD_FAILED.format(model=model, problem=type(exc).__name__), model=model) from None
    model_type = getattr(config, "model_type", "unknown")
    architectures = list(getattr(config, "architectures", None) or [])
    decoder_head = not architectures or any(
        a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in architectures)
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or not decoder_head:
        raise ModelKindError(MSG_NOT_TEXT_GENERATION.format(model=model, model_type=model_type), model=model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, revision=revision)
    except (OSError, ValueError, TypeError):
        raise ModelLoadError(MSG_NO_TOKENIZER.format(model=model), model=model) from None
    try:
        lm = AutoModelForCausalLM.from_pretrained(location, revision=revision)
    except OSError:
        raise ModelLoadError(MSG_LOAD_FAILED.format(model=model, problem="weights missing or unreadable"),
                             model=model) from None
    except (ValueError, RuntimeError) as exc:
        raise ModelLoadError(MSG_LOAD_FAILED.format(model=model, problem=type(exc).__name__), model=model) from None
    lm.to(device)
    lm.eval()
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
        tokenizer.pad_token = tokenizer.eos_token
    has_chat = bool(getattr(tokenizer, "chat_template", None))
    max_length = getattr(config, "max_position_embeddings", None)
    if not isinstance(max_length, int) or max_length <= 0:
        max_length = None
    return TextModelBundle(model=lm, tokenizer=tokenizer, name=model, model_type=model_type,
                           has_chat_template=has_chat, max_length=max_length)


def load_text_model(model: str, *, revision: str | None = None, device: str = "cpu") -> TextModelBundle:
    """Load (once per process) a causal LM and its tokenizer.

    Parameters
    ----------
    model : str
        Hugging Face Hub id or local directory.
    revision : str, optional
        Hub revision (branch, tag or commit).
    device : str
        ``cpu``, ``cuda`` ...

    Raises
    ------
    ModelLoadError
        Unknown path or id, no network, missing files, no tokenizer.
    ModelKindError
        The model cannot generate text (e.g. BERT, CLIP).
    """
    return MODEL_CACHE.get(("text-generation", model, revision, device),
                           lambda: _load_text_model(model, revision, device))


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

    def _prompt_ids(self, messages: Sequence[Mapping[str, str]]) -> Any:
        tok = self._bundle.tokenizer
        if self._bundle.has_chat_template:
            ids = tok.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True,
                                          return_tensors="pt", return_dict=True)
            return ids["input_ids"], ids.get("attention_mask")
        text = "\n\n".join(m["content"] for m in messages) + "\n"
        enc = tok(text, return_tensors="pt")
        return enc["input_ids"], enc.get("attention_mask")

    def _complete(self, messages: Sequence[Mapping[str, str]], *, seed: int | None, timeout: float) -> str:
        import torch

        bundle = self._bundle
        input_ids, attention_mask = self._prompt_ids(messages)
        n_prompt = int(input_ids.shape[1])
        if bundle.max_length is not None and n_prompt + self.max_new_tokens > bundle.max_length:
            raise GenerationError(MSG_PROMPT_TOO_LONG.format(n_prompt=n_prompt, n_new=self.max_new_tokens,
                                                             model=self.model, limit=bundle.max_length))
        input_ids = input_ids.to(self.device)
        if attention_mask is not None:
            attention_mask = attention_mask.to(self.device)
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens,
                                  "pad_token_id": bundle.tokenizer.pad_token_id}
        if self.temperature > 0:
            kwargs.update(do_sample=True, temperature=self.temperature, top_p=self.top_p)
        else:
            kwargs.update(do_sample=False)
        try:
            with _GENERATE_LOCK, torch.random.fork_rng(devices=[]), torch.inference_mode():
                torch.manual_seed(0 if seed is None else int(seed))
                out = bundle.model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        except (RuntimeError, ValueError, IndexError) as exc:
            raise GenerationError(MSG_GENERATION_FAILED.format(model=self.model, problem=type(exc).__name__)) from None
        new_tokens = out[0, input_ids.shape[1]:]
        text = bundle.tokenizer.decode(new_tokens, skip_special_tokens=True)
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
