"""The vision-language measure's result records: one image's score, a term's summary, the whole result.

:class:`VLMResult` is a :class:`~biastest.measures.base.ResultBase`: its JSON is written once there
(``to_dict``/``from_dict``/``save_json``/``load_json``), with today's keys (``"kind": "vlm-score"`` first).
Files written before clusters existed still load: their cluster-aware fields read as None, their
``clusters`` as ``"image"`` and each image's ``term_vs_other`` as empty. Files written before the chat path asked
in both orders read with no ``orders``, no per-order answers (``by_order``) and no refusal, unparseable,
position or consistency rates (None): their scores are as they were saved. The statistics records inside
(:class:`~biastest.stats.proportion.ProportionSummary`, :class:`~biastest.stats.clusters.ClusterSummary`)
keep their own ``to_dict``/``from_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, model_serializer

from biastest.errors import DataError
from biastest.measures.base import ResultBase, json_safe
from biastest.measures.rates import RateSummary
from biastest.measures.vlm.chat import chat_rates, choice_rows
from biastest.measures.vlm.clusters import cluster_keys, cluster_parts, design_note
from biastest.measures.vlm.options import check_clusters
from biastest.measures.vlm.score import log_odds, q_vs_other, target_sides
from biastest.spec import BiasSpec
from biastest.stats.clusters import ClusterSummary
from biastest.stats.proportion import ProportionSummary

__all__ = ["MSG_BAD_RESULT_FILE", "ImageScore", "OrderAnswer", "VLMResult", "VLMTermSummary"]

MSG_BAD_RESULT_FILE = "This file is not a saved vision-language test result ({problem})."
#: The fields of a chat model asked in both orders: left out of the JSON of the other results (which stay as the
#: files written before they existed).
CHAT_FIELDS = ("orders", "n_answers", "n_refused", "n_unparseable", "n_not_answered", "refusal_rate",
               "unparseable_rate", "position_bias", "order_consistency")


def _record(cls: type) -> Any:
    """A statistics dataclass inside a result: read with its ``from_dict``, written with its ``to_dict``."""
    return Annotated[
        cls,
        BeforeValidator(lambda v: cls.from_dict(dict(v)) if isinstance(v, Mapping) else v),
        PlainSerializer(lambda v: v.to_dict()),
    ]


Proportion = _record(ProportionSummary)
Cluster = _record(ClusterSummary)


class OrderAnswer(BaseModel):
    """What a chat model was asked about one image in one order, and what came of it.

    Attributes
    ----------
    order : {"T1 first", "T2 first"}
        Which target list the question (and the allowed answers) named first.
    question : str
        The text sent with the image, exactly ("" when it was not asked).
    answer : str
        The raw answer (cut to 200 characters; "" when none came).
    outcome : {"T1", "T2", "refused", "unparseable", "not answered", "not asked"}
        The answer read strictly (:func:`biastest.models.endpoint_vlm.read_answer`).
    p_stereotyped : float or None
        The probability of the image group's stereotyped list from the answer's first token (None without one).
    """

    model_config = ConfigDict(frozen=True)

    order: str
    question: str = ""
    answer: str = ""
    outcome: str
    p_stereotyped: float | None = None


class ImageScore(BaseModel):
    """One image's result (a row of the per-image table).

    Attributes
    ----------
    index : int
    image_id, path, sha256, image_term : str
        The image's record (path relative to the store root).
    image_group : int
        1 or 2: the social group whose list holds ``image_term``.
    p_t1, p_t2 : float or None
        ``P(T1 | image)``, ``P(T2 | image)``; None when the model gave no
        probability for this image (a model behind an endpoint without
        log-probabilities: ``note`` says why).
    p_stereotyped : float or None
        ``p_t1`` for group-1 images, ``p_t2`` for group-2 images.
    term_probabilities : dict
        Target term → probability (empty when ``p_t1`` is None).
    answer : str
        The model's own answer (CLIP-like: the most probable target term).
    verdict : {"T1", "T2", "neither", "tie"}
    outcome : {"stereotyped", "anti-stereotyped", "tie"}
        The verdict read against the image's group (``neither`` → ``tie``).
    generator, image_prompt, source : str
        How the image was made.
    file_name : str
        The name of the user's file for an uploaded picture (kept beside the content hash its ``path`` is named
        by); "" for generated and retrieved pictures and in results saved before it was kept.
    note : str
        Why the image has no probability ("" when it has one).
    term_vs_other : dict
        Target term → ``q_t`` (the term against the other list alone; empty when ``p_t1`` is None, and in
        results saved before it was kept): what the per-target-term scores are made of.
    by_order : tuple of OrderAnswer
        A chat model asked in both orders: each order's question, raw answer, outcome and probability (empty for
        the other models and in older results). Then ``answer`` is the first order's answer, ``verdict`` the list
        its parseable answers named (``tie`` when the two orders named different lists, ``neither`` when no
        answer named one), and the probabilities are the mean over the orders that have one.
    """

    model_config = ConfigDict(frozen=True)

    index: int
    image_id: str
    path: str
    sha256: str
    image_term: str
    image_group: int
    p_t1: float | None
    p_t2: float | None
    p_stereotyped: float | None
    term_probabilities: dict[str, float]
    answer: str
    verdict: str
    outcome: str
    generator: str = ""
    image_prompt: str = ""
    source: str = ""
    file_name: str = ""
    note: str = ""
    term_vs_other: dict[str, float] = Field(default_factory=dict)
    by_order: tuple[OrderAnswer, ...] = ()

    @model_serializer(mode="wrap")
    def _without_empty_orders(self, handler: Any) -> dict[str, Any]:
        """``by_order`` and ``file_name`` only where there are some (an in-process model's image, and a result file
        written before file names were kept, write what they always wrote)."""
        data = handler(self)
        if not self.by_order:
            data.pop("by_order", None)
        if not self.file_name:
            data.pop("file_name", None)
        return data

    def to_dict(self) -> dict[str, Any]:
        """The image's fields, as in a result file's ``images``."""
        return json_safe(self.model_dump(mode="json"))


class VLMTermSummary(BaseModel):
    """Scores of the images of one image term, or of one target term.

    Attributes
    ----------
    term : str
    side : int
        Group (image terms) or target group (target terms): 1 or 2.
    n_images : int
    soft : ProportionSummary or None
        None when none of its images has a probability (see :attr:`VLMResult.soft`).
    hard : ProportionSummary or None
        None for target terms (their hard decision is the sign of the soft one,
        already tested in ``soft``).
    soft_clustered, hard_clustered : ClusterSummary or None
        Cluster-aware soft and hard scores (percent) within the term: cluster bootstrap interval (or the reason
        there is none), design effect, sign test on cluster means. None where the plain one is None, and in
        results saved before clusters existed.
    magnitude : ClusterSummary or None
        Mean log-odds of the stereotyped list over the term's images with a probability, with its cluster
        bootstrap interval (None without probabilities).
    median_log_odds : float or None
        Median log-odds of the term's images with a probability.
    p_holm, q_bh : float or None
        Holm-adjusted p-value and Benjamini–Hochberg q-value of :attr:`p_value` within its family (image terms,
        or target terms).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    term: str
    side: int
    n_images: int
    soft: Proportion | None
    hard: Proportion | None
    soft_clustered: Cluster | None = None
    hard_clustered: Cluster | None = None
    magnitude: Cluster | None = None
    median_log_odds: float | None = None
    p_holm: float | None = None
    q_bh: float | None = None

    @property
    def clustered(self) -> ClusterSummary | None:
        """The term's cluster-aware headline: the soft score's, or the hard one's without probabilities."""
        return self.soft_clustered if self.soft_clustered is not None else self.hard_clustered

    @property
    def p_value(self) -> float | None:
        """The term's test: the sign test on cluster means of its headline (single images: the image-level test).

        Results saved before clusters existed: the soft score's sign test, else the hard score's binomial test.
        """
        if self.clustered is not None:
            return self.clustered.p_value
        plain = self.soft if self.soft is not None else self.hard
        return plain.p_value if plain is not None else None


    def to_dict(self) -> dict[str, Any]:
        """The summary as in a result file (statistics records as their own ``to_dict``)."""
        return json_safe(self.model_dump(mode="json"))


class VLMResult(ResultBase):
    """The result of a vision-language bias test of one model.

    Attributes
    ----------
    model_id, model_revision, model_kind, architecture : str
    method : str
        :data:`METHODS` value for the model kind.
    combine : str or None
        How several prompts of a group are combined (CLIP-like only).
    prompt_templates : tuple of str
        CLIP-like templates (empty otherwise).
    question : str or None
        The question template (VQA and generative models), and
    prompts : tuple of str
        What was actually sent to the model (filled prompts or question).
    seed : int
    soft : ProportionSummary or None
        The seed's score with probabilities, percent, over the images that
        have a probability (:attr:`n_soft`; all of them for a model in this
        process). None when no image has one (a model behind an endpoint that
        gives no log-probabilities): then only ``hard`` is a score — never a
        made-up value.
    hard : ProportionSummary
        The same with hard verdicts (in-process models: neither and ties count
        as not stereotyped and are excluded from the binomial test; a chat
        model: the share among parseable answers, see ``orders``).
    per_image_term, per_target_term : tuple of VLMTermSummary
    images : tuple of ImageScore
        The images scored.
    n_images, n_neither, n_ties : int
    batch_size : int
    spec : dict
        The BiasSpec (BiasTestGPT JSON form).
    provenance : dict
    not_scored : tuple of dict
        Images left out of every score because the run stopped before the
        model answered for them (a model behind an endpoint): ``path``,
        ``image_id``, ``image_term`` and ``reason`` each.
    notes : tuple of str
        What a reader must know about how the scores were obtained (no
        probabilities, answers that named neither list, a run that stopped
        early), in the user's words.
    clusters : str
        The clustering used (:data:`CLUSTERINGS`, never ``"auto"``: resolved); ``"image"`` in results saved
        before clusters existed.
    soft_clustered, hard_clustered : ClusterSummary or None
        Cluster-aware soft and hard scores (percent): cluster bootstrap interval or the reason there is none,
        design effect, sign test on cluster means. ``soft_clustered`` is None when ``soft`` is.
    magnitude, magnitude_median : ClusterSummary or None
        Mean and median log-odds of the stereotyped list over the images with a probability, with cluster
        bootstrap intervals (see the module docstring); None without probabilities.
    n_log_odds_capped : int
        Images whose probability was within :data:`LOG_ODDS_EPS` of 0 or 1, counted at the cap in the log-odds.
    orders : tuple of str
        A chat model: the orders each image was asked in (empty for the other models and older results). Then
        ``hard`` is the **stereotyped share among parseable answers** (both orders of every image, refusals,
        unparseable and missing answers in neither numerator nor denominator; the plain interval treats answers
        as independent, ``hard_clustered`` keeps an image's answers in one cluster), and ``n_neither`` counts the
        images none of whose answers named a list.
    n_answers, n_refused, n_unparseable, n_not_answered : int
        A chat model: answers received, refusals, unparseable answers, questions the run stopped before.
    refusal_rate, unparseable_rate : RateSummary or None
        Refused (unparseable) answers / answers received, percent, Wilson interval at the cluster effective
        sample size (:mod:`biastest.measures.rates`). None for the other models and older results.
    position_bias : RateSummary or None
        Answers naming the list the question named first / parseable answers (50 % = no position preference; a
        model that always names the first one reads 100 %).
    order_consistency : RateSummary or None
        Images answered with the same list in both orders / images whose two answers are both parseable.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="ignore")
    result_name: ClassVar[str] = "vision-language test"

    kind: Literal["vlm-score"] = "vlm-score"
    model_id: str
    model_revision: str | None
    model_kind: str
    architecture: str
    method: str
    combine: str | None
    prompt_templates: tuple[str, ...]
    question: str | None
    prompts: tuple[str, ...]
    seed: int
    soft: Proportion | None
    hard: Proportion
    per_image_term: tuple[VLMTermSummary, ...]
    per_target_term: tuple[VLMTermSummary, ...]
    images: tuple[ImageScore, ...]
    n_images: int
    n_neither: int
    n_ties: int
    batch_size: int
    spec: dict[str, Any]
    provenance: dict[str, Any]
    not_scored: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    clusters: str = "image"
    soft_clustered: Cluster | None = None
    hard_clustered: Cluster | None = None
    magnitude: Cluster | None = None
    magnitude_median: Cluster | None = None
    n_log_odds_capped: int = 0
    orders: tuple[str, ...] = ()
    n_answers: int = 0
    n_refused: int = 0
    n_unparseable: int = 0
    n_not_answered: int = 0
    refusal_rate: RateSummary | None = None
    unparseable_rate: RateSummary | None = None
    position_bias: RateSummary | None = None
    order_consistency: RateSummary | None = None

    @model_serializer(mode="wrap")
    def _without_empty_chat_fields(self, handler: Any) -> dict[str, Any]:
        """The chat fields (:data:`CHAT_FIELDS`) only in a chat model's result (the others write what they did)."""
        data = handler(self)
        if not self.orders:
            for name in CHAT_FIELDS:
                data.pop(name, None)
        return data

    @property
    def headline(self) -> str:
        """Which score is the headline: ``"soft"`` (probabilities), or ``"hard"`` when no image has one."""
        return "soft" if self.soft is not None else "hard"

    @property
    def headline_clustered(self) -> ClusterSummary | None:
        """The cluster-aware summary of the headline score (None in results saved before clusters existed)."""
        return self.soft_clustered if self.headline == "soft" else self.hard_clustered

    @property
    def cluster_aware(self) -> bool:
        """Whether the headline interval and test are the design-based ones: clusters that are not single images,
        or single images resampled within their image terms (strata; results since issue 28)."""
        c = self.headline_clustered
        return c is not None and (self.clusters != "image" or c.n_strata > 1)

    def headline_interval(self, score: str | None = None) -> tuple[float | None, float | None]:
        """The interval the main summary shows for the soft or hard score (default the headline's; percent).

        The design-based one (:attr:`cluster_aware`; for a chat model's single answers always the clustered one)
        or the bootstrap over images; (None, None) where none is drawn. A comparison shows it for this model
        (:func:`biastest.stats.compare.with_own_intervals`).
        """
        score = score or self.headline
        plain = self.soft if score == "soft" else self.hard
        c = self.soft_clustered if score == "soft" else self.hard_clustered
        if c is not None and (self.cluster_aware or (score == "hard" and self.orders)):
            return c.low, c.high
        return (None, None) if plain is None else (plain.ci_low, plain.ci_high)

    @property
    def design_note(self) -> str:
        """How the headline interval treats the images, in words (:func:`.clusters.design_note`)."""
        c = self.headline_clustered
        return design_note(self.clusters, 1 if c is None else c.n_strata)

    def with_clusters(self, clusters: str) -> VLMResult:
        """The same scored images summarised with another clustering (no model runs).

        Only what depends on the clusters changes: the cluster-aware summaries, the magnitude, the per-term tests
        and their adjustments, and the clustering recorded in the provenance; the image-level scores, intervals
        and tests stay as they are. A result saved before ``q_t`` was kept per image gets its target terms'
        values from the term probabilities (exact except for ``mean-embedding``, whose target terms are then
        left without cluster-aware summaries).

        Raises
        ------
        OptionError
            An unknown ``clusters``.
        """
        clusters = check_clusters(clusters)
        spec = BiasSpec.from_dict(self.spec)
        terms = spec.attribute_terms
        sides = target_sides(spec)
        n = len(self.images)
        has_soft = np.array([img.p_t1 is not None for img in self.images], dtype=bool)
        p_st = np.array([0.5 if img.p_stereotyped is None else img.p_stereotyped for img in self.images])
        vs = np.full((n, len(terms)), 0.5)
        for i, img in enumerate(self.images):
            if not has_soft[i]:
                continue
            if img.term_vs_other:
                vs[i] = [img.term_vs_other[t] for t in terms]
            else:  # saved before q_t was kept: from the term probabilities
                row = np.array([[img.term_probabilities[t] for t in terms]])
                with np.errstate(invalid="ignore", divide="ignore"):
                    vs[i] = q_vs_other(row, sides)[0]
        exact = self.combine != "mean-embedding" or all(
            img.term_vs_other for img in self.images if img.p_t1 is not None)
        chat = bool(self.orders)
        parts = cluster_parts(
            self.images, clusters, has_soft=has_soft, p_st=p_st, outcomes=[img.outcome for img in self.images],
            groups=np.array([img.image_group for img in self.images]), sides=sides, vs=vs if exact else None,
            terms=terms, seed=self.seed, n_resamples=self.hard.n_resamples, confidence=self.hard.confidence,
            choices=choice_rows(self.images) if chat else None,
        )
        prov = {**(self.provenance or {}), "clusters": parts.resolved, "clusters_requested": clusters}
        rates = (chat_rates(self.images, cluster_keys(self.images, parts.resolved), confidence=self.hard.confidence)
                 if chat else {})
        return self.model_copy(update=dict(
            per_image_term=parts.apply(self.per_image_term, parts.image_terms),
            per_target_term=parts.apply(self.per_target_term, parts.target_terms),
            provenance=prov, clusters=parts.resolved, soft_clustered=parts.soft, hard_clustered=parts.hard,
            magnitude=parts.magnitude, magnitude_median=parts.median, n_log_odds_capped=parts.n_capped, **rates,
        ))

    @property
    def score(self) -> float | None:
        """The soft score in percent (the seed's formula); None when no image has a probability."""
        return self.soft.score if self.soft is not None else None

    @property
    def n_soft(self) -> int:
        """How many images have a probability (the soft score's images)."""
        return sum(img.p_t1 is not None for img in self.images)

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Check the file's ``kind``; a file saved before clusters existed reads with ``clusters`` ``"image"``."""
        if data.get("kind") != "vlm-score":
            raise DataError(MSG_BAD_RESULT_FILE.format(problem="missing or bad field 'kind'"))
        data = dict(data)
        if data.get("clusters") is None:
            data["clusters"] = "image"
        data["not_scored"] = [dict(x) for x in data.get("not_scored") or ()]
        data["notes"] = [str(x) for x in data.get("notes") or ()]
        data["n_log_odds_capped"] = int(data.get("n_log_odds_capped") or 0)
        return data

    def images_records(self) -> list[dict[str, Any]]:
        """One flat dict per image (for tables and CSV): image id and path, never pixels.

        Columns: the :class:`ImageScore` fields (``term_probabilities`` as
        ``P(<term>)`` columns, ``term_vs_other`` left out; a chat model's
        ``by_order`` as ``question [<order>]``, ``answer [<order>]``,
        ``outcome [<order>]`` and ``P(stereotyped) [<order>]`` for each order
        asked), ``log_odds`` (of
        the stereotyped list, :func:`log_odds`; None without a probability),
        plus ``model_id, model_revision, method, seed, clusters, cluster``
        (the image's cluster label under :attr:`clusters`).
        Text is returned as-is: escaping is the exporter's job.
        """
        rows = []
        for img, key in zip(self.images, cluster_keys(self.images, self.clusters), strict=True):
            row = img.to_dict()
            probs = row.pop("term_probabilities")
            row.pop("term_vs_other", None)
            for a in row.pop("by_order", None) or ():
                order = a["order"]
                row.update({f"question [{order}]": a["question"], f"answer [{order}]": a["answer"],
                            f"outcome [{order}]": a["outcome"], f"P(stereotyped) [{order}]": a["p_stereotyped"]})
            for term, p in probs.items():
                row[f"P({term})"] = p
            row.update(
                {
                    "log_odds": None if img.p_stereotyped is None else float(log_odds([img.p_stereotyped])[0][0]),
                    "model_id": self.model_id,
                    "model_revision": self.model_revision,
                    "method": self.method,
                    "seed": self.seed,
                    "clusters": self.clusters,
                    "cluster": key,
                }
            )
            rows.append(row)
        return rows



