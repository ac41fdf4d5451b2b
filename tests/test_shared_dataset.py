"""The shared dataset, live (the service the apps use): background pulls, pushes, where found items come from.

Against the repository's Hub stand-in (tests/hub_stub.py, a real HTTP server speaking the protocol
huggingface_hub uses). Two stores stand for two servers.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path

import huggingface_hub.constants

from biastest.records import TestSentence
from biastest.store import shared as S
from biastest.store.importers import PUBLIC_BIASTESTGPT_REPO
from biastest.store.local import DatasetStore
from tests.store_helpers import Clock
from tests.store_helpers import wait_until as _wait

REPO = "stub-user/bias-data"
TOKEN = "hf_stub_secret_token_0123456789"


def _service(store, hub, **kw) -> S.SharedDataset:
    opts = {"backoff_s": 0.01, "batch_delay_s": 0.05, "interval_s": 0.2}
    return S.SharedDataset(store, endpoint=hub.url, sync_options=opts, **kw)


def _sentences(tag: str, n: int) -> list[TestSentence]:
    return [TestSentence(f"The {tag} man number {i} likes math.", "man", "math", source="generated") for i in range(n)]


def test_two_servers_share_what_one_generates(tmp_path, hub):
    """Server A generates; its rows reach the dataset; server B, started afterwards empty, finds exactly them."""
    a = _service(DatasetStore(tmp_path / "a"), hub, repo_id=REPO, token=TOKEN, clock=Clock()).start()
    assert a.mode == S.MODE_SYNC
    made = _sentences("a", 6)
    report = a.store.add(made)
    _wait(lambda: a.item_state(report.shards)[report.shards[0]][0] == S.ITEM_PUSHED)
    (state, commit), = a.item_state(report.shards).values()
    assert state == S.ITEM_PUSHED and len(commit) == 40  # the commit that carried the file
    a.stop()

    clock = Clock()
    b = _service(DatasetStore(tmp_path / "b"), hub, repo_id=REPO, token=TOKEN, clock=clock).start()
    assert b.wait_pulled(20)
    got = b.store.sentences()
    assert Counter(s.id for s in got) == Counter(s.id for s in made)  # each once
    assert {s.text for s in got} == {s.text for s in made} and {s.source for s in got} == {"generated"}
    clock.t += 180
    line = b.found_line("sentences", [s.id for s in got])
    assert line == S.MSG_FOUND_LINE.format(
        n=6, what="sentences", parts=S.MSG_FROM_DATASET.format(n=6, repo=REPO, pulled="pulled 3 min ago"))
    # B's own rows are counted as made here, and are pushed too
    mine = b.store.add(_sentences("b", 2))
    ids = [s.id for s in got] + [s.id for s in _sentences("b", 2)]
    assert b.origins("sentences", ids) == {"dataset": 6, "public": 0, "here": 2}
    _wait(lambda: b.item_state(mine.shards)[mine.shards[0]][0] == S.ITEM_PUSHED)
    b.stop()
    assert Counter(r["id"] for r in hub.parquet_rows(REPO, "sentences")) == Counter(dict.fromkeys(ids, 1))


def test_a_hub_outage_mid_session_loses_nothing(tmp_path, hub):
    svc = _service(DatasetStore(tmp_path / "s"), hub, repo_id=REPO, token=TOKEN).start()
    first = svc.store.add(_sentences("first", 3))
    _wait(lambda: svc.item_state(first.shards)[first.shards[0]][0] == S.ITEM_PUSHED)
    hub.fail_commits = {n: 503 for n in range(1, 1000)}  # the hub goes down
    second = svc.store.add(_sentences("second", 3))
    _wait(lambda: svc.item_state(second.shards)[second.shards[0]][0] == S.ITEM_FAILED)
    assert svc.summary().startswith(f"Shared dataset **{REPO}**") and "nothing is lost" in svc.summary()
    assert svc.store.count("sentences") == 6  # the user keeps working locally
    hub.fail_commits = {}  # the hub comes back: the queue drains
    _wait(lambda: svc.item_state(second.shards)[second.shards[0]][0] == S.ITEM_PUSHED)
    svc.stop()
    ids = [s.id for s in _sentences("first", 3) + _sentences("second", 3)]
    assert Counter(r["id"] for r in hub.parquet_rows(REPO, "sentences")) == Counter(dict.fromkeys(ids, 1))


def test_refresh_retries_the_queued_uploads_at_once_after_an_outage(tmp_path, hub):
    """'Refresh from the dataset' sends what an outage left queued now, not at the pusher's next try (an hour here)."""
    opts = {"backoff_s": 0.01, "batch_delay_s": 0.05, "interval_s": 3600}
    svc = S.SharedDataset(DatasetStore(tmp_path / "s"), repo_id=REPO, token=TOKEN, endpoint=hub.url,
                          pull_interval_s=3600, sync_options=opts).start()
    assert svc.wait_pulled(20)
    hub.down = 503  # every request fails, reads included
    made = _sentences("down", 3)
    report = svc.store.add(made)
    _wait(lambda: svc.item_state(report.shards)[report.shards[0]][0] == S.ITEM_FAILED)
    assert "file(s) are queued here" in svc.summary() and "nothing is lost" in svc.summary()
    hub.down = None  # back; the pusher's own next try is an hour away
    time.sleep(0.5)
    assert svc.item_state(report.shards)[report.shards[0]][0] == S.ITEM_FAILED
    svc.refresh()
    _wait(lambda: svc.item_state(report.shards)[report.shards[0]][0] == S.ITEM_PUSHED, timeout=10,
          what="the queued upload after 'Refresh from the dataset'")
    assert svc.wait_pulled(10) and svc.pulls.ok and "cannot be reached" not in svc.summary()
    svc.stop()
    assert Counter(r["id"] for r in hub.parquet_rows(REPO, "sentences")) == Counter(s.id for s in made)


def test_without_a_token_everything_stays_local_and_step_2_says_how_to_share(tmp_path, online, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # and no connection at all
    svc = S.SharedDataset(DatasetStore(tmp_path / "s"), clock=Clock()).start()
    assert svc.mode == S.MODE_PUBLIC and svc.wait_pulled(20)
    report = svc.store.add(_sentences("x", 2))
    assert svc.item_state(report.shards) == {report.shards[0]: (S.ITEM_LOCAL, "")}
    summary = svc.summary()
    never = S.MSG_NEVER_PULLED.format(ago="just now")  # tried, never reached: not "pulled just now"
    assert summary.startswith(S.MSG_SUMMARY_PUBLIC.format(repo=PUBLIC_BIASTESTGPT_REPO, pulled=never))
    assert "BIASTEST_HF_DATASET" in summary and "HF_TOKEN" in summary
    assert summary.endswith(S.MSG_UNREACHABLE.format(problem="offline"))
    svc.stop()


def test_step_2_says_when_the_dataset_was_last_reached_not_last_tried(tmp_path, hub):
    clock = Clock()
    hub.add_file(REPO, "README.md", b"a dataset card")
    hub.down = 503
    svc = _service(DatasetStore(tmp_path / "s"), hub, repo_id=REPO, token="", clock=clock, pull_interval_s=3600)
    assert svc.start().wait_pulled(20) and svc.pulls.ok is False
    assert svc.summary().startswith(S.MSG_SUMMARY_READ.format(repo=REPO, pulled=S.MSG_NEVER_PULLED.format(
        ago="just now")))
    hub.down = None
    clock.t += 60
    svc.refresh()
    assert svc.wait_pulled(20) and svc.pulls.ok
    clock.t += 180
    hub.down = 503  # down again: the store still holds what the pull 3 minutes ago brought
    svc.refresh()
    assert svc.wait_pulled(20) and svc.pulls.ok is False
    summary = svc.summary()
    assert summary.startswith(S.MSG_SUMMARY_READ.format(repo=REPO, pulled="pulled 3 min ago")), summary
    assert "cannot be reached right now" in summary
    hub.down = None
    svc.stop()


def test_read_only_dataset_is_pulled_but_nothing_is_pushed(tmp_path, hub):
    writer = _service(DatasetStore(tmp_path / "w"), hub, repo_id=REPO, token=TOKEN)
    writer.store.add(_sentences("w", 2))
    assert writer.sync.push_now().ok
    reader = _service(DatasetStore(tmp_path / "r"), hub, repo_id=REPO, token="", clock=Clock()).start()
    assert reader.mode == S.MODE_READ and reader.wait_pulled(20)
    assert reader.store.count("sentences") == 2
    commits = len([r for r in hub.requests if "/commit/" in r[1]])
    reader.store.add(_sentences("r", 1))
    time.sleep(0.5)
    assert len([r for r in hub.requests if "/commit/" in r[1]]) == commits
    assert "read-only" in reader.summary()
    reader.stop()


def test_fresh_deployment_finds_the_public_biastestgpt_sentences_without_generating(tmp_path, hub, shared_data):
    """No dataset configured: the public BiasTestGPT sentences (a sample of the real file) are pulled in the
    background and retrieval for a predefined spec finds them."""
    from biastest.specs import get_spec
    from biastest.store.retrieval import retrieve_sentences

    real = (shared_data / "biastestgpt" / "gpt-3.5-shots-5-1_sentences.csv").read_bytes()
    sample = b"\n".join(real.splitlines()[:201]) + b"\n"  # the header and 200 real rows
    hub.add_file(PUBLIC_BIASTESTGPT_REPO, "gpt-3.5-shots-5-1_sentences.csv", sample)
    clock = Clock()
    svc = _service(DatasetStore(tmp_path / "fresh"), hub, clock=clock).start()
    assert svc.mode == S.MODE_PUBLIC and svc.wait_pulled(30) and svc.pulls.ok
    found = retrieve_sentences(svc.store, get_spec("Math_Arts_vs_Male_Female"))
    ids = [m.sentence.id for m in found.matches]
    assert ids, "the public sentences were not found"
    assert svc.origins("sentences", ids) == {"dataset": 0, "public": len(set(ids)), "here": 0}
    assert "from the public BiasTestGPT dataset" in svc.found_line("sentences", ids)
    assert svc.sync.pending() == []  # read-only: never pushed anywhere
    svc.stop()


def test_refresh_never_blocks_and_pulls_again(tmp_path, hub):
    svc = _service(DatasetStore(tmp_path / "s"), hub, repo_id=REPO, token="", pull_interval_s=3600).start()
    assert svc.wait_pulled(20)
    n = len(svc.pulls.history)
    hub.delay_s = 0.5  # a slow hub
    t0 = time.monotonic()
    svc.refresh()
    assert time.monotonic() - t0 < 0.25  # the control returns while the pull runs in the background
    assert svc.wait_pulled(20) and len(svc.pulls.history) == n + 1
    hub.delay_s = 0
    svc.stop()


def test_the_token_is_never_written_or_logged(tmp_path, hub, caplog):
    caplog.set_level(logging.DEBUG)
    svc = _service(DatasetStore(tmp_path / "s"), hub, repo_id=REPO, token=TOKEN).start()
    report = svc.store.add(_sentences("t", 2))
    _wait(lambda: svc.item_state(report.shards)[report.shards[0]][0] == S.ITEM_PUSHED)
    assert TOKEN not in repr(svc) and TOKEN not in svc.summary()
    puller = svc._thread
    svc.stop()
    assert puller is not None and not puller.is_alive()  # stop() ends this service's background pull
    for path in Path(tmp_path).rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in caplog.text
    assert not any(TOKEN in path for _, path in hub.requests)


def test_a_dataset_not_created_yet_is_not_called_unreachable(tmp_path, hub):
    svc = _service(DatasetStore(tmp_path / "s"), hub, repo_id=REPO, token=TOKEN, clock=Clock()).start()
    assert svc.wait_pulled(20)
    assert svc.pulls.ok and svc.pulls.message == S.MSG_NOT_CREATED.format(repo=REPO)
    assert "cannot be reached" not in svc.summary()
    report = svc.store.add(_sentences("first", 1))
    _wait(lambda: svc.item_state(report.shards)[report.shards[0]][0] == S.ITEM_PUSHED)  # the push creates it
    svc.stop()
    readonly = _service(DatasetStore(tmp_path / "r"), hub, repo_id="stub-user/missing", token="").start()
    # read-only: the Hub answered that the dataset does not exist; said as such (a wrong name?), not "cannot be
    # reached", and the store is as recent as the (empty) dataset: "pulled just now"
    assert readonly.wait_pulled(20) and readonly.pulls.ok
    assert readonly.pulls.message == S.MSG_NOT_CREATED_READ.format(repo="stub-user/missing")
    assert "cannot be reached" not in readonly.summary() and "pulled just now" in readonly.summary()
    assert readonly.summary().endswith(S.MSG_NOT_CREATED_READ.format(repo="stub-user/missing"))
    readonly.stop()
