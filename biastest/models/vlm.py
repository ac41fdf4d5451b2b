"""Vision-language model adapters: CLIP-like, VQA classifiers, generative VQA/captioners.

One loader, :func:`load_vlm`, takes any Hugging Face Hub id or local folder,
reads its configuration and decides the *kind* from the architecture class the
configuration names (:func:`biastest.models.kinds.detect_vlm_kind`; never from
the model's name):

``clip``
    Dual encoders with ``get_image_features`` and ``get_text_features`` (CLIP,
    SigLIP, ALIGN, Chinese-CLIP, AltCLIP ...): :class:`ClipLikeModel`.
``vqa-classifier``
    Visual question answering as classification over a fixed answer
    vocabulary (``id2label``), e.g. ViLT ``ViltForQuestionAnswering``:
    :class:`VQAClassifierModel`.
``generative``
    Models that write an answer: BLIP VQA (``BlipForQuestionAnswering``,
    question encoder + answer decoder), and image-conditioned causal decoders
    whose ``forward(input_ids, pixel_values)`` returns next-token logits — GIT
    (``GitForCausalLM``), the BLIP captioner (``BlipForConditionalGeneration``),
    BLIP-2 and other image-text-to-text models: :class:`GenerativeVLM`.

Anything else (a text-only model, an image-only encoder, a classifier) is
refused with :class:`~biastest.errors.ModelKindError` (:data:`MSG_NOT_A_VLM`).
Loaded adapters live in :data:`~biastest.models.cache.MODEL_CACHE`, so a model
loads once per process. All primitives are batched and run under
``torch.inference_mode``; results come back as numpy arrays (CLIP-like
embeddings in float32, as the model computes them; scores and similarities
in float64), so metrics never handle tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import MethodError, ModelKindError, ModelLoadError
from biastest.models.base import (
    ModelSource,
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
from biastest.models.cache import MODEL_CACHE, ModelCache
from biastest.models.kinds import detect_vlm_kind

__all__ = [
    "VLM_KINDS",
    "ClipLikeModel",
    "GenerativeVLM",
    "VQAClassifierModel",
    "VisionLanguageModel",
    "load_vlm",
]

VLM_KINDS = ("clip", "vqa-classifier", "generative")

MSG_NOT_A_VLM = (
    "The model '{model_id}' ({architecture}) is not a vision-language model: it cannot look at an image and "
    "relate it to words. Choose a CLIP-like model (for example 'openai/clip-vit-base-patch32'), a visual "
    "question answering model (for example 'dandelin/vilt-b32-finetuned-vqa' or 'Salesforce/blip-vqa-base') "
    "or an image captioner (for example 'microsoft/git-base')."
)
MSG_NO_PROCESSOR = (
    "The model '{model_id}' has no usable image processor or tokenizer files, so images and words cannot be "
    "prepared for it. Save the processor beside the model (processor.save_pretrained()) or choose another model."
)
MSG_EMPTY_TEXTS = "No {what} were given to the model. Add at least one."
MSG_EMPTY_CANDIDATE = "The answer {candidate!r} becomes no tokens for this model. Use a real word."
MSG_TEXT_TOO_LONG = (
    "The {what} {text!r} is {n_tokens} tokens long for the model '{model_id}', which reads at most {limit} tokens of "
    "text, so it cannot be asked as it is; nothing was run. Shorten it."
)
#: A tokenizer's ``model_max_length`` at or above this means "not set" (transformers writes ``int(1e30)``).
_NO_LIMIT = 1_000_000
#: How many characters of a refused text a message quotes.
_QUOTED = 80



# ----------------------------------------------------------------------------- adapters
@dataclass(frozen=True)
class VLMInfo:
    """What was loaded (for provenance)."""

    model_id: str
    kind: str
    architecture: str
    model_type: str
    revision: str | None
    device: str
    dtype: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "model_kind": self.kind,
            "architecture": self.architecture,
            "model_type": self.model_type,
            "model_revision": self.revision,
            "device": self.device,
            "dtype": self.dtype,
        }


class VisionLanguageModel:
    """Base of the three adapters: holds the model, its processor, device and dtype.

    Subclasses add the batched primitives their metric needs. Construct them
    with :func:`load_vlm`, not directly.
    """

    kind: str = ""

    def __init__(self, *, model: Any, processor: Any, tokenizer: Any, image_processor: Any, info: VLMInfo) -> None:
        self.model = model
        self.processor = processor
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.info = info

    @property
    def model_id(self) -> str:
        return self.info.model_id

    def describe(self) -> dict[str, Any]:
        """JSON-ready provenance (:meth:`VLMInfo.to_dict`), as every model backend gives it."""
        return self.info.to_dict()

    @property
    def device(self):
        import torch  # late: heavy

        return torch.device(self.info.device)

    def pixel_inputs(self, images: Sequence[Any]) -> dict[str, Any]:
        """Image processor output for a batch of RGB images, on the model's device and dtype."""
        import torch  # late: heavy

        batch = self.image_processor(images=list(images), return_tensors="pt")
        out: dict[str, Any] = {}
        dtype = next(self.model.parameters()).dtype
        for key, value in batch.items():
            if isinstance(value, torch.Tensor):
                value = value.to(self.device)
                if value.is_floating_point():
                    value = value.to(dtype)
            out[key] = value
        return out

    def _tokens(self, texts: Sequence[str], **kwargs: Any) -> dict[str, Any]:
        enc = self.tokenizer(list(texts), return_tensors="pt", padding=True, **kwargs)
        return {k: v.to(self.device) for k, v in enc.items()}

    @property
    def max_text_tokens(self) -> int | None:
        """The most text tokens the model reads: its text position table and its tokenizer's limit (None: unknown)."""
        config = self.model.config
        text_config = getattr(config, "text_config", None) or config
        known = [v for v in (getattr(text_config, "max_position_embeddings", None),
                             getattr(self.tokenizer, "model_max_length", None))
                 if isinstance(v, int) and not isinstance(v, bool) and 0 < v < _NO_LIMIT]
        return min(known) if known else None

    def check_text_length(self, text: str, n_tokens: int, *, what: str) -> None:
        """Refuse a text of ``n_tokens`` tokens (special tokens included) that the model cannot read whole.

        A text longer than the position table would crash the forward pass, and one cut to the tokenizer's limit
        could lose the very word being tested, so neither is run.

        Raises
        ------
        MethodError
            :data:`MSG_TEXT_TOO_LONG` (quoting at most 80 characters of the text).
        """
        limit = self.max_text_tokens
        if limit is not None and n_tokens > limit:
            shown = text if len(text) <= _QUOTED else text[:_QUOTED] + "…"
            raise MethodError(MSG_TEXT_TOO_LONG.format(what=what, text=shown, n_tokens=n_tokens, limit=limit,
                                                       model_id=self.model_id), n_tokens=n_tokens, limit=limit)

    def _check_texts(self, texts: Sequence[str], *, what: str) -> None:
        for text in texts:
            self.check_text_length(text, len(self.tokenizer(text)["input_ids"]), what=what)


def _features(out: Any):
    """``get_*_features`` returns a tensor (older transformers) or an output with ``pooler_output``."""
    import torch  # late: heavy

    if isinstance(out, torch.Tensor):
        return out
    pooled = getattr(out, "pooler_output", None)
    if pooled is not None:
        return pooled
    return out[0]


class ClipLikeModel(VisionLanguageModel):
    """Dual-encoder adapter: unit-length image and text embeddings and the logit scale.

    The zero-shot logits the model itself uses are ``scale · cos(image, text)``
    with ``scale = exp(logit_scale)`` (CLIP, SigLIP — SigLIP's ``logit_bias``
    is the same for every prompt and cancels in a softmax over prompts), or
    ``1 / temperature`` (ALIGN).
    """

    kind = "clip"

    def logit_scale(self) -> float:
        """The multiplier of cosine similarities in the model's own logits."""
        model = self.model
        if getattr(model, "logit_scale", None) is not None:
            return float(model.logit_scale.detach().float().exp().item())
        if getattr(model, "temperature", None) is not None:
            return float(1.0 / model.temperature.detach().float().item())
        return 1.0

    def encode_text(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Unit-length text embeddings.

        Parameters
        ----------
        texts : sequence of str
        batch_size : int
            Texts per forward pass.

        Returns
        -------
        ndarray of float32, shape (len(texts), d)

        Raises
        ------
        MethodError
            No texts (:data:`MSG_EMPTY_TEXTS`).
        """
        import torch  # late: heavy

        if not texts:
            raise MethodError(MSG_EMPTY_TEXTS.format(what="prompts"))
        self._check_texts(texts, what="prompt")
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                enc = self._tokens(texts[start : start + batch_size], truncation=True)
                feats = _features(self.model.get_text_features(**enc)).float()
                chunks.append(torch.nn.functional.normalize(feats, dim=-1).cpu())
        return torch.cat(chunks).numpy()

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """Unit-length image embeddings of one batch.

        Parameters
        ----------
        images : sequence of PIL images

        Returns
        -------
        ndarray of float32, shape (len(images), d)
        """
        import torch  # late: heavy

        with torch.inference_mode():
            pix = self.pixel_inputs(images)
            feats = _features(self.model.get_image_features(pixel_values=pix["pixel_values"])).float()
            return torch.nn.functional.normalize(feats, dim=-1).cpu().numpy()

    @staticmethod
    def ensemble_prompts(
        text_embeddings: np.ndarray, *, n_templates: int, sides: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Prompt ensembling by mean embedding (Radford et al. 2021, §3.1.4).

        Formula: with unit prompt embeddings ``g(x_{t,m})`` (term ``t``,
        template ``m``, term-major rows), ``e_t = mean_m g(x_{t,m})``; the term
        embeddings are ``normalise(e_t)`` and the class embeddings
        ``c_k = normalise(mean_{t: side(t) = k} e_t)`` for ``k = 1, 2``. All in
        float32, as the embeddings come.

        Parameters
        ----------
        text_embeddings : ndarray of float32, shape (n_terms · n_templates, d)
            From :meth:`encode_text`, term-major (all templates of a term in a row).
        n_templates : int
            Prompts per term.
        sides : ndarray of int, shape (n_terms,)
            1 or 2: the class (concept group) of each term.

        Returns
        -------
        term_embeddings : ndarray of float32, shape (n_terms, d)
            Unit length.
        class_embeddings : ndarray of float32, shape (2, d)
            Unit length; row 0 is class 1.
        """
        import torch  # late: heavy

        text = torch.from_numpy(np.ascontiguousarray(text_embeddings))
        by_term = text.reshape(-1, n_templates, text.shape[-1]).mean(dim=1)
        side_t = torch.as_tensor(sides)
        classes = torch.stack([by_term[side_t == 1].mean(0), by_term[side_t == 2].mean(0)])
        classes = torch.nn.functional.normalize(classes, dim=-1)
        term_emb = torch.nn.functional.normalize(by_term, dim=-1)
        return term_emb.numpy(), classes.numpy()

    @staticmethod
    def similarities(image_embeddings: np.ndarray, text_embeddings: np.ndarray) -> np.ndarray:
        """Cosine similarities of unit embeddings, computed in float64.

        Parameters
        ----------
        image_embeddings : ndarray, shape (n_images, d)
            From :meth:`encode_images`.
        text_embeddings : ndarray, shape (n_texts, d)
            From :meth:`encode_text` or :meth:`ensemble_prompts`.

        Returns
        -------
        ndarray of float64, shape (n_images, n_texts)
            Multiply by :meth:`logit_scale` for the model's own zero-shot logits.
        """
        import torch  # late: heavy

        feats = torch.from_numpy(np.ascontiguousarray(image_embeddings)).double()
        text = torch.from_numpy(np.ascontiguousarray(text_embeddings)).double()
        return (feats @ text.T).numpy()


class VQAClassifierModel(VisionLanguageModel):
    """Adapter for VQA as classification over a fixed answer list (ViLT)."""

    kind = "vqa-classifier"

    def answer_vocabulary(self) -> dict[str, int]:
        """Map each answer (case-folded, stripped) to its logit index; first index wins on duplicates."""
        id2label = getattr(self.model.config, "id2label", None) or {}
        out: dict[str, int] = {}
        for idx in sorted(int(i) for i in id2label):
            label = str(id2label[idx] if idx in id2label else id2label[str(idx)]).strip().casefold()
            out.setdefault(label, idx)
        return out

    def label(self, index: int) -> str:
        id2label = self.model.config.id2label
        return str(id2label[index] if index in id2label else id2label[str(index)])

    def encode_question(self, question: str) -> dict[str, Any]:
        """Tokenise the question once per run (reused for every image batch).

        Raises
        ------
        MethodError
            :data:`MSG_TEXT_TOO_LONG`: the question is longer than the model reads.
        """
        self._check_texts([question], what="question")
        return self._tokens([question], truncation=True)

    def answer_logits(self, images: Sequence[Any], question_tokens: dict[str, Any]) -> np.ndarray:
        """Logits over the whole answer list, float64 array (len(images), n_answers)."""
        import torch  # late: heavy

        n = len(images)
        with torch.inference_mode():
            pix = self.pixel_inputs(images)
            text = {k: v.expand(n, -1) for k, v in question_tokens.items()}
            out = self.model(**text, **pix)
        return out.logits.double().cpu().numpy()


class GenerativeVLM(VisionLanguageModel):
    """Adapter for models that write answers: BLIP VQA and image-conditioned causal decoders.

    :meth:`candidate_logprobs` gives the log-probability of each candidate
    answer under teacher forcing — ``log P(answer tokens, end-of-answer |
    image, question)``, the sum over the answer's tokens and the end token —
    and :meth:`generate_answers` the model's own (greedy) answer.
    """

    kind = "generative"

    def __init__(self, *, family: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.family = family  # "blip-vqa" or "causal"

    # ------------------------------------------------------------ token helpers
    def _eos_id(self) -> int | None:
        tok = self.tokenizer
        if self.family == "blip-vqa" or self._caption_bos() is not None:
            # BLIP's generate() stops at the separator token, not at the config's eos id
            return int(self.model.config.text_config.sep_token_id)
        gen = getattr(self.model, "generation_config", None)
        for value in (getattr(gen, "eos_token_id", None), getattr(self.model.config, "eos_token_id", None)):
            if isinstance(value, list | tuple):
                value = value[0] if value else None
            if value is not None:
                return int(value)
        for value in (tok.sep_token_id, tok.eos_token_id):
            if value is not None:
                return int(value)
        return None

    def _answer_ids(self, candidates: Sequence[str], *, leading_space: bool) -> list[list[int]]:
        out = []
        for cand in candidates:
            text = (" " + cand) if leading_space else cand
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            if not ids:
                raise MethodError(MSG_EMPTY_CANDIDATE.format(candidate=cand), candidate=cand)
            out.append(ids)
        return out

    def _context_ids(self, question: str, sample_image: Any) -> list[int]:
        """Prompt tokens as the model's processor makes them, minus trailing end/separator tokens."""
        ids: list[int] | None = None
        proc = self.processor
        if proc is not None and proc is not self.tokenizer and callable(proc):
            try:
                enc = proc(images=[sample_image], text=[question], return_tensors="pt")
                ids = [int(i) for i in enc["input_ids"][0].tolist()]
            except (TypeError, ValueError, KeyError):
                ids = None
        if ids is None:
            ids = list(self.tokenizer(question)["input_ids"])
        trailing = {i for i in (self.tokenizer.sep_token_id, self.tokenizer.eos_token_id) if i is not None}
        pad = self.tokenizer.pad_token_id
        while len(ids) > 1 and (ids[-1] in trailing or (pad is not None and ids[-1] == pad)):
            ids.pop()
        bos = self._caption_bos()
        if bos is not None and ids:
            ids[0] = bos
        return ids

    def _caption_bos(self) -> int | None:
        # The BLIP captioner's generate() replaces the first prompt token by the decoder BOS; mirror it.
        if type(self.model).__name__ == "BlipForConditionalGeneration":
            return int(self.model.config.text_config.bos_token_id)
        return None

    def prepare(self, question: str, candidates: Sequence[str], sample_image: Any) -> dict[str, Any]:
        """Tokenise the question and the candidate answers once per run.

        Raises
        ------
        MethodError
            :data:`MSG_TEXT_TOO_LONG`: the question (with an answer, for a captioner) is longer than the model reads.
        """
        import torch  # late: heavy

        eos = self._eos_id()
        if self.family == "blip-vqa":
            self._check_texts([question], what="question")
            q = self._tokens([question], truncation=True)
            bos = int(self.model.config.text_config.bos_token_id)
            answers = self._answer_ids(candidates, leading_space=False)
            seqs = [[bos, *a] + ([eos] if eos is not None else []) for a in answers]
            return {"question": q, "sequences": seqs, "start": 1, "question_text": question}
        ctx = self._context_ids(question, sample_image)
        leading_space = bool(question) and not question.endswith((" ", "\n"))
        answers = self._answer_ids(candidates, leading_space=leading_space)
        seqs = [ctx + a + ([eos] if eos is not None else []) for a in answers]
        self.check_text_length(question, max(len(q) for q in seqs), what="question (with its longest answer)")
        return {
            "context": torch.tensor([ctx], dtype=torch.long, device=self.device),
            "sequences": seqs,
            "start": len(ctx),
            "question_text": question,
        }

    # ------------------------------------------------------------ scoring
    def candidate_logprobs(self, images: Sequence[Any], prepared: dict[str, Any]) -> np.ndarray:
        """Teacher-forced log-probability of each candidate answer, float64 array (len(images), K)."""
        import torch  # late: heavy

        seqs: list[list[int]] = prepared["sequences"]
        start: int = prepared["start"]
        n, k = len(images), len(seqs)
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((k, width), pad, dtype=torch.long)
        mask = torch.zeros((k, width), dtype=torch.long)
        for j, s in enumerate(seqs):
            ids[j, : len(s)] = torch.tensor(s)
            mask[j, : len(s)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            pix = self.pixel_inputs(images)
            if self.family == "blip-vqa":
                logits = self._blip_vqa_logits(pix, prepared["question"], ids, mask)  # (n*k, width, V)
            else:
                rep = {key: v.repeat_interleave(k, dim=0) for key, v in pix.items()}
                out = self.model(input_ids=ids.repeat(n, 1), attention_mask=mask.repeat(n, 1), **rep)
                logits = out.logits[:, -width:, :]
            logp = torch.log_softmax(logits.double(), dim=-1)
            # token at position t is predicted by the logits at position t - 1
            targets = ids.repeat(n, 1)[:, 1:]
            gathered = logp[:, :-1, :].gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            keep = mask.repeat(n, 1)[:, 1:].clone()
            keep[:, : max(start - 1, 0)] = 0
            total = (gathered * keep).sum(dim=1)
        return total.reshape(n, k).cpu().numpy()

    def _blip_vqa_logits(self, pix: dict[str, Any], question: dict[str, Any], ids, mask):
        import torch  # late: heavy

        model = self.model
        n, k = pix["pixel_values"].shape[0], ids.shape[0]
        image_embeds = model.vision_model(pixel_values=pix["pixel_values"]).last_hidden_state
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
        q_ids = question["input_ids"].expand(n, -1)
        q_mask = question["attention_mask"].expand(n, -1)
        q_embeds = model.text_encoder(
            input_ids=q_ids,
            attention_mask=q_mask,
            encoder_hidden_states=image_embeds,
            encoder_attention_mask=image_mask,
        ).last_hidden_state
        q_embeds = q_embeds.repeat_interleave(k, dim=0)
        q_mask = q_mask.repeat_interleave(k, dim=0)
        out = model.text_decoder(
            input_ids=ids.repeat(n, 1),
            attention_mask=mask.repeat(n, 1),
            encoder_hidden_states=q_embeds,
            encoder_attention_mask=q_mask,
        )
        return out.logits

    def generate_answers(
        self, images: Sequence[Any], prepared: dict[str, Any], *, max_new_tokens: int = 8
    ) -> list[str]:
        """The model's own greedy answer to the question, one string per image."""
        import torch  # late: heavy

        n = len(images)
        with torch.inference_mode():
            pix = self.pixel_inputs(images)
            if self.family == "blip-vqa":
                q = prepared["question"]
                out = self.model.generate(
                    input_ids=q["input_ids"].repeat(n, 1),
                    attention_mask=q["attention_mask"].repeat(n, 1),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    num_beams=1,
                    **pix,
                )
                return [s.strip() for s in self.tokenizer.batch_decode(out, skip_special_tokens=True)]
            ctx = prepared["context"].repeat(n, 1)
            self.check_text_length(prepared["question_text"], ctx.shape[1] + max_new_tokens,
                                   what=f"question (with an answer of {max_new_tokens} tokens)")
            prompt = ctx
            if self._caption_bos() is not None:
                # BLIP captioner's generate() drops the prompt's last token (its [SEP]): give it one to drop
                sep = torch.full((n, 1), int(self.model.config.text_config.sep_token_id), device=ctx.device)
                prompt = torch.cat([ctx, sep], dim=1)
            out = self.model.generate(
                input_ids=prompt,
                attention_mask=torch.ones_like(prompt),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                num_beams=1,
                **pix,
            )
            new = out[:, ctx.shape[1] :]
            return [s.strip() for s in self.tokenizer.batch_decode(new, skip_special_tokens=True)]


# ----------------------------------------------------------------------------- loading
def _load_processor(source: ModelSource):
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer  # late: heavy

    kwargs = source.pretrained_kwargs()
    processor = tokenizer = image_processor = None
    try:
        processor = AutoProcessor.from_pretrained(source.location, **kwargs)
    except Exception:
        processor = None
    if processor is not None:
        tokenizer = getattr(processor, "tokenizer", None)
        image_processor = getattr(processor, "image_processor", None)
    try:
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(source.location, **kwargs)
        if image_processor is None:
            image_processor = AutoImageProcessor.from_pretrained(source.location, **kwargs)
    except Exception as exc:
        raise ModelLoadError(
            MSG_NO_PROCESSOR.format(model_id=source.model_id), model_id=source.model_id, cause=type(exc).__name__
        ) from None
    if tokenizer is None or image_processor is None:
        raise ModelLoadError(MSG_NO_PROCESSOR.format(model_id=source.model_id), model_id=source.model_id)
    return processor, tokenizer, image_processor


def _load(source: ModelSource, config: Any, kind: str, cls: type, device: Any, dtype: Any) -> VisionLanguageModel:
    processor, tokenizer, image_processor = _load_processor(source)
    try:
        model, info = cls.from_pretrained(
            source.location, dtype=dtype, output_loading_info=True, **source.pretrained_kwargs()
        )
    except Exception as exc:
        raise translate_load_error(exc, source=source) from None
    check_no_missing_weights(info, model=model, source=source, role=_ROLE[kind])
    model = model.to(device).eval()
    vinfo = VLMInfo(
        model_id=source.model_id,
        kind=kind,
        architecture=cls.__name__,
        model_type=str(getattr(config, "model_type", "") or ""),
        revision=commit_hash(source, config, model),
        device=str(device),
        dtype=dtype_name(dtype),
    )
    common = {
        "model": model,
        "processor": processor,
        "tokenizer": tokenizer,
        "image_processor": image_processor,
        "info": vinfo,
    }
    if kind == "clip":
        return ClipLikeModel(**common)
    if kind == "vqa-classifier":
        return VQAClassifierModel(**common)
    family = "blip-vqa" if cls.__name__ == "BlipForQuestionAnswering" else "causal"
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return GenerativeVLM(family=family, **common)


_ROLE = {
    "clip": "image-text model (CLIP-like)",
    "vqa-classifier": "visual question answering model",
    "generative": "image-to-text model",
}


def load_vlm(
    model_id: str,
    *,
    revision: str | None = None,
    device: Any = "auto",
    dtype: Any = "auto",
    cache: ModelCache | None = None,
) -> VisionLanguageModel:
    """Load a vision-language model through the shared cache.

    Parameters
    ----------
    model_id : str
        Hugging Face Hub id or local folder.
    revision : str, optional
        Hub branch, tag or commit.
    device : {"auto", "cpu", "cuda", "mps"}
    dtype : {"auto", "float32", "float16", "bfloat16"}
    cache : ModelCache, optional
        Default: the process-wide :data:`~biastest.models.cache.MODEL_CACHE`.

    Returns
    -------
    ClipLikeModel or VQAClassifierModel or GenerativeVLM

    Raises
    ------
    ModelLoadError
        The model or its processor cannot be loaded (messages from
        :mod:`biastest.models.base`, or :data:`MSG_NO_PROCESSOR`).
    ModelKindError
        :data:`MSG_NOT_A_VLM`, or weights missing from the checkpoint.
    """
    quiet_transformers()
    source = resolve_model_source(model_id, revision=revision, family="vlm")
    dev = select_device(device)
    dtype_key: Any = dtype
    if dev.type == "cpu" or (isinstance(dtype, str) and dtype.strip().lower() != "auto"):
        dtype_key = select_dtype(dtype, device=dev)  # validated now; "auto" on a GPU depends on the config

    def loader() -> VisionLanguageModel:
        # the configuration is read on a miss only: a hit costs a dictionary lookup
        config = load_config(source)
        found = detect_vlm_kind(config)
        if found is None:
            archs = getattr(config, "architectures", None) or [getattr(config, "model_type", "unknown")]
            raise ModelKindError(
                MSG_NOT_A_VLM.format(model_id=source.model_id, architecture=", ".join(map(str, archs))),
                model_id=source.model_id,
            )
        kind, cls = found
        return _load(source, config, kind, cls, dev, select_dtype(dtype, device=dev, config=config))

    key = model_cache_key("vlm", source, device=dev, dtype=dtype_key)
    # an empty ModelCache is falsy (it has __len__): compare with None
    return (cache if cache is not None else MODEL_CACHE).get(key, loader)
