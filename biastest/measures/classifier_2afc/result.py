"""The records of a classifier 2AFC: one counterfactual pair, the figures of a subset (a template, a term pair, a
word, an emotion), and the whole result (JSON written once by :class:`~biastest.measures.base.ResultBase`)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from biastest.errors import DataError
from biastest.measures.base import MSG_BAD_RESULT_FILE, ResultBase
from biastest.stats.clusters import ClusterSummary

__all__ = ["Classifier2AFCResult", "Clustered", "PairRecord", "SubsetRow"]

Clustered = Annotated[ClusterSummary, BeforeValidator(lambda v: ClusterSummary.from_dict(v) if isinstance(v, dict)
                                                      else v), PlainSerializer(lambda v: v.to_dict())]


class PairRecord(BaseModel):
    """One counterfactual pair and how the classifier scored it.

    ``score_1``/``score_2``: the positive label's probability of group 1's / group 2's sentence (None: not scored,
    the pair is left out and counted); ``diff`` = ``score_1 − score_2``; ``verdict`` +1, −1, 0 (tie) or None.
    """

    model_config = ConfigDict(frozen=True)

    index: int
    template: str
    word: str = ""
    emotion: str = ""
    term_1: str
    term_2: str
    sentence_1: str
    sentence_2: str
    score_1: float | None = None
    score_2: float | None = None
    diff: float | None = None
    verdict: int | None = None


class SubsetRow(BaseModel):
    """The figures of the pairs that share one template, term pair, word or emotion.

    ``diff``: mean paired difference (probability points) with its cluster interval and sign test; ``share``:
    group-1 wins among non-tied pairs (percent). Within one template the clusters are the term pairs, else the
    result's clusters.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    diff: Clustered | None
    share: Clustered | None
    n_pairs: int
    n_ties: int


class Classifier2AFCResult(ResultBase):
    """The result of a classifier 2AFC on a bias specification's two groups.

    Attributes
    ----------
    model_id : str
    labels : list of str
        The classifier's labels; ``positive_label`` the one scored.
    groups : list of str
        The names of group 1 and group 2.
    share : ClusterSummary or None
        **Headline**: share of non-tied pairs in which group 1's sentence scores higher (percent), cluster
        bootstrap interval, sign test of the clusters against 50 %.
    diff : ClusterSummary or None
        Mean paired difference ``p(s₁) − p(s₂)`` (probability points), cluster interval, sign test.
    permutation_p : float or None
        Sign-flip permutation test of the mean difference over whole clusters (:mod:`.score`).
    per_template, per_term_pair, per_group_term, per_word, per_emotion : tuple of SubsetRow
        ``per_group_term``: keys ``group 1: <term>`` and ``group 2: <term>`` (every pair the term is in).
    pairs : tuple of PairRecord
    n_pairs, n_scored, n_unscored, n_ties : int
    stop_message : str or None
    provenance : dict
    """

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, frozen=True, protected_namespaces=())
    result_name: ClassVar[str] = "classifier-2afc"

    kind: Literal["classifier-2afc"] = "classifier-2afc"
    model_id: str
    labels: list[str]
    positive_label: str
    groups: list[str]
    clusters: str
    share: Clustered | None
    diff: Clustered | None
    permutation_p: float | None
    n_permutations: int
    per_template: tuple[SubsetRow, ...] = ()
    per_term_pair: tuple[SubsetRow, ...] = ()
    per_group_term: tuple[SubsetRow, ...] = ()
    per_word: tuple[SubsetRow, ...] = ()
    per_emotion: tuple[SubsetRow, ...] = ()
    pairs: tuple[PairRecord, ...]
    n_pairs: int
    n_scored: int
    n_unscored: int
    n_ties: int
    stop_message: str | None = None
    spec: dict[str, Any] | None = None
    provenance: dict[str, Any]

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Check the file's ``kind``."""
        if data.get("kind") != "classifier-2afc":
            raise DataError(MSG_BAD_RESULT_FILE.format(what=cls.result_name, problem="missing or bad field 'kind'"))
        return data

    @property
    def score(self) -> float | None:
        """The headline: group 1's winning share in percent (None when every pair tied or none was scored)."""
        return None if self.share is None else self.share.estimate
