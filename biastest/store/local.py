"""The local dataset store: append-only Parquet shards on disk, indexed.

The store is the embedded default of the suite: every sentence, sentence
pair, image (file plus metadata row), bias specification and result lives in
one directory laid out exactly like the Hugging Face dataset that
:mod:`biastest.store.hub` syncs with::

    <root>/
      README.md                         dataset card (written by the hub sync)
      data/sentences/<shard>.parquet    TestSentence rows
      data/pairs/<shard>.parquet        SentencePair rows
      data/images/<shard>.parquet       TestImage rows (metadata)
      images/<sha256>.<ext>             the image files
      data/specs/<shard>.parquet        BiasSpec rows (the JSON form)
      data/results/<shard>.parquet      result rows (their JSON form)
      .biastest/                        local state, never synced (temp files, push ledger)

**Append-only, no shared file.** Every write creates a new, uniquely named
shard (``<UTC time>-<process id>-<random>.parquet``): it is written to a
temporary file and renamed into place atomically, so a reader never sees a
half-written shard and two processes (or two threads) appending at once never
lose a row. Nothing ever rewrites an existing file. A writer that dies between
the two steps (a crash, a kill, a power cut) leaves its temporary file behind:
the store removes such orphans when it opens (see
:meth:`DatasetStore.remove_stale_temp_files` for the rule).

**Dedup on read.** Records have content-hash ids (:mod:`biastest.records`);
the same content written twice (by two users, two runs, a pull and a local
write) is one record. Shards are read in name order (oldest first) and the
**first occurrence wins** (its provenance and creation time are kept).

**Indexed look-up.** Each sentence shard gets an inverted index (word token
→ row numbers) built once, when the shard is first seen, with vectorised
Arrow kernels. A look-up of a term costs dictionary look-ups plus the exact
word-bounded regex check (:func:`biastest.spec.term_regex`) on the candidate
rows only; new shards (from this process, another process or a pull) are
noticed by listing the shard folders and indexed incrementally.

The store is four modules: this one (the :class:`DatasetStore` class: paths, reading, writing, images,
clean-up of orphaned temporary files), :mod:`biastest.store.view` (shards, their indexes and
:class:`TableView`), :mod:`biastest.store.schema` (the Parquet schemas and the rows ↔ records conversion)
and :mod:`biastest.store.folding` (the case folding of the word index).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from PIL import Image, UnidentifiedImageError

from biastest import __version__, settings
from biastest.errors import DataError, StoreError
from biastest.provenance import utc_now
from biastest.records import SentencePair, TestImage, TestSentence, content_id
from biastest.settings import DATA_DIR_ENV
from biastest.spec import BiasSpec
from biastest.store.schema import RECORD_TYPES, SCHEMA_VERSION, SCHEMA_VERSION_COLUMN, SCHEMAS, conform, ids_array
from biastest.store.view import Shard, TableView

__all__ = [
    "TABLES",
    "IMAGE_FORMATS",
    "MAX_IMAGE_BYTES",
    "AddReport",
    "DatasetStore",
    "default_store_dir",
]

log = logging.getLogger(__name__)

STATE_DIR = ".biastest"
TABLES = ("sentences", "pairs", "images", "specs", "results")
#: Suffix of shards that must never be pushed to the user's dataset (read-only public imports).
LOCAL_ONLY_SUFFIX = "-public"
#: A temporary file unchanged for this many seconds belongs to a write that died (removed when a store opens).
STALE_TMP_SECONDS = 600.0
#: Image formats accepted (Pillow format name → file extension).
IMAGE_FORMATS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif", "BMP": "bmp"}
MAX_IMAGE_BYTES = 40 * 1024 * 1024

MSG_NOT_AN_IMAGE = (
    "The file for '{image_term}' is not an image that can be read ({problem}). Upload a PNG, JPEG, WEBP, GIF or "
    "BMP file."
)
MSG_IMAGE_FORMAT = "Images in {fmt} format cannot be stored. Use one of: {allowed}."
MSG_IMAGE_TOO_LARGE = "The image for '{image_term}' is {size_mb:.1f} MB; images may be at most {limit_mb:.0f} MB."
MSG_IMAGE_NO_TERM = "Every image needs the term it shows (for example 'nurse'); this one has none."
MSG_UNKNOWN_TABLE = "There is no table called '{table}' in the store. Tables: {tables}."
MSG_WRONG_RECORD = "The {table} table stores {expected} records, but got {got}."
MSG_CANNOT_WRITE = (
    "The test data could not be saved in {root} ({problem}). Check that the folder exists, is writable and that "
    "the disk is not full; set {env} to use another folder."
)
MSG_NEWER_SCHEMA = (
    "The file {path} was written by a newer biastest (dataset schema {version}; this one reads up to "
    "{supported}). It is skipped: update biastest to read it."
)
MSG_BAD_SHARD = (
    "The stored data file {path} cannot be read ({problem}); it was skipped. Remove or replace it to use its rows."
)
MSG_NO_TO_DICT = "A result to store must be a mapping or have a to_dict() method; got {type_name}."


def default_store_dir() -> Path:
    """The store folder: ``$BIASTEST_DATA_DIR`` or ``~/.cache/biastest/store`` (:func:`biastest.settings.data_dir`)."""
    return settings.data_dir()


@dataclass(frozen=True)
class AddReport:
    """What one :meth:`DatasetStore.add` call wrote.

    Attributes
    ----------
    written : dict
        Table → number of new rows written.
    skipped : dict
        Table → number of records not written because the store (or the same
        call) already had them.
    shards : tuple of str
        Paths (relative to the store root) of the new shard files.
    """

    written: dict[str, int]
    skipped: dict[str, int]
    shards: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"written": dict(self.written), "skipped": dict(self.skipped), "shards": list(self.shards)}


# -------------------------------------------------------------------- store
class DatasetStore:
    """The on-disk dataset: append-only Parquet shards, deduplicated and indexed.

    Parameters
    ----------
    root : str or Path, optional
        The store folder (created if missing). Default: ``$BIASTEST_DATA_DIR``
        or ``~/.cache/biastest/store``.
    writer : str
        Who writes through this store (an app name, a user name); recorded in
        the provenance of every row written (``stored_by``).

    Notes
    -----
    Safe to share between the threads of one server (one lock guards the
    in-memory state) and between processes (files are only ever created,
    never modified). Build one per process and pass it to the apps.
    """

    def __init__(self, root: str | Path | None = None, *, writer: str = "") -> None:
        self.root = Path(root).expanduser() if root is not None else default_store_dir()
        self.writer = writer
        self._lock = threading.RLock()
        self._shards: dict[str, dict[str, Shard]] = {t: {} for t in TABLES}
        self._views: dict[str, TableView] = {}
        self._bad: dict[str, str] = {}
        self._listeners: list[Callable[[str], None]] = []
        try:
            for t in TABLES:
                (self.root / "data" / t).mkdir(parents=True, exist_ok=True)
            (self.root / "images").mkdir(parents=True, exist_ok=True)
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                MSG_CANNOT_WRITE.format(root=self.root, problem=exc.strerror or str(exc), env=DATA_DIR_ENV),
                root=str(self.root),
            ) from None
        self.remove_stale_temp_files()

    def remove_stale_temp_files(self, *, max_age: float = STALE_TMP_SECONDS, now: float | None = None) -> list[str]:
        """Remove the temporary files of writes that died (called when the store opens).

        The rule: a file in ``.biastest/tmp`` whose name ends in ``.tmp`` and
        that has not changed for ``max_age`` seconds (default ten minutes).
        A live write keeps its temporary file for the moments it takes to
        write, sync and rename it, changing it all the while, so a file that
        old belongs to a writer that is gone. Ages, not process ids, decide:
        the store folder may be shared by processes of other machines or
        containers, whose ids mean nothing here.

        Parameters
        ----------
        max_age : float
            Seconds without a change.
        now : float, optional
            The current time (``time.time()``), for tests.

        Returns
        -------
        list of str
            The names of the files removed.
        """
        now = time.time() if now is None else float(now)
        removed = []
        try:
            candidates = [p for p in self.tmp_dir.iterdir() if p.name.endswith(".tmp")]
        except OSError:
            return removed
        for path in candidates:
            try:
                if path.is_symlink() or not path.is_file() or now - path.stat().st_mtime <= max_age:
                    continue
                path.unlink()
            except OSError:  # gone meanwhile, or not ours to remove: leave it
                continue
            removed.append(path.name)
        if removed:
            log.info("removed %d orphaned temporary file(s) from %s", len(removed), self.tmp_dir)
        return removed

    # ------------------------------------------------------------ paths
    @property
    def state_dir(self) -> Path:
        """Local, never-synced state (temporary files, ledgers)."""
        return self.root / STATE_DIR

    @property
    def tmp_dir(self) -> Path:
        return self.state_dir / "tmp"

    def table_dir(self, table: str) -> Path:
        _check_table(table)
        return self.root / "data" / table

    def image_path(self, image: TestImage | str) -> Path:
        """Absolute path of a stored image (a :class:`TestImage` or its relative path)."""
        rel = image.path if isinstance(image, TestImage) else image
        return self.root / rel

    def shard_files(self, table: str | None = None) -> list[Path]:
        """Shard files on disk (one table or all), in read order."""
        tables = [table] if table else list(TABLES)
        out = []
        for t in tables:
            d = self.table_dir(t)
            out.extend(sorted((p for p in d.glob("*.parquet")), key=lambda p: p.name))
        return out

    def add_listener(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(relative_path)`` after every new file (shard or image) is written."""
        with self._lock:
            self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[str], None]) -> None:
        with self._lock:
            if callback in self._listeners:
                self._listeners.remove(callback)

    @property
    def problems(self) -> dict[str, str]:
        """Shard files that could not be read (path → user-facing message)."""
        with self._lock:
            return dict(self._bad)

    # ------------------------------------------------------------ reading
    def refresh(self) -> bool:
        """Notice new shard files on disk and index them; True if anything changed.

        Called by every read; costs one directory listing per table when
        nothing changed.
        """
        changed = False
        with self._lock:
            for t in TABLES:
                if self._refresh_table(t):
                    changed = True
        return changed

    def _refresh_table(self, table: str) -> bool:
        d = self.table_dir(table)
        try:
            entries = {e.name: e for e in os.scandir(d) if e.name.endswith(".parquet") and e.is_file()}
        except FileNotFoundError:
            entries = {}
        known = self._shards[table]
        gone = [n for n in known if n not in entries]
        new = sorted(n for n in entries if n not in known and str(d / n) not in self._bad)
        if not gone and not new and table in self._views:
            return False
        for n in gone:
            del known[n]
        for n in new:
            shard = self._load_shard(table, Path(entries[n].path))
            if shard is not None:
                known[n] = shard
        self._views[table] = TableView(table, [known[n] for n in sorted(known)])
        return bool(gone or new)

    def _load_shard(self, table: str, path: Path) -> Shard | None:
        try:
            st = path.stat()
            data = conform(pq.read_table(path), SCHEMAS[table])
        except (OSError, pa.ArrowException, ValueError) as exc:
            message = MSG_BAD_SHARD.format(path=path, problem=str(exc)[:200])
            self._bad[str(path)] = message
            log.warning(message)
            return None
        newest = pc.max(data.column(SCHEMA_VERSION_COLUMN)).as_py() if data.num_rows else None
        if newest is not None and newest > SCHEMA_VERSION:
            message = MSG_NEWER_SCHEMA.format(path=path, version=newest, supported=SCHEMA_VERSION)
            self._bad[str(path)] = message
            log.warning(message)
            return None
        return Shard(path.name, path, st.st_size, st.st_mtime_ns, data, ids_array(data.column("id")))

    def shards_of(self, table: str, ids: Iterable[str]) -> dict[str, str]:
        """The shard file (relative to the store root) holding each id's first copy, as reads see it.

        Ids the table does not hold are left out. Vectorised per shard (one Arrow ``is_in``), so a few thousand
        ids cost milliseconds in a store of a million rows.
        """
        wanted = [str(i) for i in ids]
        if not wanted:
            return {}
        view = self.view(table)
        value_set = pa.array(sorted(set(wanted)), type=pa.string())
        out: dict[str, str] = {}
        for shard in view.shards:
            column = shard.table.column("id")
            hits = pc.filter(column, pc.is_in(column, value_set=value_set)).to_pylist()
            rel = shard.path.relative_to(self.root).as_posix() if shard.path.is_relative_to(self.root) else shard.name
            for i in hits:
                out.setdefault(i, rel)
            if len(out) == len(value_set):
                break
        return out

    def view(self, table: str) -> TableView:
        """A consistent snapshot of ``table`` (refreshed from disk first)."""
        _check_table(table)
        with self._lock:
            self._refresh_table(table)
            return self._views[table]

    def sentences(self) -> list[TestSentence]:
        """All distinct stored sentences (first occurrence wins)."""
        return self.view("sentences").records()

    def pairs(self) -> list[SentencePair]:
        """All distinct stored sentence pairs."""
        return self.view("pairs").records()

    def images(self) -> list[TestImage]:
        """All distinct stored image records."""
        return self.view("images").records()

    def specs(self) -> list[BiasSpec]:
        """All distinct stored bias specifications."""
        return [BiasSpec.from_json(r["spec_json"]) for r in self.view("specs").records()]

    def results(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Stored results as dicts (``result`` holds the result's ``to_dict()``)."""
        out = []
        for r in self.view("results").records():
            if kind is not None and r["kind"] != kind:
                continue
            out.append({**r, "result": json.loads(r["result_json"]), "provenance": json.loads(r["provenance"] or "{}")})
        return out

    def count(self, table: str) -> int:
        """Distinct records in ``table``."""
        return len(self.view(table))

    def read_image(self, image: TestImage) -> bytes:
        """The bytes of a stored image."""
        try:
            return self.image_path(image).read_bytes()
        except OSError as exc:
            raise StoreError(
                MSG_CANNOT_WRITE.format(root=self.root, problem=exc.strerror or str(exc), env=DATA_DIR_ENV)
            ) from None

    # ------------------------------------------------------------ writing
    def _stamp(self, prov: Mapping[str, Any] | None) -> str:
        record = dict(prov or {})
        record.setdefault("stored_at", utc_now())
        record.setdefault("stored_by", self.writer or f"biastest {__version__}")
        return json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)

    def _new_name(self, local_only: bool) -> str:
        now = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        suffix = LOCAL_ONLY_SUFFIX if local_only else ""
        return f"{now}-{os.getpid()}-{uuid.uuid4().hex[:12]}{suffix}.parquet"

    def _atomic_write(self, target: Path, write: Callable[[Path], None]) -> None:
        tmp = self.tmp_dir / f"{target.name}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
            write(tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(
                MSG_CANNOT_WRITE.format(root=self.root, problem=exc.strerror or str(exc), env=DATA_DIR_ENV),
                root=str(self.root),
            ) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _write_rows(self, table: str, rows: list[dict[str, Any]], *, local_only: bool = False) -> str | None:
        if not rows:
            return None
        for row in rows:
            row[SCHEMA_VERSION_COLUMN] = SCHEMA_VERSION
        data = pa.Table.from_pylist(rows, schema=SCHEMAS[table])
        target = self.table_dir(table) / self._new_name(local_only)
        self._atomic_write(target, lambda p: pq.write_table(data, p, compression="zstd"))
        rel = target.relative_to(self.root).as_posix()
        self._notify(rel)
        return rel

    def _notify(self, rel: str) -> None:
        for cb in list(self._listeners):
            try:
                cb(rel)
            except Exception:  # a listener must never break a write
                log.exception("store listener failed")

    def _existing_ids(self, table: str, ids: Sequence[str]) -> set[str]:
        view = self.view(table)
        if not view.shards or not ids:
            return set()
        wanted = pa.array(list(ids), type=pa.string())
        found: set[str] = set()
        for shard in view.shards:
            mask = pc.is_in(wanted, value_set=shard.table.column("id").combine_chunks())
            found.update(v for v, m in zip(ids, mask.to_pylist(), strict=True) if m)
        return found

    def _add_records(
        self, table: str, records: Iterable[Any], *, skip_existing: bool, local_only: bool
    ) -> tuple[int, int, str | None]:
        cls = RECORD_TYPES[table]
        batch: dict[str, Any] = {}
        skipped = 0
        for rec in records:
            if not isinstance(rec, cls):
                raise DataError(
                    MSG_WRONG_RECORD.format(table=table, expected=cls.__name__, got=type(rec).__name__), table=table
                )
            if rec.id in batch:
                skipped += 1
                continue
            batch[rec.id] = rec
        if skip_existing and batch:
            existing = self._existing_ids(table, list(batch))
            skipped += len(existing)
            batch = {k: v for k, v in batch.items() if k not in existing}
        rows = []
        for rec in batch.values():
            row = rec.to_row()
            row["provenance"] = self._stamp(rec.provenance)
            rows.append(row)
        return len(rows), skipped, self._write_rows(table, rows, local_only=local_only)

    def add(
        self,
        sentences: Iterable[TestSentence] = (),
        pairs: Iterable[SentencePair] = (),
        *,
        skip_existing: bool = True,
        local_only: bool = False,
    ) -> AddReport:
        """Append sentences and pairs (one new shard per non-empty table).

        Parameters
        ----------
        sentences, pairs : iterables of records
        skip_existing : bool
            Leave out records the store already has (same content id).
            Duplicates that slip through (two processes writing the same
            record at once) are removed on read.
        local_only : bool
            Mark the new shards as never to be pushed to the Hub (used for
            read-only public imports).
        """
        written: dict[str, int] = {}
        skipped: dict[str, int] = {}
        shards: list[str] = []
        with self._lock:
            for table, records in (("sentences", sentences), ("pairs", pairs)):
                n, k, rel = self._add_records(table, records, skip_existing=skip_existing, local_only=local_only)
                written[table] = n
                skipped[table] = k
                if rel:
                    shards.append(rel)
        return AddReport(written, skipped, tuple(shards))

    def add_sentences(self, sentences: Iterable[TestSentence], **kw: Any) -> AddReport:
        """Shortcut for :meth:`add` with sentences only."""
        return self.add(sentences, (), **kw)

    def add_pairs(self, pairs: Iterable[SentencePair], **kw: Any) -> AddReport:
        """Shortcut for :meth:`add` with pairs only."""
        return self.add((), pairs, **kw)

    # ------------------------------------------------------------ images
    def _validate_image(self, data: bytes, image_term: str) -> tuple[str, int, int]:
        if not isinstance(image_term, str) or not image_term.strip():
            raise DataError(MSG_IMAGE_NO_TERM)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DataError(MSG_NOT_AN_IMAGE.format(image_term=image_term, problem="no image data"))
        if len(data) > MAX_IMAGE_BYTES:
            raise DataError(
                MSG_IMAGE_TOO_LARGE.format(
                    image_term=image_term, size_mb=len(data) / 2**20, limit_mb=MAX_IMAGE_BYTES / 2**20
                )
            )
        try:
            with Image.open(io.BytesIO(data)) as img:
                fmt = img.format or ""
                img.verify()
            with Image.open(io.BytesIO(data)) as img:
                img.load()
                width, height = img.size
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            raise DataError(
                MSG_NOT_AN_IMAGE.format(image_term=image_term, problem=str(exc)[:120] or type(exc).__name__)
            ) from None
        if fmt not in IMAGE_FORMATS:
            raise DataError(MSG_IMAGE_FORMAT.format(fmt=fmt or "unknown", allowed=", ".join(IMAGE_FORMATS)))
        return IMAGE_FORMATS[fmt], width, height

    def _put_image_file(self, data: bytes, ext: str) -> tuple[str, str]:
        sha = hashlib.sha256(data).hexdigest()
        rel = f"images/{sha}.{ext}"
        target = self.root / rel
        if not target.exists():
            self._atomic_write(target, lambda p: p.write_bytes(bytes(data)))
            self._notify(rel)
        return sha, rel

    def add_image(
        self,
        data: bytes,
        *,
        image_term: str,
        prompt: str = "",
        generator: str = "",
        model: str = "",
        seed: int | None = None,
        source: str = "user",
        spec_name: str = "",
        provenance: Mapping[str, Any] | None = None,
    ) -> TestImage:
        """Validate and store one image file plus its metadata row.

        The bytes are checked with Pillow before anything is written; the
        file is written to a temporary name and renamed into
        ``images/<sha256>.<ext>``; the metadata row is written last, so a
        failure never leaves a row without its file.

        Raises
        ------
        DataError
            Not an image, unsupported format, too large, or no term.
        StoreError
            The disk cannot be written.
        """
        return self.add_images([(data, {"image_term": image_term, "prompt": prompt, "generator": generator,
                                        "model": model, "seed": seed, "source": source, "spec_name": spec_name,
                                        "provenance": dict(provenance or {})})])[0]

    def add_images(self, items: Iterable[Any]) -> list[TestImage]:
        """Store several images with one metadata shard.

        Each item is ``(bytes, fields)`` (fields as for :meth:`add_image`) or
        an object with ``png`` bytes and ``to_test_image()`` (a generated
        image from :mod:`biastest.generate.images`). All images are validated
        before any is written.
        """
        prepared = []
        for item in items:
            if isinstance(item, tuple):
                data, f = item
                f = dict(f)
            else:
                data = item.png
                rec = item.to_test_image()
                f = {k: getattr(rec, k) for k in ("image_term", "prompt", "generator", "model", "seed", "source",
                                                  "spec_name", "provenance")}
            ext, w, h = self._validate_image(data, f.get("image_term", ""))
            prepared.append((data, ext, w, h, f))
        out: list[TestImage] = []
        with self._lock:
            for data, ext, w, h, f in prepared:
                sha, rel = self._put_image_file(data, ext)
                out.append(TestImage(path=rel, sha256=sha, width=w, height=h, **f))
            existing = self._existing_ids("images", [r.id for r in out])
            rows, seen = [], set()
            for rec in out:
                if rec.id in existing or rec.id in seen:
                    continue
                seen.add(rec.id)
                row = rec.to_row()
                row["provenance"] = self._stamp(rec.provenance)
                rows.append(row)
            self._write_rows("images", rows)
        return out

    # ------------------------------------------------------------ specs, results
    def add_spec(self, spec: BiasSpec, *, provenance: Mapping[str, Any] | None = None) -> str:
        """Store a bias specification (its BiasTestGPT JSON); returns its id."""
        sid = content_id("spec", spec.to_dict())
        with self._lock:
            if not self._existing_ids("specs", [sid]):
                self._write_rows("specs", [{"id": sid, "name": spec.name, "source": spec.source,
                                            "spec_json": spec.to_json(indent=None), "created_at": utc_now(),
                                            "provenance": self._stamp(provenance)}])
        return sid

    def add_result(
        self,
        result: Any,
        *,
        kind: str,
        spec_name: str = "",
        model: str = "",
        method: str = "",
    ) -> str:
        """Store a result (a mapping or an object with ``to_dict()``); returns its id."""
        if isinstance(result, Mapping):
            payload = dict(result)
        elif hasattr(result, "to_dict"):
            payload = result.to_dict()
        else:
            raise DataError(MSG_NO_TO_DICT.format(type_name=type(result).__name__))
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
        rid = content_id("result", kind, text)
        prov = payload.get("provenance") if isinstance(payload.get("provenance"), Mapping) else {}
        with self._lock:
            if not self._existing_ids("results", [rid]):
                self._write_rows("results", [{"id": rid, "kind": kind, "spec_name": spec_name, "model": model,
                                              "method": method, "result_json": text, "created_at": utc_now(),
                                              "provenance": self._stamp(prov)}])
        return rid

    def __repr__(self) -> str:
        return f"DatasetStore({str(self.root)!r})"


def _check_table(table: str) -> None:
    if table not in TABLES:
        raise StoreError(MSG_UNKNOWN_TABLE.format(table=table, tables=", ".join(TABLES)))
