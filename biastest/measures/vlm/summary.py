"""The statistics of a vision-language test: from per-image probabilities and verdicts to a :class:`VLMResult`.

:func:`summarize_vlm` turns what the model said about each image into the soft and hard scores with their
seeded bootstrap intervals and exact tests (:mod:`biastest.stats.proportion`), the per-image-term and
per-target-term summaries, the cluster-aware parts (:mod:`biastest.measures.vlm.clusters`) and the
provenance. The formulas are in :mod:`biastest.measures.vlm.score`.

Examples
--------
>>> import numpy as np
>>> from biastest.spec import BiasSpec
>>> from biastest.records import TestImage
>>> spec = BiasSpec.from_terms(group1="man", group2="woman", stereotype1="doctor", antistereotype1="nurse")
>>> imgs = [TestImage(path=f"images/{i}.png", sha256=str(i), image_term=t) for i, t in enumerate(["man", "woman"])]
>>> probs = np.array([[0.8, 0.2], [0.4, 0.6]])  # P(doctor), P(nurse) per image
>>> r = summarize_vlm(images=imgs, spec=spec, term_probabilities=probs, answers=["doctor", "nurse"],
...                   verdicts=["T1", "T2"], method="clip-zero-shot", model_id="tiny", seed=0, n_resamples=200)
>>> round(r.soft.score, 6)  # (0.8 + 0.6) / 2 = 70%
70.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.measures.vlm.clusters import cluster_parts
from biastest.measures.vlm.options import DEFAULT_CLUSTERS, check_clusters
from biastest.measures.vlm.result import ImageScore, VLMResult, VLMTermSummary
from biastest.measures.vlm.score import image_groups, image_outcome, q_vs_other, target_sides
from biastest.models.vlm_question import VERDICT_NEITHER, VERDICT_TIE, VERDICTS
from biastest.provenance import provenance as make_provenance
from biastest.records import TestImage
from biastest.spec import BiasSpec
from biastest.stats.proportion import ProportionSummary, summarize_probabilities, summarize_verdicts

__all__ = ["MSG_BAD_PROBABILITIES", "MSG_BAD_VERDICT", "MSG_NO_IMAGES", "MSG_SHAPE", "summarize_vlm"]

MSG_NO_IMAGES = "There are no images to test. Add images for the terms of both groups first."
MSG_SHAPE = "Internal check failed: {what} has shape {shape}, expected {expected}."
MSG_BAD_PROBABILITIES = (
    "The model produced probabilities that are not finite numbers for image '{path}'. "
    "Try float32 precision, or another model."
)
MSG_BAD_VERDICT = "Unknown verdict {value!r}; each verdict must be one of: {choices}."


def summarize_vlm(
    *,
    images: Sequence[TestImage],
    spec: BiasSpec,
    term_probabilities: np.ndarray,
    answers: Sequence[str],
    verdicts: Sequence[str],
    method: str,
    model_id: str,
    seed: int,
    p_t1: np.ndarray | None = None,
    term_vs_other: np.ndarray | None = None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    model_revision: str | None = None,
    model_kind: str = "",
    architecture: str = "",
    combine: str | None = None,
    prompt_templates: Sequence[str] = (),
    question: str | None = None,
    prompts: Sequence[str] = (),
    batch_size: int = 0,
    extra_provenance: dict[str, Any] | None = None,
    soft_available: Sequence[bool] | None = None,
    image_notes: Sequence[str] | None = None,
    not_scored: Sequence[dict[str, Any]] = (),
    notes: Sequence[str] = (),
    clusters: str = DEFAULT_CLUSTERS,
) -> VLMResult:
    """Turn per-image target-term probabilities and verdicts into a :class:`VLMResult`.

    Formula: ``score_soft = 100 · (Σ_{i∈g1} P(T1|i) + Σ_{i∈g2} P(T2|i)) / #images``
    and ``score_hard = 100 · #{i : verdict(i) is its group's stereotype} / #images``
    (Kocielnik et al. 2023, BiasTestVQA); intervals and tests from
    :mod:`biastest.stats.proportion`.

    Parameters
    ----------
    images : sequence of TestImage
    spec : BiasSpec
    term_probabilities : ndarray (n_images, n_terms)
        Columns in ``spec.attribute_terms`` order.
    answers, verdicts : sequences of str
        Per image; verdicts in ``T1, T2, neither, tie``.
    method, model_id : str
    seed : int
        Bootstrap seed (recorded).
    p_t1 : ndarray, optional
        ``P(T1 | i)``; default: the sum of the T1 columns.
    term_vs_other : ndarray, optional
        ``q_t``; default: computed from ``term_probabilities``.
    n_resamples, confidence :
        Bootstrap settings.
    model_revision, model_kind, architecture, combine, prompt_templates, question, prompts, batch_size :
        Recorded in the result.
    extra_provenance : dict, optional
        More provenance fields (e.g. device, dtype).
    soft_available : sequence of bool, optional
        Per image: does it have a probability? (default: every image). The
        rows of the others in ``term_probabilities``, ``p_t1`` and
        ``term_vs_other`` are ignored (NaN is fine there); the soft scores are
        over the images that have one, and are None when none has.
    image_notes : sequence of str, optional
        Per image: why it has no probability (:attr:`ImageScore.note`).
    not_scored, notes :
        Recorded in the result (:attr:`VLMResult.not_scored`, :attr:`VLMResult.notes`).
    clusters : {"auto", "image-prompt", "image-term", "image"}
        How images group into independent clusters for the cluster-aware intervals and tests
        (:func:`resolve_clusters`); recorded resolved. The magnitude, the per-term Holm and Benjamini–Hochberg
        adjustments: see the module docstring.

    Returns
    -------
    VLMResult

    Raises
    ------
    OptionError
        An unknown ``clusters``.
    """
    clusters = check_clusters(clusters)
    spec.check_testable()
    images = list(images)
    n = len(images)
    if n == 0:
        raise DataError(MSG_NO_IMAGES)
    terms = spec.attribute_terms
    sides = target_sides(spec)
    probs = np.asarray(term_probabilities, dtype=np.float64)
    if probs.shape != (n, len(terms)):
        raise DataError(MSG_SHAPE.format(what="term_probabilities", shape=probs.shape, expected=(n, len(terms))))
    has_soft = np.ones(n, dtype=bool) if soft_available is None else np.asarray(soft_available, dtype=bool)
    if has_soft.shape != (n,):
        raise DataError(MSG_SHAPE.format(what="soft_available", shape=has_soft.shape, expected=(n,)))
    probs = np.where(has_soft[:, None], probs, 0.0)
    p1 = probs[:, sides == 1].sum(axis=1) if p_t1 is None else np.asarray(p_t1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # rows without a probability are all zero
        vs = q_vs_other(probs, sides) if term_vs_other is None else np.asarray(term_vs_other, dtype=np.float64)
    for i in np.flatnonzero(has_soft):
        if not (np.isfinite(p1[i]) and np.all(np.isfinite(probs[i])) and np.all(np.isfinite(vs[i]))):
            raise DataError(MSG_BAD_PROBABILITIES.format(path=images[i].path), path=images[i].path)
    p1 = np.clip(np.where(has_soft, p1, 0.5), 0.0, 1.0)  # 0.5 never leaves this function: see has_soft
    if len(answers) != n or len(verdicts) != n:
        raise DataError(MSG_SHAPE.format(what="answers/verdicts", shape=(len(answers), len(verdicts)), expected=(n, n)))
    for v in verdicts:
        if v not in VERDICTS:
            raise DataError(MSG_BAD_VERDICT.format(value=v, choices=", ".join(VERDICTS)))
    groups = np.array(image_groups(images, spec))
    p_st = np.where(groups == 1, p1, 1.0 - p1)
    outcomes = [image_outcome(v, int(g)) for v, g in zip(verdicts, groups, strict=True)]
    stats = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}

    def soft_of(idx: Sequence[int] | np.ndarray, values: np.ndarray = p_st) -> ProportionSummary | None:
        kept = [int(i) for i in idx if has_soft[int(i)]]
        return summarize_probabilities(values[kept], **stats) if kept else None

    soft = soft_of(range(n))
    hard = summarize_verdicts(outcomes, **stats)

    per_image_term = []
    by_term: dict[str, list[int]] = {}
    for i, img in enumerate(images):
        by_term.setdefault(" ".join(img.image_term.split()), []).append(i)
    order = [t for t in spec.group_terms if t in by_term] + [t for t in by_term if t not in spec.group_terms]
    for term in order:
        idx = by_term[term]
        per_image_term.append(
            VLMTermSummary(
                term=term,
                side=int(groups[idx[0]]),
                n_images=len(idx),
                soft=soft_of(idx),
                hard=summarize_verdicts([outcomes[i] for i in idx], **stats),
            )
        )
    per_target_term = []
    for j, term in enumerate(terms if soft is not None else ()):
        q = np.clip(np.where(has_soft, vs[:, j], 0.5), 0.0, 1.0)
        stereo = np.where(groups == sides[j], q, 1.0 - q)
        per_target_term.append(
            VLMTermSummary(term=term, side=int(sides[j]), n_images=int(has_soft.sum()),
                           soft=soft_of(range(n), stereo), hard=None)
        )
    notes_per_image = list(image_notes) if image_notes is not None else [""] * n
    rows = []
    for i, img in enumerate(images):
        rows.append(
            ImageScore(
                index=i,
                image_id=img.id,
                path=img.path,
                sha256=img.sha256,
                image_term=img.image_term,
                image_group=int(groups[i]),
                p_t1=float(p1[i]) if has_soft[i] else None,
                p_t2=float(1.0 - p1[i]) if has_soft[i] else None,
                p_stereotyped=float(p_st[i]) if has_soft[i] else None,
                term_probabilities={t: float(probs[i, j]) for j, t in enumerate(terms)} if has_soft[i] else {},
                answer=str(answers[i]),
                verdict=verdicts[i],
                outcome=outcomes[i],
                generator=img.generator,
                image_prompt=img.prompt,
                source=img.source,
                note="" if has_soft[i] else str(notes_per_image[i]),
                term_vs_other={t: float(vs[i, j]) for j, t in enumerate(terms)} if has_soft[i] else {},
            )
        )
    parts = cluster_parts(rows, clusters, has_soft=has_soft, p_st=p_st, outcomes=outcomes, groups=groups,
                           sides=sides, vs=vs, terms=terms, **stats)
    prov = make_provenance(
        model_id=model_id,
        model_revision=model_revision,
        model_kind=model_kind,
        architecture=architecture,
        method=method,
        combine=combine,
        prompt_templates=list(prompt_templates),
        question=question,
        prompts=list(prompts),
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        spec=spec.name,
        spec_fingerprint=spec.fingerprint(),
        n_images=n,
        clusters=parts.resolved,
        clusters_requested=clusters,
        **(extra_provenance or {}),
    )
    return VLMResult(
        model_id=model_id,
        model_revision=model_revision,
        model_kind=model_kind,
        architecture=architecture,
        method=method,
        combine=combine,
        prompt_templates=tuple(prompt_templates),
        question=question,
        prompts=tuple(prompts),
        seed=seed,
        soft=soft,
        hard=hard,
        per_image_term=parts.apply(per_image_term, parts.image_terms),
        per_target_term=parts.apply(per_target_term, parts.target_terms),
        images=tuple(rows),
        n_images=n,
        n_neither=sum(v == VERDICT_NEITHER for v in verdicts),
        n_ties=sum(v == VERDICT_TIE for v in verdicts),
        batch_size=batch_size,
        spec=spec.to_dict(),
        provenance=prov,
        not_scored=tuple(dict(x) for x in not_scored),
        notes=tuple(notes),
        clusters=parts.resolved,
        soft_clustered=parts.soft,
        hard_clustered=parts.hard,
        magnitude=parts.magnitude,
        magnitude_median=parts.median,
        n_log_odds_capped=parts.n_capped,
    )

