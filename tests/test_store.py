"""Local dataset store: round trip, dedup, concurrency, indexed look-up, images."""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import time
from pathlib import Path

import numpy as np
import pytest

from biastest.errors import DataError, StoreError
from biastest.records import SentencePair, TestImage, TestSentence
from biastest.spec import BiasSpec, contains_term
from biastest.store import local as local_mod
from biastest.store.folding import ascii_term_pattern
from biastest.store.local import DatasetStore, default_store_dir
from tests.store_helpers import append_worker, png_bytes, worker_sentences


def _spec() -> BiasSpec:
    return BiasSpec.from_terms(name="Math_Arts", group1="man, he", group2="woman, she",
                               stereotype1="math, algebra", antistereotype1="art, poetry")


# ------------------------------------------------------------------ round trip
def test_round_trip_every_table(tmp_path):
    store = DatasetStore(tmp_path, writer="tester")
    s1 = TestSentence("The man likes math.", "man", "math", template="The [T] likes math.", source="generated",
                      generator="openai", model="m", prompt="p", spec_name="Math_Arts", seed=3,
                      provenance={"run_seed": 3})
    s2 = TestSentence("She writes poetry.", "she", "poetry")
    p1 = SentencePair("The man likes math.", "The woman likes math.", "math", "man", "woman",
                      template="The [T] likes math.", category="Math")
    report = store.add([s1, s2], [p1])
    assert report.written == {"sentences": 2, "pairs": 1}
    assert all(s.startswith(("data/sentences/", "data/pairs/")) for s in report.shards)
    img = store.add_image(png_bytes(), image_term="nurse", prompt="a photo of a nurse", generator="upload", seed=1)
    spec_id = store.add_spec(_spec())
    rid = store.add_result({"score": 0.5, "provenance": {"seed": 1}}, kind="stereotype-score", spec_name="Math_Arts")

    fresh = DatasetStore(tmp_path)  # another instance reads it all back
    got = {s.id: s for s in fresh.sentences()}
    assert set(got) == {s1.id, s2.id}
    back = got[s1.id]
    for f in ("text", "group_term", "attribute_term", "template", "source", "generator", "model", "prompt",
              "spec_name", "seed", "created_at"):
        assert getattr(back, f) == getattr(s1, f), f
    assert back.provenance["run_seed"] == 3
    assert back.provenance["stored_by"] == "tester" and "stored_at" in back.provenance
    assert got[s2.id].seed is None
    assert fresh.pairs() == [p1]
    (image,) = fresh.images()
    assert image == img and image.width == 8 and image.height == 6
    assert image.path == f"images/{image.sha256}.png"
    assert fresh.read_image(image) == png_bytes()
    assert [s.to_dict() for s in fresh.specs()] == [_spec().to_dict()]
    (res,) = fresh.results()
    assert res["id"] == rid and res["result"]["score"] == 0.5 and res["kind"] == "stereotype-score"
    assert len(spec_id) == 16
    # Layout is the Hub dataset's
    for t in ("sentences", "pairs", "images", "specs", "results"):
        assert len(list((tmp_path / "data" / t).glob("*.parquet"))) == 1


def test_default_location_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "here"))
    assert default_store_dir() == tmp_path / "here"
    assert DatasetStore().root == tmp_path / "here"
    monkeypatch.delenv("BIASTEST_DATA_DIR")
    assert default_store_dir() == Path("~/.cache/biastest/store").expanduser()


def test_unwritable_root_gives_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError) as exc:
        DatasetStore(blocker / "store")
    assert exc.value.message.startswith(f"The test data could not be saved in {blocker / 'store'} (")


def test_wrong_record_type_is_refused(tmp_path):
    store = DatasetStore(tmp_path)
    with pytest.raises(DataError) as exc:
        store.add([SentencePair("a", "b")])
    assert exc.value.message == local_mod.MSG_WRONG_RECORD.format(
        table="sentences", expected="TestSentence", got="SentencePair")


# ---------------------------------------------------------------------- dedup
def test_dedup_on_read_first_occurrence_wins(tmp_path):
    store = DatasetStore(tmp_path)
    first = TestSentence("He likes math.", "he", "math", provenance={"who": "first"}, created_at="2020-01-01T00:00:00Z")
    second = TestSentence("He likes math.", "he", "math", provenance={"who": "second"},
                          created_at="2021-01-01T00:00:00Z")
    assert first.id == second.id
    store.add([first], skip_existing=False)
    time.sleep(0.002)  # shard names start with the time: the second shard sorts after the first
    store.add([second, second], skip_existing=False)  # also a duplicate within one call
    view = store.view("sentences")
    assert view.num_rows == 2 and len(view) == 1
    (only,) = store.sentences()
    assert only.provenance["who"] == "first" and only.created_at == "2020-01-01T00:00:00Z"
    # skip_existing (the default) writes nothing for a known record
    report = store.add([second])
    assert report.written["sentences"] == 0 and report.skipped["sentences"] == 1 and report.shards == ()
    # a duplicate is never returned by a look-up either
    assert len(view.term_rows("he")) == 1


def test_new_shards_are_indexed_incrementally(tmp_path):
    a = DatasetStore(tmp_path)
    b = DatasetStore(tmp_path)  # e.g. another process
    a.add([TestSentence("The man likes math.", "man", "math")])
    v1 = a.view("sentences")
    assert len(v1.term_rows("man")) == 1
    old_shard = v1.shards[0]
    b.add([TestSentence("A man and his algebra.", "man", "algebra")])
    v2 = a.view("sentences")
    assert len(v2.term_rows("man")) == 2
    assert v2.shards[0] is old_shard  # the known shard was not re-read or re-indexed
    assert old_shard._token_index is not None
    assert a.view("sentences") is v2  # nothing new on disk: same snapshot


def test_corrupt_shard_is_skipped_with_a_message(tmp_path):
    store = DatasetStore(tmp_path)
    store.add([TestSentence("The man likes math.", "man", "math")])
    bad = tmp_path / "data" / "sentences" / "00000000T000000000000Z-1-bad.parquet"
    bad.write_bytes(b"not parquet at all")
    assert len(store.sentences()) == 1
    (msg,) = store.problems.values()
    assert msg.startswith(f"The stored data file {bad} cannot be read (")
    assert msg.endswith("it was skipped. Remove or replace it to use its rows.")


# ---------------------------------------------------------------- concurrency
def test_two_processes_appending_at_once_lose_no_row(tmp_path):
    batches, per_batch = 15, 20
    ctx = mp.get_context("spawn")
    start_at = time.time() + 3.0
    with ctx.Pool(2) as pool:
        jobs = [pool.apply_async(append_worker, (str(tmp_path), w, batches, per_batch, start_at)) for w in (0, 1)]
        written = [j.get(timeout=60) for j in jobs]
    assert written == [batches * (per_batch + 1)] * 2
    store = DatasetStore(tmp_path)
    view = store.view("sentences")
    assert view.num_rows == 2 * batches * (per_batch + 1)  # every row of every shard is on disk
    expected = {s.id for w in (0, 1) for b in range(batches) for s in worker_sentences(w, b, per_batch)}
    got = [s.id for s in store.sentences()]
    assert len(got) == len(set(got)) == len(expected) == 2 * batches * per_batch + 1
    assert set(got) == expected
    assert not list((tmp_path / ".biastest" / "tmp").iterdir())  # no temp file left behind


# ------------------------------------------------------------ indexed look-up
TRICKY = [
    "The theme of the day: he said no.",
    "He's here; (he) left, and she-he? HE!",
    "Theo and Heather met the hero.",
    "A social worker helped.",
    "Two social   workers and a social\nworker talked.",
    "Social-worker training is hard.",
    "The SOCIAL WORKER's report.",
    "C++ programmers and c programmers.",
    "The he-man shouted.",
    "ſpeaks and SPEAKS",  # the regex engine matches ſ (long s) to s
    "İnside the box",  # İ lower-cases to i for the regex engine
    "The \u212aelvin scale",  # Kelvin sign matches k
    "Straße and STRASSE",
    "Ιota and ιota and \u1fbeota",
    "under_score he_ he",
    "he",
    "",
    "Mr. Smith and Mrs. Smith",
    "naïve NAÏVE naive",
    "1st place, 2nd place",
]
TERMS = ["he", "the", "she", "social worker", "social workers", "worker", "c", "c++", "he-man", "man", "speaks",
         "inside", "kelvin", "straße", "strasse", "ιota", "under_score", "he_", "mr.", "smith", "naïve", "naive",
         "1st", "place", "theme of the day", "hero", "heather", "(he)", "!", "mrs"]


def _naive_ids(store: DatasetStore, term: str) -> set[str]:
    return {s.id for s in store.sentences() if contains_term(s.text, term)}


def _index_ids(store: DatasetStore, term: str) -> set[str]:
    view = store.view("sentences")
    return set(view.column("id", view.term_rows(term)))


def test_indexed_lookup_equals_naive_scan_on_tricky_text(tmp_path):
    store = DatasetStore(tmp_path)
    # spread over three shards, with a duplicate across shards
    store.add([TestSentence(t, "x", "y") for t in TRICKY[:8]])
    store.add([TestSentence(t, "x", "y") for t in TRICKY[8:]])
    store.add([TestSentence(TRICKY[0], "x", "y"), TestSentence("the end", "x", "y")], skip_existing=False)
    for term in TERMS:
        assert _index_ids(store, term) == _naive_ids(store, term), term
    # spot checks of the definition itself
    assert _index_ids(store, "he") != _index_ids(store, "the")
    assert len(_index_ids(store, "social worker")) == 3  # not 'Social-worker', yes "social\nworker"
    assert len(_index_ids(store, "speaks")) == 1


def test_indexed_lookup_equals_naive_scan_random(tmp_path):
    rng = random.Random(7)
    vocab = ["he", "she", "the", "hero", "man", "woman", "social", "worker", "math", "art", "it's", "o'neil",
             "co-op", "naïve", "Ünïcode", "x"]
    seps = [" ", "  ", ", ", ". ", "-", "'", "\n", "(", ")", "_", "\t", "\x0b", "\x1c", "\r\n", "\x0c "]
    store = DatasetStore(tmp_path)
    for _ in range(4):
        texts = []
        for _ in range(150):
            words = [rng.choice(vocab) for _ in range(rng.randint(1, 9))]
            words = [w.upper() if rng.random() < 0.2 else w.capitalize() if rng.random() < 0.2 else w for w in words]
            texts.append("".join(w + rng.choice(seps) for w in words).strip())
        store.add([TestSentence(t, "g", "a") for t in texts])
    terms = [*vocab, "social worker", "he-man", "o'neil", "co-op", "man woman", "it", "s", "neil", "op"]
    for term in terms:
        assert _index_ids(store, term) == _naive_ids(store, term), term


def test_each_column_has_its_own_word_index(tmp_path):
    store = DatasetStore(tmp_path)
    store.add([TestSentence("The man likes math.", "man", "math", template="The [T] likes math."),
               TestSentence("She paints.", "she", "art", template="[T] paints art.")])
    view = store.view("sentences")
    assert view.column("text", view.term_rows("man")) == ["The man likes math."]
    assert view.column("text", view.term_rows("art", column="template")) == ["She paints."]
    assert len(view.term_rows("art")) == 0  # the text column's index is not the template column's
    assert view.column("text", view.term_rows("paints art", column="template")) == ["She paints."]


def test_ascii_pattern_finds_exactly_what_the_term_regex_finds():
    """The RE2 pattern used on ASCII rows answers "does the text contain the term?" as Python's pattern does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from biastest.spec import term_regex

    rng = random.Random(11)
    pieces = ["he", "She", "man", "social", "WORKER", "social worker", "Social\t\x1cWorker", "he she", "o'neil",
              "co-op", "c++", "(he)", "a.b", "x_y", "7"]
    texts = []
    for _ in range(3000):
        n = rng.randint(0, 8)
        parts = [rng.choice(pieces) if rng.random() < 0.6 else chr(rng.randrange(128)) for _ in range(n)]
        texts.append("".join(p + (chr(rng.randrange(128)) if rng.random() < 0.5 else "") for p in parts))
    terms = ["he", "she", "man", "social worker", "social  worker", "o'neil", "co-op", "c++", "(he)", "a.b", "x_y",
             "7", "he she", "Social Worker", "[T]", "a\\b", "^he$", ".*"]
    lowered = pc.ascii_lower(pa.array(texts))
    for term in terms:
        pattern = ascii_term_pattern(term)
        got = pc.match_substring_regex(lowered, pattern=pattern).to_pylist()
        want = [term_regex(term).search(t) is not None for t in texts]
        assert got == want, term
        assert any(want) or term in {"[T]", "a\\b", "^he$", ".*"}, term  # the texts exercise the term
    assert ascii_term_pattern("naïve") is None
    assert ascii_term_pattern("   ") is None


# --------------------------------------------------------------------- images
def test_bad_image_writes_nothing(tmp_path):
    store = DatasetStore(tmp_path)
    with pytest.raises(DataError) as exc:
        store.add_image(b"GIF89a this is not really an image", image_term="nurse")
    assert exc.value.message.startswith("The file for 'nurse' is not an image that can be read (")
    assert exc.value.message.endswith("Upload a PNG, JPEG, WEBP, GIF or BMP file.")
    with pytest.raises(DataError) as exc:
        store.add_image(png_bytes(), image_term="  ")
    assert exc.value.message == local_mod.MSG_IMAGE_NO_TERM
    # one bad image in a batch: nothing of the batch is written
    with pytest.raises(DataError):
        store.add_images([(png_bytes(), {"image_term": "nurse"}), (b"\x89PNG broken", {"image_term": "doctor"})])
    assert list((tmp_path / "images").iterdir()) == []
    assert list((tmp_path / "data" / "images").iterdir()) == []
    assert list((tmp_path / ".biastest" / "tmp").iterdir()) == []
    assert store.images() == []


def test_image_too_large(tmp_path, monkeypatch):
    monkeypatch.setattr(local_mod, "MAX_IMAGE_BYTES", 10)
    store = DatasetStore(tmp_path)
    data = png_bytes()
    with pytest.raises(DataError) as exc:
        store.add_image(data, image_term="nurse")
    assert exc.value.message == local_mod.MSG_IMAGE_TOO_LARGE.format(
        image_term="nurse", size_mb=len(data) / 2**20, limit_mb=10 / 2**20)


def test_same_image_bytes_stored_once_per_term(tmp_path):
    store = DatasetStore(tmp_path)
    a = store.add_image(png_bytes(), image_term="nurse")
    b = store.add_image(png_bytes(), image_term="nurse")
    c = store.add_image(png_bytes(), image_term="doctor")
    assert a.id == b.id != c.id and a.path == c.path
    assert len(list((tmp_path / "images").iterdir())) == 1
    assert sorted(i.image_term for i in store.images()) == ["doctor", "nurse"]


def test_generated_image_objects_are_accepted(tmp_path):
    from biastest.generate.images import GeneratedImage

    data = png_bytes((1, 2, 3))
    import hashlib

    gi = GeneratedImage(png=data, sha256=hashlib.sha256(data).hexdigest(), image_term="nurse", prompt="p",
                        prompt_name="basic", generator="stub", model="m", width=8, height=6, seed=5,
                        provenance={"run_seed": 5})
    store = DatasetStore(tmp_path)
    (img,) = store.add_images([gi])
    assert img.source == "generated" and img.seed == 5 and img.provenance["prompt_name"] == "basic"
    assert store.read_image(img) == data


def test_listener_sees_every_new_file(tmp_path):
    store = DatasetStore(tmp_path)
    seen: list[str] = []
    store.add_listener(seen.append)
    store.add([TestSentence("The man likes math.", "man", "math")])
    store.add_image(png_bytes(), image_term="nurse")
    assert len(seen) == 3
    assert seen[0].startswith("data/sentences/") and seen[2].startswith("data/images/")
    assert seen[1] == f"images/{store.images()[0].sha256}.png"


def test_view_rows_and_columns_are_consistent(tmp_path):
    store = DatasetStore(tmp_path)
    sents = [TestSentence(f"Sentence {i} about he.", "he", "x") for i in range(30)]
    store.add(sents[:10])
    store.add(sents[10:])
    view = store.view("sentences")
    rows = view.term_rows("he")
    assert sorted(view.column("text", rows)) == sorted(s.text for s in sents)
    recs = view.records(np.asarray(rows[::-1]))
    assert [r.text for r in recs] == view.column("text", rows[::-1])
    assert json.loads(json.dumps(store.add([]).to_dict())) == {"written": {"sentences": 0, "pairs": 0},
                                                              "skipped": {"sentences": 0, "pairs": 0}, "shards": []}


def test_fast_record_conversion_equals_from_row(tmp_path):
    store = DatasetStore(tmp_path)
    store.add([TestSentence("He likes math.", "he", "math", template="[T] likes math.", seed=4,
                            provenance={"k": [1, 2]}), TestSentence("She likes art.", "she", "art")],
              [SentencePair("a b", "c d", "x", "y", "z", provenance={"p": 1})])
    store.add_image(png_bytes(), image_term="nurse", seed=None)
    for table, cls in (("sentences", TestSentence), ("pairs", SentencePair), ("images", TestImage)):
        view = store.view(table)
        fast = view.records()
        slow = [cls.from_row(r) for r in view.rows_dicts(view.unique_rows())]
        assert [r.to_row() for r in fast] == [r.to_row() for r in slow]
