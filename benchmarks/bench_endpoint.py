"""Benchmark of language-model scoring through an endpoint (OpenAI completions protocol).

Figures (``python -m benchmarks.bench_endpoint [--quick]``), for ``causal-sum``
on ``n_pairs`` pairs (CrowS-Pairs from ``../shared/data`` when present, else
synthetic pairs of CrowS-Pairs length, as :mod:`benchmarks.bench_lm`):

* the model: in full mode a ``GPT2LMHeadModel`` from the default
  ``GPT2Config`` (GPT-2 small sizes, ≈124 M parameters, random weights, a
  byte-level BPE tokenizer trained on the benchmark's sentences, as
  ``bench_lm``); in quick mode a 2-layer, 128-wide GPT-2.
* the server: :class:`tests.completions_stub.CompletionsStub` on 127.0.0.1,
  which answers ``POST /v1/completions`` with real ``transformers`` forward
  passes (one at a time, as one accelerator). It runs in the benchmark's own
  process, so on a 2-core CPU the client's work (tokenizing, JSON, HTTP) and
  the server's share the same cores.
* ``endpoint_pairs_per_s`` (per concurrency): :func:`biastest.measures.stereotype.run.run`
  with ``endpoint=`` and the model's tokenizer (token-id prompts, 32 per
  request) — tokenizing, the HTTP requests, the server's forward passes and
  JSON, checking the answers, verdicts and the bootstrap summary.
* ``server_forward_pairs_per_s``: the same server's raw rate — its forward
  pass (:meth:`CompletionsStub.forward`: model, log-softmax, reading the
  prompt tokens' log-probabilities) timed alone on exactly the batches the
  endpoint run sent. ``ratio_to_server_forward`` = endpoint / raw, goal ≥ 0.8.
* ``server_forward_share_of_run`` (concurrency 1): the server's forward
  passes timed inside the endpoint run, as a share of the run's wall time
  (the rest is tokenizing, HTTP, JSON, checks and the summary).
* ``in_process_pairs_per_s``: the same model loaded in this process
  (``run`` without ``endpoint``), for reference, and
  ``max_abs_difference_vs_in_process``: the largest difference of a pair's
  score difference between the endpoint and in process (the equivalence the
  tests bound at 1e-4).

Timings are medians over ``repeats`` runs measured in one run on one machine;
a 2-core CPU makes them noisy, and a busy one makes figures taken minutes
apart (the endpoint runs, the replay) hard to compare:
``server_forward_share_of_run`` is measured within the same runs and is the
steadier figure. Quick mode (24 pairs, a tiny model) is
dominated by fixed costs (HTTP round trips, the model list) and is no test of
the goal.
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


def _build_gpt2(folder: Path, corpus: list[str], *, quick: bool) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from benchmarks.bench_lm import BPE_VOCAB
    from tests.lm_helpers import bpe_tokenizer

    tok = bpe_tokenizer(corpus, vocab_size=BPE_VOCAB)
    sizes = {"n_embd": 128, "n_layer": 2, "n_head": 2, "n_positions": 256} if quick else {}
    cfg = GPT2Config(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **sizes)
    torch.manual_seed(0)
    GPT2LMHeadModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def run(quick: bool = False) -> dict:
    """Run the benchmark and return its figures (also printed as JSON)."""
    import torch

    from benchmarks.bench_lm import _data
    from biastest.measures.stereotype.options import StereotypeOptions
    from biastest.measures.stereotype.run import StereotypeItems
    from biastest.measures.stereotype.run import run as run_stereotype
    from biastest.models.cache import ModelCache
    from tests.completions_stub import CompletionsStub

    t0 = time.perf_counter()
    n_pairs = 24 if quick else 200
    repeats = 3 if quick else 1
    concurrencies = (1, 4)
    pairs, _, data_info = _data(n_pairs)
    corpus = [s for p in pairs for s in (p.stereotyped, p.anti_stereotyped)]
    common = dict(method="causal-sum", seed=0, n_resamples=1000, batch_size=32)
    items = StereotypeItems(pairs)

    def run_once(*, cache=None, **options):
        return run_stereotype(StereotypeOptions.parse(options), items, cache=cache)
    out: dict = {**data_info, "n_pairs": len(pairs), "batch_size": 32, "repeats": repeats,
                 "threads": torch.get_num_threads()}
    with tempfile.TemporaryDirectory() as tmp:
        folder = _build_gpt2(Path(tmp) / "gpt2", corpus, quick=quick)
        cache = ModelCache(1)
        run_once(model_id=str(folder), device="cpu", cache=cache, **common)  # load + warm-up
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            here = run_once(model_id=str(folder), device="cpu", cache=cache, **common)
            times.append(time.perf_counter() - t)
        out["in_process_pairs_per_s"] = round(len(pairs) / median(times), 2)
        del cache
        with CompletionsStub(folder, served_name="bench-gpt2") as stub:
            out["model"] = (f"GPT2LMHeadModel ({sum(p.numel() for p in stub.model.parameters()) / 1e6:.1f} M "
                            "parameters, random weights)")
            forward_fn, in_run = stub.forward, []

            def timed_forward(prompts):  # the server's own forward passes, timed inside the endpoint runs
                t = time.perf_counter()
                try:
                    return forward_fn(prompts)
                finally:
                    in_run.append(time.perf_counter() - t)

            stub.forward = timed_forward
            endpoint = {}
            for concurrency in concurrencies:
                times, forward_in_run = [], []
                for _ in range(repeats + 1):  # the first run warms the server up and is not timed
                    stub.reset()
                    in_run.clear()
                    t = time.perf_counter()
                    there = run_once(model_id="bench-gpt2", endpoint=stub.base_url, tokenizer=str(folder),
                                                concurrency=concurrency, **common)
                    times.append(time.perf_counter() - t)
                    forward_in_run.append(sum(in_run))
                info = there.provenance["model"]
                endpoint[concurrency] = {
                    "endpoint_pairs_per_s": round(len(pairs) / median(times[1:]), 2),
                    "requests": info["requests"]["completions"],
                    "complete": info["complete"],
                    "n_scored": there.n_scored,
                }
                if concurrency == 1:  # one request at a time: no wait for the server's forward lock is counted
                    endpoint[concurrency]["server_forward_share_of_run"] = round(
                        median(forward_in_run[1:]) / median(times[1:]), 3)
            stub.forward = forward_fn
            # the server's raw forward passes on exactly the batches the last endpoint run sent
            batches = [r["body"]["prompt"] for r in stub.requests if r["path"] == "/v1/completions"]
            stub.forward(batches[0])  # warm-up
            forward = []
            for _ in range(repeats):
                t = time.perf_counter()
                for prompts in batches:
                    stub.forward(prompts)
                forward.append(time.perf_counter() - t)
        raw = len(pairs) / median(forward)
        diffs = [abs(a.difference - b.difference) for a, b in zip(here.pairs, there.pairs, strict=True)
                 if a.difference is not None and b.difference is not None]
    best = max(v["endpoint_pairs_per_s"] for v in endpoint.values())
    ratio = best / raw
    out.update({
        "server_forward_pairs_per_s": round(raw, 2),
        "server_forward_requests": len(batches),
        "endpoint": {f"concurrency_{c}": v for c, v in endpoint.items()},
        "ratio_to_server_forward": round(ratio, 3),
        "goal": f"endpoint pairs/s >= {GOAL_RATIO} x the same server's raw forward-pass rate",
        "meets_goal": bool(ratio >= GOAL_RATIO),
        "max_abs_difference_vs_in_process": float(max(diffs)) if diffs else None,
        "score_percent": round(there.overall.score, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
    })
    print(
        f"endpoint {best:.2f} pairs/s | server forward passes alone {raw:.2f} pairs/s (ratio {ratio:.2f}, goal >= "
        f"{GOAL_RATIO}: {'met' if ratio >= GOAL_RATIO else 'MISSED'}) | in process {out['in_process_pairs_per_s']} "
        f"pairs/s | largest difference from in process {out['max_abs_difference_vs_in_process']:.1e}",
        flush=True,
    )
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
