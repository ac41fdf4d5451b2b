"""The records of a 2AFC test of a chat model: one question asked, one target, the validation, the whole result.

:class:`TwoAFCChatResult` is a :class:`~biastest.measures.base.ResultBase` (JSON written once in the base). Each
:class:`TargetRecord` keeps every :class:`CueAsk` of its target — the exact request (messages, settings, seed,
sample), the raw reply and how it was read — so a reader can check every count of the summary.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from biastest.errors import DataError
from biastest.measures.base import MSG_BAD_RESULT_FILE, ResultBase
from biastest.measures.forced_choice.result import FAILED, NOT_ASKED, REFUSED, UNPARSEABLE, Clustered, RateSummary
from biastest.measures.labour import LabourValidation

__all__ = [
    "CUE1",
    "CUE1_FIRST",
    "CUE2",
    "CUE2_FIRST",
    "FAILED",
    "NOT_ASKED",
    "ORDERS",
    "OUTCOMES",
    "PARSEABLE",
    "REFUSED",
    "UNPARSEABLE",
    "CueAsk",
    "LabourValidation",
    "RateSummary",
    "TargetRecord",
    "TwoAFCChatResult",
]

CUE1 = "cue-1"
CUE2 = "cue-2"
#: Every outcome of one question, in the order tables show them.
OUTCOMES = (CUE1, CUE2, REFUSED, UNPARSEABLE, FAILED, NOT_ASKED)
#: The outcomes that chose a cue.
PARSEABLE = (CUE1, CUE2)

CUE1_FIRST = "cue1-first"
CUE2_FIRST = "cue2-first"
#: The two orders each question is asked in: cue 1 as option A, then as option B.
ORDERS = (CUE1_FIRST, CUE2_FIRST)


class CueAsk(BaseModel):
    """One question asked (one target, one cue pair, one order, one sample) and what came of it.

    Attributes
    ----------
    pair : int
        Index of the cue pair in the result's ``cue_pairs``.
    order : {"cue1-first", "cue2-first"}
    sample : int
    request : dict
        :meth:`biastest.models.chat_records.ChatRequest.as_dict` — the exact messages and settings.
    reply : dict or None
        :meth:`biastest.models.chat_records.ChatReply.as_dict` — the raw answer; None when not asked.
    outcome : str
        One of :data:`OUTCOMES`.
    label : {"A", "B"} or None
    position : {"first", "second"} or None
    rule : str
        Which parsing rule decided (:class:`biastest.measures.forced_choice.parse.Parsed`), or ``failed`` /
        ``not-asked``.
    p_cue1 : float or None
        Soft reading: the probability of cue 1's label at the first answer token, renormalised over the two labels
        (None without log-probabilities, or without either label among them).
    """

    model_config = ConfigDict(frozen=True)

    pair: int
    order: str
    sample: int
    request: dict[str, Any]
    reply: dict[str, Any] | None
    outcome: str
    label: str | None = None
    position: str | None = None
    rule: str = ""
    p_cue1: float | None = None

    @property
    def text(self) -> str | None:
        """The raw answer text (None when not asked or failed)."""
        return None if self.reply is None else self.reply.get("text")


class TargetRecord(BaseModel):
    """One target (e.g. an occupation): its answers and P(cue 1 | target).

    Attributes
    ----------
    index : int
    target : str
    p_cue1 : ClusterSummary or None
        Percent of parseable answers that chose cue 1, with the cluster bootstrap interval over the target's cue
        pairs (each pair's orders and samples stay together); None when no answer chose.
    p_cue1_rate : RateSummary
        The same share with the Wilson/effective-n interval (clusters: the cue pairs; honest at 0 % and 100 %).
    counts : dict
        Outcome → number of questions.
    n_first : int
        Parseable answers that chose the option shown first (A).
    asks : tuple of CueAsk
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    index: int
    target: str
    p_cue1: Clustered | None
    p_cue1_rate: RateSummary
    counts: dict[str, int]
    n_first: int
    asks: tuple[CueAsk, ...]

    @property
    def estimate(self) -> float | None:
        """P(cue 1 | target) in percent, among parseable answers (None when none chose)."""
        return self.p_cue1_rate.estimate


class TwoAFCChatResult(ResultBase):
    """A 2AFC test of a chat model: P(cue 1 | target) per target, the rates, the labour-statistics validation.

    Attributes
    ----------
    model_id, served_model : str
    seed, samples : int
    temperature : float
    template : dict
        The exact wording (:meth:`~.templates.ChatTemplate.as_dict`).
    cue1_name, cue2_name : str
    cue_pairs : tuple of (str, str)
    targets : tuple of TargetRecord
    p_cue1 : ClusterSummary or None
        Percent of all parseable answers that chose cue 1, cluster bootstrap over targets.
    p_cue1_rate, refusal_rate, unparseable_rate, position_bias, order_consistency : RateSummary
        Wilson/effective-n intervals, clusters: the targets. Refusal and unparseable rates are among the answers
        received; position bias among parseable answers; order consistency among (target, cue pair, sample)
        triples answered parseably in both orders.
    counts : dict
        Outcome → number of questions.
    labour : LabourValidation or None
        None when no target is in the table.
    n_targets, n_requests : int
    stop_message : str or None
    spec : dict or None
    provenance : dict
    """

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, frozen=True, protected_namespaces=())
    result_name: ClassVar[str] = "twoafc-chat"

    kind: Literal["twoafc-chat"] = "twoafc-chat"
    model_id: str
    served_model: str | None = None
    seed: int
    template: dict[str, Any]
    samples: int
    temperature: float
    cue1_name: str
    cue2_name: str
    cue_pairs: tuple[tuple[str, str], ...]
    targets: tuple[TargetRecord, ...]
    p_cue1: Clustered | None
    p_cue1_rate: RateSummary
    refusal_rate: RateSummary
    unparseable_rate: RateSummary
    position_bias: RateSummary
    order_consistency: RateSummary
    counts: dict[str, int]
    labour: LabourValidation | None = None
    n_targets: int
    n_requests: int
    stop_message: str | None = None
    spec: dict[str, Any] | None = None
    provenance: dict[str, Any]

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Check the file's ``kind``."""
        if data.get("kind") != "twoafc-chat":
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
