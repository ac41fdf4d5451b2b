"""Benchmark of the shared model cache: how long a second user waits for a model already loaded.

Figures (``python -m benchmarks.bench_cache [--quick]``), for each adapter the
apps load through :data:`~biastest.models.cache.MODEL_CACHE` — a BERT-base-sized
masked language model and a CLIP ViT-B/32-sized model (built from their configs
with random weights and saved to a temporary folder, as in ``bench_lm`` and
``bench_vlm``) and the embedded GloVe 6B 50d vectors:

* ``cold_load_s``: the first call (reads and builds the model);
* ``hit_ms``: the median of the later calls with the same arguments (resolving
  the source, building the key, the cache lookup) — goal ≤ 10 ms;
* ``peak_rss_mb``: peak resident memory of the process.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

GOAL_HIT_MS = 10.0


def run(quick: bool = False) -> dict:
    """Run the benchmark; returns a JSON-able dict of figures (and prints it)."""
    from benchmarks.bench_lm import _build_bert
    from benchmarks.bench_retrieval import _median_ms
    from benchmarks.bench_vlm import _build_model as _build_clip
    from biastest.models.cache import ModelCache
    from biastest.models.embeddings import load_embeddings
    from biastest.models.lm import load_language_model
    from biastest.models.vlm import load_vlm

    repeats = 20 if quick else 200
    adapters: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        bert_dir = str(_build_bert(tmp_path / "bert"))
        clip_dir = str(_build_clip(tmp_path / "clip"))
        loaders = {
            "masked-lm (BERT-base sized, local folder)": lambda cache: load_language_model(
                bert_dir, device="cpu", cache=cache
            ),
            "clip (ViT-B/32 sized, local folder)": lambda cache: load_vlm(clip_dir, device="cpu", cache=cache),
            "embeddings (glove-6b-50d)": lambda cache: load_embeddings("glove-6b-50d", cache=cache),
        }
        for name, loader in loaders.items():
            cache = ModelCache(3)
            t = time.perf_counter()
            first = loader(cache)
            cold_s = time.perf_counter() - t
            hit = _median_ms(lambda loader=loader, cache=cache: loader(cache), repeats)
            assert loader(cache) is first and cache.misses == 1  # every later call was a hit
            adapters[name] = {
                "cold_load_s": round(cold_s, 3),
                "hit_ms": round(hit, 3),
                "hits": cache.hits,
                "meets_goal": hit <= GOAL_HIT_MS,
            }
            del first, cache
    out = {
        "adapters": adapters,
        "repeats": repeats,
        "goal": f"a model-cache hit (the same model asked for again) <= {GOAL_HIT_MS:.0f} ms",
        "goal_ms": GOAL_HIT_MS,
        "meets_goal": all(a["meets_goal"] for a in adapters.values()),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "quick": quick,
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
