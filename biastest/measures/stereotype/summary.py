"""The statistics of a stereotype-score test: from per-pair scores to a :class:`StereotypeResult`.

Results: :func:`summarize_stereotype` (and
:func:`biastest.measures.stereotype.run.run`) build a frozen
:class:`StereotypeResult` with the overall score (micro: over pairs) and
macro averages (mean of per-term scores), per attribute term, per group term
and per category, each with a seeded bootstrap interval and an exact binomial
test against 50% (:mod:`biastest.stats.proportion`).

Uncertainty that respects how the pairs were made (:mod:`biastest.stats.clusters`).
Pairs come in families that lean together, so the result also carries a
**cluster-aware** summary: the clusters are chosen by ``clusters``
(:data:`CLUSTERINGS`): ``"template"`` (pairs with the same template, e.g. one
generated sentence swapped to several group terms), ``"attribute-term"``,
``"pair"`` (independent pairs), or ``"auto"`` (the default,
:func:`resolve_clusters`: template when every scored pair has one, else
attribute term when every scored pair has one, else pair). A pair without the
chosen key is its own cluster. For the score the cluster-aware summary gives
the same estimate (percent stereotyped), a cluster bootstrap interval (none
below :data:`~biastest.stats.clusters.MIN_CLUSTERS_FOR_INTERVAL` clusters,
with the reason), the design effect, and an exact sign test on cluster means
of the pair signs (+1 stereotyped, −1 anti-stereotyped, 0 tie): a cluster
counts as stereotyped when more of its pairs lean to the stereotype than
away. When the clusters are not single pairs this summary is the **headline**
(``StereotypeResult.cluster_aware``); the pair-level bootstrap, exact
Clopper–Pearson interval and sign test stay beside it.

**Magnitude** (as lm-evaluation-harness reports the likelihood difference
beside the share): the mean and the median of the per-pair difference
``Δ = score_stereotyped − score_anti`` (natural-log units of the method's
score), with cluster bootstrap intervals and a sign test of cluster-mean Δ
against 0, overall and per term.

**Many comparisons**: the per-term p-values (the cluster sign test within the
term) carry Holm-adjusted p-values and Benjamini–Hochberg q-values
(:mod:`biastest.stats.multiple`), each family (attribute terms, group terms,
categories) adjusted on its own. Within one attribute term, pairs are
clustered by template when the overall clustering is by template, and
treated as independent otherwise (clustering by attribute term makes each
term a single cluster: the term is then the unit being described, not a
sample of it).

The clusterings are in :mod:`biastest.measures.stereotype.clusters`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.measures.stereotype.clusters import (
    CLUSTER_LABELS,
    DEFAULT_CLUSTERS,
    check_clusters,
    cluster_keys,
    resolve_clusters,
)
from biastest.measures.stereotype.result import PairScore, StereotypeResult, TermSummary
from biastest.measures.stereotype.score import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_TIE_TOLERANCE,
    MSG_NO_PAIRS,
    REASONS,
    get_method,
)
from biastest.models.lm import LanguageModel
from biastest.provenance import provenance
from biastest.stats.clusters import ClusterSummary, summarize_cluster_means, summarize_clusters
from biastest.stats.multiple import benjamini_hochberg, holm
from biastest.stats.proportion import ANTI, STEREOTYPED, summarize_verdicts

__all__ = ["MSG_NOTHING_SCORED", "summarize_stereotype", "with_clusters"]

MSG_NOTHING_SCORED = (
    "None of the {n} sentence pairs could be scored ({reasons}). Fix the pairs listed in the table and try again."
)

#: Provenance fields :func:`summarize_stereotype` writes itself (the rest is the caller's ``extra_provenance``).
_SUMMARY_PROVENANCE = frozenset({
    "model_id", "model_revision", "model_kind", "model", "method", "method_reference", "seed", "spec",
    "n_resamples", "confidence", "tie_tolerance", "batch_size", "clusters", "clusters_requested", "created_at",
    "versions",
})


def _signs(scored: Sequence[PairScore]) -> np.ndarray:
    return np.fromiter(
        (1.0 if p.verdict == STEREOTYPED else -1.0 if p.verdict == ANTI else 0.0 for p in scored),
        dtype=np.float64, count=len(scored),
    )


def _differences(scored: Sequence[PairScore]) -> np.ndarray:
    return np.fromiter((float(p.difference) for p in scored), dtype=np.float64, count=len(scored))  # type: ignore[arg-type]


#: What the strata of a stereotype-score summary are: the spec's attribute terms, fixed conditions (issue 28).
STRATA_BY = "attribute term"


def _strata_kw(scored: Sequence[PairScore]) -> dict[str, Any]:
    """The strata keywords of a summary over ``scored``: each pair's attribute term (case-folded)."""
    return {"strata": [" ".join(p.attribute_term.split()).casefold() for p in scored], "strata_by": STRATA_BY}


def _cluster_parts(
    scored: Sequence[PairScore], keys: Sequence[str], cluster_by: str, *, stratified: bool = True, **kw: Any
) -> tuple[ClusterSummary, ClusterSummary]:
    """Cluster-aware share (percent; sign test of the pair signs) and mean Δ (sign test of Δ) of some pairs.

    Both from the same cluster draws (:func:`biastest.stats.clusters.summarize_cluster_means`), the clusters
    resampled within attribute terms (strata) unless ``stratified`` is False (one attribute term's pairs).
    """
    signs = _signs(scored)
    strata = _strata_kw(scored) if stratified else {}
    share, mean = summarize_cluster_means([(signs > 0).astype(np.float64), _differences(scored)], keys,
                                          cluster_by=cluster_by, test_values=[signs, None], nulls=[0.0, 0.0],
                                          **strata, **kw)
    return share.scaled(100.0), mean


def _per_key(
    scored: Sequence[PairScore],
    keys: Sequence[str],
    clusters: Sequence[str],
    cluster_by: str,
    *,
    seed: int,
    n_resamples: int,
    confidence: float,
    stratified: bool = True,
) -> tuple[TermSummary, ...]:
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    terms = []
    for k, ix in sorted(groups.items(), key=lambda kv: kv[0].casefold()):
        pairs = [scored[i] for i in ix]
        share, mean = _cluster_parts(pairs, [clusters[i] for i in ix], cluster_by, stratified=stratified, **kw)
        terms.append(TermSummary(
            term=k,
            summary=summarize_verdicts([p.verdict for p in pairs], **kw),  # type: ignore[misc]
            clustered=share,
            magnitude=mean,
            median_difference=float(np.median(_differences(pairs))),
        ))
    ps = [t.p_value for t in terms]
    return tuple(t.model_copy(update={"p_holm": h, "q_bh": q})
                 for t, h, q in zip(terms, holm(ps), benjamini_hochberg(ps), strict=True))


def _scored(scores: list[PairScore]) -> tuple[list[PairScore], Counter]:
    """The scored pairs and the count of each exclusion reason; :data:`MSG_NOTHING_SCORED` when none was scored."""
    if not scores:
        raise DataError(MSG_NO_PAIRS)
    scored = [p for p in scores if p.scored]
    reasons = Counter(p.excluded_code for p in scores if not p.scored)
    if not scored:
        text = "; ".join(f"{n} × {REASONS[c].split('.')[0].format_map(_Blank())}" for c, n in reasons.most_common())
        raise DataError(MSG_NOTHING_SCORED.format(n=len(scores), reasons=text), reasons=dict(reasons))
    return scored, reasons


def summarize_stereotype(
    scores: Sequence[PairScore],
    *,
    model: LanguageModel | dict[str, Any],
    method: str,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    spec: dict[str, Any] | None = None,
    extra_provenance: dict[str, Any] | None = None,
    clusters: str = DEFAULT_CLUSTERS,
) -> StereotypeResult:
    """Build the :class:`StereotypeResult` from per-pair scores.

    Micro score (``overall``): percent stereotyped over all scored pairs, ties
    in the denominator (:data:`biastest.stats.proportion.SCORE_VERDICTS`),
    bootstrap CI over pairs and exact sign test. Macro scores: mean of the
    per-term scores with a bootstrap stratified by term. Cluster-aware
    summaries (``overall_clustered``, the magnitude, per term): cluster
    bootstrap, design effect and sign test on cluster means
    (:func:`biastest.stats.clusters.summarize_clusters`) with the clusters
    ``clusters`` names; per-term Holm and Benjamini–Hochberg adjustments
    (see the module docstring).

    Parameters
    ----------
    scores : sequence of PairScore
        From :func:`score_pairs`.
    model : LanguageModel or dict
        The adapter, or a dict with ``model_id``, ``model_revision``,
        ``model_kind`` (for provenance).
    method : str
    seed : int
        Seed of every bootstrap (recorded).
    n_resamples, confidence :
        Bootstrap settings.
    tie_tolerance, batch_size :
        Recorded as used by :func:`score_pairs`.
    spec : dict, optional
        ``BiasSpec.to_dict()`` of the specification tested.
    extra_provenance : dict, optional
        More provenance fields (e.g. pair sources).
    clusters : {"auto", "template", "attribute-term", "pair"}
        How pairs group into independent clusters (:func:`resolve_clusters`); recorded resolved.

    Raises
    ------
    DataError
        :data:`MSG_NOTHING_SCORED` when every pair was excluded.
    OptionError
        An unknown ``clusters``.
    """
    clusters = check_clusters(clusters)
    info = model.describe() if isinstance(model, LanguageModel) else dict(model)
    scores = list(scores)
    scored, reasons = _scored(scores)
    verdicts = [p.verdict for p in scored]
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    attr_keys = [p.attribute_term.strip() for p in scored]
    group_keys = [p.group_term_stereotyped.strip() for p in scored]
    cat_keys = [p.category.strip() for p in scored]
    overall = summarize_verdicts(verdicts, **kw)
    macro_attr = summarize_verdicts(verdicts, strata=attr_keys, average="macro", **kw)
    macro_group = summarize_verdicts(verdicts, strata=group_keys, average="macro", **kw)
    resolved = resolve_clusters(scored, clusters)
    cluster_by = CLUSTER_LABELS[resolved]
    keys = cluster_keys(scored, resolved)
    share, mean = _cluster_parts(scored, keys, cluster_by, **kw)
    median = summarize_clusters(_differences(scored), keys, cluster_by=cluster_by, null=0.0, statistic="median",
                                **_strata_kw(scored), **kw)
    # within one attribute term: templates, or (when the term itself is the cluster) independent pairs
    within_attr = keys if resolved == "template" else cluster_keys(scored, "pair")
    within_attr_by = cluster_by if resolved == "template" else CLUSTER_LABELS["pair"]
    prov = provenance(
        model_id=info.get("model_id"),
        model_revision=info.get("model_revision"),
        model_kind=info.get("model_kind"),
        model=info,
        method=method,
        method_reference=get_method(method).reference,
        seed=seed,
        spec=spec.get("name") if spec else None,
        n_resamples=n_resamples,
        confidence=confidence,
        tie_tolerance=tie_tolerance,
        batch_size=batch_size,
        clusters=resolved,
        clusters_requested=clusters,
        **(extra_provenance or {}),
    )
    return StereotypeResult(
        model_id=str(info.get("model_id")),
        model_revision=info.get("model_revision"),
        model_kind=str(info.get("model_kind")),
        method=method,
        seed=seed,
        overall=overall,
        macro_attribute=macro_attr,
        macro_group=macro_group,
        per_attribute=_per_key(scored, attr_keys, within_attr, within_attr_by, stratified=False, **kw),
        per_group=_per_key(scored, group_keys, keys, cluster_by, **kw),
        per_category=_per_key(scored, cat_keys, keys, cluster_by, **kw),
        pairs=tuple(scores),
        n_pairs=len(scores),
        n_scored=len(scored),
        n_excluded=len(scores) - len(scored),
        excluded_reasons=dict(reasons),
        tie_tolerance=tie_tolerance,
        batch_size=batch_size,
        spec=spec,
        provenance=prov,
        clusters=resolved,
        overall_clustered=share,
        magnitude=mean,
        magnitude_median=median,
    )


def with_clusters(result: StereotypeResult, clusters: str) -> StereotypeResult:
    """The same scored pairs summarised with another clustering (no model runs).

    Every setting recorded (method, seed, resamples, confidence, tie tolerance, spec, the model's
    description and other provenance such as the endpoint) is kept; ``provenance["scored_at"]`` keeps when
    the pairs were scored.
    """
    prov = dict(result.provenance or {})
    model = prov.get("model") if isinstance(prov.get("model"), dict) else {
        "model_id": result.model_id, "model_revision": result.model_revision, "model_kind": result.model_kind}
    extra = {k: v for k, v in prov.items() if k not in _SUMMARY_PROVENANCE}
    extra.setdefault("scored_at", prov.get("created_at"))
    return summarize_stereotype(
        result.pairs, model=model, method=result.method, seed=result.seed, n_resamples=result.overall.n_resamples,
        confidence=result.overall.confidence, tie_tolerance=result.tie_tolerance, batch_size=result.batch_size,
        spec=result.spec, extra_provenance=extra, clusters=clusters,
    )


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return "…"
