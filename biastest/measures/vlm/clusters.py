"""How images group into clusters, and the cluster-aware parts of a vision-language result.

Images come in families that lean together — several pictures generated from one prompt — so a result carries a
cluster-aware summary beside the image-level one. The image terms are the design's fixed conditions: they are
**strata** (resampled within, :mod:`biastest.stats.strata`), never clusters; a clustering is a shared generator
(the image prompt), and pictures without one (uploads) are independent units within their image term
(:data:`DESIGN_NOTES` says which, in words) (see
:mod:`biastest.measures.vlm.score` for the formulas and :mod:`biastest.stats.clusters` for the statistics).
:func:`cluster_parts` computes everything that depends on the clustering: the cluster-aware soft and hard
shares, the log-odds magnitude and the per-term tests with their Holm and Benjamini–Hochberg adjustments. It is
used when a result is made (:func:`biastest.measures.vlm.summary.summarize_vlm`) and when it is summarised
again with another clustering (:meth:`biastest.measures.vlm.result.VLMResult.with_clusters`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.measures.vlm.options import CLUSTER_LABELS, DEFAULT_CLUSTERS, check_clusters
from biastest.measures.vlm.score import log_odds
from biastest.stats.clusters import ClusterSummary, summarize_cluster_means, summarize_clusters
from biastest.stats.multiple import benjamini_hochberg, holm
from biastest.stats.proportion import ANTI, STEREOTYPED

__all__ = ["DESIGN_NOTES", "STRATA_BY", "cluster_keys", "cluster_parts", "design_note", "resolve_clusters"]

#: What the strata of a vision-language result are.
STRATA_BY = "image term"
#: The design in words, per resolved clustering (shown beside the interval; see :func:`design_note`).
DESIGN_NOTES = {
    "image": "pictures treated as independent units within each image term; no shared prompt",
    "image-prompt": "pictures of one prompt form one cluster; prompts resampled within each image term",
    "image-term": ("each image term treated as one cluster (the clustering before issue 28: image terms are the "
                   "test's fixed conditions, so 'auto' no longer chooses it)"),
}


def design_note(clusters: str, n_strata: int = 2) -> str:
    """The design in words for a resolved clustering (:data:`DESIGN_NOTES`), without strata when only one."""
    note = DESIGN_NOTES.get(clusters, DESIGN_NOTES["image"])
    if n_strata <= 1 and clusters != "image-term":
        note = note.replace(" within each image term", "")
    return note


def resolve_clusters(images: Sequence[Any], clusters: str = DEFAULT_CLUSTERS) -> str:
    """The clustering ``"auto"`` stands for, given the images (other names are returned as they are).

    ``"image-prompt"`` when every image has a prompt (generated images), else ``"image"`` (uploads: independent
    pictures within their image terms, which are strata, never clusters — issue 28; before it, ``"auto"`` chose
    ``"image-term"`` here, and results saved then keep it). ``images`` are
    :class:`~biastest.measures.vlm.result.ImageScore` (or anything with ``image_prompt`` and ``image_term``).
    """
    clusters = check_clusters(clusters)
    if clusters != "auto":
        return clusters
    images = list(images)
    if images and all(str(img.image_prompt or "").strip() for img in images):
        return "image-prompt"
    return "image"


def cluster_keys(images: Sequence[Any], clusters: str) -> list[str]:
    """One cluster label per image: its prompt, its image term (both case-folded, spaces collapsed) or its index.

    An image without the chosen key (no prompt, e.g. an upload) is a cluster of its own.
    """
    clusters = resolve_clusters(images, clusters)
    out = []
    for img in images:
        prompt = " ".join(str(img.image_prompt or "").split())
        term = " ".join(str(img.image_term or "").split())
        if clusters == "image-prompt" and prompt:
            out.append("image prompt: " + prompt.casefold())
        elif clusters == "image-term" and term:
            out.append("image term: " + term.casefold())
        else:
            out.append(f"image #{img.index}")
    return out


@dataclass(frozen=True)
class ClusterParts:
    """What depends on the clustering: the cluster-aware summaries, the magnitude and the per-term updates."""

    resolved: str
    soft: ClusterSummary | None
    hard: ClusterSummary | None
    magnitude: ClusterSummary | None
    median: ClusterSummary | None
    n_capped: int
    image_terms: dict[str, dict[str, Any]]
    target_terms: dict[str, dict[str, Any]]

    @staticmethod
    def apply(summaries: Sequence[Any], updates: dict[str, dict[str, Any]]) -> tuple[Any, ...]:
        return tuple(t.model_copy(update=updates.get(t.term, {})) for t in summaries)


def _signs(outcomes: Sequence[str]) -> np.ndarray:
    return np.fromiter((1.0 if o == STEREOTYPED else -1.0 if o == ANTI else 0.0 for o in outcomes),
                       dtype=np.float64, count=len(outcomes))


def _soft_part(
    p: np.ndarray, keys: Sequence[str], cluster_by: str, kw: dict[str, Any], outcomes: Sequence[str] | None = None
) -> tuple[ClusterSummary, ClusterSummary, np.ndarray, ClusterSummary | None]:
    """Cluster-aware soft share (percent; sign test of cluster means of p against 0.5), mean log-odds, the
    log-odds, and with ``outcomes`` (of the same images) the hard share (:func:`_hard_part`).

    All from the same cluster draws (:func:`biastest.stats.clusters.summarize_cluster_means`, equal column by
    column to separate :func:`~biastest.stats.clusters.summarize_clusters` calls with the same seed).
    """
    lo, _ = log_odds(p)
    columns, tests, nulls = [p, lo], [p, None], [0.5, 0.0]
    if outcomes is not None:
        signs = _signs(outcomes)
        columns.append((signs > 0).astype(np.float64))
        tests.append(signs)
        nulls.append(0.0)
    out = summarize_cluster_means(columns, keys, cluster_by=cluster_by, test_values=tests, nulls=nulls,
                                  **_strata(kw, keys))
    return out[0].scaled(100.0), out[1], lo, (out[2].scaled(100.0) if outcomes is not None else None)


def _hard_part(outcomes: Sequence[str], keys: Sequence[str], cluster_by: str, kw: dict[str, Any]) -> ClusterSummary:
    """Cluster-aware hard share (percent); sign test of cluster means of the signs (+1, −1, 0 neither/tie)."""
    signs = _signs(outcomes)
    return summarize_clusters((signs > 0).astype(np.float64), keys, cluster_by=cluster_by, test_values=signs,
                              null=0.0, **_strata(kw, keys)).scaled(100.0)


def _strata(kw: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """The summary keywords with the strata of the items keyed by ``keys`` (``kw["terms"]``: cluster key → term).

    ``kw`` holds the bootstrap settings and, for a summary over several image terms, ``terms`` (a dict from
    each cluster key to its image term); without it the summary is unstratified (one image term).
    """
    out = {k: v for k, v in kw.items() if k != "terms"}
    terms = kw.get("terms")
    if terms:
        out.update(strata=[terms[k] for k in keys], strata_by=STRATA_BY)
    return out


def _shares(
    ix: Sequence[int], has_soft: np.ndarray, p_st: np.ndarray, outcomes: Sequence[str], keys: np.ndarray,
    cluster_by: str, kw: dict[str, Any], choices: tuple[Sequence[int], Sequence[str]] | None = None,
) -> tuple[ClusterSummary | None, ClusterSummary | None, np.ndarray | None, ClusterSummary | None]:
    """Soft share, mean log-odds, log-odds (over the images of ``ix`` with a probability) and hard share (over
    all of ``ix``); one pass of cluster draws when every image has a probability.

    With ``choices`` (a chat model: each parseable answer's image and outcome, :func:`~.chat.choice_rows`) the
    hard share is over the parseable answers of the images of ``ix``, each in its image's cluster (None when
    there is none).
    """
    ix = list(ix)
    sx = [i for i in ix if has_soft[i]]
    if choices is not None:
        members = set(ix)
        rows = [r for r, i in enumerate(choices[0]) if i in members]
        hard = (_hard_part([choices[1][r] for r in rows], [keys[choices[0][r]] for r in rows], cluster_by, kw)
                if rows else None)
        if not sx:
            return None, None, None, hard
        soft, mean, lo, _ = _soft_part(p_st[sx], list(keys[sx]), cluster_by, kw)
        return soft, mean, lo, hard
    hard_outcomes = [outcomes[i] for i in ix]
    if sx and len(sx) == len(ix):
        soft, mean, lo, hard = _soft_part(p_st[sx], list(keys[sx]), cluster_by, kw, hard_outcomes)
        assert hard is not None
        return soft, mean, lo, hard
    hard = _hard_part(hard_outcomes, list(keys[ix]), cluster_by, kw)
    if not sx:
        return None, None, None, hard
    soft, mean, lo, _ = _soft_part(p_st[sx], list(keys[sx]), cluster_by, kw)
    return soft, mean, lo, hard


def cluster_parts(
    images: Sequence[Any],
    clusters: str,
    *,
    has_soft: np.ndarray,
    p_st: np.ndarray,
    outcomes: Sequence[str],
    groups: np.ndarray,
    sides: np.ndarray,
    vs: np.ndarray | None,
    terms: Sequence[str],
    seed: int,
    n_resamples: int,
    confidence: float,
    choices: tuple[Sequence[int], Sequence[str]] | None = None,
) -> ClusterParts:
    """The cluster-aware parts of a result (see the module docstring); ``vs`` None leaves target terms without.

    ``choices`` (a chat model asked in both orders): the hard shares are over its parseable answers (see
    :func:`_shares`).
    """
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    resolved = resolve_clusters(images, clusters)
    cluster_by = CLUSTER_LABELS[resolved]
    keys = np.array(cluster_keys(images, resolved), dtype=object)
    # within one image term: prompts, or (when the term itself is the cluster) independent images
    within, within_by = ((np.array(cluster_keys(images, "image"), dtype=object), CLUSTER_LABELS["image"])
                         if resolved == "image-term" else (keys, cluster_by))
    # over several image terms: the terms are strata (a cluster takes its first image's term)
    term_of: dict[str, str] = {}
    for k, img in zip(keys, images, strict=True):
        term_of.setdefault(k, " ".join(str(img.image_term or "").split()).casefold())
    kw_all = {**kw, "terms": term_of}
    soft_ix = np.flatnonzero(has_soft)
    soft, magnitude, lo, hard = _shares(range(len(images)), has_soft, p_st, outcomes, keys, cluster_by, kw_all,
                                        choices)
    median = None
    n_capped = 0
    if lo is not None:
        n_capped = log_odds(p_st[soft_ix])[1]
        median = summarize_clusters(lo, list(keys[soft_ix]), cluster_by=cluster_by, statistic="median", null=0.0,
                                    **_strata(kw_all, list(keys[soft_ix])))
    image_terms: dict[str, dict[str, Any]] = {}
    by_term: dict[str, list[int]] = {}
    for i, img in enumerate(images):
        by_term.setdefault(" ".join(img.image_term.split()), []).append(i)
    for term, ix in by_term.items():
        t_soft, t_mean, t_lo, t_hard = _shares(ix, has_soft, p_st, outcomes, within, within_by, kw, choices)
        image_terms[term] = {"soft_clustered": t_soft, "hard_clustered": t_hard, "magnitude": t_mean,
                             "median_log_odds": None if t_lo is None else float(np.median(t_lo))}
    target_terms: dict[str, dict[str, Any]] = {}
    for j, term in enumerate(terms):
        upd: dict[str, Any] = {"soft_clustered": None, "hard_clustered": None, "magnitude": None,
                               "median_log_odds": None}
        if vs is not None and soft and lo is not None:
            q = np.clip(vs[soft_ix, j], 0.0, 1.0)
            stereo = np.where(groups[soft_ix] == sides[j], q, 1.0 - q)
            if np.array_equal(stereo, p_st[soft_ix]):  # one term per list: the overall score, already computed
                share, mean, t_lo = soft, magnitude, lo
            else:
                share, mean, t_lo, _ = _soft_part(stereo, list(keys[soft_ix]), cluster_by, kw_all)
            upd.update(soft_clustered=share, magnitude=mean, median_log_odds=float(np.median(t_lo)))
        target_terms[term] = upd
    for family in (image_terms, target_terms):
        names = list(family)
        ps = [_term_p(family[t]) for t in names]
        for t, h, q in zip(names, holm(ps), benjamini_hochberg(ps), strict=True):
            family[t].update(p_holm=h, q_bh=q)
    return ClusterParts(resolved=resolved, soft=soft, hard=hard, magnitude=magnitude, median=median,
                         n_capped=n_capped, image_terms=image_terms, target_terms=target_terms)


def _term_p(upd: dict[str, Any]) -> float | None:
    c = upd.get("soft_clustered") or upd.get("hard_clustered")
    return None if c is None else c.p_value
