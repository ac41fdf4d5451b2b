"""Hub sync against a local stub Hub (real huggingface_hub HTTP protocol, injected faults).

The stub does not emulate the LFS/Xet upload path the real Hub uses for
Parquet and image files (it answers ``uploadMode: "regular"``, so files go
inline in the commit); see tests/hub_stub.py.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

import pytest

from biastest.records import SentencePair, TestSentence
from biastest.store import hub as hub_mod
from biastest.store.hub import HubSync, dataset_card
from biastest.store.local import DatasetStore
from tests.hub_stub import StubHub
from tests.store_helpers import png_bytes

REPO = "stub-user/bias-data"


@pytest.fixture
def stub(online):
    with StubHub(page_size=3) as hub:
        yield hub


def _fill(store: DatasetStore, tag: str, shards: int = 3, per: int = 4) -> set[str]:
    ids = set()
    for k in range(shards):
        sents = [TestSentence(f"The {tag} man {k}-{i} likes math.", "man", "math", source="test") for i in range(per)]
        store.add(sents)
        ids |= {s.id for s in sents}
    return ids


def _sync(store, stub, **kw) -> HubSync:
    kw.setdefault("backoff_s", 0.01)
    return HubSync(store, repo_id=REPO, token="hf_stub_token", endpoint=stub.url, **kw)


def _remote_ids(stub, table="sentences") -> Counter:
    if ("dataset", REPO) not in stub.repos:
        return Counter()
    return Counter(r["id"] for r in stub.parquet_rows(REPO, table))


# ----------------------------------------------------------------- sync off
def test_without_token_sync_is_off_and_store_works(tmp_path, online):
    store = DatasetStore(tmp_path)
    sync = HubSync(store)
    st = sync.status()
    assert not st.enabled and st.message == hub_mod.MSG_SYNC_OFF
    assert sync.start() == st and sync._thread is None
    report = sync.push_now()
    assert not report.ok and report.message == hub_mod.MSG_SYNC_OFF
    store.add([TestSentence("The man likes math.", "man", "math")])
    assert len(store.sentences()) == 1
    assert HubSync(store, repo_id=REPO).status().message == hub_mod.MSG_SYNC_NO_TOKEN.format(repo_id=REPO)
    assert HubSync(store, token="x").status().message == hub_mod.MSG_SYNC_NO_REPO


def test_configuration_from_environment(tmp_path, online, monkeypatch):
    monkeypatch.setenv("BIASTEST_HF_DATASET", REPO)
    monkeypatch.setenv("HF_TOKEN", "hf_env_token")
    sync = HubSync(DatasetStore(tmp_path))
    assert sync.enabled and sync.repo_id == REPO
    assert "hf_env_token" not in repr(sync) and "hf_env_token" not in str(sync.status().to_dict())


def test_bad_repo_id(tmp_path, online):
    with pytest.raises(hub_mod.SyncError) as exc:
        HubSync(DatasetStore(tmp_path), repo_id="no-slash", token="t")
    assert exc.value.message == hub_mod.MSG_BAD_REPO_ID.format(repo_id="no-slash")


# ------------------------------------------------------------ push and pull
def test_push_then_pull_into_a_fresh_store(tmp_path, stub):
    store = DatasetStore(tmp_path / "a")
    ids = _fill(store, "a")
    pair = SentencePair("The man likes math.", "The woman likes math.", "math", "man", "woman")
    store.add([], [pair])
    img = store.add_image(png_bytes(), image_term="nurse")
    sync = _sync(store, stub)
    report = sync.push_now()
    assert report.ok and report.commits == 1 and report.pending == 0
    assert report.message == hub_mod.MSG_PUSH_DONE.format(files=len(report.pushed), repo_id=REPO, commits=1)
    files = stub.repo(REPO).files
    assert files["README.md"].decode() == dataset_card(REPO)
    assert files["README.md"].startswith(b"---\n")
    assert _remote_ids(stub) == Counter(dict.fromkeys(ids, 1))
    assert sync.status().pending == 0 and sync.push_now().message == hub_mod.MSG_PUSH_NOTHING.format(repo_id=REPO)

    fresh = DatasetStore(tmp_path / "b")
    pulled = _sync(fresh, stub).pull()
    assert pulled.ok and len(pulled.downloaded) == len(report.pushed)
    assert {s.id for s in fresh.sentences()} == ids
    assert fresh.pairs() == [pair]
    (img2,) = fresh.images()
    assert img2 == img and fresh.read_image(img2) == png_bytes()
    # a second pull downloads nothing (a local cache, not a download per use)
    n_requests = len(stub.requests)
    again = _sync(fresh, stub).pull()
    assert again.downloaded == () and again.message == hub_mod.MSG_PULL_NOTHING.format(repo_id=REPO)
    assert [r for r in stub.requests[n_requests:] if "/resolve/" in r[1]] == []
    # pulled files are known to be remote: nothing to push back
    assert _sync(fresh, stub).pending() == []


@pytest.mark.parametrize("fault", ["drop_commits", "drop_after_apply", "drop_midway", "fail_commits"])
def test_interrupted_push_loses_nothing_and_retry_leaves_each_row_once(tmp_path, stub, fault):
    store = DatasetStore(tmp_path)
    ids = _fill(store, "x", shards=4)
    if fault == "fail_commits":
        stub.fail_commits = {2: 500}
    else:
        setattr(stub, fault, {2})
    sync = _sync(store, stub, batch_files=1, max_attempts=1)
    first = sync.push_now()
    assert not first.ok and first.commits == 1 and first.pending == 3
    assert first.message.startswith(f"Could not push to the Hugging Face dataset {REPO} (")
    assert sync.status().last_error and sync.status().message.startswith(
        f"Syncing with the Hugging Face dataset {REPO}: the last push failed (")
    # nothing lost locally
    assert {s.id for s in store.sentences()} == ids
    remote_after_fault = _remote_ids(stub)
    assert all(n == 1 for n in remote_after_fault.values())
    # the retry completes and no row is duplicated
    second = sync.push_now()
    assert second.ok and second.pending == 0
    if fault == "drop_after_apply":
        assert len(second.already_remote) == 1  # the lost-answer commit was recognised, not re-sent
        assert len(second.pushed) == 2
    else:
        assert len(second.pushed) == 3
    assert _remote_ids(stub) == Counter(dict.fromkeys(ids, 1))
    fresh = DatasetStore(tmp_path / "fresh")
    assert _sync(fresh, stub).pull().ok
    assert Counter(s.id for s in fresh.sentences()) == Counter(dict.fromkeys(ids, 1))
    assert fresh.view("sentences").num_rows == len(ids)


def test_transient_failure_is_retried_within_one_push(tmp_path, stub):
    store = DatasetStore(tmp_path)
    ids = _fill(store, "y", shards=2)
    stub.drop_commits = {1}
    stub.fail_commits = {2: 503}
    report = _sync(store, stub, max_attempts=3).push_now()
    assert report.ok and report.attempts == 3
    assert _remote_ids(stub) == Counter(dict.fromkeys(ids, 1))


def test_refused_token_is_reported_and_rows_stay_pending(tmp_path, stub):
    stub.tokens = {"the-right-token"}
    store = DatasetStore(tmp_path)
    _fill(store, "z", shards=1)
    sync = _sync(store, stub, max_attempts=3)
    report = sync.push_now()
    assert not report.ok and report.attempts == 1  # not retried: retrying cannot help
    assert report.message == hub_mod.MSG_PUSH_AUTH.format(repo_id=REPO, status=401)
    assert len(sync.pending()) == 1


def test_two_users_append_without_overwriting(tmp_path, stub):
    a, b = DatasetStore(tmp_path / "a"), DatasetStore(tmp_path / "b")
    ids_a, ids_b = _fill(a, "alice"), _fill(b, "bob")
    shared = TestSentence("Both wrote this sentence about the man and math.", "man", "math")
    a.add([shared])
    b.add([shared])
    assert _sync(a, stub).push_now().ok
    assert _sync(b, stub).push_now().ok
    remote = _remote_ids(stub)
    assert set(remote) == ids_a | ids_b | {shared.id}
    assert remote[shared.id] == 2  # written by two users: two rows, one record after dedup on read
    c = DatasetStore(tmp_path / "c")
    assert _sync(c, stub).pull().ok
    assert Counter(s.id for s in c.sentences()) == Counter(dict.fromkeys(ids_a | ids_b | {shared.id}, 1))


def test_background_thread_batches_and_pushes(tmp_path, stub):
    store = DatasetStore(tmp_path)
    sync = _sync(store, stub, interval_s=5.0, batch_delay_s=0.2)
    assert sync.start().running
    ids = _fill(store, "bg", shards=3)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and set(_remote_ids(stub)) != ids:
        time.sleep(0.05)
    assert set(_remote_ids(stub)) == ids
    assert len(stub.repo(REPO).commits) == 1  # three quick writes, one commit
    more = _fill(store, "late", shards=1)
    report = sync.stop()
    assert report is not None and report.ok
    assert set(_remote_ids(stub)) == ids | more
    assert not sync.status().running


def test_slow_hub_still_completes(tmp_path, stub):
    store = DatasetStore(tmp_path)
    ids = _fill(store, "slow", shards=1)
    stub.delay_s = 0.3
    assert _sync(store, stub).push_now().ok
    stub.delay_s = 0.0
    assert set(_remote_ids(stub)) == ids


def test_unreachable_hub_keeps_rows_pending(tmp_path, online):
    store = DatasetStore(tmp_path)
    _fill(store, "offline", shards=1)
    sync = HubSync(store, repo_id=REPO, token="t", endpoint="http://127.0.0.1:9", max_attempts=2, backoff_s=0.01)
    report = sync.push_now()
    assert not report.ok and report.attempts == 2 and report.pending == 1
    pulled = sync.pull()
    assert not pulled.ok and pulled.message.startswith(f"Could not read the Hugging Face dataset {REPO} (")


# ------------------------------------------------------------ token safety
def test_token_is_never_written_to_disk_or_logs(tmp_path, stub, caplog):
    token = "hf_FAKE_biastest_token_5b1f0c9e"
    caplog.set_level(logging.DEBUG)
    store = DatasetStore(tmp_path / "store")
    _fill(store, "secret", shards=2)
    store.add_image(png_bytes(), image_term="nurse")
    store.add_result({"score": 1.0}, kind="test")
    sync = HubSync(store, repo_id=REPO, token=token, endpoint=stub.url, batch_delay_s=0.05)
    sync.start()
    assert sync.push_now().ok
    sync.stop()
    assert _sync(DatasetStore(tmp_path / "pulled"), stub).pull().ok
    HubSync(DatasetStore(tmp_path / "pulled2"), repo_id=REPO, token=token, endpoint=stub.url).pull()
    assert f"Bearer {token}" in stub.auth_headers  # the token was really used ...
    needle = token.encode()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 10
    for p in files:  # ... and appears in no file (stores, ledgers, download caches, HF_HOME)
        assert needle not in p.read_bytes(), p
    assert token not in caplog.text
    assert token not in repr(sync) and token not in str(sync.status())
    for path, data in stub.repo(REPO).files.items():  # nor in anything pushed
        assert needle not in data, path
