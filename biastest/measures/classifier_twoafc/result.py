"""The records of a classifier's 2AFC on occupations: one comparison, one target, the whole result (JSON written once
by :class:`~biastest.measures.base.ResultBase`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from biastest.errors import DataError
from biastest.measures.base import MSG_BAD_RESULT_FILE, ResultBase
from biastest.measures.forced_choice.result import Clustered
from biastest.measures.labour import LabourValidation
from biastest.measures.rates import RateSummary

__all__ = ["CUE1", "CUE2", "OUTCOMES", "TIE", "UNSCORED", "Comparison", "SubsetRow", "TargetRecord",
           "TwoAFCClassifierResult"]

CUE1 = "cue-1"
CUE2 = "cue-2"
TIE = "tie"
UNSCORED = "unscored"
#: Every outcome of one comparison, in the order tables show them.
OUTCOMES = (CUE1, CUE2, TIE, UNSCORED)


class Comparison(BaseModel):
    """One comparison: a template filled with a target and each cue of a pair, and which sentence scored higher.

    ``score_1``/``score_2``: the label's probability of cue 1's / cue 2's sentence (None: not scored); ``diff`` =
    ``score_1 − score_2``; ``outcome`` one of :data:`OUTCOMES` (``tie``: ``|diff|`` at most the tie margin).
    """

    model_config = ConfigDict(frozen=True)

    pair: int
    template: str
    role: str
    sentence_1: str
    sentence_2: str
    score_1: float | None = None
    score_2: float | None = None
    diff: float | None = None
    outcome: str


class TargetRecord(BaseModel):
    """One target (an occupation): its comparisons and P(cue 1 | target).

    Attributes
    ----------
    index : int
    target : str
    p_cue1 : ClusterSummary or None
        Percent of untied comparisons that cue 1's sentence won, cluster bootstrap over the target's cue pairs
        (or templates, by the options); None when every comparison tied or none was scored.
    p_cue1_rate : RateSummary
        The same share with the Wilson interval at the effective sample size (same clusters).
    diff : ClusterSummary or None
        Mean paired difference ``score_1 − score_2`` (probability points), same clusters.
    counts : dict
        Outcome → number of comparisons.
    comparisons : tuple of Comparison
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    index: int
    target: str
    p_cue1: Clustered | None
    p_cue1_rate: RateSummary
    diff: Clustered | None
    counts: dict[str, int]
    comparisons: tuple[Comparison, ...]

    @property
    def estimate(self) -> float | None:
        """P(cue 1 | target) in percent, among untied comparisons (None when there are none)."""
        return self.p_cue1_rate.estimate


class SubsetRow(BaseModel):
    """P(cue 1) over every target for one cue pair or one template (clusters: the targets)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    key: str
    p_cue1: Clustered | None
    p_cue1_rate: RateSummary
    n: int
    n_ties: int


class TwoAFCClassifierResult(ResultBase):
    """A classifier's 2AFC on a 2AFC specification (occupations × cue pairs), validated against labour statistics.

    Attributes
    ----------
    model_id, label : str
        The classifier and the label whose probability is the score; ``labels`` all of its labels.
    cue1_name, cue2_name : str
    cue_pairs : tuple of (str, str)
    clusters : str
    targets : tuple of TargetRecord
    p_cue1 : ClusterSummary or None
        Percent of every untied comparison that cue 1 won, cluster bootstrap over targets.
    p_cue1_rate, tie_rate : RateSummary
        Wilson/effective-n intervals (clusters: the targets); the tie rate among scored comparisons.
    diff : ClusterSummary or None
        Mean paired difference over every scored comparison, clusters: the targets.
    per_pair, per_template : tuple of SubsetRow
    counts : dict
    labour : LabourValidation or None
        None when no target is in the table.
    n_targets, n_comparisons, n_sentences : int
    stop_message : str or None
    spec : dict or None
    provenance : dict
    """

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, frozen=True, protected_namespaces=())
    result_name: ClassVar[str] = "twoafc-classifier"

    kind: Literal["twoafc-classifier"] = "twoafc-classifier"
    model_id: str
    labels: list[str]
    label: str
    cue1_name: str
    cue2_name: str
    cue_pairs: tuple[tuple[str, str], ...]
    clusters: str
    tie_margin: float
    seed: int
    targets: tuple[TargetRecord, ...]
    p_cue1: Clustered | None
    p_cue1_rate: RateSummary
    tie_rate: RateSummary
    diff: Clustered | None
    per_pair: tuple[SubsetRow, ...] = ()
    per_template: tuple[SubsetRow, ...] = ()
    counts: dict[str, int]
    labour: LabourValidation | None = None
    n_targets: int
    n_comparisons: int
    n_sentences: int
    stop_message: str | None = None
    spec: dict[str, Any] | None = None
    provenance: dict[str, Any]

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Check the file's ``kind``."""
        if data.get("kind") != "twoafc-classifier":
            raise DataError(MSG_BAD_RESULT_FILE.format(what=cls.result_name, problem="missing or bad field 'kind'"))
        return data

    def target(self, name: str) -> TargetRecord:
        """The record of target ``name`` (case aside)."""
        for t in self.targets:
            if t.target.casefold() == str(name).casefold():
                return t
        raise KeyError(name)

    @property
    def score(self) -> float | None:
        """The headline: Pearson r with % women when defined, else None."""
        return None if self.labour is None else self.labour.pearson_r
