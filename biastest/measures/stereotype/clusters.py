"""How the pairs of a stereotype-score test group into clusters that lean together.

Pairs come in families: one generated sentence swapped to several group terms shares a template. The
cluster-aware interval and test (:mod:`biastest.stats.clusters`) treat each cluster, not each pair, as
independent. The spec's attribute terms are the test's fixed conditions: they are **strata** (clusters are
resampled within them, :mod:`biastest.stats.strata`), never clusters (issue 28). The clustering is one of
:data:`CLUSTERINGS`; ``"auto"`` (:func:`resolve_clusters`) picks template when every scored pair has one, else
pair (before issue 28 it picked attribute term next; that clustering can still be chosen and results saved
with it keep it). A pair without the chosen key is its own cluster.

>>> resolve_clusters([], "template")
'template'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from biastest.errors import OptionError

#: A scored pair as this module reads it (a :class:`~biastest.measures.stereotype.result.PairScore`: the records
#: import this module for their CSV rows, so it names no record type of its own).
PairScore = Any

__all__ = ["CLUSTERINGS", "CLUSTER_LABELS", "DEFAULT_CLUSTERS", "DESIGN_NOTES", "MSG_BAD_CLUSTERS", "check_clusters",
           "cluster_keys", "design_note", "resolve_clusters"]

#: How pairs are grouped into independent clusters for the cluster-aware interval and test.
CLUSTERINGS = ("auto", "template", "attribute-term", "pair")
DEFAULT_CLUSTERS = "auto"
#: Plain words for each clustering (reports, the app's choice).
CLUSTER_LABELS = {
    "auto": "automatic (template, else pairs independent; within attribute terms)",
    "template": "template",
    "attribute-term": "attribute term",
    "pair": "none (pairs independent)",
}
MSG_BAD_CLUSTERS = "Unknown clustering '{value}'. Choose one of: {choices}."
#: The design in words, per resolved clustering (shown beside the interval; see :func:`design_note`).
DESIGN_NOTES = {
    "pair": "sentence pairs treated as independent units within each attribute term; no shared template",
    "template": "pairs made from one template form one cluster; templates resampled within each attribute term",
    "attribute-term": ("each attribute term treated as one cluster (the clustering before issue 28: attribute "
                       "terms are the test's fixed conditions, so 'auto' no longer chooses it)"),
}


def design_note(clusters: str, n_strata: int = 2) -> str:
    """The design in words for a resolved clustering (:data:`DESIGN_NOTES`), without strata when only one."""
    note = DESIGN_NOTES.get(clusters, DESIGN_NOTES["pair"])
    if n_strata <= 1 and clusters != "attribute-term":
        note = note.replace(" within each attribute term", "")
    return note


def check_clusters(clusters: Any) -> str:
    """Validate a clustering name (:data:`CLUSTERINGS`).

    Raises
    ------
    OptionError
        :data:`MSG_BAD_CLUSTERS`.
    """
    if not isinstance(clusters, str) or clusters.strip().lower().replace(" ", "-") not in CLUSTERINGS:
        raise OptionError(MSG_BAD_CLUSTERS.format(value=clusters, choices=", ".join(CLUSTERINGS)),
                          option="clusters", value=clusters)
    return clusters.strip().lower().replace(" ", "-")


def resolve_clusters(scores: Sequence[PairScore], clusters: str = DEFAULT_CLUSTERS) -> str:
    """The clustering ``"auto"`` stands for, given the scored pairs (other names are returned as they are).

    ``"template"`` when every scored pair has a template (generated and BiasTestGPT pairs), else ``"pair"``
    (e.g. CrowS-Pairs, imported pairs): attribute terms are strata, never clusters (issue 28).
    """
    clusters = check_clusters(clusters)
    if clusters != "auto":
        return clusters
    scored = [p for p in scores if p.scored] or list(scores)
    if scored and all(p.template.strip() for p in scored):
        return "template"
    return "pair"


def cluster_keys(scores: Sequence[PairScore], clusters: str) -> list[str]:
    """One cluster label per pair: its template, attribute term (case-folded) or its own index.

    A pair without the chosen key (no template, no attribute term) is a cluster of its own.
    """
    clusters = resolve_clusters(scores, clusters)
    out = []
    for p in scores:
        if clusters == "template" and p.template.strip():
            out.append("template: " + " ".join(p.template.split()).casefold())
        elif clusters == "attribute-term" and p.attribute_term.strip():
            out.append("attribute term: " + p.attribute_term.strip().casefold())
        else:
            out.append(f"pair #{p.index}")
    return out
