"""A classifier's 2AFC on occupations, end to end: one call for the command line, the audit and the apps.

:func:`run` builds every comparison of a 2AFC specification (targets × cue pairs × templates, :mod:`.summary`),
scores each distinct sentence once with the text classifier (in process or behind an endpoint), reads the chosen
label's probability, summarises per target and overall, and validates the targets' P(female cue) against a labour
table (:mod:`biastest.measures.labour`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import DataError, SpecError
from biastest.measures.classifier_2afc.run import MAX_SENTENCES, MSG_BAD_SCORES, MSG_TOO_MANY_SENTENCES
from biastest.measures.classifier_2afc.run import resolve_positive_label as resolve_label
from biastest.measures.classifier_twoafc.options import TwoAFCClassifierOptions
from biastest.measures.classifier_twoafc.result import Comparison, TwoAFCClassifierResult
from biastest.measures.classifier_twoafc.summary import outcome_of, plan_pairs, summarize, target_record
from biastest.measures.classifier_twoafc.templates import parse_occupation_templates, shipped_templates
from biastest.measures.labour import labour_validation
from biastest.models import factory
from biastest.models.protocols import ProgressCallback, TextClassifier
from biastest.provenance import provenance
from biastest.spec import TwoAFCSpec

__all__ = ["MSG_BAD_SPEC", "MSG_NO_SPEC", "TwoAFCClassifierItems", "run"]

MSG_BAD_SPEC = ("The classifier's 2AFC on occupations needs a 2AFC specification (targets and cue pairs), got "
                "{type_name}.")
MSG_NO_SPEC = "The classifier's 2AFC on occupations needs a specification of targets and cue pairs; none was given."
MSG_PROGRESS = "Classifying {n:,} sentences ({pairs:,} comparisons) with {model}…"
UNIT = "untied comparisons"


@dataclass(frozen=True)
class TwoAFCClassifierItems:
    """What the classifier is asked about: a 2AFC specification's targets and cue pairs.

    Attributes
    ----------
    spec : TwoAFCSpec
    table : sequence of mapping, optional
        Rows with ``occupation`` and ``pct_female`` to validate against (default: the options' ``labour_table``).
    """

    spec: TwoAFCSpec
    table: Sequence[Mapping[str, Any]] | None = None


def _scores(model: TextClassifier, sentences: list[str], column: int, n_labels: int,
            progress: ProgressCallback | None) -> dict[str, float | None]:
    scores = np.asarray(model.label_scores(sentences, progress=progress), dtype=np.float64)
    if scores.shape != (len(sentences), n_labels):
        raise DataError(MSG_BAD_SCORES.format(shape=scores.shape, n=len(sentences), k=n_labels))
    return {s: (float(v) if np.isfinite(v) else None) for s, v in zip(sentences, scores[:, column], strict=True)}


def run(options: TwoAFCClassifierOptions, items: TwoAFCClassifierItems, *, progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None, model: TextClassifier | None = None,
        api_key: str | None = None) -> TwoAFCClassifierResult:
    """Score both sentences of every comparison with the classifier; P(cue 1 | target), overall, validation.

    Parameters
    ----------
    options : TwoAFCClassifierOptions
    items : TwoAFCClassifierItems
    progress : callable, optional
    cancel : threading.Event, optional
        Stops an endpoint run early (the sentences not scored leave their comparisons ``unscored``, counted).
    model : TextClassifier, optional
        An already built classifier (tests, an app's loaded model); None builds it from the options.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).

    Raises
    ------
    SpecError
        No specification, or not a 2AFC one.
    DataError
        Too many sentences, or scores of the wrong shape.
    ModelKindError
        The label is not one of the classifier's (checked before any sentence is scored).
    """
    spec = items.spec
    if spec is None:
        raise SpecError(MSG_NO_SPEC)
    if not isinstance(spec, TwoAFCSpec):
        raise SpecError(MSG_BAD_SPEC.format(type_name=type(spec).__name__))
    targets, cue_pairs = list(spec.targets), [tuple(p) for p in spec.cue_pairs]
    templates = (parse_occupation_templates(options.templates_text) if options.templates_text is not None
                 else shipped_templates())
    plan = plan_pairs(targets, cue_pairs, templates)
    sentences = list(dict.fromkeys(s for p in plan for s in (p.sentence_1, p.sentence_2)))
    if len(sentences) > MAX_SENTENCES:
        raise DataError(MSG_TOO_MANY_SENTENCES.format(count=len(sentences), limit=MAX_SENTENCES))
    if model is None:
        model = factory.text_classifier(options.model_ref(), api_key=api_key, batch_size=options.batch_size,
                                        seed=options.seed, cancel=cancel)
    labels = list(model.labels)
    label = resolve_label(labels, options.label, flag="--label")
    if progress is not None:
        progress(0, len(sentences), MSG_PROGRESS.format(n=len(sentences), pairs=len(plan), model=options.model_id))
    by_text = _scores(model, sentences, labels.index(label), len(labels), progress)
    per_target: list[list[Comparison]] = [[] for _ in targets]
    for p in plan:
        a, b = by_text[p.sentence_1], by_text[p.sentence_2]
        d, outcome = outcome_of(a, b, options.tie_margin)
        per_target[p.target].append(Comparison(pair=p.pair, template=p.template, role=p.role,
                                               sentence_1=p.sentence_1, sentence_2=p.sentence_2, score_1=a,
                                               score_2=b, diff=d, outcome=outcome))
    kw = {"seed": options.seed, "n_resamples": options.n_resamples, "confidence": options.confidence}
    records = [target_record(i, t, per_target[i], cue_pairs, clusters=options.clusters, **kw)
               for i, t in enumerate(targets)]
    figures = summarize(records, cue_pairs, **kw)
    labour = labour_validation(records, female_cue=options.female_cue, unit=UNIT,
                               table=items.table if items.table is not None else options.labour_table, **kw)
    used = templates if isinstance(templates, tuple) else {r: list(v) for r, v in templates.items()}
    prov = provenance(options=options.dump(), seed=options.seed, spec=spec.name, label=label,
                      templates=used, n_sentences=len(sentences), model=model.describe(),
                      **options.model_ref().served_at())
    return TwoAFCClassifierResult(
        model_id=options.model_id, labels=labels, label=label, cue1_name=spec.cue1_name, cue2_name=spec.cue2_name,
        cue_pairs=tuple(cue_pairs), clusters=options.clusters, tie_margin=options.tie_margin, seed=options.seed,
        targets=tuple(records), labour=labour, n_targets=len(records), n_comparisons=len(plan),
        n_sentences=len(sentences), stop_message=getattr(model, "stop_message", None), spec=spec.to_dict(),
        provenance=prov, **figures)
