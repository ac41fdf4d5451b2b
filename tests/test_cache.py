"""The process-wide model cache: bounded, LRU, one load per key under concurrency."""

from __future__ import annotations

import threading
import time

import pytest

from biastest.models.cache import ModelCache


def test_hit_miss_and_lru_eviction():
    cache = ModelCache(max_items=2)
    loads = []

    def loader(k):
        def f():
            loads.append(k)
            return object()

        return f

    a = cache.get("a", loader("a"))
    assert cache.get("a", loader("a")) is a
    cache.get("b", loader("b"))
    cache.get("a", loader("a"))  # a is now most recent
    cache.get("c", loader("c"))  # evicts b
    assert "b" not in cache and "a" in cache and "c" in cache
    assert loads == ["a", "b", "c"]
    assert (cache.hits, cache.misses) == (2, 3)


def test_concurrent_requests_load_once():
    cache = ModelCache(max_items=2)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return "model"

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("m", slow))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == ["model"] * 8
    assert len(calls) == 1


def test_failed_load_leaves_nothing():
    cache = ModelCache(max_items=2)

    def boom():
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        cache.get("x", boom)
    assert "x" not in cache and len(cache) == 0
    assert cache.get("x", lambda: 1) == 1


def test_loads_of_different_models_never_overlap_and_hits_do_not_wait():
    """Two users choosing two models at once: the loads run one after the other (from_pretrained patches
    process-wide state while it loads); a cached model is returned while another one is loading."""
    cache = ModelCache(max_items=4)
    cache.get("cached", lambda: "ready")
    active, overlaps, lock = [0], [], threading.Lock()

    def slow(name):
        def load():
            with lock:
                active[0] += 1
                overlaps.append(active[0])
            time.sleep(0.15)
            with lock:
                active[0] -= 1
            return name

        return load

    results = {}
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, cache.get(k, slow(k)))) for k in "abcd"]
    for t in threads:
        t.start()
    time.sleep(0.05)  # a load is under way now
    t0 = time.monotonic()
    assert cache.get("cached", lambda: "reloaded") == "ready"
    hit_seconds = time.monotonic() - t0
    for t in threads:
        t.join(timeout=10)
    assert results == {k: k for k in "abcd"}
    assert max(overlaps) == 1, "two loads ran at the same time"
    assert hit_seconds < 0.1


def test_a_loader_may_load_a_part_through_the_cache():
    cache = ModelCache(max_items=4)
    assert cache.get("outer", lambda: ("outer", cache.get("inner", lambda: "inner"))) == ("outer", "inner")
