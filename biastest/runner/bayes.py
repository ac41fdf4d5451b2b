"""Orchestration of the Bayesian cosine model and the embedding-posterior sampler.

The app and the command line call :func:`run_bayes` and :func:`run_posterior`
only. Each resolves the embedding source through
:func:`biastest.models.embeddings.load_embeddings` (loaded once per process),
refuses word lists that are mostly missing, runs the metric and records
provenance. Progress reaches the caller as ``progress(done, total, message)``
(the convention of :mod:`biastest.measures.twoafc.run`); nothing here knows
about Gradio.

JAX and parallel chains: the first sampling call in a process gives JAX one
CPU device per chain when JAX is not yet initialised (see
:func:`biastest.metrics.bayes.configure_parallel_chains`); otherwise chains run
one after the other with the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from biastest.errors import EmbeddingError, MethodError, SpecError
from biastest.metrics.bayes import (
    BAYES_MODELS,
    DEFAULT_CHAINS,
    DEFAULT_DRAWS,
    DEFAULT_TIME_LIMIT,
    DEFAULT_TUNE,
    HDI_PROB,
    MAX_ATTEMPTS,
    MSG_UNKNOWN_MODEL,
    BayesResult,
    build_distance_data,
    fit_bayes,
)
from biastest.metrics.posterior import (
    MSG_GROUP_TOO_SMALL,
    PosteriorResult,
    lexicon_training_data,
    load_default_groups,
    load_vader_lexicon,
    run_embedding_posterior,
    train_classifier,
)
from biastest.models.embeddings import WordEmbeddings, check_coverage, load_embeddings
from biastest.options import validate_options

__all__ = ["MSG_TWO_LISTS", "available_models", "run_bayes", "run_posterior", "word_vectors"]

Progress = Callable[[int, int, str], None]

MSG_TWO_LISTS = (
    "The Bayesian estimate needs exactly two {kind} (got {count}: {names}). "
    "Choose two, in order: the first {kind_one} goes with the first attribute list."
)


def available_models() -> list[dict[str, Any]]:
    """The Bayesian models with their printable priors (for the app's model picker)."""
    return [m.to_dict() for m in BAYES_MODELS.values()]


def word_vectors(embeddings: WordEmbeddings, terms: Sequence[str]) -> dict[str, np.ndarray]:
    """Term → vector for the terms the embedding knows (missing terms are simply absent)."""
    terms = list(dict.fromkeys(terms))
    vecs, missing = embeddings.vectors(terms)
    gone = set(missing)
    found = [t for t in terms if t not in gone]
    return {t: vecs[i] for i, t in enumerate(found)}


def _two(mapping: Mapping[str, Sequence[str]], kind: str, kind_one: str) -> list[tuple[str, list[str]]]:
    items = [(str(k), list(v)) for k, v in mapping.items()]
    if len(items) != 2:
        raise SpecError(
            MSG_TWO_LISTS.format(kind=kind, count=len(items), names=", ".join(k for k, _ in items) or "none",
                                 kind_one=kind_one),
            count=len(items),
        )
    return items


def _fraction_progress(progress: Progress | None) -> Callable[[float, str], None] | None:
    if progress is None:
        return None
    return lambda fraction, message: progress(round(fraction * 100), 100, message)


def run_bayes(
    *,
    spec_groups: Mapping[str, Sequence[str]],
    spec_attributes: Mapping[str, Sequence[str]],
    source: str | WordEmbeddings = "glove-6b-50d",
    model: str = "hierarchical",
    seed: int,
    draws: int = DEFAULT_DRAWS,
    tune: int = DEFAULT_TUNE,
    chains: int = DEFAULT_CHAINS,
    hdi_prob: float = HDI_PROB,
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_attempts: int = MAX_ATTEMPTS,
    human: Sequence[str] | None = None,
    none: Sequence[str] | None = None,
    spec_name: str | None = None,
    progress: Progress | None = None,
) -> BayesResult:
    """Bayesian estimate with control groups for a bias specification.

    Parameters
    ----------
    spec_groups : mapping name -> terms
        Exactly two social groups (protected words), in order.
    spec_attributes : mapping name -> terms
        Exactly two attribute lists, in order: the first is the stereotype of
        the first group, the second of the second group.
    source : str or WordEmbeddings
        Embedding source (default the embedded GloVe 6B 50d).
    model : {"hierarchical", "additive"}
    seed, draws, tune, chains : int
        Sampler settings of the first attempt (draws and tuning steps per chain).
    hdi_prob : float
        Mass of the highest posterior density intervals (option ``hdi_prob``).
    time_limit : float
        Seconds within which further sampler attempts must be expected to end
        (option ``time_limit``; see :func:`~biastest.metrics.bayes.fit_bayes`).
    max_attempts : int
        Most sampler attempts (1 = no retry).
    human, none : sequence of str, optional
        Custom control lists (default: the shipped ones).
    spec_name : str, optional
        Recorded in provenance.
    progress : callable(done, total, message), optional

    Returns
    -------
    BayesResult
    """
    validate_options({"seed": seed, "draws": draws, "tune": tune, "chains": chains, "hdi_prob": hdi_prob,
                      "time_limit": time_limit})
    if model not in BAYES_MODELS:  # before the embedding loads
        raise MethodError(MSG_UNKNOWN_MODEL.format(name=model, choices=", ".join(BAYES_MODELS)), name=model)
    groups = _two(spec_groups, "social groups", "group")
    attrs = _two(spec_attributes, "attribute lists", "group")
    tick = _fraction_progress(progress)
    if tick:
        tick(0.0, "Looking up the words")
    emb = load_embeddings(source)
    for name, terms in groups + attrs:
        check_coverage(emb.lookup_report(terms), role=name)
    from biastest.metrics.bayes import load_controls

    shipped = load_controls()
    human_l = list(shipped.human if human is None else human)
    none_l = list(shipped.none if none is None else none)
    all_terms = [t for _, ts in groups + attrs for t in ts] + human_l + none_l
    vectors = word_vectors(emb, all_terms)
    data = build_distance_data(
        group1=groups[0][1], group2=groups[1][1], attributes1=attrs[0][1], attributes2=attrs[1][1],
        vectors=vectors, human=human_l, none=none_l,
        group_names=(groups[0][0], groups[1][0]), attribute_names=(attrs[0][0], attrs[1][0]),
        control_source=shipped.source if human is None and none is None else "user-supplied control lists",
    )
    spec = {"name": spec_name, "social_groups": dict(groups), "attributes": dict(attrs)}
    return fit_bayes(
        data, model=model, seed=seed, draws=draws, tune=tune, chains=chains, hdi_prob=hdi_prob,
        time_limit=time_limit, max_attempts=max_attempts, progress=tick,
        provenance_fields={"model_id": emb.name, "embedding": emb.describe(), "spec": spec},
    )


def run_posterior(
    *,
    source: str | WordEmbeddings = "glove-6b-50d",
    seed: int,
    draws: int = 2000,
    tune: int = 1000,
    chains: int = 2,
    groups: Mapping[str, Sequence[str]] | None = None,
    hidden: int = 8,
    epochs: int = 200,
    vocab_size: int = 50000,
    k_words: int = 10,
    progress: Progress | None = None,
) -> PosteriorResult:
    """Train the sentiment classifier on the embedding, then sample p(s | +) and p(s | −).

    Parameters
    ----------
    source : str or WordEmbeddings
        Embedding source with a vocabulary (word-vector sources; default GloVe 6B 50d).
    seed : int
        Seeds the classifier (split and initialisation), the sampler and the tests.
    draws, tune, chains : int
        Sampler settings per chain.
    groups : mapping name -> words, optional
        Two word groups compared by distance to each posterior (default:
        female vs male first names of WEAT 6).
    hidden, epochs : int
        Classifier settings (``hidden=0``: logistic regression).
    vocab_size : int
        The nearest/farthest word tables search the first ``vocab_size``
        alphabetic words of the vocabulary (GloVe is ordered by frequency).
    k_words : int
        Words per table.
    progress : callable(done, total, message), optional

    Returns
    -------
    PosteriorResult
    """
    validate_options({"seed": seed, "draws": draws, "tune": tune, "chains": chains})
    tick = _fraction_progress(progress)
    if tick:
        tick(0.0, "Training the sentiment classifier on the embedding")
    groups = load_default_groups() if groups is None else {str(k): list(v) for k, v in groups.items()}
    if len(groups) != 2:
        raise SpecError(
            MSG_TWO_LISTS.format(kind="word groups", count=len(groups), names=", ".join(groups) or "none",
                                 kind_one="group"),
            count=len(groups),
        )
    emb = load_embeddings(source)
    group_vectors = word_vectors(emb, [w for ws in groups.values() for w in ws])
    for name, ws in groups.items():  # refuse before the (slower) training
        count = sum(1 for w in ws if w in group_vectors)
        if count < 2:
            raise EmbeddingError(MSG_GROUP_TOO_SMALL.format(name=name, count=count), group=name)
    lexicon = load_vader_lexicon()
    candidates = [w for w in lexicon if w.isalpha()]
    x, y, _ = lexicon_training_data(vectors=word_vectors(emb, candidates), lexicon=lexicon)
    clf = train_classifier(x, y, seed=seed, hidden=hidden, epochs=epochs)
    words = emb.vocabulary()
    matrix = emb.matrix()
    keep = [i for i in range(min(len(words), vocab_size * 2)) if str(words[i]).isalpha()][:vocab_size]
    vocab_words = [str(words[i]) for i in keep]
    vocab_matrix = np.asarray(matrix[np.asarray(keep, dtype=np.int64)], dtype=np.float32)
    inner = None
    if tick:
        def inner(fraction: float, message: str) -> None:
            tick(0.1 + 0.9 * fraction, message)
    return run_embedding_posterior(
        classifier=clf, vocab_matrix=vocab_matrix, vocab_words=vocab_words, groups=groups, vectors=group_vectors,
        seed=seed, draws=draws, tune=tune, chains=chains, k_words=k_words, progress=inner,
        provenance_fields={"model_id": emb.name, "embedding": emb.describe(), "groups": groups,
                           "classifier": clf.to_dict(), "training_data": "VADER lexicon (vaderSentiment)"},
    )
