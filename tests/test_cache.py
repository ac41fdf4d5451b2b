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
