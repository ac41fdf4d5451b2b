"""Masked and causal language-model adapters with batched log-probability primitives.

:func:`load_language_model` loads any Hugging Face Hub id or local folder
through the ``transformers`` Auto classes and the process-wide
:data:`~biastest.models.cache.MODEL_CACHE` (a model loads once per process).
The model *kind* comes from its configuration (:func:`biastest.models.kinds.detect_kind`), never from
its name: ``config.architectures`` first (e.g. ``BertForMaskedLM`` → masked,
``GPT2LMHeadModel`` → causal), then ``config.model_type`` in transformers'
``MODEL_FOR_MASKED_LM_MAPPING_NAMES`` / ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``
(a type that is in both, such as ``bert``, is causal only when
``config.is_decoder`` is set).

Two adapters expose the primitives every stereotype-score method is built from;
both batch their inputs (sorted by length to limit padding, right-padded, with
an attention mask) and run under ``torch.inference_mode``:

- :meth:`MaskedLanguageModel.masked_log_probs` — for a batch of
  :class:`MaskedQuery` (token ids, positions to replace by ``[MASK]``, positions
  to score and their true tokens) the natural-log probabilities
  ``log softmax(logits[pos])[target]``.
- :meth:`CausalLanguageModel.token_log_probs` — for a batch of token sequences
  the log-probability of every token given the ones before it, with the
  model's begin token prepended (so the first word is scored):
  ``log P(t_i | BOS, t_1..t_{i-1})``.

Padding never changes a result: a padded batch gives the same numbers as the
same items one at a time (tested to 1e-5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from biastest.errors import DataError, ModelKindError, ModelLoadError
from biastest.models.base import (
    ModelSource,
    check_local_weights,
    check_no_missing_weights,
    commit_hash,
    dtype_name,
    load_config,
    model_cache_key,
    quiet_transformers,
    resolve_model_source,
    select_device,
    select_dtype,
    translate_load_error,
)
from biastest.models.cache import LOAD_LOCK, MODEL_CACHE, ModelCache
from biastest.models.kinds import MSG_NOT_A_LANGUAGE_MODEL, detect_kind

__all__ = [
    "KINDS",
    "CausalLanguageModel",
    "LanguageModel",
    "MaskedLanguageModel",
    "MaskedQuery",
    "ProgressCallback",
    "begin_token_id",
    "detect_model_kind",
    "load_language_model",
]

KINDS = ("masked", "causal")
ModelKind = Literal["masked", "causal"]
ProgressCallback = Callable[[int, int, str], None]

MSG_BAD_KIND = "Unknown language-model kind '{kind}'. Choose one of: auto, masked, causal."
MSG_WRONG_KIND = (
    "The model '{model_id}' is a {actual} language model, but a {requested} language model is needed here. "
    "Choose a {requested} model, or a scoring method made for {actual} models."
)
MSG_NO_MASK_TOKEN = (
    "The model '{model_id}' is a masked language model but its tokenizer has no mask token, so no word can be "
    "hidden from it. Choose another masked language model."
)
MSG_NO_BEGIN_TOKEN = (
    "The causal language model '{model_id}' has neither a begin-of-text nor an end-of-text token, so the first "
    "word of a sentence cannot be scored. Choose another causal language model."
)
MSG_TOO_LONG = (
    "A sentence has {n_tokens} tokens, more than the {max_length} that the model '{model_id}' can read at once. "
    "Shorten or remove it."
)

_BIG = 1_000_000


@dataclass(frozen=True)
class MaskedQuery:
    """One masked variant of a tokenised sentence.

    Attributes
    ----------
    ids : tuple of int
        The token ids of the sentence, with the tokenizer's special tokens
        (e.g. ``[CLS] ... [SEP]``).
    masked : tuple of int
        Positions replaced by the mask token before the forward pass.
    scored : tuple of int
        Positions whose log-probability is returned (each must be masked).
    targets : tuple of int
        The token id scored at each of ``scored`` (usually ``ids[pos]``).
    """

    ids: tuple[int, ...]
    masked: tuple[int, ...]
    scored: tuple[int, ...]
    targets: tuple[int, ...]

    @classmethod
    def single(cls, ids: Sequence[int], position: int) -> MaskedQuery:
        """Mask one position and score its true token (the PLL building block)."""
        ids = tuple(int(i) for i in ids)
        return cls(ids=ids, masked=(position,), scored=(position,), targets=(ids[position],))


def _max_length(config: Any, tokenizer: Any) -> int:
    limits = []
    for name in ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and 0 < value < _BIG:
            limits.append(value)
            break
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < _BIG:
        limits.append(tok_limit)
    if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert", "xlm-roberta-xl") and limits:
        # RoBERTa-style positions start after the padding index: two slots are unusable.
        limits[0] = min(limits[0], getattr(config, "max_position_embeddings", limits[0]) - 2)
    return min(limits) if limits else 512


class LanguageModel:
    """A loaded language model and its tokenizer (use :func:`load_language_model`).

    Attributes
    ----------
    kind : {"masked", "causal"}
    model_id : str
        As given by the user.
    revision : str or None
        The commit actually loaded when known (Hub downloads, Hub-cache
        folders), else the requested revision, else None.
    device : torch.device
    dtype : str
        ``"float32"``, ``"float16"`` or ``"bfloat16"``.
    model_type : str
        ``config.model_type`` (e.g. ``bert``, ``gpt2``).
    architectures : tuple of str
    max_length : int
        Most tokens one sequence may have (special tokens included).
    model, tokenizer :
        The transformers objects (read-only use).
    """

    kind: ClassVar[str] = ""

    def __init__(self, *, model: Any, tokenizer: Any, config: Any, source: ModelSource, device: Any, dtype: Any):
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.source = source
        self.model_id = source.model_id
        self.revision = commit_hash(source, config, model) or source.revision
        self.device = device
        self.dtype = dtype_name(dtype)
        self.model_type = str(getattr(config, "model_type", "") or "")
        self.architectures = tuple(getattr(config, "architectures", None) or ())
        self.max_length = _max_length(config, tokenizer)
        self.pad_token_id = self._pad_id()

    def _pad_id(self) -> int:
        tok = self.tokenizer
        for value in (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id, 0):
            if value is not None:
                return int(value)
        return 0  # pragma: no cover

    def describe(self) -> dict[str, Any]:
        """JSON-able description for provenance."""
        return {
            "model_id": self.model_id,
            "model_revision": self.revision,
            "model_kind": self.kind,
            "model_type": self.model_type,
            "architectures": list(self.architectures),
            "device": str(self.device),
            "dtype": self.dtype,
            "max_length": self.max_length,
        }

    def encode(self, text: str) -> list[int]:  # pragma: no cover - overridden
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r}, revision={self.revision!r}, device={self.device})"

    # ------------------------------------------------------------------ batching
    def _batches(self, lengths: Sequence[int], batch_size: int) -> list[list[int]]:
        """Item indices grouped into batches, sorted by length (longest first)."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise DataError(f"The batch size must be a positive whole number, got {batch_size!r}.")
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

    def _check_length(self, n: int) -> None:
        if n > self.max_length:
            raise DataError(MSG_TOO_LONG.format(n_tokens=n, max_length=self.max_length, model_id=self.model_id))

    def _padded(self, rows: Sequence[Sequence[int]]):
        import torch  # late: heavy

        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
        attn = torch.zeros((len(rows), width), dtype=torch.long)
        for b, row in enumerate(rows):
            ids[b, : len(row)] = torch.as_tensor(list(row), dtype=torch.long)
            attn[b, : len(row)] = 1
        return ids.to(self.device), attn.to(self.device)


class MaskedLanguageModel(LanguageModel):
    """A masked language model (BERT, RoBERTa, ALBERT, DistilBERT, ...).

    Attributes
    ----------
    mask_token_id : int
    """

    kind: ClassVar[str] = "masked"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        if self.tokenizer.mask_token_id is None:
            raise ModelKindError(MSG_NO_MASK_TOKEN.format(model_id=self.model_id), model_id=self.model_id)
        self.mask_token_id = int(self.tokenizer.mask_token_id)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with the tokenizer's special tokens (``[CLS] … [SEP]``)."""
        return [int(i) for i in self.tokenizer(text, add_special_tokens=True)["input_ids"]]

    def content_positions(self, text: str, ids: Sequence[int] | None = None) -> list[int]:
        """Positions in :meth:`encode`'s ids that hold the sentence's own tokens.

        The special tokens the tokenizer *added* (``[CLS]``, ``[SEP]``, ``<s>``
        ...) are left out; tokens of the text itself (an ``[UNK]`` included)
        are kept.
        """
        ids = list(self.encode(text) if ids is None else ids)
        body = [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]
        n = len(body)
        for start in range(0, len(ids) - n + 1):
            if ids[start : start + n] == body:
                return list(range(start, start + n))
        special = set(self.tokenizer.all_special_ids) - {self.tokenizer.unk_token_id}
        return [i for i, t in enumerate(ids) if t not in special]

    def masked_log_probs(
        self,
        queries: Sequence[MaskedQuery],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
        message: str = "Scoring masked tokens",
    ) -> list[np.ndarray]:
        """Log-probabilities of the true tokens at masked positions, batched.

        For each query, the positions in ``masked`` are replaced by the mask
        token; the model reads the whole (padded) batch in one forward pass;
        the result is ``log_softmax(logits[b, p])[target]`` (natural log,
        float32 softmax, returned as float64) for each scored position ``p``.

        Parameters
        ----------
        queries : sequence of MaskedQuery
        batch_size : int
            Sequences per forward pass.
        progress : callable, optional
            ``progress(done_batches, total_batches, message)``.
        message : str
            Text passed to ``progress``.

        Returns
        -------
        list of numpy.ndarray
            One float64 array per query, aligned with ``scored``.
        """
        import torch  # late: heavy

        # Identical masked inputs (e.g. the two one-token terms of template-mask) share one row.
        rows: list[tuple[int, ...]] = []
        row_of: dict[tuple[int, ...], int] = {}
        users: list[list[int]] = []
        for qi, q in enumerate(queries):
            self._check_length(len(q.ids))
            if len(q.scored) != len(q.targets) or any(p not in q.masked for p in q.scored):
                raise DataError("Every scored position of a masked query must be masked and have one target.")
            row = list(q.ids)
            for p in q.masked:
                row[p] = self.mask_token_id
            key = tuple(row)
            if key not in row_of:
                row_of[key] = len(rows)
                rows.append(key)
                users.append([])
            users[row_of[key]].append(qi)
        out: list[np.ndarray] = [np.empty(0)] * len(queries)
        batches = self._batches([len(r) for r in rows], batch_size)
        with torch.inference_mode():
            for done, batch in enumerate(batches, start=1):
                ids, attn = self._padded([rows[r] for r in batch])
                logits = self.model(input_ids=ids, attention_mask=attn).logits
                b_idx, p_idx, t_idx, owners = [], [], [], []
                for b, r in enumerate(batch):
                    for qi in users[r]:
                        for p, t in zip(queries[qi].scored, queries[qi].targets, strict=True):
                            b_idx.append(b)
                            p_idx.append(p)
                            t_idx.append(t)
                        owners.append((qi, len(queries[qi].scored)))
                if b_idx:
                    dev = logits.device
                    picked = logits[torch.as_tensor(b_idx, device=dev), torch.as_tensor(p_idx, device=dev)].float()
                    lp = torch.log_softmax(picked, dim=-1)
                    values = lp[torch.arange(len(t_idx)), torch.as_tensor(t_idx, device=lp.device)]
                    values = values.double().cpu().numpy()
                else:
                    values = np.empty(0)
                k = 0
                for qi, n in owners:
                    out[qi] = values[k : k + n].copy()
                    k += n
                if progress is not None:
                    progress(done, len(batches), message)
        return out


class CausalLanguageModel(LanguageModel):
    """A causal (left-to-right) language model (GPT-2, BioGPT, Llama, Falcon, ...).

    Attributes
    ----------
    prefix_token_id : int
        Prepended to every sentence so that its first token is scored:
        the tokenizer's begin-of-text token, else its end-of-text token
        (GPT-2's ``<|endoftext|>``), as lm-evaluation-harness does.
    """

    kind: ClassVar[str] = "causal"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.prefix_token_id = begin_token_id(self.tokenizer, model_id=self.model_id)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (the prefix is added when scoring)."""
        return [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def token_log_probs(
        self,
        sequences: Sequence[Sequence[int]],
        *,
        batch_size: int = 32,
        progress: ProgressCallback | None = None,
        message: str = "Scoring sentences",
    ) -> list[np.ndarray]:
        """Per-token log-probabilities of whole sentences, batched.

        Each sequence ``t_1..t_n`` is read as ``[prefix] t_1 .. t_n`` and the
        result is ``log P(t_i | prefix, t_1..t_{i-1})`` for i = 1..n (natural
        log, float32 log-softmax, returned as float64).

        Parameters
        ----------
        sequences : sequence of sequence of int
            Token ids from :meth:`encode` (no special tokens).
        batch_size : int
            Sentences per forward pass.
        progress : callable, optional
            ``progress(done_batches, total_batches, message)``.

        Returns
        -------
        list of numpy.ndarray
            One float64 array of length n per sequence.
        """
        import torch  # late: heavy

        for s in sequences:
            if len(s) == 0:
                raise DataError("A sentence to score has no tokens; remove empty sentences.")
            self._check_length(len(s) + 1)
        out: list[np.ndarray] = [np.empty(0)] * len(sequences)
        batches = self._batches([len(s) for s in sequences], batch_size)
        with torch.inference_mode():
            for done, batch in enumerate(batches, start=1):
                rows = [[self.prefix_token_id, *map(int, sequences[i])] for i in batch]
                ids, attn = self._padded(rows)
                logits = self.model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()
                targets = ids[:, 1:]
                lse = torch.logsumexp(logits, dim=-1)
                chosen = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                values = (chosen - lse).double().cpu().numpy()
                for b, i in enumerate(batch):
                    out[i] = values[b, : len(sequences[i])].copy()
                if progress is not None:
                    progress(done, len(batches), message)
        return out


def begin_token_id(tokenizer: Any, *, model_id: str) -> int:
    """The token a causal LM reads before a sentence so that its first word is scored.

    The tokenizer's begin-of-text token, else its end-of-text token (GPT-2's
    ``<|endoftext|>``), as lm-evaluation-harness does; the same rule for a
    model in this process and one behind an endpoint.

    Raises
    ------
    ModelKindError
        :data:`MSG_NO_BEGIN_TOKEN` when the tokenizer has neither.
    """
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is None:
        raise ModelKindError(MSG_NO_BEGIN_TOKEN.format(model_id=model_id), model_id=model_id)
    return int(prefix)


def detect_model_kind(model_id: str, *, revision: str | None = None) -> str:
    """The kind of a model from its configuration alone (no weights are loaded).

    Lets a user interface offer only the scoring methods that apply before
    the model itself is loaded.

    Raises
    ------
    ModelLoadError, ModelKindError
    """
    source = resolve_model_source(model_id, revision=revision)
    return detect_kind(load_config(source), model_id=source.model_id)


# ---------------------------------------------------------------------- loading
def _check_kind_arg(kind: str) -> str:
    if kind not in ("auto", *KINDS):
        raise ModelKindError(MSG_BAD_KIND.format(kind=kind), kind=kind)
    return kind


def _load(source: ModelSource, *, kind: str, device: Any, dtype: Any) -> LanguageModel:
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer  # late: heavy

    quiet_transformers()
    config = load_config(source)
    actual = detect_kind(config, model_id=source.model_id)
    if kind != "auto" and kind != actual:
        raise ModelKindError(
            MSG_WRONG_KIND.format(model_id=source.model_id, actual=actual, requested=kind), model_id=source.model_id
        )
    torch_dtype = select_dtype(dtype, device=device, config=config)
    check_local_weights(source)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.location, **source.pretrained_kwargs())
    except Exception as exc:
        raise translate_load_error(exc, source=source, what="tokenizer") from None
    auto_cls = AutoModelForMaskedLM if actual == "masked" else AutoModelForCausalLM
    try:
        model, info = auto_cls.from_pretrained(
            source.location, config=config, dtype=torch_dtype, output_loading_info=True, **source.pretrained_kwargs()
        )
    except (ModelLoadError, ModelKindError):
        raise
    except ValueError as exc:
        text = str(exc)
        if "Unrecognized configuration class" in text:
            raise ModelKindError(
                MSG_NOT_A_LANGUAGE_MODEL.format(model_id=source.model_id, model_type=config.model_type),
                model_id=source.model_id,
            ) from None
        raise translate_load_error(exc, source=source) from None
    except Exception as exc:
        raise translate_load_error(exc, source=source) from None
    role = "masked language model" if actual == "masked" else "causal language model"
    check_no_missing_weights(info, model=model, source=source, role=role)
    model.eval()
    model.to(device)
    cls = MaskedLanguageModel if actual == "masked" else CausalLanguageModel
    return cls(model=model, tokenizer=tokenizer, config=config, source=source, device=device, dtype=torch_dtype)


def load_language_model(
    model_id: str,
    *,
    revision: str | None = None,
    kind: str = "auto",
    device: Any = "auto",
    dtype: Any = "auto",
    cache: ModelCache | None = MODEL_CACHE,
) -> LanguageModel:
    """Load a masked or causal language model once per process.

    Parameters
    ----------
    model_id : str
        Hugging Face Hub id (``gpt2``, ``bert-base-uncased``, ``microsoft/biogpt``)
        or a local folder saved with ``save_pretrained``.
    revision : str, optional
        Hub branch, tag or commit; None for the latest.
    kind : {"auto", "masked", "causal"}
        ``auto`` takes the kind from the configuration; anything else must
        match it (:data:`MSG_WRONG_KIND` otherwise).
    device : {"auto", "cpu", "cuda", "mps"}
        See :func:`biastest.models.base.select_device`.
    dtype : {"auto", "float32", "float16", "bfloat16"}
        See :func:`biastest.models.base.select_dtype`.
    cache : ModelCache or None
        The process-wide cache (default); None loads without caching.

    Returns
    -------
    MaskedLanguageModel or CausalLanguageModel
        With ``.kind``, ``.model_id``, ``.revision`` (commit when known) and
        ``.device``.

    Raises
    ------
    ModelLoadError
        The model cannot be found, downloaded or loaded (message says why).
    ModelKindError
        It is not a masked or causal language model, lacks its head, or is
        not the ``kind`` requested.
    """
    kind = _check_kind_arg(kind)
    source = resolve_model_source(model_id, revision=revision)
    dev = select_device(device)
    dtype_key: Any = dtype
    if dev.type == "cpu" or (isinstance(dtype, str) and dtype.strip().lower() != "auto"):
        dtype_key = select_dtype(dtype, device=dev)  # validated now; "auto" on a GPU depends on the config
    key = model_cache_key("language-model", source, device=dev, dtype=dtype_key)

    def loader() -> LanguageModel:
        return _load(source, kind=kind, device=dev, dtype=dtype)

    if cache is None:
        with LOAD_LOCK:
            adapter = loader()
    else:
        adapter = cache.get(key, loader)
    if kind != "auto" and adapter.kind != kind:
        raise ModelKindError(
            MSG_WRONG_KIND.format(model_id=source.model_id, actual=adapter.kind, requested=kind),
            model_id=source.model_id,
        )
    return adapter
