"""Local ``transformers`` text-generation (causal LM) models: loading, prompting and seeded generation.

The generator in :mod:`biastest.generate.local` writes test sentences with
these primitives and never touches torch or transformers itself:

1. :func:`resolve_model_location` — a Hub id or a local folder (also used by
   :mod:`biastest.models.diffusion`); a missing folder or a folder without a
   model is refused before anything loads.
2. :func:`load_text_model` — the causal LM and its tokenizer, loaded once per
   process through :data:`~biastest.models.cache.MODEL_CACHE`, as a
   :class:`TextModelBundle`; a model that cannot write text (BERT, CLIP ...)
   is refused with :class:`~biastest.errors.ModelKindError`.
3. :func:`encode_prompt` — chat messages to token ids: through the chat
   template (with the generation prompt) when the tokenizer has one, else the
   message contents joined by blank lines and a final new line.
4. :func:`generate` — the new text after the prompt (:func:`generate_scored`
   also gives the new token ids, why it stopped and each step's top
   log-probabilities, for :class:`~biastest.models.local_chat.LocalChatLM`). Each call runs under
   ``torch.random.fork_rng`` with ``torch.manual_seed(seed)``, so the same seed
   gives the same answer and the global generator is left untouched; one lock
   per process serialises generation so concurrent users cannot interleave
   seeds.

Examples
--------
>>> from biastest.models.text_generation import resolve_model_location
>>> resolve_model_location("Qwen/Qwen2.5-0.5B-Instruct")
('Qwen/Qwen2.5-0.5B-Instruct', False)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest.errors import GenerationError, ModelKindError, ModelLoadError
from biastest.models.base import select_dtype
from biastest.models.cache import MODEL_CACHE

__all__ = [
    "EncodedPrompt",
    "GeneratedText",
    "TextModelBundle",
    "encode_prompt",
    "generate",
    "generate_scored",
    "load_text_model",
    "resolve_model_location",
]

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
MSG_GENERATION_FAILED = "The local model '{model}' failed while writing text ({problem})."

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")
_GENERATE_LOCK = threading.Lock()


def resolve_model_location(model: str) -> tuple[str, bool]:
    """Return ``(location, is_local)`` for a Hub id or a local folder.

    Parameters
    ----------
    model : str
        Hugging Face Hub id, or the path of a folder written by ``save_pretrained``
        (a ``config.json`` or a diffusers ``model_index.json`` in it).

    Returns
    -------
    location : str
        The folder path (``~`` expanded) or the Hub id unchanged.
    is_local : bool
        Whether ``location`` is a local folder.

    Raises
    ------
    ModelLoadError
        A path that does not exist (:data:`MSG_PATH_NOT_FOUND`), or a folder
        that holds no model (:data:`MSG_NOT_A_MODEL_FOLDER`).
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
    """A loaded causal LM with its tokenizer (cached per process).

    Attributes
    ----------
    model : transformers.PreTrainedModel
        The causal LM, in evaluation mode on its device.
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer (padding token set to the end-of-sequence token when it had none).
    name : str
        The Hub id or folder it was loaded from, as given.
    model_type : str
        ``config.model_type`` (``gpt2``, ``qwen2`` ...).
    has_chat_template : bool
        Whether prompts go through the tokenizer's chat template.
    max_length : int or None
        The longest sequence the model reads (``max_position_embeddings``), if known.
    """

    model: Any
    tokenizer: Any
    name: str
    model_type: str
    has_chat_template: bool
    max_length: int | None


@dataclass(frozen=True)
class EncodedPrompt:
    """A prompt as token ids, ready for :func:`generate`.

    Attributes
    ----------
    input_ids : torch.Tensor
        Shape ``(1, n_tokens)``.
    attention_mask : torch.Tensor or None
    """

    input_ids: Any
    attention_mask: Any

    @property
    def n_tokens(self) -> int:
        """Length of the prompt in tokens."""
        return int(self.input_ids.shape[1])


def _load_text_model(model: str, revision: str | None, device: str, dtype: str | None = None) -> TextModelBundle:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # late: heavy
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES  # late: heavy

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
    weights: dict[str, Any] = {}
    if dtype is not None:
        weights["dtype"] = select_dtype(dtype, device=device, config=config)
    try:
        lm = AutoModelForCausalLM.from_pretrained(location, revision=revision, **weights)
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


def load_text_model(model: str, *, revision: str | None = None, device: str = "cpu",
                    dtype: str | None = None) -> TextModelBundle:
    """Load (once per process) a causal LM and its tokenizer.

    Parameters
    ----------
    model : str
        Hugging Face Hub id or local directory.
    revision : str, optional
        Hub revision (branch, tag or commit).
    device : str
        ``cpu``, ``cuda`` ...
    dtype : str, optional
        ``auto``, ``float32``, ``float16`` or ``bfloat16``
        (:func:`~biastest.models.base.select_dtype`); None loads the weights
        as ``from_pretrained`` does by default.

    Returns
    -------
    TextModelBundle

    Raises
    ------
    ModelLoadError
        Unknown path or id, no network, missing files, no tokenizer.
    ModelKindError
        The model cannot generate text (e.g. BERT, CLIP).
    """
    key: tuple[Any, ...] = ("text-generation", model, revision, device) + (() if dtype is None else (dtype,))
    return MODEL_CACHE.get(key, lambda: _load_text_model(model, revision, device, dtype))


def encode_prompt(bundle: TextModelBundle, messages: Sequence[Mapping[str, str]]) -> EncodedPrompt:
    """Turn chat messages into the model's prompt tokens.

    Parameters
    ----------
    bundle : TextModelBundle
    messages : sequence of mappings
        ``{"role": ..., "content": ...}`` chat messages.

    Returns
    -------
    EncodedPrompt
        Through the tokenizer's chat template with the generation prompt when
        it has one; otherwise the message contents joined by blank lines and a
        final new line.
    """
    tok = bundle.tokenizer
    if bundle.has_chat_template:
        ids = tok.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)
        return EncodedPrompt(ids["input_ids"], ids.get("attention_mask"))
    text = "\n\n".join(m["content"] for m in messages) + "\n"
    enc = tok(text, return_tensors="pt")
    return EncodedPrompt(enc["input_ids"], enc.get("attention_mask"))


def generate(
    bundle: TextModelBundle,
    prompt: EncodedPrompt,
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    device: str = "cpu",
) -> str:
    """Continue ``prompt`` and return the new text (special tokens removed), seeded.

    Parameters
    ----------
    bundle : TextModelBundle
    prompt : EncodedPrompt
        From :func:`encode_prompt`.
    max_new_tokens : int
    temperature : float
        ``0`` means greedy decoding; otherwise nucleus sampling with ``top_p``.
    top_p : float
    seed : int or None
        Seeds torch's generator for this call only (``None`` means 0); the
        global generator is left as it was.
    device : str
        The device the model was loaded on.

    Returns
    -------
    str
        The decoded new tokens (may be empty).

    Raises
    ------
    GenerationError
        The model failed while generating (:data:`MSG_GENERATION_FAILED`).
    """
    return generate_scored(bundle, prompt, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                           seed=seed, device=device).text


@dataclass(frozen=True)
class GeneratedText:
    """What :func:`generate_scored` wrote.

    Attributes
    ----------
    text : str
        The decoded new tokens, special tokens removed.
    token_ids : tuple of int
        The new tokens as generated (an end token included).
    finish_reason : {"stop", "length"}
        ``stop`` when the model wrote its end token (or stopped before the
        limit), ``length`` when ``max_new_tokens`` ended it.
    top_logprobs : tuple of dict or None
        With ``top_logprobs > 0``: per new token, the ``k`` most likely tokens'
        text → ``log P`` under the model itself (the softmax of its logits,
        before temperature and ``top_p``), the chosen token's included.
    """

    text: str
    token_ids: tuple[int, ...]
    finish_reason: str
    top_logprobs: tuple[dict[str, float], ...] | None = None


def _alternatives(tokenizer: Any, logits: Any, chosen: int, k: int) -> dict[str, float]:
    """The ``k`` most likely tokens' text → log P at one step (the chosen token's added), highest first."""
    import torch  # late: heavy

    logp = torch.log_softmax(logits.double(), dim=-1)
    values, ids = torch.topk(logp, min(k, logp.shape[-1]))
    out: dict[str, float] = {}
    for value, token in zip(values.tolist(), ids.tolist(), strict=True):
        out.setdefault(tokenizer.decode([token]), float(value))
    out.setdefault(tokenizer.decode([chosen]), float(logp[chosen]))
    return out


def generate_scored(
    bundle: TextModelBundle,
    prompt: EncodedPrompt,
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    seed: int | None,
    device: str = "cpu",
    top_logprobs: int = 0,
    top_k: int | None = None,
) -> GeneratedText:
    """:func:`generate` with the new token ids, why it stopped and, where asked, each step's top log-probabilities.

    The generation is :func:`generate`'s (the same seeding and lock, so the
    same seed writes the same text); ``top_logprobs`` only reads the model's
    logits at each step as well. ``top_k`` (sampling only) overrides the
    model's generation configuration (0: no top-k cut); None keeps it.

    Raises
    ------
    GenerationError
        The model failed while generating (:data:`MSG_GENERATION_FAILED`).
    """
    import torch  # late: heavy

    input_ids = prompt.input_ids.to(device)
    attention_mask = prompt.attention_mask
    if attention_mask is not None:
        attention_mask = attention_mask.to(device)
    kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": bundle.tokenizer.pad_token_id}
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=temperature, top_p=top_p)
        if top_k is not None:
            kwargs["top_k"] = top_k
    else:
        kwargs.update(do_sample=False)
    if top_logprobs > 0:
        kwargs.update(return_dict_in_generate=True, output_logits=True)
    try:
        with _GENERATE_LOCK, torch.random.fork_rng(devices=[]), torch.inference_mode():
            torch.manual_seed(0 if seed is None else int(seed))
            out = bundle.model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    except (RuntimeError, ValueError, IndexError) as exc:
        raise GenerationError(MSG_GENERATION_FAILED.format(model=bundle.name, problem=type(exc).__name__)) from None
    sequences = out.sequences if top_logprobs > 0 else out
    new_tokens = [int(t) for t in sequences[0, input_ids.shape[1]:].tolist()]
    eos = bundle.model.generation_config.eos_token_id
    ends = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
    if ends and any(t in ends for t in new_tokens):  # a padded tail after the end token is not part of the answer
        new_tokens = new_tokens[: next(i for i, t in enumerate(new_tokens) if t in ends) + 1]
    finish = "length" if len(new_tokens) >= max_new_tokens and not (new_tokens and new_tokens[-1] in ends) else "stop"
    logprobs = None
    if top_logprobs > 0:
        logprobs = tuple(_alternatives(bundle.tokenizer, out.logits[i][0], token, top_logprobs)
                         for i, token in enumerate(new_tokens))
    text = bundle.tokenizer.decode(new_tokens, skip_special_tokens=True)
    return GeneratedText(text=text, token_ids=tuple(new_tokens), finish_reason=finish, top_logprobs=logprobs)
