"""Helpers for the store tests (importable by spawned worker processes)."""

from __future__ import annotations

import io

from biastest.records import TestSentence


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 6)) -> bytes:
    """A small real PNG."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def worker_sentences(worker: int, batch: int, per_batch: int) -> list[TestSentence]:
    """Distinct sentences of one worker's batch, plus one sentence every worker writes."""
    out = [
        TestSentence(f"Worker {worker} wrote sentence {batch}-{i} about the nurse.", "nurse", "wrote",
                     source="test", seed=worker)
        for i in range(per_batch)
    ]
    out.append(TestSentence("Every worker writes this same sentence.", "worker", "writes", source="test"))
    return out


def append_worker(root: str, worker: int, batches: int, per_batch: int, start_at: float) -> int:
    """Append ``batches`` shards to the store at ``root`` as fast as possible; returns rows written."""
    import time

    from biastest.store.local import DatasetStore

    store = DatasetStore(root, writer=f"worker-{worker}")
    while time.time() < start_at:  # start both processes together
        time.sleep(0.005)
    n = 0
    for b in range(batches):
        # skip_existing=False: both workers write the shared sentence; dedup happens on read
        report = store.add(worker_sentences(worker, b, per_batch), skip_existing=False)
        n += report.written["sentences"]
    return n
