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


class Clock:
    """A settable clock for services that say "pulled 3 min ago" (advance ``t``)."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def shared_dataset_at(root, hub=None, **kw):
    """A :class:`~biastest.store.shared.SharedDataset` on a fresh store at ``root`` with quick sync settings.

    No dataset and no token unless given; ``hub`` is the Hub stand-in (its URL is the endpoint).
    """
    from biastest.store.local import DatasetStore
    from biastest.store.shared import SharedDataset

    opts = {"backoff_s": 0.01, "batch_delay_s": 0.05, "interval_s": 0.2}
    kw.setdefault("repo_id", "")
    kw.setdefault("token", "")
    kw.setdefault("clock", Clock())
    return SharedDataset(DatasetStore(root, writer="app"), endpoint=hub.url if hub else None, sync_options=opts, **kw)


def wait_until(predicate, timeout: float = 30.0, what: str = "the condition") -> None:
    """Poll ``predicate`` every 50 ms until it holds; fail after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
