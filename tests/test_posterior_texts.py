"""The posterior's classifier learned from the user's labelled texts: reading the CSV (hostile input bounded),
averaged word vectors, the seeded stratified k-fold AUC (reported before sampling, recorded in the result), and
clear messages when no classifier can be learned."""

from __future__ import annotations

import numpy as np
import pytest

from biastest.errors import DataError, OptionError
from biastest.measures.posterior import score as P
from biastest.measures.posterior import texts as T
from biastest.measures.posterior.options import MSG_BAD_FOLDS, MSG_TWO_TRAINING_SOURCES, PosteriorOptions
from biastest.measures.posterior.run import MSG_CV_AUC
from biastest.models.classifier import fit_binary_mlp
from tests.bayes_helpers import glove_vectors

SEED = 7
GOOD = ["wonderful", "excellent", "great", "delightful", "superb", "brilliant", "charming", "beautiful", "moving",
        "enjoyable", "fantastic", "lovely"]
BAD = ["awful", "terrible", "boring", "dreadful", "horrible", "dull", "painful", "stupid", "ugly", "tedious",
       "disappointing", "poor"]
FRAMES = ["The film was {a} and {b}.", "What a {a} movie, truly {b}.", "I found the acting {a} and the plot {b}.",
          "A {a} story with {b} music."]


def reviews(n: int, *, seed: int = SEED) -> list[tuple[str, str]]:
    """``n`` short reviews: positive ones built from positive words, negative ones from negative words."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        words = GOOD if i % 2 == 0 else BAD
        a, b = rng.choice(words, 2, replace=False)
        rows.append((FRAMES[i % len(FRAMES)].format(a=a, b=b), "positive" if i % 2 == 0 else "negative"))
    return rows


def _vectors(texts: T.LabelledTexts) -> dict[str, np.ndarray]:
    return glove_vectors({w for t in texts.texts for w in T.tokens(t)})


def test_a_learnable_classifier_gets_a_high_cross_validated_auc_and_shuffled_labels_do_not() -> None:
    texts = T.read_labelled_texts(reviews(120))
    clf, cv = T.learn_from_texts(texts, _vectors(texts), dim=50, seed=SEED, hidden=8, epochs=100, folds=5)
    print("cross-validated AUC", cv.pooled_auc, "folds", cv.fold_auc, "held-out", clf.test_auc)
    assert cv.folds == 5 and len(cv.fold_auc) == 5 and cv.n_texts == 120 and cv.pooled_auc > 0.9
    assert cv.extra["n_positive"] == 60 and cv.extra["positive_label"] == "positive"
    rng = np.random.default_rng(1)
    shuffled = T.LabelledTexts(texts=texts.texts, labels=rng.permutation(texts.labels), positive_label="positive",
                               negative_label="negative", n_rows=120)
    _, null = T.learn_from_texts(shuffled, _vectors(texts), dim=50, seed=SEED, hidden=8, epochs=100, folds=5)
    print("cross-validated AUC with shuffled labels", null.pooled_auc)
    assert 0.3 < null.pooled_auc < 0.7


def test_the_fold_auc_equals_a_naive_refit() -> None:
    texts = T.read_labelled_texts(reviews(60))
    x, kept = T.average_vectors(texts.texts, _vectors(texts), dim=50)
    assert kept.all()
    # the mean of the known words' vectors, by hand for the first text
    words = [w for w in T.tokens(texts.texts[0]) if w in _vectors(texts)]
    np.testing.assert_allclose(x[0], np.mean([_vectors(texts)[w] for w in words], axis=0), rtol=1e-6)
    cv = T.cross_validated_auc(x, texts.labels, folds=3, seed=2, hidden=4, epochs=30)
    rng = np.random.default_rng(2)
    fold_of = np.empty(60, dtype=int)
    for cls in (0, 1):
        idx = rng.permutation(np.flatnonzero(texts.labels == cls))
        fold_of[idx] = np.arange(idx.size) % 3
    for k in range(3):
        test = fold_of == k
        assert int(texts.labels[test].sum()) == 10  # stratified
        layers = fit_binary_mlp(x[~test], texts.labels[~test].astype(np.float32), seed=2 + k, hidden=4, epochs=30)
        logit = P.Classifier(layers=layers).logit(x[test])
        assert cv.fold_auc[k] == pytest.approx(round(P.auc_score(texts.labels[test], logit), 4), abs=1e-12)


def test_classifiers_that_cannot_be_learned_get_clear_messages(tmp_path) -> None:
    with pytest.raises(DataError) as e:
        T.read_labelled_texts([("a good film", "positive")] * 30)
    assert e.value.message == T.MSG_ONE_CLASS.format(label="positive")
    with pytest.raises(DataError, match="must be two classes; found 3"):
        T.read_labelled_texts([("x", "a"), ("y", "b"), ("z", "c")])
    texts = T.read_labelled_texts(reviews(12))
    with pytest.raises(DataError) as e:
        T.learn_from_texts(texts, _vectors(texts), dim=50, seed=0, hidden=4, epochs=5, folds=5)
    assert e.value.message == T.MSG_TOO_FEW_TEXTS.format(n_pos=6, n_neg=6, minimum=T.MIN_PER_CLASS)
    gibberish = T.read_labelled_texts([(f"zzqxv{i} qqzzk", "1" if i % 2 else "0") for i in range(40)])
    assert gibberish.positive_label == "1"
    with pytest.raises(DataError) as e:
        T.learn_from_texts(gibberish, glove_vectors(["zzqxv1"]), dim=50, seed=0, hidden=4, epochs=5, folds=5)
    assert e.value.message == T.MSG_UNKNOWN_WORDS.format(n_pos=0, n_neg=0, dropped=40, minimum=T.MIN_PER_CLASS)
    with pytest.raises(DataError) as e:
        T.read_labelled_texts([("x", "cat"), ("y", "dog")])
    assert e.value.message == T.MSG_NO_POSITIVE.format(a="cat", b="dog")
    assert T.read_labelled_texts([("x", "cat"), ("y", "dog")], positive_label="DOG").positive_label == "dog"


def test_the_csv_reader_bounds_hostile_input(tmp_path, monkeypatch) -> None:
    good = tmp_path / "r.csv"
    good.write_text("Label,Text\npositive,\"A film, truly great\"\nnegative,dull\n,empty label\n", encoding="utf-8")
    t = T.read_labelled_texts(good)
    assert t.texts == ("A film, truly great", "dull") and t.n_dropped_empty == 1 and t.n_rows == 3
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufefftext,label\nnice,1\nbad,0\n".encode())
    assert T.read_labelled_texts(bom).labels.tolist() == [1, 0]
    latin = tmp_path / "latin.csv"
    latin.write_bytes("text,label\ncaf\xe9,1\nbad,0\n".encode("latin-1"))
    with pytest.raises(DataError) as e:
        T.read_labelled_texts(latin)
    assert e.value.message == T.MSG_ENCODING
    with pytest.raises(DataError, match="need a header with a 'text' and a 'label' column"):
        T.read_labelled_texts(b"review,stars\nnice,5\n")
    with pytest.raises(DataError, match="cannot be read"):
        T.read_labelled_texts(tmp_path / "missing.csv")
    monkeypatch.setattr(T, "MAX_ROWS", 3)
    with pytest.raises(DataError) as e:
        T.read_labelled_texts(b"text,label\n" + b"a,1\nb,0\n" * 5)
    assert e.value.message == T.MSG_TOO_MANY_ROWS.format(limit=3)
    monkeypatch.setattr(T, "MAX_BYTES", 10)
    with pytest.raises(DataError, match="at most 10 are allowed"):
        T.read_labelled_texts(good)


def test_the_options_take_texts_once_and_check_the_folds() -> None:
    o = PosteriorOptions.parse(training_rows=(("a", "1"), ("b", "0")))
    assert o.training_rows == (("a", "1"), ("b", "0")) and o.cv_folds == 5 and o.training_texts is None
    with pytest.raises(OptionError) as e:
        PosteriorOptions.parse(training_rows=(("a", "1"),), training_texts="x.csv")
    assert e.value.message == MSG_TWO_TRAINING_SOURCES
    with pytest.raises(OptionError) as e:
        PosteriorOptions.parse(cv_folds=1)
    assert e.value.message == MSG_BAD_FOLDS.format(value=1)


def test_the_posterior_reports_the_cross_validated_auc_before_sampling(tmp_path) -> None:
    from biastest.measures.posterior import run

    path = tmp_path / "reviews.csv"
    path.write_text("text,label\n" + "".join(f"\"{t}\",{lab}\n" for t, lab in reviews(80)), encoding="utf-8")
    messages = []
    res = run({"seed": SEED, "draws": 100, "tune": 100, "chains": 1, "vocab_size": 2000, "k_words": 3,
               "epochs": 60, "training_texts": str(path)}, progress=lambda d, t, m: messages.append(m))
    cv = res.classifier["cross_validation"]
    assert cv["n_texts"] == 80 and cv["folds"] == 5 and cv["pooled_auc"] > 0.9
    first = next(i for i, m in enumerate(messages) if m.startswith("Classifier learned from 80 labelled texts"))
    sampling = next(i for i, m in enumerate(messages) if m.startswith("Sampling the two posteriors"))
    assert first < sampling
    assert messages[first] == MSG_CV_AUC.format(n=80, auc=cv["pooled_auc"], folds=5, mean=cv["mean_auc"],
                                                sd=cv["sd_auc"])
    assert res.provenance["training_data"].startswith("labelled texts") and res.reading[0].startswith(
        "The classifier was learned from 80 labelled texts")
