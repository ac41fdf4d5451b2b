"""Benchmark of the vision-language test on a CLIP ViT-B/32-sized model.

Figures (``python -m benchmarks.bench_vlm [--quick]``), on a CLIP model built
from transformers' default ``CLIPConfig`` (ViT-B/32: 224 px, patch 32, 12 × 768
vision layers, 12 × 512 text layers; ≈151 M parameters) with random weights,
saved to a temporary folder and loaded through :func:`biastest.models.vlm.load_vlm`
(the path a user's model takes; nothing is downloaded):

* ``ceiling_images_per_s``: the image encoder alone (``get_image_features`` on
  already pre-processed pixel tensors, batched) — what no pipeline can beat.
* ``pipeline_images_per_s``: the whole :func:`biastest.measures.vlm.run.run`
  (checking the image files, decoding the PNGs, pre-processing, batched
  encoding, prompts encoded once, scoring and the bootstrap statistics) on
  256 × 256 PNG files; ``ratio_to_ceiling`` = pipeline / ceiling, goal ≥ 0.8.
* ``unbatched_images_per_s``: the same run with one image per forward pass
  (``batch_size=1``), and ``batched_speedup`` = pipeline / unbatched.
* ``peak_rss_mb``: peak resident memory of the process.

All timings are medians over repeats, measured in one run on the same machine;
the ceiling and pipeline repeats alternate.
The CLIP tokenizer is the small byte-level BPE vocabulary of the test helpers
(text encoding is done once per run, so its vocabulary does not matter here).
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _build_model(folder: Path) -> Path:
    import torch
    from transformers import CLIPConfig, CLIPModel

    from tests.vlm_helpers import clip_processor

    processor = clip_processor(folder.parent / "proc", image_size=224)
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig()).eval()  # defaults = ViT-B/32 sizes
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _images(root: Path, n: int, seed: int):
    from tests.vlm_helpers import shape_image, write_images

    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        colour = "red" if i % 2 == 0 else "blue"
        items.append((colour, shape_image(colour, "circle" if i % 3 else "square", rng=rng, size=256)))
    return write_images(root, items)


def run(quick: bool = False) -> dict:
    """Run the benchmark and return its figures (also printed as JSON)."""
    import torch

    from biastest.models.cache import ModelCache
    from biastest.models.images import load_image
    from biastest.models.vlm import load_vlm
    from biastest.spec import BiasSpec
    from tests.vlm_helpers import run_vlm  # the measure's run(), options as keywords

    t0 = time.perf_counter()
    n_images = 32 if quick else 48
    batch = 16
    n_unbatched = 8 if quick else 16
    repeats = 2 if quick else 3
    spec = BiasSpec.from_terms(
        group1="red", group2="blue", stereotype1="doctor, engineer", antistereotype1="nurse, teacher"
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        model_dir = _build_model(tmp_path / "clip-b32")
        images = _images(tmp_path / "store", n_images, seed=1)
        cache = ModelCache(1)
        t_load = time.perf_counter()
        model = load_vlm(str(model_dir), device="cpu", cache=cache)
        load_s = time.perf_counter() - t_load

        # ceiling: the image encoder on pre-processed pixels, same batch size. Ceiling and pipeline runs
        # alternate, so that both medians see the same state of this noisy machine.
        pil = [load_image(tmp_path / "store" / img.path) for img in images]
        pixels = model.image_processor(images=pil, return_tensors="pt")["pixel_values"]
        common = dict(
            image_root=tmp_path / "store",
            spec=spec,
            model_id=str(model_dir),
            seed=0,
            device="cpu",
            cache=cache,
            prompt_template=["a photo of a {term}", "a portrait of a {term}"],
        )
        with torch.inference_mode():
            model.model.get_image_features(pixel_values=pixels[:batch])  # warm-up
        enc_times, pipe_times = [], []
        for _ in range(repeats):
            with torch.inference_mode():
                t = time.perf_counter()
                for start in range(0, n_images, batch):
                    model.model.get_image_features(pixel_values=pixels[start : start + batch])
                enc_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            result = run_vlm(images=images, batch_size=batch, **common)
            pipe_times.append(time.perf_counter() - t)
        ceiling = n_images / median(enc_times)
        pipeline = n_images / median(pipe_times)

        # unbatched: one image per forward pass (a balanced subset: both terms need images)
        subset = images[:n_unbatched]
        un_times = []
        for _ in range(repeats):
            t = time.perf_counter()
            run_vlm(images=subset, batch_size=1, **common)
            un_times.append(time.perf_counter() - t)
        unbatched = n_unbatched / median(un_times)

    ratio = pipeline / ceiling
    out = {
        "model": "CLIPModel from default CLIPConfig (ViT-B/32 sizes), random weights",
        "parameters_millions": round(sum(p.numel() for p in model.model.parameters()) / 1e6, 1),
        "n_images": n_images,
        "batch_size": batch,
        "image_size_on_disk": "256x256 PNG",
        "threads": torch.get_num_threads(),
        "load_seconds": round(load_s, 2),
        "ceiling_images_per_s": round(ceiling, 2),
        "pipeline_images_per_s": round(pipeline, 2),
        "ratio_to_ceiling": round(ratio, 3),
        "unbatched_images_per_s": round(unbatched, 2),
        "batched_speedup": round(pipeline / unbatched, 2),
        "pipeline_seconds_median": round(median(pipe_times), 2),
        "score_percent": round(result.soft.score, 3),
        "repeats": repeats,
        "goal": "pipeline images/s >= 0.8 x image-encoder ceiling",
        "meets_goal": bool(ratio >= 0.8),
        "peak_rss_mb": _peak_mb(),
        "total_seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
