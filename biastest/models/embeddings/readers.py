"""The safe file readers for word vectors: formats that carry no code, checked before anything large is allocated.

word2vec/GloVe/fastText text and binary (optionally gzip-compressed), ``.npz``
(read with ``allow_pickle=False`` after its member headers are checked) and
``.safetensors``; gensim's pickle-based ``.kv``/``.model``/``.wv`` files only
with the operator's ``trust_pickle=True``, and a pickle under any other name
(its header, a pickle inside a ``.gz`` or a zip) is refused outright. A header
that promises more vectors than the file can hold, a cut-short fastText file
or an ``.npz`` member declaring a huge shape is refused before allocation; an
uploaded ``.gz`` may unpack to at most :data:`MAX_UPLOAD_UNPACKED_BYTES`.
Messages name the file (its name only, :func:`message_name`) and a fixed
description of the problem, never the file's contents.

gensim is imported inside the functions that parse with it: it loads scipy,
which every import of the embedding interface would otherwise pay for.
"""

from __future__ import annotations

import gzip
import mmap
import struct
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy
from safetensors import safe_open

from biastest.errors import EmbeddingError

__all__ = [
    "MAX_UPLOAD_UNPACKED_BYTES",
    "MSG_BAD_VECTORS",
    "MSG_DUPLICATE_WORDS",
    "MSG_EMPTY_WORD",
    "MSG_FILE_UNREADABLE",
    "MSG_GZ_TOO_LARGE",
    "MSG_HEADER_TOO_LARGE",
    "MSG_NPZ_LAYOUT",
    "MSG_PICKLE_REFUSED",
    "MSG_SAFETENSORS_LAYOUT",
    "MSG_UNSAFE_UPLOAD",
    "MSG_WORDS_ROWS",
    "PICKLE_SUFFIXES",
    "SAFE_EMBEDDING_SUFFIXES",
    "check_upload_file",
    "is_pickle_header",
    "message_name",
    "read_keyed_vectors",
]

MSG_FILE_UNREADABLE = (
    "The embedding file '{name}' could not be read as word vectors ({problem}). Use a word2vec, GloVe or "
    "fastText file in text or binary format (.txt, .vec, .bin, optionally .gz), an .npz or a .safetensors file."
)
MSG_PICKLE_REFUSED = (
    "The embedding file '{name}' is pickle-based (a gensim .kv, .model or .wv file, or a Python pickle). This file "
    "format can run code when it is opened, so biastest does not open it unless the operator allows it for a "
    "trusted file (command line: --trust-gensim-file; never for uploads). Save the vectors as word2vec text or "
    "binary, .npz or .safetensors instead."
)
MSG_GZ_TOO_LARGE = (
    "The compressed file '{name}' unpacks to more than {limit_mb:,} MB. Upload the vectors of the words you need, "
    "or run biastest on your own computer for very large embeddings."
)
#: Largest unpacked size of an uploaded ``.gz`` embedding (a 50 MB upload could otherwise unpack to ~50 GB).
MAX_UPLOAD_UNPACKED_BYTES = 2 * 1024**3
MSG_UNSAFE_UPLOAD = (
    "The file '{name}' is not accepted as an embedding. Upload word2vec, GloVe or fastText vectors in text or binary "
    "format (.txt, .vec, .bin, optionally .gz), an .npz or a .safetensors file; pickle-based files (.kv, .model, "
    ".wv, pickles) can run code when they are opened and are never opened from an upload."
)
MSG_HEADER_TOO_LARGE = (
    "The embedding file '{name}' has a header line that promises more vectors than its {size} bytes can hold: "
    "the header is wrong or the file is cut short."
)
MSG_NPZ_LAYOUT = (
    "The .npz file '{name}' must hold two arrays: 'vectors' (a 2-D float array, one row per word) and 'words' "
    "(the words as a NumPy string array, same order); {problem}."
)
MSG_SAFETENSORS_LAYOUT = (
    "The .safetensors file '{name}' must hold a tensor 'vectors' (2-D, float, one row per word) and the words in "
    "its metadata under 'words' (one word a line, in row order); {problem}."
)
MSG_BAD_VECTORS = (
    "The vectors in '{name}' {problem}; they must be a 2-D array of finite float16, float32 or float64 numbers "
    "with one row per word."
)
MSG_WORDS_ROWS = "'{name}' has {n_words} words but {n_rows} rows of vectors; give exactly one word per row."
MSG_EMPTY_WORD = "Word number {number} in the word list of '{name}' is empty; give one non-empty word per row."
MSG_DUPLICATE_WORDS = (
    "The word list of '{name}' has a word more than once ({count} repeats; the first is word number {number}); "
    "give each word once."
)


def message_name(path: str | Path) -> str:
    """How a message names an embedding file: its name only (at most 120 characters), never its folder.

    An upload's folder is the server's (``/tmp/gradio/<hash>/``): it means
    nothing to the user and tells a visitor how the server is laid out.
    """
    return Path(str(path)).name[:120]

#: Suffixes of gensim's own pickle-based files (opened only with ``trust_pickle=True``).
PICKLE_SUFFIXES = (".kv", ".model", ".wv")
#: Suffixes an uploaded embedding file may have (formats that carry no code).
SAFE_EMBEDDING_SUFFIXES = (".txt", ".vec", ".bin", ".gz", ".npz", ".safetensors")

_FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_GZIP_MAGIC = b"\x1f\x8b"
_HEAD_BYTES = 65536
_MAX_FIRST_LINE = 1 << 20
#: deflate cannot expand data more than about 1032-fold: the bound on what a .gz or a compressed .npz member holds.
_DEFLATE_MAX_RATIO = 1032


def is_pickle_header(head: bytes) -> bool:
    """Whether ``head`` starts like a pickle of protocol 2 to 5 (``0x80``, then the protocol byte)."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _looks_like_header(line: bytes) -> bool:
    parts = line.split()
    return len(parts) == 2 and all(p.isdigit() for p in parts)


def _inner_suffix(path: Path) -> str:
    """The suffix that says the format: ``.txt`` for ``vectors.txt.gz``, else the last suffix (lower case)."""
    sfx = [s.lower() for s in path.suffixes]
    if sfx and sfx[-1] == ".gz":
        return sfx[-2] if len(sfx) > 1 else ""
    return sfx[-1] if sfx else ""


def _read_head(path: Path, *, gz: bool, n: int = _HEAD_BYTES) -> bytes:
    if gz:
        with gzip.open(path, "rb") as fh:
            return fh.read(n)
    with open(path, "rb") as fh:
        return fh.read(n)


def _first_line(path: Path, *, gz: bool) -> bytes:
    opener = gzip.open if gz else open
    with opener(path, "rb") as fh:
        return fh.readline(_MAX_FIRST_LINE)


def _zip_holds_pickle(path: Path) -> bool:
    with zipfile.ZipFile(path) as zf:
        return any(n.lower().endswith((".pkl", ".pickle")) for n in zf.namelist())


def _refuse_pickle(path: Path) -> EmbeddingError:
    return EmbeddingError(MSG_PICKLE_REFUSED.format(name=message_name(path)), path=str(path), unsafe=True)


def check_upload_file(path: str | Path) -> Path:
    """Refuse an uploaded embedding file that is not in a safe format, before it is opened as vectors.

    A client can bypass the upload widget's file types, so the server checks
    again: the name must end in one of :data:`SAFE_EMBEDDING_SUFFIXES` (not
    ``.kv.gz`` and the like), the content must not start with a pickle
    header (also inside a ``.gz``), and a zip must not hold a pickle.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Path

    Raises
    ------
    EmbeddingError
        :data:`MSG_UNSAFE_UPLOAD` (with ``unsafe=True`` in its details).
    """
    p = Path(path)
    refuse = EmbeddingError(MSG_UNSAFE_UPLOAD.format(name=p.name[:120]), path=str(p), unsafe=True)
    last = p.suffix.lower()
    if last not in SAFE_EMBEDDING_SUFFIXES or (last == ".gz" and _inner_suffix(p) in PICKLE_SUFFIXES):
        raise refuse
    try:
        head = _read_head(p, gz=False, n=16)
        if is_pickle_header(head):
            raise refuse
        if head[:2] == _GZIP_MAGIC and is_pickle_header(_read_head(p, gz=True, n=16)):
            raise refuse
        if head.startswith(_ZIP_MAGIC) and _zip_holds_pickle(p):
            raise refuse
        if head[:2] == _GZIP_MAGIC and _gz_unpacks_beyond(p, MAX_UPLOAD_UNPACKED_BYTES):
            raise EmbeddingError(
                MSG_GZ_TOO_LARGE.format(name=p.name[:120], limit_mb=MAX_UPLOAD_UNPACKED_BYTES // 2**20), path=str(p)
            )
    except EmbeddingError:
        raise
    except Exception:  # unreadable or a broken gzip: the loader says so in its own words
        pass
    return p


def _gz_unpacks_beyond(path: Path, limit: int) -> bool:
    """Whether a gzip file unpacks to more than ``limit`` bytes (streamed in 1 MB steps; nothing is kept)."""
    total = 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
            if total > limit:
                return True
    return False


def _problem(exc: BaseException) -> str:
    """A fixed description of why a file could not be parsed; never the exception's text (it can quote the file)."""
    if isinstance(exc, UnicodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, MemoryError):
        return "it is too large to load into memory"
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return "it is not a valid gzip file"
    if isinstance(exc, EOFError):
        return "the file ends before all the vectors its header announces"
    text = str(exc).lower()  # read to classify only, never shown
    if isinstance(exc, ValueError):
        if any(k in text for k in ("invalid vector", "broadcast", "reshape", "buffer size", "incompatible vector")):
            return "a line has the wrong number of values"
        if "could not convert" in text or "invalid literal" in text:
            return "a value is not a number"
        if "unpack" in text:
            return "the first line is not a header giving the number of words and of dimensions"
    if isinstance(exc, NotImplementedError):
        return "it is a supervised fastText model, not word vectors"
    if isinstance(exc, OSError):
        return "it could not be opened"
    return "it is not a word-vector file"


def _unreadable(path: Path, problem: str, exc: BaseException | None = None) -> EmbeddingError:
    cause = type(exc).__name__ if exc is not None else None
    return EmbeddingError(
        MSG_FILE_UNREADABLE.format(name=message_name(path), problem=problem), path=str(path), cause=cause
    )


def _check_header(path: Path, first: bytes, *, binary: bool, content_bytes: int) -> None:
    """Refuse a word2vec header whose count × dimensions the file cannot hold (before gensim preallocates it)."""
    if not _looks_like_header(first):
        raise _unreadable(path, "the first line is not a header giving the number of words and of dimensions")
    count, dim = (int(x) for x in first.split())
    if count < 1 or dim < 1:
        raise _unreadable(path, "the header line gives no words or no dimensions")
    # smallest possible row: text "w 0 0 … 0\n" = 2·dim + 1 bytes (+ newline); binary "w " + 4·dim bytes
    row = 4 * dim + 2 if binary else 2 * dim + 1
    if count * row > content_bytes:
        raise EmbeddingError(
            MSG_HEADER_TOO_LARGE.format(name=message_name(path), size=path.stat().st_size), path=str(path)
        )


def _check_fasttext(path: Path) -> None:
    """Walk a fastText binary's header and vocabulary (no allocation) so gensim cannot loop or over-allocate.

    gensim reads the vocabulary byte by byte until a NUL (a cut-short file
    loops forever) and allocates the matrix its header declares.
    """
    problem = "its fastText header or vocabulary is cut short or inconsistent"
    size = path.stat().st_size
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        try:
            pos = 8  # magic, version
            dim, *_rest = struct.unpack_from("=12i", mm, pos)
            bucket = _rest[7]
            pos += 12 * 4 + 8  # twelve int32 fields, then t (double)
            vocab_size, nwords, nlabels = struct.unpack_from("=3i", mm, pos)
            pos += 12 + 8  # ntokens (int64)
            (prune,) = struct.unpack_from("=q", mm, pos)
            pos += 8
            if nlabels > 0:
                raise _unreadable(path, "it is a supervised fastText model, not word vectors")
            if dim < 1 or vocab_size < 1 or nwords != vocab_size or bucket < 0 or vocab_size * 10 > size:
                raise _unreadable(path, problem)
            for _ in range(vocab_size):
                end = mm.find(b"\0", pos)
                if end < 0:
                    raise _unreadable(path, problem)
                pos = end + 1 + 9  # NUL, count (int64), entry type (int8)
            pos += max(prune, 0) * 8 + 1  # pruned index pairs, quant_input (bool)
            num_vectors, mdim = struct.unpack_from("=2q", mm, pos)
            pos += 16
        except struct.error:
            raise _unreadable(path, problem) from None
        if mdim != dim or num_vectors != nwords + bucket or pos + num_vectors * mdim * 4 > size:
            raise _unreadable(path, problem)


def _words_and_vectors(path: Path, words: Sequence[Any], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Check an array-format vocabulary and matrix; return the words and float32 vectors."""
    if vectors.ndim != 2 or vectors.shape[0] < 1 or vectors.shape[1] < 1:
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(
                name=message_name(path), problem=f"have shape {tuple(vectors.shape)}, not (words, dimensions)"
            ),
            path=str(path),
        )
    if len(words) != vectors.shape[0]:
        raise EmbeddingError(
            MSG_WORDS_ROWS.format(name=message_name(path), n_words=len(words), n_rows=vectors.shape[0]), path=str(path)
        )
    out = [str(w) for w in words]
    for i, w in enumerate(out):
        if not w.strip():
            raise EmbeddingError(MSG_EMPTY_WORD.format(name=message_name(path), number=i + 1), path=str(path), row=i)
    if len(set(out)) != len(out):
        seen: set[str] = set()
        first = -1
        for i, w in enumerate(out):
            if w in seen and first < 0:
                first = i
            seen.add(w)
        count = len(out) - len(seen)
        raise EmbeddingError(
            MSG_DUPLICATE_WORDS.format(name=message_name(path), count=count, number=first + 1), path=str(path),
            row=first,
        )
    with np.errstate(over="ignore", invalid="ignore"):
        m = np.ascontiguousarray(vectors, dtype=np.float32)
    if not np.isfinite(m).all():
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(
                name=message_name(path), problem="hold NaN or infinite values (or values too large for float32)"
            ),
            path=str(path),
        )
    return out, m


_FLOAT_KINDS = ("f2", "f4", "f8")


def _npy_header(zf: Any, info: Any, path: Path, key: str) -> tuple[tuple[int, ...], np.dtype]:
    if info.compress_type != 0 and info.file_size > info.compress_size * _DEFLATE_MAX_RATIO + 4096:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(name=message_name(path),
                                  problem=f"the array '{key}' is not a valid compressed member"),
            path=str(path),
        )
    with zf.open(info) as fh:
        version = npy.read_magic(fh)
        if version == (1, 0):
            shape, _fortran, dtype = npy.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, _fortran, dtype = npy.read_array_header_2_0(fh)
        else:
            raise ValueError("unsupported .npy version")
        header_len = fh.tell()
    if dtype.hasobject:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(
                name=message_name(path),
                problem=f"'{key}' holds Python objects, which biastest never unpickles; save plain NumPy arrays "
                "(the words as np.array(words, dtype=str))",
            ),
            path=str(path),
            unsafe=True,
        )
    n = 1
    for s in shape:
        n *= int(s)
    if n * dtype.itemsize + header_len > info.file_size:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(name=message_name(path), problem=f"the array '{key}' is cut short"), path=str(path)
        )
    return tuple(int(s) for s in shape), dtype


def _read_npz(path: Path) -> tuple[list[str], np.ndarray]:
    """``vectors`` and ``words`` of an .npz, headers checked first, read with ``allow_pickle=False``."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if any(i.filename.lower().endswith((".pkl", ".pickle")) for i in infos):  # e.g. torch.save's zip
                raise _refuse_pickle(path)
            members = {i.filename[:-4]: i for i in infos if i.filename.endswith(".npy")}
            for key in ("vectors", "words"):
                if key not in members:
                    raise EmbeddingError(
                        MSG_NPZ_LAYOUT.format(name=message_name(path), problem=f"the array '{key}' is missing"),
                        path=str(path),
                    )
            vshape, vdtype = _npy_header(zf, members["vectors"], path, "vectors")
            wshape, wdtype = _npy_header(zf, members["words"], path, "words")
    except EmbeddingError:
        raise
    except Exception as exc:  # not a zip, a broken member, an unsupported .npy header
        raise _unreadable(path, "it is not a valid .npz archive", exc) from None
    if vdtype.kind != "f" or vdtype.str[1:] not in _FLOAT_KINDS:
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(name=message_name(path), problem="are not floating-point numbers"), path=str(path)
        )
    if len(vshape) != 2:
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(name=message_name(path), problem=f"have shape {vshape}, not (words, dimensions)"),
            path=str(path),
        )
    if wdtype.kind not in ("U", "S") or len(wshape) != 1:
        raise EmbeddingError(
            MSG_NPZ_LAYOUT.format(name=message_name(path), problem="'words' is not a 1-D array of text"), path=str(path)
        )
    try:
        with np.load(path, allow_pickle=False) as npz:
            vectors = npz["vectors"]
            raw = npz["words"]
    except Exception as exc:
        raise _unreadable(path, "it is not a valid .npz archive", exc) from None
    if raw.dtype.kind == "S":
        try:
            words = [bytes(w).decode("utf-8") for w in raw.tolist()]
        except UnicodeDecodeError:
            raise EmbeddingError(
                MSG_NPZ_LAYOUT.format(name=message_name(path), problem="'words' is not UTF-8 text"), path=str(path)
            ) from None
    else:
        words = raw.tolist()
    return _words_and_vectors(path, words, vectors)


def _read_safetensors(path: Path) -> tuple[list[str], np.ndarray]:
    """The tensor ``vectors`` and the metadata ``words`` of a .safetensors file (no pickle, memory-mapped read)."""
    try:
        with safe_open(str(path), framework="numpy") as f:
            keys = set(f.keys())
            meta = f.metadata() or {}
            if "vectors" not in keys:
                raise EmbeddingError(
                    MSG_SAFETENSORS_LAYOUT.format(name=message_name(path), problem="the tensor 'vectors' is missing"),
                    path=str(path),
                )
            if not isinstance(meta.get("words"), str):
                raise EmbeddingError(
                    MSG_SAFETENSORS_LAYOUT.format(name=message_name(path), problem="the metadata has no 'words'"),
                    path=str(path),
                )
            sl = f.get_slice("vectors")
            dtype, shape = str(sl.get_dtype()), tuple(int(s) for s in sl.get_shape())
            if dtype not in ("F16", "F32", "F64"):
                raise EmbeddingError(
                    MSG_BAD_VECTORS.format(
                        name=message_name(path), problem="are not float16, float32 or float64 numbers"
                    ),
                    path=str(path),
                )
            if len(shape) != 2:
                raise EmbeddingError(
                    MSG_BAD_VECTORS.format(
                        name=message_name(path), problem=f"have shape {shape}, not (words, dimensions)"
                    ),
                    path=str(path),
                )
            vectors = np.array(f.get_tensor("vectors"))
    except EmbeddingError:
        raise
    except Exception as exc:  # SafetensorError and friends: a broken header or data
        raise _unreadable(path, "it is not a valid .safetensors file", exc) from None
    words = meta["words"].split("\n")
    if words and words[-1] == "" and len(words) == vectors.shape[0] + 1:
        words.pop()
    return _words_and_vectors(path, words, vectors)


def _keyed_vectors(words: list[str], vectors: np.ndarray) -> Any:
    from gensim.models import KeyedVectors  # late: gensim loads scipy (module docstring)

    kv = KeyedVectors(vector_size=int(vectors.shape[1]), count=0, dtype=np.float32)
    kv.add_vectors(words, vectors)
    return kv


def read_keyed_vectors(path: Path, *, trust_pickle: bool = False) -> tuple[str, Any, Any]:
    """(format, KeyedVectors, fastText vectors or None) of a file; see :class:`KeyedVectorsEmbeddings`."""
    from gensim.models import KeyedVectors  # late: gensim loads scipy (module docstring)

    last = path.suffix.lower()
    inner = _inner_suffix(path)
    try:
        head = _read_head(path, gz=False)
    except OSError as exc:
        raise _unreadable(path, "it could not be opened", exc) from None
    if last in PICKLE_SUFFIXES:
        if not trust_pickle:
            raise _refuse_pickle(path)
        try:  # the operator's opt-in for a trusted file: gensim's pickle-based format
            obj = KeyedVectors.load(str(path), mmap="r")
        except Exception as exc:
            raise _unreadable(path, _problem(exc), exc) from None
        kv = getattr(obj, "wv", obj)
        if not isinstance(kv, KeyedVectors):
            raise _unreadable(path, "it is not a gensim KeyedVectors file")
        from gensim.models.fasttext import FastTextKeyedVectors  # late: loads scipy

        return "gensim", kv, kv if isinstance(kv, FastTextKeyedVectors) else None
    # Everything else is parsed, never unpickled; a pickle under another name is refused outright.
    if is_pickle_header(head) or inner in PICKLE_SUFFIXES:
        raise _refuse_pickle(path)
    if head.startswith(_ZIP_MAGIC) or last == ".npz":
        words, vectors = _read_npz(path)
        return "npz", _keyed_vectors(words, vectors), None
    if last == ".safetensors":
        words, vectors = _read_safetensors(path)
        return "safetensors", _keyed_vectors(words, vectors), None
    gz = head[:2] == _GZIP_MAGIC
    size = path.stat().st_size
    content_bytes = size * _DEFLATE_MAX_RATIO if gz else size
    if gz:
        try:
            head = _read_head(path, gz=True)
        except Exception as exc:
            raise _unreadable(path, "it is not a valid gzip file", exc) from None
        if is_pickle_header(head):
            raise _refuse_pickle(path)
    try:
        if not gz and head[:4] == _FASTTEXT_MAGIC and last == ".bin":
            # fastText's own binary starts with a magic number; word2vec binary with an ASCII header
            _check_fasttext(path)
            from gensim.models.fasttext import load_facebook_vectors  # late: loads scipy

            ft = load_facebook_vectors(str(path))
            fmt, kv, sub = "fasttext-bin", ft, ft
        else:
            binary = inner == ".bin" or b"\0" in head
            first = _first_line(path, gz=gz)
            if binary:
                _check_header(path, first, binary=True, content_bytes=content_bytes)
                fmt, kv, sub = "word2vec-bin", KeyedVectors.load_word2vec_format(str(path), binary=True), None
            elif _looks_like_header(first):
                _check_header(path, first, binary=False, content_bytes=content_bytes)
                fmt, kv, sub = "word2vec-text", KeyedVectors.load_word2vec_format(str(path), binary=False), None
            else:
                if len(first.split()) < 2:
                    raise _unreadable(path, "the first line is not a word followed by its numbers")
                kv = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=True)
                fmt, sub = "glove-text", None
    except EmbeddingError:
        raise
    except Exception as exc:  # gensim raises many kinds on a bad file; their texts can quote it
        raise _unreadable(path, _problem(exc), exc) from None
    vectors = kv.vectors
    if vectors.ndim != 2 or vectors.shape[0] < 1 or vectors.shape[1] < 1:
        raise _unreadable(path, "it holds no vectors")
    if not np.isfinite(vectors).all():
        raise EmbeddingError(
            MSG_BAD_VECTORS.format(name=message_name(path), problem="hold NaN or infinite values"), path=str(path)
        )
    return fmt, kv, sub
