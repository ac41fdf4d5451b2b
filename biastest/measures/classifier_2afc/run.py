"""A classifier 2AFC, end to end: the counterfactual pairs of a bias specification's two groups, scored by a text
classifier (in process or behind an endpoint), summarised with cluster-aware intervals and tests."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import DataError, ModelKindError, SpecError
from biastest.measures.base import did_you_mean
from biastest.measures.classifier_2afc.options import Classifier2AFCOptions
from biastest.measures.classifier_2afc.result import Classifier2AFCResult, PairRecord
from biastest.measures.classifier_2afc.score import build_items, term_pairs, verdicts
from biastest.measures.classifier_2afc.summary import summarize_pairs
from biastest.measures.classifier_2afc.templates import emotion_words, parse_templates, shipped_templates
from biastest.models import factory
from biastest.models.protocols import ProgressCallback, TextClassifier
from biastest.provenance import provenance
from biastest.spec import BiasSpec

__all__ = [
    "MAX_SENTENCES",
    "MSG_BAD_SCORES",
    "MSG_BAD_SPEC",
    "MSG_NO_POSITIVE_LABEL",
    "MSG_TOO_MANY_SENTENCES",
    "MSG_UNKNOWN_LABEL",
    "Classifier2AFCItems",
    "resolve_positive_label",
    "run",
]

#: The most distinct sentences one run classifies.
MAX_SENTENCES = 200_000
MSG_BAD_SPEC = "The classifier 2AFC needs a bias specification with two groups, got {type_name}."
MSG_UNKNOWN_LABEL = "The classifier has no label '{label}'.{hint} Its labels: {labels}."
MSG_NO_POSITIVE_LABEL = (
    "The classifier's labels ({labels}) have none called positive or pos: name the label whose probability is the "
    "score ({flag})."
)
MSG_TOO_MANY_SENTENCES = (
    "The run would classify {count:,} sentences; at most {limit:,} are allowed. Use fewer templates, words or terms "
    "(--pairing positional)."
)
MSG_BAD_SCORES = "The classifier returned scores of shape {shape} for {n} texts and {k} labels."
MSG_PROGRESS = "Classifying {n:,} sentences ({pairs:,} pairs) with {model}…"
_AUTO_POSITIVE = ("positive", "pos")


@dataclass(frozen=True)
class Classifier2AFCItems:
    """What a classifier 2AFC tests: a bias specification (its first two groups; attributes when ``words`` asks)."""

    spec: BiasSpec


def resolve_positive_label(labels: Sequence[str], wanted: str | None, *, flag: str = "--positive-label") -> str:
    """The label to score: ``wanted`` (exact, else case aside), or the one called positive/pos (``flag``: the option
    that names it, in the message).

    Raises
    ------
    ModelKindError
        :data:`MSG_UNKNOWN_LABEL` (with "did you mean") or :data:`MSG_NO_POSITIVE_LABEL`.
    """
    labels = [str(x) for x in labels]
    shown = ", ".join(labels[:20])
    if wanted is None:
        found = [x for x in labels if x.strip().casefold() in _AUTO_POSITIVE]
        if len(found) != 1:
            raise ModelKindError(MSG_NO_POSITIVE_LABEL.format(labels=shown, flag=flag))
        return found[0]
    if wanted in labels:
        return wanted
    folded = [x for x in labels if x.casefold() == wanted.casefold()]
    if len(folded) == 1:
        return folded[0]
    raise ModelKindError(MSG_UNKNOWN_LABEL.format(label=wanted, hint=did_you_mean(wanted, labels), labels=shown))


def _words(options: Classifier2AFCOptions, spec: BiasSpec) -> list[tuple[str, str]]:
    if options.words == "attributes":
        return [(name, term) for name, terms in spec.attributes[:2] for term in terms]
    return list(emotion_words())


def run(options: Classifier2AFCOptions, items: Classifier2AFCItems, *, progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None, model: TextClassifier | None = None,
        api_key: str | None = None) -> Classifier2AFCResult:
    """Score every counterfactual pair with the classifier and summarise.

    Parameters
    ----------
    options : Classifier2AFCOptions
    items : Classifier2AFCItems
    progress : callable, optional
    cancel : threading.Event, optional
        Stops an endpoint run early (the texts not scored are left out and counted).
    model : TextClassifier, optional
        An already built classifier (tests, an app's loaded model); None builds it from the options.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).

    Raises
    ------
    SpecError
        Not a bias specification.
    DataError
        No term pairs, or too many sentences.
    ModelKindError
        The positive label is not one of the classifier's (checked before any sentence is scored).
    """
    spec = items.spec
    if not isinstance(spec, BiasSpec):
        raise SpecError(MSG_BAD_SPEC.format(type_name=type(spec).__name__))
    templates = parse_templates(options.templates_text) if options.templates_text is not None \
        else shipped_templates()
    pairs = term_pairs(spec.social_groups[0][1], spec.social_groups[1][1], pairing=options.pairing)
    plan = build_items(templates, _words(options, spec), pairs)
    sentences = list(dict.fromkeys(s for it in plan for s in (it.sentence_1, it.sentence_2)))
    if len(sentences) > MAX_SENTENCES:
        raise DataError(MSG_TOO_MANY_SENTENCES.format(count=len(sentences), limit=MAX_SENTENCES))
    if model is None:
        model = factory.text_classifier(options.model_ref(), api_key=api_key, batch_size=options.batch_size,
                                        seed=options.seed, cancel=cancel)
    labels = list(model.labels)
    positive = resolve_positive_label(labels, options.positive_label)
    column = labels.index(positive)
    if progress is not None:
        progress(0, len(sentences), MSG_PROGRESS.format(n=len(sentences), pairs=len(plan), model=options.model_id))
    scores = np.asarray(model.label_scores(sentences, progress=progress), dtype=np.float64)
    if scores.shape != (len(sentences), len(labels)):
        raise DataError(MSG_BAD_SCORES.format(shape=scores.shape, n=len(sentences), k=len(labels)))
    by_text = {s: (None if not np.isfinite(v) else float(v)) for s, v in zip(sentences, scores[:, column],
                                                                             strict=True)}
    records = []
    for it in plan:
        a, b = by_text[it.sentence_1], by_text[it.sentence_2]
        d = None if a is None or b is None else a - b
        v = None if d is None else int(verdicts([d], margin=options.tie_margin)[0])
        records.append(PairRecord(index=it.index, template=it.template, word=it.word, emotion=it.emotion,
                                  term_1=it.term_1, term_2=it.term_2, sentence_1=it.sentence_1,
                                  sentence_2=it.sentence_2, score_1=a, score_2=b, diff=d, verdict=v))
    figures = summarize_pairs(records, clusters=options.clusters, seed=options.seed,
                              n_resamples=options.n_resamples, n_permutations=options.n_permutations,
                              confidence=options.confidence)
    stop = getattr(model, "stop_message", None)
    learned: dict[str, Any] = {"model": model.describe(), "n_sentences": len(sentences),
                               "templates": list(templates), "term_pairs": [list(p) for p in pairs]}
    prov = provenance(options=options.dump(), seed=options.seed, spec=spec.name, positive_label=positive,
                      **options.model_ref().served_at(), **learned)
    return Classifier2AFCResult(
        model_id=options.model_id, labels=labels, positive_label=positive,
        groups=[spec.social_groups[0][0], spec.social_groups[1][0]], clusters=options.clusters,
        n_permutations=options.n_permutations, pairs=tuple(records), n_pairs=len(records), stop_message=stop,
        spec=spec.to_dict(), provenance=prov, **figures)
