"""The records of a forced-choice test: one question asked, one sentence pair, rates, the whole result.

:class:`ForcedChoiceResult` is a :class:`~biastest.measures.base.ResultBase` (JSON written once in the base). Each
:class:`ItemRecord` keeps its sentence pair and every :class:`Ask` — the exact request (messages, settings,
seed, sample), the raw reply, and how it was read — so a reader can check every count of the summary.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from biastest.errors import DataError
from biastest.measures.base import MSG_BAD_RESULT_FILE, ResultBase
from biastest.measures.rates import RateSummary
from biastest.stats.clusters import ClusterSummary

__all__ = [
    "ANTI",
    "ANTI_FIRST",
    "Ask",
    "FAILED",
    "ForcedChoiceResult",
    "ItemRecord",
    "NOT_ASKED",
    "ORDERS",
    "OUTCOMES",
    "PARSEABLE",
    "REFUSED",
    "RateSummary",
    "STEREOTYPED",
    "STEREOTYPED_FIRST",
    "TermRow",
    "UNPARSEABLE",
]

STEREOTYPED = "stereotyped"
ANTI = "anti-stereotyped"
REFUSED = "refused"
UNPARSEABLE = "unparseable"
FAILED = "failed"
NOT_ASKED = "not-asked"
#: Every outcome of one question, in the order tables show them.
OUTCOMES = (STEREOTYPED, ANTI, REFUSED, UNPARSEABLE, FAILED, NOT_ASKED)
#: The outcomes that chose a sentence.
PARSEABLE = (STEREOTYPED, ANTI)

STEREOTYPED_FIRST = "stereotyped-first"
ANTI_FIRST = "anti-first"
#: The two orders each pair is asked in: the stereotyped sentence as option A, then as option B.
ORDERS = (STEREOTYPED_FIRST, ANTI_FIRST)


def _stats_record(cls: type) -> Any:
    """A field type for a :mod:`biastest.stats` record (read with ``from_dict``, written with ``to_dict``)."""

    def read(value: Any) -> Any:
        return cls.from_dict(value) if isinstance(value, dict) else value

    return Annotated[cls, BeforeValidator(read), PlainSerializer(lambda v: v.to_dict())]


Clustered = _stats_record(ClusterSummary)


class Ask(BaseModel):
    """One question asked (one order, one sample) and what came of it.

    Attributes
    ----------
    order : {"stereotyped-first", "anti-first"}
        Which sentence was option A.
    sample : int
    request : dict
        :meth:`biastest.models.chat_records.ChatRequest.as_dict` — the exact messages and settings.
    reply : dict or None
        :meth:`biastest.models.chat_records.ChatReply.as_dict` — the raw answer; None when not asked.
    outcome : str
        One of :data:`OUTCOMES`.
    label : {"A", "B"} or None
        The label chosen (parseable answers only).
    position : {"first", "second"} or None
        The position chosen (A is first).
    rule : str
        Which parsing rule decided (:class:`biastest.measures.forced_choice.parse.Parsed`), or ``failed`` /
        ``not-asked``.
    p_stereotyped : float or None
        Soft score of this answer: the probability of the stereotyped option's label at the first answer token,
        renormalised over the two labels (None without log-probabilities or without either label among them).
    """

    model_config = ConfigDict(frozen=True)

    order: str
    sample: int
    request: dict[str, Any]
    reply: dict[str, Any] | None
    outcome: str
    label: str | None = None
    position: str | None = None
    rule: str = ""
    p_stereotyped: float | None = None

    @property
    def text(self) -> str | None:
        """The raw answer (None when failed or not asked)."""
        return None if self.reply is None else self.reply.get("text")


class ItemRecord(BaseModel):
    """One sentence pair and every question asked about it.

    Attributes
    ----------
    index : int
    pair_id, stereotyped, anti_stereotyped, attribute_term, group_term_stereotyped, group_term_anti, template,
    category, source : str
        As in :class:`biastest.records.SentencePair`.
    asks : tuple of Ask
        In the order asked: stereotyped first (samples 0…k−1), then anti-stereotyped first.
    soft : float or None
        The item's soft score: the mean of its answers' ``p_stereotyped`` within each order, averaged over the
        two orders (None unless both orders have one).
    """

    model_config = ConfigDict(frozen=True)

    index: int
    pair_id: str
    stereotyped: str
    anti_stereotyped: str
    attribute_term: str = ""
    group_term_stereotyped: str = ""
    group_term_anti: str = ""
    template: str = ""
    category: str = ""
    source: str = ""
    asks: tuple[Ask, ...] = ()
    soft: float | None = None

    def outcomes(self, order: str | None = None) -> list[str]:
        """The outcomes of its answers (of one order)."""
        return [a.outcome for a in self.asks if order is None or a.order == order]

    @property
    def n_stereotyped(self) -> int:
        return sum(a.outcome == STEREOTYPED for a in self.asks)

    @property
    def n_parseable(self) -> int:
        return sum(a.outcome in PARSEABLE for a in self.asks)

    @property
    def share(self) -> float | None:
        """Stereotyped answers among its parseable answers (None when none was parseable)."""
        return self.n_stereotyped / self.n_parseable if self.n_parseable else None


class TermRow(BaseModel):
    """The figures of the items that share one attribute term (or one group term).

    Attributes
    ----------
    term : str
    share : ClusterSummary or None
        Stereotyped-choice share (percent) among its parseable answers, items as clusters; None when none.
    n_items, n_answers, n_parseable, n_refused, n_unparseable : int
    """

    model_config = ConfigDict(frozen=True)

    term: str
    share: Clustered | None
    n_items: int
    n_answers: int
    n_parseable: int
    n_refused: int
    n_unparseable: int


class ForcedChoiceResult(ResultBase):
    """The result of a forced-choice test of one chat model on sentence pairs.

    Attributes
    ----------
    model_id : str
    served_model : str or None
        The model name the answers came from (as the backend reported it).
    seed : int
    template : dict
        The prompt template asked with (name, system and user messages, verbatim).
    samples : int
    temperature : float
    clusters : str
        The clustering of the intervals (resolved, never ``auto``).
    share : ClusterSummary or None
        **Headline**: stereotyped-choice share (percent) among parseable answers, cluster bootstrap interval,
        sign test of the cluster means against 50 %. None when no answer was parseable.
    share_rate : RateSummary
        The same share with the Wilson/effective-n interval (honest at 0 % and 100 %).
    refusal_rate, unparseable_rate : RateSummary
        Among the answers received (failed and not-asked questions left out).
    position_bias : RateSummary
        Share of parseable answers that chose the first option (A).
    order_consistency : RateSummary
        Share of (item, sample) pairs answered parseably in both orders whose content choice is the same.
    soft : ClusterSummary or None
        Mean soft score (percent), items with a soft score in both orders.
    per_attribute, per_group : tuple of TermRow
    counts : dict
        Outcome → number of questions (every outcome of :data:`OUTCOMES`).
    items : tuple of ItemRecord
    n_items, n_requests : int
    stop_message : str or None
        Why the run stopped before every question was asked.
    spec : dict or None
    provenance : dict
    """

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, frozen=True, protected_namespaces=())
    result_name: ClassVar[str] = "forced-choice"

    kind: Literal["forced-choice"] = "forced-choice"
    model_id: str
    served_model: str | None = None
    seed: int
    template: dict[str, Any]
    samples: int
    temperature: float
    clusters: str
    share: Clustered | None
    share_rate: RateSummary
    refusal_rate: RateSummary
    unparseable_rate: RateSummary
    position_bias: RateSummary
    order_consistency: RateSummary
    soft: Clustered | None = None
    per_attribute: tuple[TermRow, ...] = ()
    per_group: tuple[TermRow, ...] = ()
    counts: dict[str, int]
    items: tuple[ItemRecord, ...]
    n_items: int
    n_requests: int
    stop_message: str | None = None
    spec: dict[str, Any] | None = None
    provenance: dict[str, Any]

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Check the file's ``kind``."""
        if data.get("kind") != "forced-choice":
            raise DataError(MSG_BAD_RESULT_FILE.format(what=cls.result_name, problem="missing or bad field 'kind'"))
        return data

    @property
    def score(self) -> float | None:
        """The headline: stereotyped-choice share in percent (None when nothing was parseable)."""
        return None if self.share is None else self.share.estimate
