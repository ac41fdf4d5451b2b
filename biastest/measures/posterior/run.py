"""Running the posterior sampler: train the sentiment classifier on the embedding, then sample p(s | +), p(s | −).

The app calls :func:`run` only. It resolves the embedding source through
:func:`biastest.models.factory.word_vectors`, refuses word groups the embedding barely knows
before the (slower) training, trains the classifier on the VADER lexicon and hands it to
:func:`~biastest.measures.posterior.summary.run_embedding_posterior`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import EmbeddingError, SpecError
from biastest.measures.bayes.run import MSG_TWO_LISTS, Progress, fraction_progress, word_vectors
from biastest.measures.posterior.options import PosteriorOptions
from biastest.measures.posterior.result import PosteriorResult
from biastest.measures.posterior.score import (
    MSG_GROUP_TOO_SMALL,
    lexicon_training_data,
    load_default_groups,
    load_vader_lexicon,
    train_classifier,
)
from biastest.measures.posterior.summary import run_embedding_posterior
from biastest.measures.posterior.texts import LabelledTexts, learn_from_texts, read_labelled_texts, tokens
from biastest.models import factory

__all__ = ["MSG_CV_AUC", "PosteriorItems", "labelled_texts", "run"]

#: What the progress says once the classifier learned from texts is cross-validated, before the sampling.
MSG_CV_AUC = (
    "Classifier learned from {n:,} labelled texts: cross-validated AUC {auc:.3f} ({folds} folds, mean {mean:.3f} ± "
    "{sd:.3f}); sampling the posteriors"
)


@dataclass(frozen=True)
class PosteriorItems:
    """The two word groups compared by their distance to each posterior.

    ``groups=None``: the shipped default, female vs male first names of WEAT 6.
    """

    groups: Mapping[str, Sequence[str]] | None = None


def run(options: PosteriorOptions | Mapping[str, Any], items: PosteriorItems | None = None, *,
        progress: Progress | None = None, cancel: Any = None) -> PosteriorResult:
    """Train the sentiment classifier on the embedding, then sample p(s | +) and p(s | −).

    Parameters
    ----------
    options : PosteriorOptions or mapping
        The settings; a mapping is checked as given (a ``None`` is refused).
    items : PosteriorItems, optional
        The two word groups (default: female vs male first names of WEAT 6).
    progress : callable(done, total, message), optional
    cancel : optional
        Not used: the compiled sampler run cannot be interrupted; kept for the measures' shape.

    Returns
    -------
    PosteriorResult
    """
    opts = options if isinstance(options, PosteriorOptions) else PosteriorOptions.given(options)
    tick = fraction_progress(progress)
    if tick:
        tick(0.0, "Training the sentiment classifier on the embedding")
    given = (items or PosteriorItems()).groups
    groups = load_default_groups() if given is None else {str(k): list(v) for k, v in given.items()}
    if len(groups) != 2:
        raise SpecError(
            MSG_TWO_LISTS.format(kind="word groups", count=len(groups), names=", ".join(groups) or "none",
                                 kind_one="group"),
            count=len(groups),
        )
    emb = factory.word_vectors(opts.source)
    group_vectors = word_vectors(emb, [w for ws in groups.values() for w in ws])
    for name, ws in groups.items():  # refuse before the (slower) training
        count = sum(1 for w in ws if w in group_vectors)
        if count < 2:
            raise EmbeddingError(MSG_GROUP_TOO_SMALL.format(name=name, count=count), group=name)
    texts = labelled_texts(opts)
    if texts is None:
        lexicon = load_vader_lexicon()
        candidates = [w for w in lexicon if w.isalpha()]
        x, y, _ = lexicon_training_data(vectors=word_vectors(emb, candidates), lexicon=lexicon)
        clf = train_classifier(x, y, seed=opts.seed, hidden=opts.hidden, epochs=opts.epochs)
        training: dict[str, Any] = {"training_data": "VADER lexicon (vaderSentiment)"}
    else:
        known = word_vectors(emb, sorted({w for t in texts.texts for w in tokens(t)}))
        dim = len(next(iter(known.values()))) if known else int(emb.matrix().shape[1])
        clf, cv = learn_from_texts(texts, known, dim=dim, seed=opts.seed, hidden=opts.hidden, epochs=opts.epochs,
                                   folds=opts.cv_folds)
        training = {"training_data": "labelled texts (averaged word vectors)", "cross_validation": cv.to_dict()}
        if tick:
            tick(0.08, MSG_CV_AUC.format(n=cv.n_texts, auc=cv.pooled_auc, folds=cv.folds, mean=cv.mean_auc,
                                         sd=cv.sd_auc))
    words = emb.vocabulary()
    matrix = emb.matrix()
    keep = [i for i in range(min(len(words), opts.vocab_size * 2)) if str(words[i]).isalpha()][:opts.vocab_size]
    vocab_words = [str(words[i]) for i in keep]
    vocab_matrix = np.asarray(matrix[np.asarray(keep, dtype=np.int64)], dtype=np.float32)
    inner = None
    if tick:
        def inner(fraction: float, message: str) -> None:
            tick(0.1 + 0.9 * fraction, message)
    return run_embedding_posterior(
        clf, groups, group_vectors, opts, vocab_matrix=vocab_matrix, vocab_words=vocab_words, progress=inner,
        provenance_fields={"model_id": emb.name, "embedding": emb.describe(), "groups": groups,
                           "classifier": clf.to_dict(), **training},
        cross_validation=training.get("cross_validation"),
    )


def labelled_texts(options: PosteriorOptions) -> LabelledTexts | None:
    """The labelled texts the options name (a CSV file or rows), read and checked; None for the lexicon default."""
    if options.training_texts is not None:
        return read_labelled_texts(options.training_texts, positive_label=options.training_positive_label)
    if options.training_rows is not None:
        return read_labelled_texts(options.training_rows, positive_label=options.training_positive_label)
    return None
