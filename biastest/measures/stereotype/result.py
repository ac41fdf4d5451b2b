"""The records of a stereotype-score test: one pair's score, one term's summary, the whole result.

:class:`StereotypeResult` is a :class:`~biastest.measures.base.ResultBase`: its JSON (``to_dict``,
``from_dict``, ``save_json``, ``load_json``) is written once in the base. Files written by earlier
versions keep loading: the keys are unchanged, fields added later (``clusters``, the cluster-aware
summaries) default to ``"pair"`` / ``None``. One difference from version 0.1.0's writer: a non-finite
number (NaN, ±inf) is written as ``null``, so every JSON reader can read the file.

The statistics records of :mod:`biastest.stats` (:class:`~biastest.stats.proportion.ProportionSummary`,
:class:`~biastest.stats.clusters.ClusterSummary`) stay dataclasses; the result reads and writes them with
their own ``from_dict``/``to_dict``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from biastest.errors import DataError
from biastest.measures.base import ResultBase
from biastest.measures.stereotype.clusters import cluster_keys, design_note
from biastest.stats.clusters import ClusterSummary
from biastest.stats.proportion import ANTI, STEREOTYPED, ProportionSummary

__all__ = ["MSG_BAD_RESULT_FILE", "PairScore", "StereotypeResult", "TermSummary"]

MSG_BAD_RESULT_FILE = "This file is not a saved stereotype-test result ({problem})."


def _stats_record(cls: type) -> Any:
    """A field type for a :mod:`biastest.stats` record: read with its ``from_dict``, written with its ``to_dict``."""

    def read(value: Any) -> Any:
        return cls.from_dict(value) if isinstance(value, dict) else value

    return Annotated[cls, BeforeValidator(read), PlainSerializer(lambda v: v.to_dict())]


Proportion = _stats_record(ProportionSummary)
Clustered = _stats_record(ClusterSummary)


class PairScore(BaseModel):
    """The scores and verdict of one sentence pair (or why it was excluded).

    Attributes
    ----------
    index : int
        Position of the pair in the input.
    pair_id : str
    stereotyped, anti_stereotyped : str
    attribute_term, group_term_stereotyped, group_term_anti, category, source : str
    score_stereotyped, score_anti : float or None
        Method scores (natural-log probabilities; sums or means, see method).
    difference : float or None
        ``score_stereotyped − score_anti``.
    verdict : {"stereotyped", "anti-stereotyped", "tie"} or None
        None when excluded.
    n_tokens_stereotyped, n_tokens_anti : int
        Tokens that entered each score.
    excluded_code, excluded_reason : str or None
        Why the pair was not scored.
    template : str
        The pair's template (empty if unknown); the default cluster of the pair.
    """

    index: int
    pair_id: str
    stereotyped: str
    anti_stereotyped: str
    attribute_term: str
    group_term_stereotyped: str
    group_term_anti: str
    category: str
    source: str
    score_stereotyped: float | None
    score_anti: float | None
    difference: float | None
    verdict: str | None
    n_tokens_stereotyped: int = 0
    n_tokens_anti: int = 0
    excluded_code: str | None = None
    excluded_reason: str | None = None
    template: str = ""

    model_config = ConfigDict(frozen=True)

    @property
    def scored(self) -> bool:
        return self.verdict is not None

    @property
    def preferred(self) -> str | None:
        """The sentence the model preferred (None for a tie or an excluded pair)."""
        if self.verdict == STEREOTYPED:
            return self.stereotyped
        if self.verdict == ANTI:
            return self.anti_stereotyped
        return None

    def to_dict(self) -> dict[str, Any]:
        """Every field, as stored in a result file."""
        return self.model_dump()


class TermSummary(BaseModel):
    """The score of the pairs that share one term (or category).

    Attributes
    ----------
    term : str
    summary : ProportionSummary
        Pair-level score, bootstrap and exact intervals, sign test.
    clustered : ClusterSummary or None
        Cluster-aware score (percent) within the term: cluster bootstrap interval (or the reason there is
        none), design effect, sign test on cluster means. None in results saved before it existed.
    magnitude : ClusterSummary or None
        Mean Δ log-probability (stereotyped − anti) of the term's pairs with its cluster-aware interval.
    median_difference : float or None
        Median Δ of the term's pairs.
    p_holm, q_bh : float or None
        Holm-adjusted p-value and Benjamini–Hochberg q-value of :attr:`p_value` within its family (all
        attribute terms, all group terms, or all categories).
    """

    model_config = ConfigDict(frozen=True)

    term: str
    summary: Proportion
    clustered: Clustered | None = None
    magnitude: Clustered | None = None
    median_difference: float | None = None
    p_holm: float | None = None
    q_bh: float | None = None

    @property
    def p_value(self) -> float | None:
        """The term's test: the sign test on cluster means (with single-pair clusters, the pair sign test)."""
        return self.clustered.p_value if self.clustered is not None else self.summary.p_value

    def to_dict(self) -> dict[str, Any]:
        """As stored in a result file."""
        return self.model_dump(mode="json")


class StereotypeResult(ResultBase):
    """The result of a stereotype-score test of one language model.

    Attributes
    ----------
    model_id, model_revision, model_kind : str / str or None / str
    method : str
        Scoring method name (:data:`METHODS`).
    seed : int
        Bootstrap seed.
    overall : ProportionSummary
        **Micro** score: percent stereotyped over all scored pairs.
    macro_attribute : ProportionSummary
        **Macro** score over attribute terms: mean of the per-attribute-term
        scores (stratified bootstrap; no exact test).
    macro_group : ProportionSummary
        **Macro** score over group terms (of the stereotyped sentence).
    per_attribute : tuple of TermSummary
        Per attribute term (pairs without one are under ``""``).
    per_group : tuple of TermSummary
        Per group term *of the stereotyped sentence* (the group whose
        stereotype the pair tests).
    per_category : tuple of TermSummary
        Per category (e.g. CrowS-Pairs bias type, or attribute list name).
    pairs : tuple of PairScore
        Every input pair, scored or excluded.
    n_pairs, n_scored, n_excluded : int
    excluded_reasons : dict
        Exclusion code → number of pairs.
    tie_tolerance : float
    batch_size : int
    spec : dict or None
        The BiasSpec (BiasTestGPT JSON form) the pairs were made for.
    provenance : dict
        From :func:`biastest.provenance.provenance` (model id and revision,
        method, seed, spec name, versions, time …).
    clusters : str
        The clustering used (:data:`CLUSTERINGS`, never ``"auto"``: resolved); ``"pair"`` in results saved
        before clusters existed.
    overall_clustered : ClusterSummary or None
        Cluster-aware summary of the overall score (percent); the headline when :attr:`cluster_aware`.
    magnitude : ClusterSummary or None
        Mean Δ log-probability (stereotyped − anti, natural-log units of the method) over scored pairs, with
        its cluster bootstrap interval and sign test of cluster-mean Δ against 0.
    magnitude_median : ClusterSummary or None
        Median Δ with its cluster bootstrap (percentile) interval.
    """

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, frozen=True, protected_namespaces=())
    result_name: ClassVar[str] = "stereotype-test"

    kind: Literal["stereotype-score"] = "stereotype-score"
    model_id: str
    model_revision: str | None
    model_kind: str
    method: str
    seed: int
    overall: Proportion
    macro_attribute: Proportion
    macro_group: Proportion
    per_attribute: tuple[TermSummary, ...]
    per_group: tuple[TermSummary, ...]
    per_category: tuple[TermSummary, ...]
    pairs: tuple[PairScore, ...]
    n_pairs: int
    n_scored: int
    n_excluded: int
    excluded_reasons: dict[str, int]
    tie_tolerance: float
    batch_size: int
    spec: dict[str, Any] | None
    provenance: dict[str, Any]
    clusters: str = "pair"
    overall_clustered: Clustered | None = None
    magnitude: Clustered | None = None
    magnitude_median: Clustered | None = None

    @property
    def score(self) -> float:
        """The overall (micro) stereotype score in percent."""
        return self.overall.score

    @property
    def cluster_aware(self) -> bool:
        """Whether the headline is the design-based summary: clusters that are not single pairs, or single pairs
        resampled within their attribute terms (strata; results since issue 28)."""
        c = self.overall_clustered
        return c is not None and (self.clusters != "pair" or c.n_strata > 1)

    @property
    def headline_interval(self) -> tuple[float | None, float | None]:
        """The interval the main summary shows for the headline score (percent; None, None: none drawn).

        The design-based one (:attr:`cluster_aware`) or the bootstrap over pairs — the one interval of the score,
        which a comparison also shows for this model (:func:`biastest.stats.compare.with_own_intervals`).
        """
        if self.cluster_aware:
            c = self.overall_clustered
            assert c is not None
            return c.low, c.high
        return self.overall.ci_low, self.overall.ci_high

    @property
    def design_note(self) -> str:
        """How the headline interval treats the pairs, in words (:func:`.clusters.design_note`)."""
        c = self.overall_clustered
        return design_note(self.clusters, 1 if c is None else c.n_strata)

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Check the file's ``kind``; results saved before clusters existed read with ``clusters="pair"``."""
        if data.get("kind") != "stereotype-score":
            raise DataError(MSG_BAD_RESULT_FILE.format(problem="missing or bad field 'kind'"))
        return data

    def pairs_records(self) -> list[dict[str, Any]]:
        """One flat dict per pair (for tables and CSV), with the run's identity.

        Columns: ``index, pair_id, stereotyped, anti_stereotyped,
        attribute_term, group_term_stereotyped, group_term_anti, category,
        source, score_stereotyped, score_anti, difference, verdict,
        n_tokens_stereotyped, n_tokens_anti, excluded_code, excluded_reason,
        template, preferred, model_id, model_revision, method, seed, clusters,
        cluster``.
        Text is returned as-is: escaping for HTML and neutralising
        spreadsheet formulas is the exporter's job.
        """
        keys = cluster_keys(self.pairs, self.clusters)
        rows = []
        for p, key in zip(self.pairs, keys, strict=True):
            row = p.to_dict()
            row["preferred"] = p.preferred
            row.update(
                {
                    "model_id": self.model_id,
                    "model_revision": self.model_revision,
                    "method": self.method,
                    "seed": self.seed,
                    "clusters": self.clusters,
                    "cluster": key if p.scored else None,
                }
            )
            rows.append(row)
        return rows
