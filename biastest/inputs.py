"""Loading the inputs of a headless run: specifications, sentence pairs, images and embedding sources.

The command line (:mod:`biastest.cli`) and the audit (:mod:`biastest.audit`) read their test data
through these functions, so a file, a folder or the dataset store means the same in both:

- :func:`load_spec` — a library specification by name ("did you mean …" on a typo) or a JSON file;
- :func:`pairs_from_files` / :func:`pairs_from_store` — sentence pairs imported from files
  (BiasTestGPT, CrowS-Pairs, StereoSet; as the app's import) or found in the local dataset store;
- :func:`images_from_folder` / :func:`images_from_store` — test images from a folder with one
  subfolder per image term, a manifest CSV/JSON, or the dataset store;
- :func:`embedding_source` — the embedding source a ``--model`` value names.

Mistakes in what the user gave raise :class:`~biastest.errors.UsageError`,
:class:`~biastest.errors.SpecError` or :class:`~biastest.errors.DataError` with the ``MSG_*``
constants below, which tests assert.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biastest.errors import DataError, SpecError, UsageError
from biastest.measures.vlm.run import MSG_IMAGE_OUTSIDE_ROOT
from biastest.models.embeddings import EMBEDDING_SOURCES
from biastest.records import SentencePair, TestImage
from biastest.runner.services import import_pairs
from biastest.spec import BiasSpec, TwoAFCSpec, parse_spec_json, read_spec_bytes
from biastest.specs import aliases, get_spec, get_twoafc_spec, list_specs
from biastest.store import DatasetStore, default_store_dir, retrieve_images
from biastest.store.importers import MSG_TOO_DEEP
from biastest.store.retrieval import retrieve_pairs, retrieve_sentences

__all__ = [
    "DEFAULT_EMBEDDINGS",
    "EMBEDDING_FILE_SUFFIXES",
    "IMAGE_SUFFIXES",
    "MSG_BAD_MANIFEST",
    "MSG_FILE_NOT_FOUND",
    "MSG_FILE_UNREADABLE",
    "MSG_NO_IMAGES_IN_FOLDER",
    "MSG_NO_STORE",
    "MSG_NO_STORED_IMAGES",
    "MSG_NO_STORED_PAIRS",
    "MSG_SPEC_FILE_MANY",
    "embedding_source",
    "image_record",
    "images_from_folder",
    "images_from_manifest",
    "images_from_store",
    "library_spec",
    "load_spec",
    "looks_like_path",
    "open_store",
    "pairs_from_files",
    "pairs_from_store",
]

#: The embedding source of a run that names none (``--model`` left out).
DEFAULT_EMBEDDINGS = "glove-6b-50d"

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff")
EMBEDDING_FILE_SUFFIXES = (".txt", ".vec", ".bin", ".gz", ".npz", ".safetensors", ".kv", ".model", ".wv")

MSG_FILE_NOT_FOUND = "The {what} '{path}' does not exist. Check the path."
MSG_FILE_UNREADABLE = "The {what} '{path}' cannot be read ({problem})."
MSG_SPEC_FILE_MANY = (
    "The specification file '{path}' holds {count} specifications ({names}). Put the one to run in a file of its own."
)
MSG_NO_STORE = (
    "There is no dataset store at '{path}'. Give sentence pairs with --pairs FILE (BiasTestGPT, CrowS-Pairs or "
    "StereoSet), or the store folder with --store DIR."
)
MSG_NO_STORED_PAIRS = (
    "The dataset store at '{path}' has no sentence pairs for '{spec}'. Give sentence pairs with --pairs FILE "
    "(BiasTestGPT, CrowS-Pairs or StereoSet), or add sentences to the store with the app."
)
MSG_NO_STORED_IMAGES = (
    "There are no images for the image terms of '{spec}' in the dataset store at '{path}'. Give a folder with "
    "--images DIR (one subfolder per image term, e.g. DIR/woman/1.png) or a manifest CSV."
)
MSG_NO_IMAGES_IN_FOLDER = (
    "No images were found in '{path}'. Put the pictures of each image term in a subfolder named after the term "
    "(for example '{path}/woman/1.png'), or give a manifest CSV with the columns path and image_term."
)
MSG_BAD_MANIFEST = (
    "The image manifest '{path}' cannot be used ({problem}). Give a CSV with the columns path and image_term "
    "(paths relative to the manifest), or a JSON list of objects with those fields."
)


# --------------------------------------------------------------------------- specifications
def looks_like_path(value: str) -> bool:
    """Whether ``value`` reads as a file path (ends in ``.json`` or holds a path separator).

    Parameters
    ----------
    value : str

    Returns
    -------
    bool
    """
    return value.lower().endswith(".json") or "/" in value or os.sep in value


def load_spec(value: str) -> BiasSpec | TwoAFCSpec:
    """A specification by library name or JSON file path.

    Parameters
    ----------
    value : str
        A name from :func:`biastest.specs.list_specs` (case-insensitive, with
        "did you mean" on a typo), or the path of a JSON file holding one
        BiasTestGPT specification or one 2AFC specification (``targets`` and
        ``cue_pairs``).

    Returns
    -------
    BiasSpec or TwoAFCSpec

    Raises
    ------
    SpecError
        Unknown name, invalid or unreadable file, several specifications in one file.
    UsageError
        The file does not exist.
    """
    path = Path(value).expanduser()
    library = {n.casefold() for n in list_specs()} | {a.casefold() for a in aliases()}
    if not path.is_file() and value.strip().casefold() in library:
        # A library name with a "/" in it ("… love/hate …") is a name, not a path.
        return library_spec(value)
    if path.is_file() or looks_like_path(value):
        if not path.is_file():
            raise UsageError(MSG_FILE_NOT_FOUND.format(what="specification file", path=value))
        try:
            data = parse_spec_json(read_spec_bytes(path))
        except OSError as exc:
            raise UsageError(
                MSG_FILE_UNREADABLE.format(what="specification file", path=value, problem=exc.strerror or exc)
            ) from None
        if isinstance(data, list):
            if len(data) != 1:
                names = ", ".join(str(d.get("name", "?")) if isinstance(d, dict) else "?" for d in data) or "none"
                raise SpecError(MSG_SPEC_FILE_MANY.format(path=value, count=len(data), names=names))
            data = data[0]
        if isinstance(data, dict) and "targets" in data and "cue_pairs" in data:
            return TwoAFCSpec.from_dict(data)
        return BiasSpec.from_dict(data)
    return library_spec(value)


def library_spec(value: str) -> BiasSpec | TwoAFCSpec:
    """A library specification by name: a 2AFC one where the name is one, else a bias specification.

    Parameters
    ----------
    value : str
        The name (case-insensitive).

    Returns
    -------
    BiasSpec or TwoAFCSpec

    Raises
    ------
    SpecError
        No such specification (with "did you mean …").
    """
    folded = {n.casefold(): n for n in list_specs("twoafc")}
    if value.strip().casefold() in folded:
        return get_twoafc_spec(folded[value.strip().casefold()])
    return get_spec(value)


# --------------------------------------------------------------------------- sentence pairs
def pairs_from_files(files: Sequence[str], fmt: str, spec: BiasSpec) -> tuple[list[SentencePair], list[str]]:
    """Sentence pairs imported from files, as the app's import (the first copy of a pair is kept).

    Parameters
    ----------
    files : sequence of str
        The files (BiasTestGPT pairs or sentences CSV, CrowS-Pairs CSV, StereoSet JSON).
    fmt : str
        The format, or ``"auto"`` to tell it from each file.
    spec : BiasSpec
        The specification the pairs are for.

    Returns
    -------
    (list of SentencePair, list of str)
        The pairs and the files' names.

    Raises
    ------
    UsageError
        A file does not exist.
    DataError
        A file cannot be imported.
    """
    pairs, seen, names = [], set(), []
    for f in files:
        p = Path(f).expanduser()
        if not p.is_file():
            raise UsageError(MSG_FILE_NOT_FOUND.format(what="pairs file", path=f))
        for pair in import_pairs(p, fmt=fmt, spec=spec):
            key = (pair.stereotyped, pair.anti_stereotyped)
            if key not in seen:  # as the app's table: the first copy of a pair is kept
                seen.add(key)
                pairs.append(pair)
        names.append(p.name)
    return pairs, names


def open_store(store_arg: str | None) -> tuple[DatasetStore | None, Path]:
    """The dataset store at ``store_arg``, or at the default folder.

    Parameters
    ----------
    store_arg : str or None
        The store folder given by the user; None for the default
        (``$BIASTEST_DATA_DIR`` or ``~/.cache/biastest/store``).

    Returns
    -------
    (DatasetStore or None, Path)
        The store (None when the default folder does not exist) and its folder.

    Raises
    ------
    UsageError
        A given folder does not exist.
    """
    root = Path(store_arg).expanduser() if store_arg else default_store_dir()
    if not root.is_dir():
        if store_arg:
            raise UsageError(MSG_FILE_NOT_FOUND.format(what="store folder", path=store_arg))
        return None, root
    return DatasetStore(root, writer="cli"), root


def pairs_from_store(store_arg: str | None, spec: BiasSpec, pairing: str) -> tuple[list[SentencePair], dict[str, Any]]:
    """Sentence pairs for ``spec`` found in the dataset store, as the app's "Find sentences".

    Parameters
    ----------
    store_arg : str or None
        The store folder (see :func:`open_store`).
    spec : BiasSpec
    pairing : str
        How stored sentences are paired (see :func:`biastest.store.retrieval.retrieve_pairs`).

    Returns
    -------
    (list of SentencePair, dict)
        The pairs and where they came from (store, pairing, counts), for the result's provenance.

    Raises
    ------
    DataError
        No store, or no pairs for ``spec`` in it.
    """
    store, root = open_store(store_arg)
    if store is None:
        raise DataError(MSG_NO_STORE.format(path=root))
    sentences = retrieve_sentences(store, spec)
    found = retrieve_pairs(store, spec, sentences=sentences, pairing=pairing)
    if not found.pairs:
        raise DataError(MSG_NO_STORED_PAIRS.format(path=root, spec=spec.name))
    info = {"from": "store", "store": str(root), "pairing": found.pairing, "stored": found.stored,
            "built": found.built, "n_sentences": len(sentences.matches)}
    return list(found.pairs), info


# --------------------------------------------------------------------------- images
def image_record(root: Path, path: Path, term: str) -> TestImage:
    """The record of an uploaded image file (its path relative to ``root`` and its SHA-256).

    Parameters
    ----------
    root : Path
        The folder the record's path is relative to.
    path : Path
        The image file, inside ``root``.
    term : str
        The image term it shows.

    Returns
    -------
    TestImage

    Raises
    ------
    UsageError
        The file cannot be read.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(MSG_FILE_UNREADABLE.format(what="image", path=path, problem=exc.strerror or exc)) from None
    return TestImage(
        path=path.relative_to(root).as_posix(),
        sha256=hashlib.sha256(data).hexdigest(),
        image_term=term,
        generator="upload",
        source="upload",
    )


def images_from_folder(folder: str | Path) -> tuple[list[TestImage], Path]:
    """Test images from a folder with one subfolder per image term, or from a manifest.

    Parameters
    ----------
    folder : path
        A folder whose subfolders are named after image terms
        (``folder/woman/1.png``; subfolders and files in name order, hidden
        ones skipped), or a manifest: a CSV file with the columns ``path`` and
        ``image_term`` or a JSON list of objects with those fields, paths
        relative to the manifest's folder.

    Returns
    -------
    (list of TestImage, Path)
        The records (in order) and the folder their paths are relative to.

    Raises
    ------
    UsageError
        The folder or manifest does not exist, or a listed file cannot be read.
    DataError
        No images in the folder, or a manifest without the needed columns.
    """
    path = Path(folder).expanduser()
    if not path.exists():
        raise UsageError(MSG_FILE_NOT_FOUND.format(what="image folder", path=folder))
    if path.is_file():
        return images_from_manifest(path), path.parent.resolve()
    root = path.resolve()
    out = []
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for f in sorted(sub.iterdir()):
            if f.is_file() and not f.name.startswith(".") and f.suffix.lower() in IMAGE_SUFFIXES:
                out.append(image_record(root, f, sub.name))
    if not out:
        raise DataError(MSG_NO_IMAGES_IN_FOLDER.format(path=folder))
    return out, root


def images_from_manifest(path: Path) -> list[TestImage]:
    """Test images listed by a manifest (CSV with ``path`` and ``image_term``, or a JSON list of objects).

    Parameters
    ----------
    path : Path
        The manifest; the paths it lists are relative to its folder and must stay inside it.

    Returns
    -------
    list of TestImage

    Raises
    ------
    DataError
        The manifest cannot be read, lists nothing, lacks a field, or names an image outside its folder.
    UsageError
        A listed image does not exist or cannot be read.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix.lower() == ".json":
            rows = json.loads(text)
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ValueError("expected a list of objects")
        else:
            rows = list(csv.DictReader(text.splitlines()))
    except RecursionError:
        raise DataError(MSG_BAD_MANIFEST.format(path=path, problem=MSG_TOO_DEEP)) from None
    except (OSError, ValueError) as exc:
        raise DataError(MSG_BAD_MANIFEST.format(path=path, problem=str(exc))) from None
    if not rows:
        raise DataError(MSG_BAD_MANIFEST.format(path=path, problem="it lists no images"))
    root = path.parent.resolve()
    out = []
    for i, r in enumerate(rows, start=1):
        rel, term = str(r.get("path") or "").strip(), str(r.get("image_term") or "").strip()
        if not rel or not term:
            raise DataError(MSG_BAD_MANIFEST.format(path=path, problem=f"row {i} has no path or no image_term"))
        f = root / rel
        if not f.is_file():
            raise UsageError(MSG_FILE_NOT_FOUND.format(what="image", path=rel))
        if not f.resolve().is_relative_to(root):
            raise DataError(MSG_IMAGE_OUTSIDE_ROOT.format(path=rel), path=rel)
        out.append(image_record(root, f.resolve(), term))
    return out


def images_from_store(store_arg: str | None, spec: BiasSpec) -> tuple[list[TestImage], Path]:
    """The dataset store's images for the image terms (group terms) of ``spec``.

    Parameters
    ----------
    store_arg : str or None
        The store folder (see :func:`open_store`).
    spec : BiasSpec

    Returns
    -------
    (list of TestImage, Path)
        The records and the store's folder, which their paths are relative to.

    Raises
    ------
    DataError
        No store, or no images for the terms in it.
    """
    store, root = open_store(store_arg)
    found = retrieve_images(store, list(spec.group_terms)) if store is not None else None
    if found is None or not found.images:
        raise DataError(MSG_NO_STORED_IMAGES.format(spec=spec.name, path=root))
    return list(found.images), store.root


# --------------------------------------------------------------------------- embeddings
def embedding_source(value: str | None) -> str:
    """The :func:`~biastest.models.embeddings.load_embeddings` source for ``--model``.

    A registry name or an id with a prefix (``file:``, ``sentence-transformers:``,
    ``spacy:``) is kept; a folder becomes ``sentence-transformers:<folder>``; a
    file, or anything that looks like a file path, becomes ``file:<path>``.

    Parameters
    ----------
    value : str or None
        What the user gave; None or empty for :data:`DEFAULT_EMBEDDINGS`.

    Returns
    -------
    str
    """
    v = (value or DEFAULT_EMBEDDINGS).strip()
    low = v.lower()
    if low in EMBEDDING_SOURCES or low.startswith(("file:", "sentence-transformers:", "spacy:")):
        return v
    p = Path(v).expanduser()
    if p.is_dir():
        return f"sentence-transformers:{v}"
    if p.is_file() or looks_like_path(v) or low.endswith(EMBEDDING_FILE_SUFFIXES):
        return f"file:{v}"
    return v
