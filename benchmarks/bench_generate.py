"""Benchmark of the generation machinery (not of any model).

Measures what biastest itself adds around a model: validating an answer,
building the template and counterfactual, and the whole per-item overhead of
a generation run through the real ``openai`` client against the local stub
server (HTTP on 127.0.0.1, so network latency is near zero and what remains
is our code plus the client). A real API answers in about a second, so the
goal is an overhead far below that: under 50 ms per accepted sentence.

Run: ``python -m benchmarks.bench_generate [--quick]``.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time

GOAL_MS_PER_ITEM = 50.0


def _median_us(fn, items, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for it in items:
            fn(it)
        times.append((time.perf_counter() - t0) / len(items) * 1e6)
    return statistics.median(times)


def run(quick: bool = False) -> dict:
    from biastest.generate import SentenceSettings, generate_sentences
    from biastest.generate.base import SentenceRules
    from biastest.generate.counterfactual import swap_counterfactual
    from biastest.generate.openai_chat import OpenAIChatGenerator
    from biastest.remote import RetryPolicy
    from biastest.spec import BiasSpec
    from tests.openai_stub import FRAMES, OpenAIStub

    repeats = 3 if quick else 7
    rules = SentenceRules()
    counterpart = {"man": "woman", "father": "mother", "boy": "girl"}
    items = [(f.format(t=t, a=a).rstrip(".") + " with his friends.", t, a)
             for f in FRAMES for t in counterpart for a in ("math", "poetry")]
    others = tuple(counterpart.values())
    check_us = _median_us(lambda x: rules.check(x[0], group_term=x[1], attribute_term=x[2],
                                                other_group_terms=others, seen=set()), items, repeats)
    assert all(rules.check(x[0], group_term=x[1], attribute_term=x[2], other_group_terms=others) is None
               for x in items)
    swap_us = _median_us(lambda x: swap_counterfactual(x[0], x[1], counterpart[x[1]]), items, repeats)

    spec = BiasSpec.from_terms(group1="man, he, boy", group2="woman, she, girl", stereotype1="math, algebra",
                               antistereotype1="poetry, art", name="bench")
    per_attr = 2 if quick else 6
    item_ms = []
    with OpenAIStub() as stub:
        gen = OpenAIChatGenerator("stub-chat", api_key="sk-bench", base_url=stub.base_url)
        generate_sentences(spec, gen, SentenceSettings(seed=0, target_per_attribute=1))  # warm up the client
        for r in range(repeats):
            t0 = time.perf_counter()
            result = generate_sentences(spec, gen, SentenceSettings(seed=r + 1, target_per_attribute=per_attr,
                                                                    retry=RetryPolicy(initial_delay=0.01)))
            dt = time.perf_counter() - t0
            item_ms.append(dt / max(1, result.report.accepted) * 1e3)
    ms = statistics.median(item_ms)
    out = {
        "validate_us_per_sentence": round(check_us, 2),
        "counterfactual_us_per_sentence": round(swap_us, 2),
        "run_overhead_ms_per_sentence": round(ms, 2),
        "sentences_per_run": per_attr * 4,
        "repeats": repeats,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "goal": f"generation overhead under {GOAL_MS_PER_ITEM:g} ms per accepted sentence (stub server, real client)",
        "meets_goal": ms < GOAL_MS_PER_ITEM,
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
