"""Nothing a user supplies as word embeddings is unpickled, and no error message quotes a file's contents.

A real pickle payload (its ``__reduce__`` writes a marker file) is saved under
every name an embedding file can have and handed to every way in: the
library's :func:`load_embeddings` and :class:`KeyedVectorsEmbeddings`, the
command line (``--model`` and ``--replicate``) and the word-embedding app's
handlers (upload and replicate uploads). The marker must never appear and the
refusal is the exact message constant. ``pickle.load``/``loads`` are replaced
by a trap for the whole module, so a code path that merely *tries* to unpickle
fails loudly even if it would have failed to find a payload.

The safe array formats (.npz, .safetensors) give the same vectors as a
word2vec text file and refuse bad shapes, duplicates and object arrays with
their messages; a server file such as ``/proc/self/environ`` never reaches a
message; a header that claims a billion words is refused before gensim
preallocates the matrix.
"""

from __future__ import annotations

import gzip
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from biastest import cli
from biastest.errors import EmbeddingError
from biastest.models.cache import ModelCache
from biastest.models.embeddings import (
    MSG_BAD_VECTORS,
    MSG_DUPLICATE_WORDS,
    MSG_EMPTY_WORD,
    MSG_FILE_UNREADABLE,
    MSG_HEADER_TOO_LARGE,
    MSG_NPZ_LAYOUT,
    MSG_PICKLE_REFUSED,
    MSG_SAFETENSORS_LAYOUT,
    MSG_UNSAFE_UPLOAD,
    MSG_WORDS_ROWS,
    KeyedVectorsEmbeddings,
    check_upload_file,
    is_pickle_header,
    load_embeddings,
)

SEED = 11
print(f"test seed: {SEED}")
SECRET = "abc123"
WORDS = ["nurse", "doctor", "woman", "man", "she", "he", "teacher", "engineer"]
WEAT7 = "WEAT 7: Math vs arts, male vs female terms"
TWOAFC = "Occupations vs gender (Liang & Acuna 2020)"


class Payload:
    """Unpickling this writes ``marker`` — a stand-in for any code an attacker would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "x"))


class Unpickled(BaseException):
    """Raised by the trap; a BaseException so that no ``except Exception`` in the loaders can swallow it."""


@pytest.fixture(autouse=True)
def no_unpickling(monkeypatch):
    """Any call of pickle.load / pickle.loads (gensim's and numpy's way in) fails the test."""

    def trap(*_a, **_k):
        raise Unpickled("something tried to unpickle a user-supplied file")

    monkeypatch.setattr(pickle, "load", trap)
    monkeypatch.setattr(pickle, "loads", trap)


def payload_bytes(marker: Path, protocol: int = 4) -> bytes:
    return pickle.dumps(Payload(marker), protocol=protocol)


def test_the_payload_is_real(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    monkeypatch.undo()  # the real pickle, once, to show the payload is not a dud
    pickle.loads(payload_bytes(marker))
    assert marker.read_text() == "x"
    assert all(is_pickle_header(payload_bytes(marker, p)) for p in (2, 3, 4, 5))
    assert not is_pickle_header(b"3 50\n") and not is_pickle_header(b"\x80")


# --------------------------------------------------------------------------- files that hold a payload
def _evil_files(folder: Path, marker: Path) -> list[Path]:
    data = payload_bytes(marker)
    out = []
    for name in ("vectors.kv", "vectors.model", "vectors.wv", "vectors.txt", "vectors.vec", "vectors.bin",
                 "vectors.npz", "vectors.safetensors", "vectors"):
        p = folder / name
        p.write_bytes(data)
        out.append(p)
    gz = folder / "vectors.txt.gz"
    gz.write_bytes(gzip.compress(data))
    kvgz = folder / "vectors.kv.gz"
    kvgz.write_bytes(gzip.compress(data))
    torchlike = folder / "checkpoint.npz"  # a zip with a pickle inside (torch.save's layout)
    with zipfile.ZipFile(torchlike, "w") as zf:
        zf.writestr("archive/data.pkl", data)
        zf.writestr("vectors.npy", b"")
    torchbin = folder / "pytorch_model.bin"
    torchbin.write_bytes(torchlike.read_bytes())
    return [*out, gz, kvgz, torchlike, torchbin]


@pytest.fixture
def evil(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    marker = tmp_path / "MARKER"
    return _evil_files(folder, marker), marker


@pytest.mark.parametrize("trust", [False, True])
def test_load_embeddings_refuses_every_pickle(evil, trust):
    files, marker = evil
    for p in files:
        if trust and p.suffix in (".kv", ".model", ".wv"):
            continue  # the opt-in opens these (that is its point); tested below with a real gensim file
        with pytest.raises(EmbeddingError) as e:
            load_embeddings(f"file:{p}", cache=ModelCache(1), trust_pickle=trust)
        assert e.value.message == MSG_PICKLE_REFUSED.format(name=p.name), p.name
        assert e.value.details["unsafe"] is True
        assert not marker.exists()


def test_keyed_vectors_class_refuses_every_pickle(evil):
    files, marker = evil
    for p in files:
        with pytest.raises(EmbeddingError) as e:
            KeyedVectorsEmbeddings(p)
        assert e.value.message == MSG_PICKLE_REFUSED.format(name=p.name), p.name
    assert not marker.exists()


def test_object_array_in_an_npz_is_never_unpickled(tmp_path):
    marker = tmp_path / "MARKER"
    p = tmp_path / "objects.npz"
    words = np.empty(3, dtype=object)
    words[:] = [Payload(marker), "b", "c"]
    np.savez(p, vectors=np.ones((3, 4), np.float32), words=words)  # saving pickles the object; loading would run it
    assert not marker.exists()
    with pytest.raises(EmbeddingError) as e:
        load_embeddings(f"file:{p}", cache=ModelCache(1))
    problem = ("'words' holds Python objects, which biastest never unpickles; save plain NumPy arrays "
               "(the words as np.array(words, dtype=str))")
    assert e.value.message == MSG_NPZ_LAYOUT.format(name=p.name, problem=problem)
    assert not marker.exists()


def test_trusted_opt_in_opens_a_real_gensim_file(tmp_path, monkeypatch):
    from gensim.models import KeyedVectors

    vecs = np.random.default_rng(SEED).normal(size=(len(WORDS), 6)).astype(np.float32)
    kv = KeyedVectors(vector_size=6)
    kv.add_vectors(WORDS, vecs)
    p = tmp_path / "mine.kv"
    kv.save(str(p))
    cache = ModelCache(2)
    with pytest.raises(EmbeddingError) as e:
        load_embeddings(f"file:{p}", cache=cache)
    assert e.value.message == MSG_PICKLE_REFUSED.format(name=p.name)
    monkeypatch.undo()  # gensim's format is a pickle: the opt-in really unpickles (our own file, made above)
    emb = load_embeddings(f"file:{p}", cache=cache, trust_pickle=True)
    assert emb.format == "gensim"
    assert np.array_equal(emb.vectors(WORDS)[0], vecs)
    with pytest.raises(EmbeddingError) as e:  # the trusted load in the cache never answers an untrusted request
        load_embeddings(f"file:{p}", cache=cache)
    assert e.value.message == MSG_PICKLE_REFUSED.format(name=p.name)


# --------------------------------------------------------------------------- the command line
def _cli(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_refuses_pickles_with_exit_2(evil, tmp_path, capsys):
    files, marker = evil
    out = tmp_path / "out.json"
    for p in files:
        rc, _, err = _cli(capsys, "run", WEAT7, "--kind", "embeddings", "--model", str(p), "--permutations", "1000",
                          "--out", str(out))
        assert (rc, err.strip()) == (2, MSG_PICKLE_REFUSED.format(name=p.name)), p.name
    kv = next(p for p in files if p.suffix == ".kv")
    model = next(p for p in files if p.suffix == ".model")
    rc, _, err = _cli(capsys, "run", TWOAFC, "--kind", "embeddings", "--replicate", str(kv), "--replicate", str(model),
                      "--bootstrap", "0", "--out", str(out))
    assert (rc, err.strip()) == (2, MSG_PICKLE_REFUSED.format(name=kv.name))
    txt = next(p for p in files if p.name == "vectors.txt")
    rc, _, err = _cli(capsys, "run", TWOAFC, "--kind", "embeddings", "--replicate", str(txt), "--replicate", str(txt),
                      "--trust-gensim-file", "--bootstrap", "0", "--out", str(out))
    assert (rc, err.strip()) == (2, MSG_PICKLE_REFUSED.format(name=txt.name))  # the opt-in is for .kv only
    assert not marker.exists() and not out.exists()
    assert cli.exit_code_for(EmbeddingError(MSG_PICKLE_REFUSED.format(name="x"), unsafe=True)) == cli.EXIT_USAGE


def test_cli_trust_flag_opens_gensim_files_and_applies_to_embeddings_only(tmp_path, capsys, monkeypatch):
    from gensim.models import KeyedVectors

    from biastest.specs import get_spec, get_twoafc_spec

    monkeypatch.undo()  # the opt-in unpickles gensim's own files (our own, made here)
    glove = load_embeddings("glove-6b-50d")
    spec = get_spec(WEAT7)
    words = sorted({w for _n, ws in [*spec.social_groups, *spec.attributes] for w in ws})
    vecs, missing = glove.vectors(words)
    found = [w for w in words if w not in set(missing)]
    kv = KeyedVectors(vector_size=50)
    kv.add_vectors(found, vecs)
    mine = tmp_path / "weat.kv"
    kv.save(str(mine))
    out = tmp_path / "weat.json"
    rc, stdout, err = _cli(capsys, "run", WEAT7, "--kind", "embeddings", "--model", str(mine), "--trust-gensim-file",
                           "--permutations", "1000", "--out", str(out))
    assert rc == 0, err
    assert out.exists() and f"file:{mine.resolve()}" in stdout

    two = get_twoafc_spec(TWOAFC)
    words2 = [*two.targets, *(w for pair in two.cue_pairs for w in pair)]
    base, missing2 = glove.vectors(words2)
    found2 = [w for w in words2 if w not in set(missing2)]
    reps = []
    rng = np.random.default_rng(SEED)
    for r in range(2):
        kvr = KeyedVectors(vector_size=50)
        kvr.add_vectors(found2, base + rng.normal(0, 0.05, base.shape).astype(np.float32))
        reps.append(tmp_path / f"rep{r}.kv")
        kvr.save(str(reps[-1]))
    out2 = tmp_path / "twoafc.json"
    rc, _, err = _cli(capsys, "run", TWOAFC, "--kind", "embeddings", "--replicate", str(reps[0]), "--replicate",
                      str(reps[1]), "--trust-gensim-file", "--bootstrap", "0", "--out", str(out2))
    assert rc == 0, err
    rc, _, err = _cli(capsys, "run", WEAT7, "--kind", "lm", "--trust-gensim-file", "--out", str(tmp_path / "x.json"))
    assert rc == 2 and "--trust-gensim-file" in err
    rc, stdout, _ = _cli(capsys, "run", "weat", "--help")  # run's help lists the measures; each its flags
    assert rc == 0 and "--trust-gensim-file" in stdout and "RUNS THE CODE IN THE FILE" in " ".join(stdout.split())


# --------------------------------------------------------------------------- the app
@pytest.fixture(scope="module")
def app():
    from biastest.ui import psychophysics

    return psychophysics


def _upload_step1(app, path) -> list:
    """The app's 18 step-1 values: a custom 2AFC spec, the embedding from an upload."""
    return [app.KIND_TWOAFC, app.CUSTOM, "nurse, engineer", "woman/man, she/he", "female", "male",
            app.CUSTOM, *([""] * 8), app.SOURCE_UPLOAD, str(path), ""]


def test_app_upload_refuses_pickles_and_unsafe_names(app, evil, tmp_path):
    files, marker = evil
    for p in files:
        with pytest.raises(EmbeddingError) as e:
            app.confirm_spec_core(app.new_session(), *_upload_step1(app, p), allow_paths=False)
        assert e.value.message == MSG_UNSAFE_UPLOAD.format(name=p.name), p.name
    for name in ("vectors.pkl", "vectors.pt", "vectors.kv.gz", "vectors.npy", "vectors.csv"):
        p = tmp_path / name
        p.write_text("3 2\na 1 2\nb 3 4\nc 5 6\n")
        with pytest.raises(EmbeddingError) as e:
            app.confirm_spec_core(app.new_session(), *_upload_step1(app, p), allow_paths=False)
        assert e.value.message == MSG_UNSAFE_UPLOAD.format(name=name)
    assert not marker.exists()


def test_app_replicate_uploads_refuse_pickles_and_take_safe_arrays(app, evil, tmp_path):
    files, marker = evil
    session, *_ = app.confirm_spec_core(
        app.new_session(), *_upload_step1(app, "x")[:-3], "glove-6b-50d", None, "", allow_paths=False
    )
    glove = load_embeddings("glove-6b-50d")
    words = ["nurse", "engineer", "woman", "man", "she", "he"]
    base = glove.vectors(words)[0]
    good = []
    rng = np.random.default_rng(SEED)
    for r, fmt in enumerate(("npz", "safetensors")):
        vecs = base + rng.normal(0, 0.1, base.shape).astype(np.float32)
        good.append(_save(tmp_path / f"rep{r}.{fmt}", fmt, words, vecs))
    for p in files:
        with pytest.raises(EmbeddingError) as e:
            app.run_core(session, app.REPLICATES_UPLOAD, 0.05, [str(good[0]), str(p)], "norm", False, 0, 10_000, SEED)
        assert e.value.message == MSG_UNSAFE_UPLOAD.format(name=p.name), p.name
    assert not marker.exists()
    run = app.run_core(session, app.REPLICATES_UPLOAD, 0.05, [str(g) for g in good], "norm", False, 0, 10_000, SEED)
    assert run["result"].mode == "replicates" and run["result"].n_replicates == 2


def test_app_upload_of_an_npz_loads(app, tmp_path):
    glove = load_embeddings("glove-6b-50d")
    words = ["nurse", "engineer", "woman", "man", "she", "he"]
    p = _save(tmp_path / "upload.npz", "npz", words, glove.vectors(words)[0])
    assert check_upload_file(p) == p
    session, message, _reports, _notes = app.confirm_spec_core(
        app.new_session(), *_upload_step1(app, p), allow_paths=False
    )
    assert message.startswith("✅") and session["source"] == f"file:{p.resolve()}"


def test_upload_widgets_accept_only_safe_suffixes(app):
    from biastest.models.embeddings import SAFE_EMBEDDING_SUFFIXES

    demo = app.build_demo(allow_server_paths=False)
    types = {c.elem_id: c.file_types for c in demo.blocks.values() if type(c).__name__ == "File"}
    assert types["embedding-upload"] == list(SAFE_EMBEDDING_SUFFIXES)
    assert types["replicate-files"] == list(SAFE_EMBEDDING_SUFFIXES)
    assert not {".kv", ".model", ".wv", ".pkl"} & set(SAFE_EMBEDDING_SUFFIXES)


# --------------------------------------------------------------------------- safe array formats
def _save(path: Path, fmt: str, words, vecs) -> Path:
    vecs = np.asarray(vecs, dtype=np.float32)
    if fmt == "npz":
        np.savez(path, vectors=vecs, words=np.array(words, dtype=str))
    elif fmt == "safetensors":
        from safetensors.numpy import save_file

        save_file({"vectors": vecs}, str(path), metadata={"words": "\n".join(words)})
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"{len(words)} {vecs.shape[1]}\n")
            for w, v in zip(words, vecs, strict=True):
                fh.write(w + " " + " ".join(repr(float(x)) for x in v) + "\n")
    return path


def test_npz_and_safetensors_equal_a_word2vec_text_file(tmp_path):
    glove = load_embeddings("glove-6b-50d")
    vecs = glove.vectors(WORDS)[0]
    loaded = {}
    for fmt in ("txt", "npz", "safetensors"):
        p = _save(tmp_path / f"vectors.{fmt}", fmt, WORDS, vecs)
        loaded[fmt] = load_embeddings(f"file:{p}", cache=ModelCache(1))
    assert loaded["txt"].format == "word2vec-text"
    assert loaded["npz"].format == "npz" and loaded["safetensors"].format == "safetensors"
    for fmt in ("npz", "safetensors"):
        emb = loaded[fmt]
        assert list(emb.vocabulary()) == list(loaded["txt"].vocabulary()) == WORDS
        assert np.array_equal(emb.matrix(), loaded["txt"].matrix())
        got, missing = emb.vectors(["Nurse", "police officer", "doctor"])
        assert missing == ["police officer"] and np.array_equal(got, vecs[:2])
        assert emb.nearest(vecs[0], 3) == loaded["txt"].nearest(vecs[0], 3)
        assert emb.describe()["format"] == fmt
    half = tmp_path / "half.npz"
    np.savez_compressed(half, vectors=vecs.astype(np.float16), words=np.array(WORDS, dtype="S"))
    emb = load_embeddings(f"file:{half}", cache=ModelCache(1))
    assert np.allclose(emb.matrix(), vecs, atol=1e-2) and list(emb.vocabulary()) == WORDS


def _refused(path: Path) -> str:
    with pytest.raises(EmbeddingError) as e:
        load_embeddings(f"file:{path}", cache=ModelCache(1))
    return e.value.message


def test_npz_layout_and_values_are_checked(tmp_path):
    v = np.ones((3, 4), np.float32)
    w = np.array(["a", "b", "c"])
    cases = {
        "shape.npz": (dict(vectors=np.ones(3, np.float32), words=w),
                      MSG_BAD_VECTORS, {"problem": "have shape (3,), not (words, dimensions)"}),
        "rows.npz": (dict(vectors=np.ones((2, 4), np.float32), words=w), MSG_WORDS_ROWS, {"n_words": 3, "n_rows": 2}),
        "ints.npz": (dict(vectors=np.ones((3, 4), np.int32), words=w),
                     MSG_BAD_VECTORS, {"problem": "are not floating-point numbers"}),
        "nan.npz": (dict(vectors=np.array([[1.0, np.nan]] * 3), words=w), MSG_BAD_VECTORS,
                    {"problem": "hold NaN or infinite values (or values too large for float32)"}),
        "huge.npz": (dict(vectors=np.full((3, 2), 1e300), words=w), MSG_BAD_VECTORS,
                     {"problem": "hold NaN or infinite values (or values too large for float32)"}),
        "dup.npz": (dict(vectors=v, words=np.array(["a", "b", "a"])), MSG_DUPLICATE_WORDS, {"count": 1, "number": 3}),
        "empty.npz": (dict(vectors=v, words=np.array(["a", " ", "c"])), MSG_EMPTY_WORD, {"number": 2}),
        "nowords.npz": (dict(vectors=v), MSG_NPZ_LAYOUT, {"problem": "the array 'words' is missing"}),
        "novectors.npz": (dict(words=w), MSG_NPZ_LAYOUT, {"problem": "the array 'vectors' is missing"}),
        "2dwords.npz": (dict(vectors=v, words=w.reshape(3, 1)), MSG_NPZ_LAYOUT,
                        {"problem": "'words' is not a 1-D array of text"}),
    }
    for name, (arrays, msg, fields) in cases.items():
        p = tmp_path / name
        np.savez(p, **arrays)
        assert _refused(p) == msg.format(name=p.name, **fields), name
    notzip = tmp_path / "notzip.npz"
    notzip.write_bytes(b"just some bytes")
    assert _refused(notzip) == MSG_FILE_UNREADABLE.format(name=notzip.name,
                                                          problem="it is not a valid .npz archive")


def test_npz_header_claiming_a_huge_array_is_refused_before_allocating(tmp_path):
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**9, 300)})
    words = io.BytesIO()
    np.save(words, np.array(["a", "b"]))
    p = tmp_path / "bomb.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("vectors.npy", header.getvalue() + b"\0" * 64)
        zf.writestr("words.npy", words.getvalue())
    assert _refused(p) == MSG_NPZ_LAYOUT.format(name=p.name, problem="the array 'vectors' is cut short")


def test_safetensors_layout_and_values_are_checked(tmp_path):
    from safetensors.numpy import save_file

    v = np.ones((3, 4), np.float32)
    words = "a\nb\nc"
    cases = {
        "nowords.safetensors": ({"vectors": v}, None, MSG_SAFETENSORS_LAYOUT,
                                {"problem": "the metadata has no 'words'"}),
        "novectors.safetensors": ({"other": v}, {"words": words}, MSG_SAFETENSORS_LAYOUT,
                                  {"problem": "the tensor 'vectors' is missing"}),
        "ints.safetensors": ({"vectors": np.ones((3, 4), np.int64)}, {"words": words}, MSG_BAD_VECTORS,
                             {"problem": "are not float16, float32 or float64 numbers"}),
        "3d.safetensors": ({"vectors": np.ones((3, 4, 1), np.float32)}, {"words": words}, MSG_BAD_VECTORS,
                           {"problem": "have shape (3, 4, 1), not (words, dimensions)"}),
        "rows.safetensors": ({"vectors": v}, {"words": "a\nb"}, MSG_WORDS_ROWS, {"n_words": 2, "n_rows": 3}),
        "dup.safetensors": ({"vectors": v}, {"words": "a\nb\nb"}, MSG_DUPLICATE_WORDS, {"count": 1, "number": 3}),
        "inf.safetensors": ({"vectors": np.full((3, 4), np.inf, np.float32)}, {"words": words}, MSG_BAD_VECTORS,
                            {"problem": "hold NaN or infinite values (or values too large for float32)"}),
    }
    for name, (tensors, meta, msg, fields) in cases.items():
        p = tmp_path / name
        save_file(tensors, str(p), metadata=meta)
        assert _refused(p) == msg.format(name=p.name, **fields), name
    ok = tmp_path / "trailing.safetensors"
    save_file({"vectors": v}, str(ok), metadata={"words": words + "\n"})  # a final newline is fine
    assert list(load_embeddings(f"file:{ok}", cache=ModelCache(1)).vocabulary()) == ["a", "b", "c"]
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\xff" * 8 + b"{not json")
    assert _refused(broken) == MSG_FILE_UNREADABLE.format(name=broken.name,
                                                          problem="it is not a valid .safetensors file")


# --------------------------------------------------------------------------- messages never quote the file
def test_a_server_secret_never_reaches_a_message(tmp_path, capsys):
    cases = {
        "environ": f"SECRET_TOKEN={SECRET}\0HOME=/root\0PATH=/usr/bin\0".encode(),  # /proc/self/environ: NULs
        "environ.txt": f"SECRET_TOKEN={SECRET}\nHOME=/root\n".encode(),
        "values.txt": f"2 3\nfoo {SECRET} 1 2\nbar 1 2 3\n".encode(),
        "glove.txt": f"foo 1 2 3\nbar {SECRET} 2 3\n".encode(),
        "short.txt": f"foo 1 2 3\nbar 1 2 {SECRET} 9\n".encode(),
        "header.bin": f"{SECRET} 300\nfoo".encode(),
        "count.txt": f"5 3\nfoo 1 2 3\n{SECRET}\n".encode(),
        "latin1.txt": "2 1\nfoo 1\nb\xe4r 2\n".encode("latin-1") + SECRET.encode(),
        "secret.npz": f"PK\x03\x04{SECRET}".encode(),
        "secret.safetensors": f"{SECRET}{SECRET}".encode(),
        "secret.bin.gz": f"\x1f\x8b{SECRET}".encode(),
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(EmbeddingError) as e:
            load_embeddings(f"file:{p}", cache=ModelCache(1))
        exc = e.value
        assert SECRET not in exc.message and SECRET not in str(exc), name
        assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__), name
        assert all(SECRET not in str(v) for v in exc.details.values()), name
        assert exc.message.startswith(f"The embedding file '{p.name}'"), name  # its name only, never its folder
        assert str(tmp_path) not in exc.message, name
        rc, out, err = _cli(capsys, "run", WEAT7, "--kind", "embeddings", "--model", str(p), "--out",
                            str(tmp_path / "x.json"))
        assert rc in (1, 2) and SECRET not in out + err, name


def test_unreadable_problems_are_fixed_phrases(tmp_path):
    def problem(name: str, data: bytes) -> str:
        p = tmp_path / name
        p.write_bytes(data)
        msg = _refused(p)
        head = MSG_FILE_UNREADABLE.split("{problem}")[0].format(name=p.name)
        assert msg.startswith(head), msg
        return msg[len(head):].split(")")[0]

    assert problem("a.txt", b"2 1\nfoo 1\nb\xe4r 2\n") == "it is not UTF-8 text"
    assert problem("b.txt", b"2 3\nfoo 1 2\nbar 1 2 3\n") == "a line has the wrong number of values"
    assert problem("c.txt", b"2 3\nfoo x 2 3\nbar 1 2 3\n") == "a value is not a number"
    assert problem("d.txt", b"2 3\nfoo 1 2 3\n") == "the file ends before all the vectors its header announces"
    assert problem("e", b"abc\0def\n") == "the first line is not a header giving the number of words and of dimensions"
    assert problem("f.txt", b"word\n") == "the first line is not a word followed by its numbers"
    assert problem("g.txt.gz", b"\x1f\x8b\x08\x00garbage") == "it is not a valid gzip file"


def test_absurd_header_is_refused_before_gensim_allocates(tmp_path):
    for name, data in (
        ("big.txt", b"1000000000 300\nfoo 1 2 3\n"),
        ("big.bin", b"1000000000 300\nfoo \x00\x00\x80\x3f"),
        ("big.vec", b"40 300\n" + b"foo " + b"1 " * 300 + b"\n"),
    ):
        p = tmp_path / name
        p.write_bytes(data)
        assert _refused(p) == MSG_HEADER_TOO_LARGE.format(name=p.name, size=len(data)), name
    gz = tmp_path / "big.txt.gz"
    gz.write_bytes(gzip.compress(b"1000000000 300\nfoo 1 2 3\n"))
    assert _refused(gz) == MSG_HEADER_TOO_LARGE.format(name=gz.name, size=gz.stat().st_size)


def test_cut_short_fasttext_binary_is_refused_not_looped_on(tmp_path):
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    sents = [["the", "nurse", "helped", "the", "patient"], ["the", "doctor", "saw", "the", "nurse"]] * 5
    model = FastText(sentences=sents, vector_size=4, min_count=1, epochs=1, workers=1, seed=SEED, bucket=100)
    full = tmp_path / "ft.bin"
    save_facebook_model(model, str(full))
    assert load_embeddings(f"file:{full}", cache=ModelCache(1)).format == "fasttext-bin"
    raw = full.read_bytes()
    for cut in (12, 70, 110, 140, 200, 400):
        p = tmp_path / f"cut{cut}.bin"
        p.write_bytes(raw[:cut])  # gensim alone reads a cut vocabulary byte by byte forever
        assert _refused(p) == MSG_FILE_UNREADABLE.format(
            name=p.name, problem="its fastText header or vocabulary is cut short or inconsistent"
        ), cut


def test_gzipped_text_and_binary_word2vec_load(tmp_path):
    from gensim.models import KeyedVectors

    vecs = np.random.default_rng(SEED).normal(size=(len(WORDS), 5)).astype(np.float32)
    kv = KeyedVectors(vector_size=5)
    kv.add_vectors(WORDS, vecs)
    for name, binary, fmt in (("v.txt", False, "word2vec-text"), ("v.bin", True, "word2vec-bin")):
        plain = tmp_path / name
        kv.save_word2vec_format(str(plain), binary=binary)
        gz = tmp_path / (name + ".gz")
        gz.write_bytes(gzip.compress(plain.read_bytes()))
        emb = load_embeddings(f"file:{gz}", cache=ModelCache(1))
        assert emb.format == fmt and np.allclose(emb.matrix(), vecs, atol=1e-6)


def test_an_uploaded_gzip_bomb_is_refused_before_parsing(tmp_path, monkeypatch):
    """A small .gz that unpacks beyond the upload limit is refused (the limit is lowered to keep the test fast)."""
    from biastest.models.embeddings import readers as E

    monkeypatch.setattr(E, "MAX_UPLOAD_UNPACKED_BYTES", 4 * 1024**2)
    bomb = tmp_path / "vectors.txt.gz"
    with gzip.open(bomb, "wb") as fh:
        for _ in range(5):
            fh.write(b"0" * (1 << 20))
    with pytest.raises(EmbeddingError) as e:
        E.check_upload_file(bomb)
    assert e.value.message == E.MSG_GZ_TOO_LARGE.format(name="vectors.txt.gz", limit_mb=4)
    small = tmp_path / "ok.txt.gz"
    with gzip.open(small, "wb") as fh:
        fh.write(b"he 0.1 0.2\nshe 0.2 0.1\n")
    assert E.check_upload_file(small) == small
