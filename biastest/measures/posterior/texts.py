"""The posterior's classifier learned from the user's labelled texts (CSV ``text,label``), as the paper did.

Liang & Acuna (2020) trained ``p(+ | s)`` on averaged word vectors of IMDB reviews with an MLP (AUC 0.95). Here a
user brings their own labelled texts (movie reviews, support tickets …):

1. :func:`read_labelled_texts` reads a CSV with a header naming ``text`` and ``label`` columns (case aside), or
   in-memory ``(text, label)`` rows — hostile input is bounded: at most :data:`MAX_BYTES` bytes, :data:`MAX_ROWS`
   rows and :data:`MAX_TEXT_CHARS` characters a text; UTF-8 only (a byte-order mark is allowed); exactly two label
   values, the positive one named by ``positive_label`` or recognised (``1``/``0``, ``positive``/``negative``,
   ``pos``/``neg``, ``true``/``false``, ``yes``/``no``, ``1``/``-1``). Rows with an empty text or label are
   dropped and counted.
2. :func:`average_vectors` turns each text into the mean of the vectors of its words that the embedding knows
   (lower-cased alphabetic words, apostrophes inside kept); a text with no known word is dropped and counted.
3. :func:`cross_validated_auc` — a seeded, stratified k-fold: for each fold the MLP
   (:func:`biastest.models.classifier.fit_binary_mlp`) is trained on the other folds and scores the held-out
   texts; reported are each fold's AUC, their mean and standard deviation, and the pooled out-of-fold AUC
   (Mann–Whitney). It is computed **before** the posterior is sampled.
4. :func:`learn_from_texts` does all three and trains the sampler's classifier on every usable text
   (:func:`~biastest.measures.posterior.score.train_classifier`, its own held-out split as with the lexicon).

A classifier that cannot be learned gets a message that says why: one class (:data:`MSG_ONE_CLASS`), more than two
(:data:`MSG_MORE_CLASSES`), too few rows (:data:`MSG_TOO_FEW_TEXTS`), texts whose words the embedding does not
know (:data:`MSG_UNKNOWN_WORDS`).

Examples
--------
>>> t = read_labelled_texts([("good film", "pos"), ("bad film", "neg")] * 10)
>>> t.positive_label, t.negative_label, int(t.labels.sum()), t.n_rows
('pos', 'neg', 10, 20)
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.measures.posterior.score import Classifier, auc_score, train_classifier
from biastest.models.classifier import fit_binary_mlp

__all__ = [
    "MAX_BYTES",
    "MAX_ROWS",
    "MAX_TEXT_CHARS",
    "MIN_PER_CLASS",
    "MSG_ENCODING",
    "MSG_MORE_CLASSES",
    "MSG_NO_COLUMNS",
    "MSG_NO_POSITIVE",
    "MSG_ONE_CLASS",
    "MSG_TOO_FEW_TEXTS",
    "MSG_TOO_LARGE",
    "MSG_TOO_MANY_ROWS",
    "MSG_UNKNOWN_WORDS",
    "MSG_UNREADABLE",
    "CrossValidation",
    "LabelledTexts",
    "average_vectors",
    "cross_validated_auc",
    "learn_from_texts",
    "read_labelled_texts",
    "tokens",
]

MAX_BYTES = 20_000_000
MAX_ROWS = 100_000
MAX_TEXT_CHARS = 20_000
#: Texts of each class a classifier needs (after unknown-word texts are dropped).
MIN_PER_CLASS = 10

MSG_UNREADABLE = "The labelled texts file '{path}' cannot be read ({problem})."
MSG_TOO_LARGE = "The labelled texts are {size:,} bytes; at most {limit:,} are allowed."
MSG_ENCODING = "The labelled texts are not UTF-8 text. Save the CSV as UTF-8 and try again."
MSG_NO_COLUMNS = (
    "The labelled texts need a header with a 'text' and a 'label' column (found: {found}). One row per text, e.g. "
    "text,label / \"A wonderful film.\",positive."
)
MSG_TOO_MANY_ROWS = "The labelled texts have more than {limit:,} rows; use at most {limit:,}."
MSG_ONE_CLASS = (
    "Every labelled text has the label '{label}': a classifier needs texts of two classes (e.g. positive and "
    "negative)."
)
MSG_MORE_CLASSES = "The labels must be two classes; found {count}: {labels}."
MSG_NO_POSITIVE = (
    "Which of the labels '{a}' and '{b}' is the positive class? Name it (training_positive_label)."
)
MSG_BAD_POSITIVE = "The positive label '{label}' is not one of the texts' labels: {labels}."
MSG_TOO_FEW_TEXTS = (
    "There are {n_pos} positive and {n_neg} negative texts; the classifier needs at least {minimum} of each."
)
MSG_UNKNOWN_WORDS = (
    "Only {n_pos} positive and {n_neg} negative texts have a word the embedding knows ({dropped} texts have none); "
    "the classifier needs at least {minimum} of each. Use texts in the embedding's language, or another embedding."
)

#: Label pairs whose positive side is known: (positive, negative), compared case aside.
_KNOWN = (("1", "0"), ("positive", "negative"), ("pos", "neg"), ("true", "false"), ("yes", "no"), ("1", "-1"),
          ("+", "-"))
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


@dataclass(frozen=True)
class LabelledTexts:
    """Texts with 0/1 labels (1 = positive) and what reading them dropped."""

    texts: tuple[str, ...]
    labels: np.ndarray
    positive_label: str
    negative_label: str
    n_rows: int
    n_dropped_empty: int = 0

    def describe(self) -> dict[str, Any]:
        return {"n_rows": self.n_rows, "n_texts": len(self.texts), "n_positive": int(self.labels.sum()),
                "n_negative": int(len(self.labels) - self.labels.sum()), "positive_label": self.positive_label,
                "negative_label": self.negative_label, "n_dropped_empty": self.n_dropped_empty}


@dataclass(frozen=True)
class CrossValidation:
    """A seeded, stratified k-fold estimate of the classifier's AUC (see the module docstring)."""

    folds: int
    seed: int
    fold_auc: tuple[float, ...]
    mean_auc: float
    sd_auc: float
    pooled_auc: float
    n_texts: int
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"folds": self.folds, "seed": self.seed, "fold_auc": list(self.fold_auc), "mean_auc": self.mean_auc,
                "sd_auc": self.sd_auc, "pooled_auc": self.pooled_auc, "n_texts": self.n_texts, **self.extra}


def _rows_from_csv(source: str | Path | bytes) -> list[tuple[str, str]]:
    if isinstance(source, bytes):
        raw = source
    else:
        path = Path(source).expanduser()
        try:
            if path.stat().st_size > MAX_BYTES:
                raise DataError(MSG_TOO_LARGE.format(size=path.stat().st_size, limit=MAX_BYTES))
            raw = path.read_bytes()
        except OSError as exc:
            raise DataError(MSG_UNREADABLE.format(path=str(source)[:200], problem=type(exc).__name__)) from None
    if len(raw) > MAX_BYTES:
        raise DataError(MSG_TOO_LARGE.format(size=len(raw), limit=MAX_BYTES))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(MSG_ENCODING) from None
    if "\x00" in text:
        raise DataError(MSG_ENCODING)
    csv.field_size_limit(MAX_TEXT_CHARS * 4)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip().lower() for h in next(reader, [])]
        if "text" not in header or "label" not in header:
            raise DataError(MSG_NO_COLUMNS.format(found=", ".join(repr(h[:30]) for h in header[:10]) or "none"))
        ti, li = header.index("text"), header.index("label")
        rows = []
        for row in reader:
            if len(rows) >= MAX_ROWS:
                raise DataError(MSG_TOO_MANY_ROWS.format(limit=MAX_ROWS))
            rows.append((row[ti] if ti < len(row) else "", row[li] if li < len(row) else ""))
    except csv.Error:
        raise DataError(MSG_UNREADABLE.format(path="(the CSV)", problem="not a CSV table")) from None
    return rows


def _positive(values: list[str], wanted: str | None) -> str:
    a, b = values
    if wanted is not None:
        for v in values:
            if v == wanted or v.casefold() == str(wanted).strip().casefold():
                return v
        raise DataError(MSG_BAD_POSITIVE.format(label=wanted, labels=", ".join(values)))
    for pos, neg in _KNOWN:
        if {a.casefold(), b.casefold()} == {pos, neg}:
            return a if a.casefold() == pos else b
    raise DataError(MSG_NO_POSITIVE.format(a=a, b=b))


def read_labelled_texts(source: str | Path | bytes | Sequence[Sequence[Any]], *,
                        positive_label: str | None = None) -> LabelledTexts:
    """Read labelled texts from a CSV path or bytes, or from ``(text, label)`` rows (see the module docstring).

    Raises
    ------
    DataError
        Too large, not UTF-8, no ``text``/``label`` columns, too many rows, one class or more than two, an unknown
        positive label.
    """
    if isinstance(source, str | Path | bytes):
        rows = _rows_from_csv(source)
    else:
        rows = []
        for r in source:
            if len(rows) >= MAX_ROWS:
                raise DataError(MSG_TOO_MANY_ROWS.format(limit=MAX_ROWS))
            r = tuple(r)
            rows.append((str(r[0]) if len(r) > 0 else "", str(r[1]) if len(r) > 1 else ""))
    kept = [(t.strip()[:MAX_TEXT_CHARS], lab.strip()) for t, lab in rows if t.strip() and lab.strip()]
    values = list(dict.fromkeys(lab for _, lab in kept))
    if len(values) == 1:
        raise DataError(MSG_ONE_CLASS.format(label=values[0][:50]))
    if len(values) > 2:
        raise DataError(MSG_MORE_CLASSES.format(count=len(values), labels=", ".join(v[:30] for v in values[:10])))
    if not values:
        raise DataError(MSG_TOO_FEW_TEXTS.format(n_pos=0, n_neg=0, minimum=MIN_PER_CLASS))
    pos = _positive(values, positive_label)
    neg = values[1] if values[0] == pos else values[0]
    y = np.asarray([1 if lab == pos else 0 for _, lab in kept], dtype=np.int64)
    return LabelledTexts(texts=tuple(t for t, _ in kept), labels=y, positive_label=pos, negative_label=neg,
                         n_rows=len(rows), n_dropped_empty=len(rows) - len(kept))


def tokens(text: str) -> list[str]:
    """Lower-cased words (letters, apostrophes inside kept).

    >>> tokens("It's a GREAT film, 10/10!")
    ["it's", 'a', 'great', 'film']
    """
    return _WORD.findall(text.lower())


def average_vectors(texts: Sequence[str], vectors: Mapping[str, np.ndarray], *,
                    dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, kept)``: the mean vector of each text's known words, and which texts had one (a boolean mask)."""
    x = np.zeros((len(texts), dim), dtype=np.float32)
    kept = np.zeros(len(texts), dtype=bool)
    for i, t in enumerate(texts):
        found = [vectors[w] for w in tokens(t) if w in vectors]
        if found:
            x[i] = np.mean(np.asarray(found, dtype=np.float64), axis=0)
            kept[i] = True
    return x, kept


def cross_validated_auc(x: np.ndarray, y: np.ndarray, *, folds: int, seed: int, hidden: int,
                        epochs: int) -> CrossValidation:
    """The stratified k-fold AUC of the MLP (see the module docstring); folds seeded by ``seed``."""
    y = np.asarray(y, dtype=np.int64)
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(y), dtype=np.int64)
    for cls in (0, 1):
        idx = rng.permutation(np.flatnonzero(y == cls))
        fold_of[idx] = np.arange(idx.size) % folds
    scores = np.empty(len(y), dtype=np.float64)
    aucs = []
    for k in range(folds):
        test = fold_of == k
        layers = fit_binary_mlp(x[~test], y[~test].astype(np.float32), seed=seed + k, hidden=hidden, epochs=epochs)
        scores[test] = Classifier(layers=layers).logit(x[test])
        aucs.append(round(auc_score(y[test], scores[test]), 4))
    return CrossValidation(folds=folds, seed=seed, fold_auc=tuple(aucs), mean_auc=round(float(np.mean(aucs)), 4),
                           sd_auc=round(float(np.std(aucs, ddof=1)), 4) if folds > 1 else 0.0,
                           pooled_auc=round(auc_score(y, scores), 4), n_texts=len(y))


def learn_from_texts(texts: LabelledTexts, vectors: Mapping[str, np.ndarray], *, dim: int, seed: int, hidden: int,
                     epochs: int, folds: int) -> tuple[Classifier, CrossValidation]:
    """The sampler's classifier and its cross-validated AUC from labelled texts (see the module docstring).

    Raises
    ------
    DataError
        :data:`MSG_TOO_FEW_TEXTS` or :data:`MSG_UNKNOWN_WORDS`.
    """
    y_all = texts.labels
    n_pos, n_neg = int(y_all.sum()), int(len(y_all) - y_all.sum())
    minimum = max(MIN_PER_CLASS, folds)
    if n_pos < minimum or n_neg < minimum:
        raise DataError(MSG_TOO_FEW_TEXTS.format(n_pos=n_pos, n_neg=n_neg, minimum=minimum))
    x, kept = average_vectors(texts.texts, vectors, dim=dim)
    y = y_all[kept]
    k_pos, k_neg = int(y.sum()), int(len(y) - y.sum())
    if k_pos < minimum or k_neg < minimum:
        raise DataError(MSG_UNKNOWN_WORDS.format(n_pos=k_pos, n_neg=k_neg, dropped=int((~kept).sum()),
                                                 minimum=minimum))
    x = x[kept]
    cv = cross_validated_auc(x, y, folds=folds, seed=seed, hidden=hidden, epochs=epochs)
    cv.extra.update({"n_dropped_unknown_words": int((~kept).sum()), **texts.describe()})
    clf = train_classifier(x, y, seed=seed, hidden=hidden, epochs=epochs)
    return clf, cv
