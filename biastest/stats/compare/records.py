"""The records of a comparison: the named methods, one model's estimate, a pair of models, the whole comparison.

What :func:`biastest.stats.compare.compare_items` and :func:`~biastest.stats.compare.compare_arrays` return and
what they take (:class:`ComparedQuantity`, :class:`ModelItems`); the formulas are in :mod:`biastest.stats.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

KIND_STEREOTYPE = "stereotype-score"
KIND_VLM_SOFT = "vlm-score-soft"
KIND_VLM_HARD = "vlm-score-hard"
KIND_WEAT = "weat-effect-size"
KIND_TWOAFC = "twoafc-pse"

TEST_MCNEMAR = "exact McNemar test (two-sided binomial of the discordant items against 1/2)"
TEST_SIGN_PAIRED = "exact sign test of the paired differences (items where A is higher vs lower than B)"
TEST_CLUSTER_SIGN_PAIRED = (
    "exact sign test on the cluster means of the paired differences (clusters where A is higher vs lower than B)"
)
TEST_BOOTSTRAP = "paired bootstrap p-value (twice the smaller share of resampled differences on either side of 0)"
TEST_NONE_NO_DISCORDANT = "none (no discordant item: the two models agree on every item)"
ADJUST_HOLM = "Holm (1979) step-down adjustment over all pairwise comparisons"
INTERVAL_PAIRED = "paired percentile bootstrap over items (the same items for every model), seeded"
INTERVAL_CLUSTERED = (
    "paired percentile cluster bootstrap (whole clusters resampled, the same for every model), seeded, widened "
    "for few clusters"
)
INTERVAL_WEAT = (
    "each embedding: its own result's interval of d (jackknife over all four word lists); the difference: paired "
    "percentile bootstrap over target words (X and Y resampled within themselves, the same words for every "
    "embedding; attribute words fixed), seeded"
)


@dataclass(frozen=True)
class ModelEstimate:
    """One model's statistic on the compared items (a row of the forest plot).

    Attributes
    ----------
    label : str
        The name shown (unique within a comparison).
    model_id, method : str
    estimate : float
        The statistic on the compared items (percent for scores, d for WEAT, PSE units for 2AFC).
    ci_low, ci_high : float or None
        Its paired-bootstrap percentile interval (the same resamples as the differences); None when there are too
        few clusters for an interval (:attr:`Comparison.notes` says so).
    n_items : int
        Items in this model's result.
    n_excluded : int
        Common items this model could not score.
    n_unmatched : int
        Items of this result that another model does not have.
    n_ties : int
        Ties (or VQA answers naming neither group) among the compared items; they count as not stereotyped.
    own_estimate : float or None
        The result's own headline over all its items (may differ when items were left out).
    interval_from_result : bool
        True when ``ci_low``/``ci_high`` are the result's own interval, exactly as its main summary shows it
        (the same statistic on the same items); False when the comparison resampled it (items were left out).
    """

    label: str
    model_id: str
    method: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    n_items: int
    n_excluded: int
    n_unmatched: int
    n_ties: int
    own_estimate: float | None
    interval_from_result: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairedComparison:
    """Model A against model B on the compared items.

    Attributes
    ----------
    a, b : str
        Labels of the two models.
    estimate_a, estimate_b : float
    difference : float
        ``estimate_a − estimate_b`` (points for scores).
    ci_low, ci_high : float or None
        Paired bootstrap percentile interval of the difference (None: too few clusters).
    p_value : float or None
        The test named in ``test`` (None: nothing to test).
    test : str
    p_exact : float or None
        The item-level sign test (the exact McNemar test for verdicts), also recorded when clusters make the
        cluster-level test the one shown; None for WEAT or when nothing differs.
    p_adjusted : float or None
        Holm-adjusted over all the comparison's pairs (equals ``p_value`` for two models).
    discordant : dict or None
        Verdict scores: ``{"both": …, "a_only": b, "b_only": c, "neither": …}`` — items stereotyped for both models,
        for A only, for B only, for neither. Continuous measures: ``{"a_higher": n₊, "b_higher": n₋, "equal": …}``.
        WEAT: None.
    n_items : int
    design_effect : float or None
        With clusters: Kish's design effect of the mean paired difference
        (:func:`biastest.stats.clusters.design_effect`).
    """

    a: str
    b: str
    estimate_a: float
    estimate_b: float
    difference: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    test: str
    p_exact: float | None
    p_adjusted: float | None
    discordant: dict[str, int] | None
    n_items: int
    design_effect: float | None = None

    def flipped(self) -> PairedComparison:
        """The same comparison read the other way round: B against A (difference and interval negated)."""
        return _flip(self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """Models compared on the same items: per-model estimates and every pairwise difference.

    Attributes
    ----------
    kind : str
        :data:`KIND_STEREOTYPE`, :data:`KIND_VLM_SOFT`, :data:`KIND_VLM_HARD`, :data:`KIND_WEAT` or
        :data:`KIND_TWOAFC`.
    measure : str
        What the estimates are, in words.
    unit : str
        ``"%"`` (differences in points), ``"d"`` or ``"PSE"``.
    reference : float
        The value of no bias (50 for scores, 0 otherwise).
    models : tuple of ModelEstimate
        In input order.
    pairs : tuple of PairedComparison
        Every pair (i < j in input order).
    n_items : int
        Items compared (scored by every model).
    n_clusters : int or None
        Clusters resampled (None: items resampled).
    cluster_by : str or None
        The item field that defines the clusters.
    confidence, n_resamples, seed :
        Bootstrap settings (the seed is recorded).
    interval_method, test, adjustment : str
        Named methods.
    notes : tuple of str
        What the reader must know (no interval for too few clusters, resamples dropped …).
    statistic : str or None
        2AFC: the statistic (:data:`biastest.measures.twoafc.compare.TWOAFC_STATISTICS`).
    provenance : dict
    """

    kind: str
    measure: str
    unit: str
    reference: float
    models: tuple[ModelEstimate, ...]
    pairs: tuple[PairedComparison, ...]
    n_items: int
    n_clusters: int | None
    cluster_by: str | None
    confidence: float
    n_resamples: int
    seed: int
    interval_method: str
    test: str
    adjustment: str
    notes: tuple[str, ...] = ()
    statistic: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [m.label for m in self.models]

    def pair(self, a: str, b: str) -> PairedComparison:
        """The comparison of models ``a`` and ``b`` (labels), oriented as asked (A − B)."""
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p
            if (p.a, p.b) == (b, a):
                return _flip(p)
        raise KeyError((a, b))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (inverse: :meth:`from_dict`)."""
        out = asdict(self)
        out["models"] = [m.to_dict() for m in self.models]
        out["pairs"] = [p.to_dict() for p in self.pairs]
        out["notes"] = list(self.notes)
        return {"record": "model-comparison", **out}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """Rebuild from :meth:`to_dict` (unknown keys are ignored)."""
        names = {f.name for f in fields(cls)}
        data = {k: v for k, v in data.items() if k in names}
        return cls(
            **{
                **data,
                "models": tuple(ModelEstimate(**m) for m in data["models"]),
                "pairs": tuple(PairedComparison(**p) for p in data["pairs"]),
                "notes": tuple(data.get("notes") or ()),
                "provenance": dict(data.get("provenance") or {}),
            }
        )

    def estimate_records(self) -> list[dict[str, Any]]:
        """One flat row per model (for a CSV)."""
        return [
            {"comparison": self.kind, "measure": self.measure, **m.to_dict(), "unit": self.unit,
             "confidence": self.confidence, "n_compared_items": self.n_items, "n_clusters": self.n_clusters,
             "cluster_by": self.cluster_by, "interval": self.interval_method, "seed": self.seed}
            for m in self.models
        ]

    def pair_records(self) -> list[dict[str, Any]]:
        """One flat row per pair of models (for a CSV)."""
        rows = []
        for p in self.pairs:
            row = p.to_dict()
            disc = row.pop("discordant") or {}
            row.update({f"n_{k}": v for k, v in disc.items()})
            row.update({"comparison": self.kind, "unit": self.unit, "confidence": self.confidence,
                        "adjustment": self.adjustment, "n_clusters": self.n_clusters, "cluster_by": self.cluster_by,
                        "interval": self.interval_method, "seed": self.seed})
            rows.append(row)
        return rows


def _flip(p: PairedComparison) -> PairedComparison:
    swap = {"a_only": "b_only", "b_only": "a_only", "a_higher": "b_higher", "b_higher": "a_higher"}
    disc = None if p.discordant is None else {swap.get(k, k): v for k, v in p.discordant.items()}
    return replace(
        p, a=p.b, b=p.a, estimate_a=p.estimate_b, estimate_b=p.estimate_a, difference=-p.difference,
        ci_low=None if p.ci_high is None else -p.ci_high, ci_high=None if p.ci_low is None else -p.ci_low,
        discordant=disc,
    )


@dataclass(frozen=True)
class ComparedQuantity:
    """What a comparison compares and how its numbers are shown.

    Attributes
    ----------
    kind : str
        :data:`KIND_STEREOTYPE`, :data:`KIND_VLM_SOFT`, … (recorded as :attr:`Comparison.kind`).
    measure : str
        What the estimates are, in words.
    binary : bool
        0/1 verdicts (exact McNemar test) or numbers (sign test of the paired differences).
    scale : float
        Estimates, differences and intervals are multiplied by it (100: shares as percent).
    unit : str
    reference : float
        The value of no bias.
    statistic : str or None
        The statistic's name where a measure has several (2AFC).
    """

    kind: str
    measure: str
    binary: bool
    scale: float = 100.0
    unit: str = "%"
    reference: float = 50.0
    statistic: str | None = None


@dataclass
class ModelItems:
    """One model's items, before matching: what :func:`compare_items` compares.

    Attributes
    ----------
    model_id, method : str
    own : float or None
        The result's own headline over all its items (recorded as ``own_estimate``).
    values : dict
        ``(item id, occurrence)`` → the item's value (None: the model could not score it), in the result's order.
    ties : dict
        The same keys → whether the item is a tie (counted in ``n_ties``).
    records : dict
        The same keys → the item's fields (a cluster is read from them).
    own_interval : (float or None, float or None) or None
        The interval the result's main summary shows for ``own`` (issue 28: one interval per statistic); shown
        in the comparison for this model when it compares the same statistic on the same items (its estimate
        there equals ``own``). None: not known (the comparison's own resampling is shown).
    """

    model_id: str
    method: str
    own: float | None
    values: dict[tuple[str, int], float | None]
    ties: dict[tuple[str, int], bool]
    records: dict[tuple[str, int], Mapping[str, Any]]
    own_interval: tuple[float | None, float | None] | None = None
