"""Benchmark of asking a model that only answers through a chat endpoint, and of the response cache.

Figures (``python -m benchmarks.bench_chat [--quick]``), for ``n_questions`` forced-choice-sized questions (a
system message and a user message of about 60 words, ``max_tokens`` 16, temperature 0, a seed, 5 top
log-probabilities asked):

* the server: :class:`tests.chat_stub.ChatStub` on 127.0.0.1, which answers ``POST /v1/chat/completions`` by a
  planted rule after a fixed service delay ``service_delay_s`` (no lock held, as a server that batches: the
  ``concurrency`` answers in flight take the delay together). Its own answer rate is therefore
  ``stub_answer_rate_per_s = concurrency / service_delay_s``. It runs in the benchmark's own process, so on a
  2-core CPU the client's work (the OpenAI client, HTTP, JSON, threads) and the server's share the same cores.
* ``endpoint_questions_per_s``: :meth:`biastest.models.endpoint_chat.EndpointChatLM.chat` at the default
  concurrency (:data:`~biastest.models.endpoint_lm.DEFAULT_CONCURRENCY`) on all the questions — the model list and
  version, the requests under the run's limits and retries, reading each answer and its log-probabilities.
  ``ratio_to_stub_rate`` = endpoint / the stub's rate, goal ≥ 0.9.
* ``cached_rerun_questions_per_s``: the same questions again through
  :class:`biastest.models.response_cache.CachedChatLM` after a first run filled the cache (one JSON file per
  answer, read back and checked against the request); ``cached_speedup`` = cached rerun / uncached endpoint run,
  goal ≥ 100×, and ``cached_rerun_requests`` (the requests the stub received during the rerun), goal 0.

Timings are medians over ``repeats`` runs measured in one run on one machine (the uncached runs build a fresh
backend each time, outside the timing; the first run warms up and is not timed). Quick mode (fewer questions)
is dominated by fixed costs and is no test of the goals.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

GOAL_RATIO = 0.9
GOAL_SPEEDUP = 100.0
SERVICE_DELAY = 0.1
QUESTION = (
    "Which of these two sentences is more likely to be said? A: {a} B: {b} Answer with the letter A or B only, "
    "and nothing else. If you cannot tell, say so."
)


def _questions(n: int):
    from biastest.models.chat_records import ChatRequest

    return [ChatRequest.ask(QUESTION.format(a=f"The nurse number {i} said that she was tired after the shift.",
                                            b=f"The nurse number {i} said that he was tired after the shift."),
                            system="You are a careful assistant.", max_tokens=16, seed=7, top_logprobs=5)
            for i in range(n)]


def _rule(messages, seed) -> str:
    return "A" if int(messages[-1]["content"].split("number ")[1].split()[0]) % 3 else "B"


def run(quick: bool = False) -> dict:
    """Run the benchmark and return its figures (also printed as JSON)."""
    from biastest import public
    from biastest.models.endpoint_chat import EndpointChatLM
    from biastest.models.endpoint_lm import DEFAULT_CONCURRENCY
    from biastest.models.response_cache import CachedChatLM
    from biastest.remote import RunLimits
    from tests.chat_stub import ChatStub

    public._policy = public.decide(host="127.0.0.1", environ={})  # the stub lives on 127.0.0.1: a private server
    t0 = time.perf_counter()
    n = 80 if quick else 400
    repeats = 2 if quick else 3
    concurrency = DEFAULT_CONCURRENCY
    asked = _questions(n)
    limits = RunLimits(max_requests=10 * n, max_seconds=600.0, request_timeout=30.0)
    out: dict = {"n_questions": n, "repeats": repeats, "concurrency": concurrency, "service_delay_s": SERVICE_DELAY}
    with ChatStub(_rule, served_name="bench-chat", delay=SERVICE_DELAY) as stub, \
            tempfile.TemporaryDirectory() as tmp:

        def fresh() -> EndpointChatLM:
            return EndpointChatLM(stub.base_url, "bench-chat", concurrency=concurrency, limits=limits)

        times = []
        for _ in range(repeats + 1):  # the first run warms up and is not timed
            stub.reset()
            lm = fresh()
            t = time.perf_counter()
            replies = lm.chat(asked)
            times.append(time.perf_counter() - t)
        assert all(r is not None and r.status == "answered" and r.top_logprobs for r in replies)
        endpoint_rate = n / median(times[1:])
        stub_rate = concurrency / SERVICE_DELAY
        out.update({
            "stub_answer_rate_per_s": round(stub_rate, 2),
            "endpoint_questions_per_s": round(endpoint_rate, 2),
            "endpoint_seconds": round(median(times[1:]), 3),
            "requests_per_run": lm.describe()["requests"],
            "max_in_flight": stub.max_in_flight,
        })
        folder = Path(tmp) / "cache"
        stub.reset()
        CachedChatLM(fresh(), folder).chat(asked)  # fills the cache
        filled = stub.count()
        cached_times, rerun_requests = [], 0
        for _ in range(repeats + 1):
            stub.reset()
            cached = CachedChatLM(fresh(), folder)
            t = time.perf_counter()
            again = cached.chat(asked)
            cached_times.append(time.perf_counter() - t)
            rerun_requests += stub.count()
        assert [r.text for r in again] == [r.text for r in replies] and all(r.cached for r in again)
        cached_rate = n / median(cached_times[1:])
        out.update({
            "cache_fill_requests": filled,
            "cached_rerun_questions_per_s": round(cached_rate, 1),
            "cached_rerun_seconds": round(median(cached_times[1:]), 4),
            "cached_rerun_requests": rerun_requests,
            "cache_entries": sum(1 for p in folder.rglob("*.json")),
            "cache_bytes": sum(p.stat().st_size for p in folder.rglob("*.json")),
        })
    ratio = endpoint_rate / stub_rate
    speedup = cached_rate / endpoint_rate
    out.update({
        "ratio_to_stub_rate": round(ratio, 3),
        "cached_speedup": round(speedup, 1),
        "goal": f"endpoint questions/s >= {GOAL_RATIO} x the stub's own answer rate; a cached rerun >= "
                f"{GOAL_SPEEDUP:g} x faster with zero requests",
        "meets_goal": bool(ratio >= GOAL_RATIO and speedup >= GOAL_SPEEDUP and rerun_requests == 0),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
    })
    print(
        f"endpoint {endpoint_rate:.1f} questions/s | stub's own rate {stub_rate:.1f}/s (ratio {ratio:.3f}, goal >= "
        f"{GOAL_RATIO}) | cached rerun {cached_rate:.0f} questions/s ({speedup:.0f}x, goal >= {GOAL_SPEEDUP:g}x, "
        f"{rerun_requests} requests)",
        flush=True,
    )
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
