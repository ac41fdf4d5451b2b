"""The dataset's schema is versioned: what this version wrote is read by the next.

``tests/data/store_v1`` is a store written by biastest at schema version 1 (sentences, pairs, an image,
a specification and a result) and frozen: it must never be regenerated. A change of the shard layout
that breaks reading it fails here — bump ``SCHEMA_VERSION`` and teach the reader the old layout instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from biastest.store.hub import dataset_card
from biastest.store.local import MSG_NEWER_SCHEMA, DatasetStore
from biastest.store.schema import SCHEMA_VERSION, SCHEMA_VERSION_COLUMN, SCHEMAS
from tests.store_helpers import png_bytes

FROZEN = Path(__file__).parent / "data" / "store_v1"


def _copy(tmp_path: Path) -> DatasetStore:
    target = tmp_path / "store"
    shutil.copytree(FROZEN, target)
    return DatasetStore(target)


def test_a_store_written_at_schema_1_is_read_whole(tmp_path):
    store = _copy(tmp_path)
    assert store.problems == {}
    sentences = {s.id: s for s in store.sentences()}
    assert set(sentences) == {"47d4d37adfcc9a4b", "a99fadbdb3d1da1a"}
    math = sentences["47d4d37adfcc9a4b"]
    assert (math.text, math.group_term, math.attribute_term, math.template) == (
        "The man excelled in math.", "man", "math", "The [T] excelled in math.")
    assert (math.generator, math.model, math.prompt, math.seed) == ("openai", "gpt-4o-mini", "sentence-v1", 7)
    assert sentences["a99fadbdb3d1da1a"].source == "imported:AnimaLab/bias-test-gpt-sentences"
    (pair,) = store.pairs()
    assert (pair.id, pair.stereotyped, pair.anti_stereotyped, pair.category) == (
        "62335495ce68ac59", "The man excelled in math.", "The woman excelled in math.", "Math")
    (image,) = store.images()
    assert (image.id, image.image_term, image.prompt) == ("ab4a7248b4d91492", "nurse", "a photo of a nurse")
    assert store.read_image(image) == png_bytes()
    (spec,) = store.specs()
    assert spec.name == "Math_Arts_vs_Male_Female"
    (result,) = store.results()
    assert result["result"] == {"kind": "lm", "score": 62.5} and result["provenance"]["stored_by"] == "frozen-sample"
    # ids are content hashes: this version computes the ids that were stored (deduplication depends on it)
    for s in sentences.values():
        assert type(s)(s.text, s.group_term, s.attribute_term).id == s.id
    assert type(pair)(pair.stereotyped, pair.anti_stereotyped, "math", "man", "woman").id == pair.id


def test_every_row_carries_the_schema_version(tmp_path):
    store = _copy(tmp_path)
    store.add_sentences([type(store.sentences()[0])("The girl likes art.", "girl", "art", source="t")])
    for table in SCHEMAS:
        for shard in store.shard_files(table):
            column = pq.read_table(shard).column(SCHEMA_VERSION_COLUMN).to_pylist()
            assert set(column) == {SCHEMA_VERSION}, shard


def test_shards_without_a_version_read_as_the_first_and_newer_ones_are_skipped(tmp_path):
    store = _copy(tmp_path)
    src = store.shard_files("sentences")[0]
    legacy = pq.read_table(src).drop_columns([SCHEMA_VERSION_COLUMN])
    newer = pq.read_table(src).set_column(
        SCHEMAS["sentences"].get_field_index(SCHEMA_VERSION_COLUMN), SCHEMA_VERSION_COLUMN,
        pa.array([SCHEMA_VERSION + 1] * len(legacy), type=pa.int64()))
    src.unlink()
    pq.write_table(legacy, src.with_name("20200101T000000000000Z-1-legacy000000.parquet"))
    future = src.with_name("20990101T000000000000Z-1-future000000.parquet")
    pq.write_table(newer.set_column(0, "text", pa.array([f"future {i}" for i in range(len(legacy))])), future)
    fresh = DatasetStore(store.root)
    assert {s.id for s in fresh.sentences()} == {"47d4d37adfcc9a4b", "a99fadbdb3d1da1a"}
    assert fresh.problems == {str(future): MSG_NEWER_SCHEMA.format(path=future, version=SCHEMA_VERSION + 1,
                                                                    supported=SCHEMA_VERSION)}


def test_the_dataset_card_documents_every_column_and_the_licence():
    card = dataset_card("user/bias-data")
    assert card.startswith("---\nlicense: apache-2.0\n")
    for table, schema in SCHEMAS.items():
        assert f"## `{table}`" in card
        for field in schema:
            line = next(ln for ln in card.splitlines() if ln.startswith(f"| `{field.name}` |") and table in card)
            assert line.count("|") == 4 and line.rstrip("| ").split("|")[-1].strip(), (table, field.name)
    for key in ("stored_at", "stored_by", "generator", "schema_version", "Licence"):
        assert key in card
