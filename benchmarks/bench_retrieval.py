"""Retrieval speed on a large local store (issue 9).

A 16-term spec (4 + 4 group terms, 4 + 4 attribute terms, with ``he``/``she``
and multi-word terms) against a store of 1,000,000 synthetic sentences in 100
Parquet shards (``quick``: 100,000 in 10), each row with the small provenance
an import records (source file and row). Reported:

* ``cold_index_s`` — the first look-up of a fresh process: reading every
  shard and building the per-shard word indexes;
* ``lookup_ms`` — median of warm look-ups of all 16 terms (index + regex check);
* ``retrieve_ms`` — median of warm :func:`retrieve_sentences` (look-ups, the
  group/attribute assignment, building the records and the coverage counts);
* ``refresh_ms`` — a look-up right after another writer added one shard
  (incremental indexing of the new shard only);
* peak memory (``ru_maxrss``).

Goal: ``retrieve_ms`` ≤ 200 ms at 1,000,000 sentences.

Run: ``python -m benchmarks.bench_retrieval`` (``--quick`` for 100k).
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

GOAL_MS = 200.0


def _spec():
    from biastest.spec import BiasSpec

    return BiasSpec.from_terms(
        name="bench", group1="man, he, father, social worker", group2="woman, she, mother, nurse aide",
        stereotype1="math, algebra, computer science, engineering", antistereotype1="art, poetry, dance, literature")


def _write_store(root: Path, n: int, shards: int, seed: int) -> dict:
    """Write ``n`` synthetic sentences as ``shards`` shard files in the store layout."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from biastest.records import content_id
    from biastest.store.local import DatasetStore
    from biastest.store.schema import SCHEMAS

    store = DatasetStore(root)
    spec = _spec()
    rng = random.Random(seed)
    filler = [f"w{i}" for i in range(5000)] + ["the", "hero", "there", "theme", "a", "and", "of", "to", "mans"]
    other_groups = [f"group{i}" for i in range(200)]
    other_attrs = [f"attr{i}" for i in range(400)]
    per = n // shards
    matches = 0
    t0 = time.perf_counter()
    for s in range(shards):
        texts, groups, attrs = [], [], []
        for _ in range(per):
            g = rng.choice(spec.group_terms) if rng.random() < 0.07 else rng.choice(other_groups)
            a = rng.choice(spec.attribute_terms) if rng.random() < 0.07 else rng.choice(other_attrs)
            words = rng.choices(filler, k=rng.randint(6, 12))
            words.insert(rng.randrange(len(words) + 1), g)
            words.insert(rng.randrange(len(words) + 1), a)
            text = " ".join(words).capitalize() + "."
            texts.append(text)
            groups.append(g)
            attrs.append(a)
            matches += g in spec.group_terms and a in spec.attribute_terms
        ids = [content_id("sentence", t, g, a) for t, g, a in zip(texts, groups, attrs, strict=True)]
        k = len(texts)
        table = pa.Table.from_pydict({
            "text": texts, "group_term": groups, "attribute_term": attrs, "template": [""] * k,
            "source": ["bench"] * k, "generator": [""] * k, "model": [""] * k, "prompt": [""] * k,
            "spec_name": [""] * k, "seed": [seed] * k, "created_at": ["2026-01-01T00:00:00Z"] * k,
            "provenance": [json.dumps({"file": f"bench{s:05d}.csv", "row": i}) for i in range(k)], "id": ids,
        }, schema=SCHEMAS["sentences"])
        pq.write_table(table, store.table_dir("sentences") / f"20260101T000000{s:06d}Z-1-bench{s:05d}.parquet",
                       compression="zstd")
    return {"write_s": time.perf_counter() - t0, "planted_matches": matches}


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def run(quick: bool = False) -> dict:
    """Run the benchmark; returns a JSON-able dict of figures (and prints it)."""
    from biastest.records import TestSentence
    from biastest.store import DatasetStore, retrieve_sentences

    n, shards = (100_000, 10) if quick else (1_000_000, 100)
    spec = _spec()
    terms = list(spec.group_terms + spec.attribute_terms)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        built = _write_store(root, n, shards, seed=0)
        store = DatasetStore(root)  # a fresh process view: nothing loaded yet
        t = time.perf_counter()
        view = store.view("sentences")
        for term in terms:
            view.term_rows(term)
        cold_s = time.perf_counter() - t

        lookup_ms = _median_ms(lambda: [store.view("sentences").term_rows(term) for term in terms], 7)
        result = retrieve_sentences(store, spec)
        retrieve_ms = _median_ms(lambda: retrieve_sentences(store, spec), 7)

        other = DatasetStore(root)  # another writer appends one shard
        other.add([TestSentence(f"The man number {i} likes math.", "man", "math") for i in range(1000)])
        t = time.perf_counter()
        after = retrieve_sentences(store, spec)
        refresh_ms = (time.perf_counter() - t) * 1000

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {
        "sentences": n,
        "shards": shards,
        "spec_terms": len(terms),
        "matched": len(result.matches),
        "planted_matches_upper_bound": built["planted_matches"],
        "matched_after_append": len(after.matches),
        "write_store_s": round(built["write_s"], 2),
        "cold_index_s": round(cold_s, 2),
        "lookup_ms": round(lookup_ms, 1),
        "retrieve_ms": round(retrieve_ms, 1),
        "refresh_ms": round(refresh_ms, 1),
        "peak_rss_mb": round(peak_mb, 1),
        "goal": f"retrieve_sentences for a 16-term spec over {n:,} stored sentences <= {GOAL_MS:.0f} ms (warm)",
        "goal_ms": GOAL_MS,
        "meets_goal": retrieve_ms <= GOAL_MS,
        "quick": quick,
    }
    assert after.coverage.total >= result.coverage.total + 1000  # the appended shard was found
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)

