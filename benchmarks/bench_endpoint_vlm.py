"""Benchmark of the vision-language test through an endpoint (OpenAI chat protocol with images).

Figures (``python -m benchmarks.bench_endpoint_vlm [--quick]``), on ``n_images`` PNG pictures (256 × 256 in full
mode, as :mod:`benchmarks.bench_vlm`; 32 × 32 in quick mode) of two image terms, one target term per list:

* the model: in full mode a CLIP built from transformers' default ``CLIPConfig`` (ViT-B/32 sizes, ≈151 M
  parameters, random weights, as ``bench_vlm``); in quick mode the tests' tiny CLIP.
* the server: :class:`tests.chat_images_stub.ChatImagesStub` on 127.0.0.1, which answers ``POST
  /v1/chat/completions`` by decoding the picture from its ``data:`` URL and one real CLIP forward pass (the
  question's allowed answers as prompts, one forward pass at a time, as one accelerator), with ``top_logprobs``.
  It runs in the benchmark's own process, so on a 2-core CPU the client's work (reading and PNG-encoding the
  pictures, base64, HTTP, JSON) and the server's share the same cores.
* ``endpoint_images_per_s`` (per concurrency): :func:`biastest.measures.vlm.run.run` with ``endpoint=`` —
  checking the image files, one request per picture, the server's answers, reading them, and the bootstrap summary.
* ``server_answer_images_per_s``: the same server's raw answer rate — its answer to each request
  (``ChatImagesStub._answer``: decoding the picture, the CLIP forward pass, building the answer with its
  log-probabilities) timed alone on exactly the requests the endpoint run sent, without HTTP.
  ``ratio_to_server_answer`` = endpoint / raw, goal ≥ 0.8.
* ``server_answer_share_of_run`` (concurrency 1): the server's answers timed inside the endpoint run, as a share of
  the run's wall time (the rest is the client and HTTP).
* ``in_process_images_per_s``: the same model in this process (:func:`biastest.measures.vlm.run.run` without
  ``endpoint``), for reference, and ``max_abs_difference_p_t1_vs_in_process``: the largest per-picture
  difference of ``P(T1)`` between the endpoint and in process (the equivalence the tests bound at 1e-6).

Timings are medians over ``repeats`` runs measured in one run on one machine; a 2-core CPU shared with other work
makes them noisy (``server_answer_share_of_run`` is measured within the same runs and is the steadier figure).
Quick mode (a tiny model, 12 pictures) is dominated by fixed costs (HTTP round trips) and is no test of the goal.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

GOAL_RATIO = 0.8


def _images(root: Path, n: int, size: int, seed: int):
    import numpy as np

    from tests.vlm_helpers import shape_image, write_images

    rng = np.random.default_rng(seed)
    items = [(term, shape_image(term, "circle" if i % 2 else "square", rng=rng, size=size))
             for i in range(n // 2) for term in ("red", "blue")]
    return write_images(root, items)


def run(quick: bool = False) -> dict:
    """Run the benchmark and return its figures (also printed as JSON)."""
    import torch

    from biastest import public
    from biastest.models.cache import ModelCache
    from biastest.spec import BiasSpec
    from tests.chat_images_stub import ChatImagesStub
    from tests.vlm_helpers import (
        run_vlm,  # the measure's run(), options as keywords
        save_tiny_clip,
    )

    public._policy = public.decide(host="127.0.0.1", environ={})  # the stub lives on 127.0.0.1: a private server
    t0 = time.perf_counter()
    n_images = 12 if quick else 48
    size = 32 if quick else 256
    repeats = 3 if quick else 2
    concurrencies = (1, 4)
    spec = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse",
                               name="bench colours")
    common = dict(spec=spec, seed=0, n_resamples=1000)
    out: dict = {"n_images": n_images, "image_side": size, "repeats": repeats, "threads": torch.get_num_threads()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if quick:
            folder = save_tiny_clip(tmp / "clip")
        else:
            from benchmarks.bench_vlm import _build_model

            folder = _build_model(tmp / "clip")
        images = _images(tmp / "store", n_images, size, seed=0)
        common.update(images=images, image_root=tmp / "store")
        cache = ModelCache(1)
        run_vlm(model_id=str(folder), device="cpu", cache=cache, **common)  # load + warm-up
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            here = run_vlm(model_id=str(folder), device="cpu", cache=cache, **common)
            times.append(time.perf_counter() - t)
        out["in_process_images_per_s"] = round(n_images / median(times), 2)
        del cache
        with ChatImagesStub(folder, served_name="bench-vl") as stub:
            out["model"] = (f"CLIPModel ({sum(p.numel() for p in stub.model.parameters()) / 1e6:.1f} M parameters, "
                            "random weights)")
            answer_fn, in_run = stub._answer, []

            def timed_answer(body, action):  # the server's own answers, timed inside the endpoint runs
                t = time.perf_counter()
                try:
                    return answer_fn(body, action)
                finally:
                    in_run.append(time.perf_counter() - t)

            stub._answer = timed_answer
            endpoint = {}
            for concurrency in concurrencies:
                times, answer_in_run = [], []
                for _ in range(repeats + 1):  # the first run warms the server up and is not timed
                    stub.reset()
                    in_run.clear()
                    t = time.perf_counter()
                    there = run_vlm(model_id="bench-vl", endpoint=stub.base_url, concurrency=concurrency,
                                    **common)
                    times.append(time.perf_counter() - t)
                    answer_in_run.append(sum(in_run))
                info = there.provenance["model"]
                endpoint[concurrency] = {
                    "endpoint_images_per_s": round(n_images / median(times[1:]), 2),
                    "requests": info["requests"]["chat"],
                    "complete": info["complete"],
                    "n_images_with_probabilities": there.n_soft,
                }
                if concurrency == 1:  # one request at a time: no wait for the server's forward lock is counted
                    endpoint[concurrency]["server_answer_share_of_run"] = round(
                        median(answer_in_run[1:]) / median(times[1:]), 3)
            stub._answer = answer_fn
            # the server's raw answers to exactly the requests the last endpoint run sent, without HTTP
            bodies = [r["body"] for r in stub.requests if r["path"] == "/v1/chat/completions"]
            stub._answer(bodies[0], None)  # warm-up
            raw_times = []
            for _ in range(repeats):
                t = time.perf_counter()
                for body in bodies:
                    stub._answer(body, None)
                raw_times.append(time.perf_counter() - t)
        raw = len(bodies) / median(raw_times)
        diffs = [abs(a.p_t1 - b.p_t1) for a, b in zip(here.images, there.images, strict=True)]
    best = max(v["endpoint_images_per_s"] for v in endpoint.values())
    ratio = best / raw
    out.update({
        "server_answer_images_per_s": round(raw, 2),
        "endpoint": {f"concurrency_{c}": v for c, v in endpoint.items()},
        "ratio_to_server_answer": round(ratio, 3),
        "goal": f"endpoint images/s >= {GOAL_RATIO} x the same server's raw answer rate",
        "meets_goal": bool(ratio >= GOAL_RATIO),
        "max_abs_difference_p_t1_vs_in_process": float(max(diffs)),
        "soft_score_percent": {"endpoint": round(there.soft.score, 4), "in_process": round(here.soft.score, 4)},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
    })
    print(
        f"endpoint {best:.2f} images/s | server answers alone {raw:.2f} images/s (ratio {ratio:.2f}, goal >= "
        f"{GOAL_RATIO}: {'met' if ratio >= GOAL_RATIO else 'MISSED'}) | in process {out['in_process_images_per_s']} "
        f"images/s | largest P(T1) difference from in process {out['max_abs_difference_p_t1_vs_in_process']:.1e}",
        flush=True,
    )
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
