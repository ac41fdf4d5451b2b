"""Builders for the generation tests: tiny random models saved to folders.

Nothing here downloads anything. The tiny models produce gibberish; the
tests exercise the real loading (``from_pretrained`` on a folder) and
generation code paths.
"""

from __future__ import annotations

import json
from pathlib import Path

from biastest.spec import BiasSpec

CORPUS = [
    "The man talked about math at dinner yesterday.",
    "The woman wrote a long essay about poetry for school.",
    "He spent the whole weekend practising algebra.",
    "She taught a class on art to beginners.",
    "Everyone agreed that the girl was good at geometry.",
    "Last year the boy discovered a passion for dance.",
] * 4


def small_spec() -> BiasSpec:
    """A gender spec with positional counterparts (man/woman, he/she, boy/girl)."""
    return BiasSpec.from_terms(
        name="Math_Arts_small",
        group1="man, he, boy",
        group2="woman, she, girl",
        stereotype1="math, algebra",
        antistereotype1="poetry, art",
        group1_name="Male_terms",
        group2_name="Female_terms",
        stereotype1_name="Math",
        antistereotype1_name="Arts",
    )


def build_tiny_gpt2(folder: Path, *, chat_template: str | None = None, n_positions: int = 1024) -> Path:
    """Save a random 2-layer GPT-2 and a byte-level BPE tokenizer trained on :data:`CORPUS`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    if chat_template:
        fast.chat_template = chat_template
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=fast.vocab_size,
        n_positions=n_positions,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=fast.eos_token_id,
        eos_token_id=fast.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def with_chat_template(folder: Path, target: Path, chat_template: str) -> Path:
    """Copy a model folder and give its tokenizer a chat template."""
    import shutil

    from transformers import AutoTokenizer

    shutil.copytree(folder, target)
    tok = AutoTokenizer.from_pretrained(target)
    tok.chat_template = chat_template
    tok.save_pretrained(target)
    return target


def build_tiny_bert_config(folder: Path) -> Path:
    """A folder with only a BERT config (a model kind that cannot write text)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]}))
    return folder


def _bytes_to_unicode() -> dict[int, str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs], strict=True))


def build_tiny_diffusion(folder: Path) -> Path:
    """Save a tiny random Stable Diffusion pipeline (UNet, VAE, CLIP text encoder, DDIM)."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    chars = list(_bytes_to_unicode().values())
    tokens = chars + [c + "</w>" for c in chars] + ["<|startoftext|>", "<|endoftext|>"]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok_dir = folder / "_tok"
    tok_dir.mkdir(exist_ok=True)
    (tok_dir / "vocab.json").write_text(json.dumps(vocab))
    (tok_dir / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(tok_dir / "vocab.json"), str(tok_dir / "merges.txt"), model_max_length=16)
    torch.manual_seed(0)
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=16,
            projection_dim=16,
            bos_token_id=vocab["<|startoftext|>"],
            eos_token_id=vocab["<|endoftext|>"],
            pad_token_id=vocab["<|endoftext|>"],
        )
    )
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=2,
        norm_num_groups=4,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 16),
        latent_channels=4,
        layers_per_block=1,
        norm_num_groups=4,
        sample_size=16,
    )
    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=DDIMScheduler(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    out = folder / "pipeline"
    pipe.save_pretrained(out)
    return out
