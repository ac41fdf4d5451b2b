"""Comparing models on the same test items: paired differences, exact McNemar tests, Holm-adjusted p-values.

"Which model is less biased?" is a question about a *difference*, and two models tested on the **same** items
answer it item by item: a paired design, which takes the variation between items out of the comparison and is far
more sensitive than laying two independent intervals side by side (overlapping intervals do not mean "no
difference").

Matching
--------
Items are matched by identity: a sentence pair by its ``pair_id`` (a content hash; the k-th repeat of a pair with
the k-th), an image by its ``image_id``, a word by itself. With several models every number uses the items that
**every** model scored (the *common* items), so each estimate and each pairwise difference rests on the same
items. Items a model has and another lacks (``n_unmatched``) and common items a model could not score
(``n_excluded``: an excluded sentence pair) are left out and counted per model; nothing is imputed. A model's
estimate here can therefore differ from its own headline score (kept as ``own_estimate``) when items were left
out.

Language models (:func:`compare_stereotype`) and hard VQA verdicts (``compare_vlm``, ``score="hard"``)
------------------------------------------------------------------------------------------------------
``x_mi = 1`` if model m preferred the stereotyped side of item i, else 0 — a tie (and a VQA answer naming neither
target group) counts 0, as in the score's own definition (ties stay in the denominator as "not stereotyped"), and
is counted in ``n_ties``. The score is ``score_m = 100 · mean_i x_mi`` and, with
``b = #{i : x_Ai = 1, x_Bi = 0}`` and ``c = #{i : x_Ai = 0, x_Bi = 1}`` (the discordant items),

    Δ_AB = score_A − score_B = 100 · (b − c) / n.

**Test** — the exact McNemar test (McNemar 1947, Psychometrika 12:153–157; exact conditional form, Fagerland,
Lydersen & Laake 2013, BMC Med. Res. Methodol. 13:91): given the ``b + c`` discordant items, under H0 each is
equally likely to favour either model, so ``b ~ Binomial(b + c, 1/2)`` and

    p = min(1, 2 · P(X ≤ min(b, c))),  X ~ Binomial(b + c, 1/2).

Concordant items (both stereotyped, or neither) carry no information about the difference and do not enter the
test; with no discordant item there is nothing to test (``p_value`` None, :data:`TEST_NONE_NO_DISCORDANT`).
McNemar's test is the sign test of the per-item differences ``x_Ai − x_Bi ∈ {−1, 0, 1}``.

Soft VQA scores (``score="soft"``) and 2AFC
-------------------------------------------
``x_mi`` is a number: the probability of the stereotypical answer (VQA), or a word's PSE deviation (2AFC). The
difference of means has the paired bootstrap interval below, and the test is the same sign test of the paired
differences (:data:`TEST_SIGN_PAIRED`): ``p = min(1, 2 · P(X ≤ min(n₊, n₋)))``, ``X ~ Binomial(n₊ + n₋, 1/2)``,
with n₊ (n₋) the items on which A's value is higher (lower) than B's — an exact test of "A is as likely to be
above B as below it on an item", which needs no distributional assumption (as the single-model soft score's sign
test, :mod:`biastest.stats.proportion`).

Word embeddings — the WEAT effect sizes (:mod:`biastest.measures.weat.compare`) and the 2AFC PSEs
(:mod:`biastest.measures.twoafc.compare`) are compared by their measures with this machinery: resampled target
words, the same for every embedding. An effect size d is not a mean over words, so WEAT has no per-word sign test;
its test is the **paired bootstrap p-value** (:data:`TEST_BOOTSTRAP`, :func:`bootstrap_p_value`; the inversion of
the percentile interval, Efron & Tibshirani 1993 §15–16): ``p = min(1, 2 · min(1 + #{Δ* ≤ 0}, 1 + #{Δ* ≥ 0}) /
(B + 1))``, so ``p < 1 − confidence`` about when the interval excludes 0. The formulas are in those modules.

Interval (all kinds)
--------------------
A **paired percentile bootstrap** (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13): draw n
items with replacement, the *same* items for every model, recompute every model's statistic, and take the
``(1 ± confidence)/2`` quantiles of each Δ* (and of each model's own statistic for the forest plot). For a
difference of means this is the bootstrap of the per-item differences ``d_i = x_Ai − x_Bi``
(:func:`biastest.stats.bootstrap.bootstrap_mean_ci`; with one seed every call draws the same items, so the
per-model intervals and all the differences come from the same resamples).

With **clusters** (items that share a template, an attribute term, an image prompt … are not independent) whole
clusters are drawn instead — the cluster bootstrap of :mod:`biastest.stats.clusters` (Davison & Hinkley 1997 §3.8;
Field & Welsh 2007), ``Δ* = Σ_{c∈C*} (t_Ac − t_Bc) / Σ_{c∈C*} n_c`` with ``t_mc`` the sum of ``x_mi`` in cluster
c and ``n_c`` its size, with that module's small-cluster widening, and **no interval** below
:data:`~biastest.stats.clusters.MIN_CLUSTERS_FOR_INTERVAL` clusters (the reason is in :attr:`Comparison.notes`).
The tests above assume independent items; with clusters the test is the exact sign test on the **cluster means of
the paired differences** (:data:`TEST_CLUSTER_SIGN_PAIRED`,
:func:`biastest.stats.clusters.cluster_sign_test`; a cluster-level McNemar test: cluster k counts for A when
``b_k > c_k``), and the exact item-level test is still recorded (``p_exact``).

Many models
-----------
Every pair of the k models (k(k − 1)/2 comparisons), each with its own interval and test; the p-values are adjusted
for the whole family by Holm's step-down method (Holm 1979, Scand. J. Statist. 6:65–70): with the m p-values
sorted, ``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1) · p_(j))`` (:func:`biastest.stats.multiple.holm`). A
comparison without a test (no discordant item) is not counted in m and keeps ``p_adjusted`` None. Holm controls
the family-wise error rate under any dependence between the comparisons.

Examples
--------
>>> mcnemar_exact(8, 2)  # 10 discordant items, 8 favour model A
0.109375
>>> holm([0.01, 0.04, 0.03])
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, NamedTuple

import numpy as np

from biastest.errors import DataError
from biastest.provenance import provenance
from biastest.stats.bootstrap import bootstrap_mean_ci, check_confidence, check_n_resamples, check_seed
from biastest.stats.clusters import (
    MIN_CLUSTERS_FOR_INTERVAL,
    MSG_TOO_FEW_CLUSTERS,
    cluster_bootstrap_ci,
    cluster_sign_test,
    design_effect,
)
from biastest.stats.multiple import holm
from biastest.words import plural

__all__ = [
    "ADJUST_HOLM",
    "KIND_STEREOTYPE",
    "KIND_TWOAFC",
    "KIND_VLM_HARD",
    "KIND_VLM_SOFT",
    "KIND_WEAT",
    "TEST_BOOTSTRAP",
    "TEST_CLUSTER_SIGN_PAIRED",
    "TEST_MCNEMAR",
    "TEST_NONE_NO_DISCORDANT",
    "TEST_SIGN_PAIRED",
    "BootstrapSettings",
    "ComparedQuantity",
    "Comparison",
    "ModelEstimate",
    "ModelItems",
    "PairedComparison",
    "bootstrap_p_value",
    "check_labels",
    "check_settings",
    "compare_arrays",
    "CLUSTER_FIELD",
    "compare_items",
    "keyed",
    "comparison_provenance",
    "holm",
    "item_draws",
    "mcnemar_exact",
    "model_labels",
    "percentile_interval",
    "sign_test",
    "with_holm",
]

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
    "paired percentile bootstrap over target words (X and Y resampled within themselves, the same words for every "
    "embedding; attribute words fixed), seeded"
)

MSG_TOO_FEW_MODELS = "A comparison needs at least two models; got {n}."
MSG_NOT_SAME_ITEMS = (
    "These results share no test items ({what}): a comparison needs the models to be tested on the same items. "
    "Run every model on the same test data."
)
MSG_NOTHING_COMMON = (
    "No item was scored by every model ({n_common} items in common; each was left out by at least one model), so "
    "there is nothing to compare."
)
MSG_BAD_LABELS = "Give one label per model ({n_models} models, {n_labels} labels), each different."
MSG_BAD_SCORE = "Unknown score '{value}'. Choose 'soft' (probabilities) or 'hard' (verdicts)."
MSG_BAD_RESULT = "Item {index} is not a {what} result (got {type_name})."
MSG_BADCLUSTER_FIELD = "The items have no field '{field}' to form clusters from. Available: {choices}."
MSG_NOT_SCORED = "not scored ({reason})"

CHUNK_ELEMENTS = 2_000_000
"""At most this many numbers are drawn per block of bootstrap resamples (bounds the memory of the draws)."""
#: The record field that carries an item's cluster label into :func:`compare_items` (``cluster_by``).
CLUSTER_FIELD = "__cluster__"


# ----------------------------------------------------------------------------- records
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


# ----------------------------------------------------------------------------- the statistics
def sign_test(n_plus: int, n_minus: int) -> float | None:
    """Exact two-sided sign test: ``p = min(1, 2 · P(X ≤ min(n₊, n₋)))``, ``X ~ Binomial(n₊ + n₋, 1/2)``.

    None when ``n₊ + n₋ == 0`` (nothing to test). Computed from the binomial distribution function; equal to
    ``scipy.stats.binomtest(n₊, n₊ + n₋, 0.5).pvalue`` (the distribution is symmetric).
    """
    from scipy.stats import binom

    n_plus, n_minus = int(n_plus), int(n_minus)
    n = n_plus + n_minus
    if n == 0:
        return None
    return float(min(1.0, 2.0 * binom.cdf(min(n_plus, n_minus), n, 0.5)))


def mcnemar_exact(b: int, c: int) -> float | None:
    """Exact two-sided McNemar p-value of ``b`` and ``c`` discordant items (McNemar 1947, exact form).

    ``p = min(1, 2 · P(X ≤ min(b, c)))``, ``X ~ Binomial(b + c, 1/2)``: the sign test of the discordant items.
    None when ``b + c == 0`` (no discordant item: nothing to test).

    Examples
    --------
    >>> mcnemar_exact(3, 3), mcnemar_exact(0, 0)
    (1.0, None)
    """
    return sign_test(b, c)


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    """``[quantile(draws, α/2), quantile(draws, 1 − α/2)]``, α = 1 − confidence (linear interpolation)."""
    alpha = 1.0 - confidence
    low, high = np.quantile(np.asarray(draws, dtype=np.float64), [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided paired bootstrap p-value of resampled differences against 0.

    ``p = min(1, 2 · min(1 + #{Δ* ≤ 0}, 1 + #{Δ* ≥ 0}) / (B + 1))`` (Efron & Tibshirani 1993 §15–16).
    """
    d = np.asarray(differences, dtype=np.float64)
    below = int(np.count_nonzero(d <= 0))
    above = int(np.count_nonzero(d >= 0))
    return float(min(1.0, 2.0 * (1 + min(below, above)) / (d.size + 1)))


def item_draws(values: np.ndarray, *, seed: int, n_resamples: int) -> np.ndarray:
    """Bootstrap means of every column of ``values`` (n, k), the same resampled rows for every column.

    Each resample draws ``rng.integers(0, n, size=n)`` (``numpy.random.default_rng(seed)``), in the order
    :func:`biastest.stats.bootstrap.bootstrap_mean_ci` draws them, so a column's draws are exactly that function's
    for the column alone (the per-model intervals) and the difference of two columns' draws is its draws for the
    per-item differences (the intervals of the differences): one pass instead of one per model and per pair.

    Returns
    -------
    ndarray (n_resamples, k)
    """
    x = np.asarray(values, dtype=np.float64)
    n, k = x.shape
    rng = np.random.default_rng(seed)
    out = np.empty((n_resamples, k), dtype=np.float64)
    rows = max(1, CHUNK_ELEMENTS // max(1, n * k))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = x[idx].sum(axis=1) / n
    return out


def _interval(values: np.ndarray, clusters: list[Any] | None, *, seed: int, n_resamples: int,
              confidence: float, draws: np.ndarray | None = None) -> tuple[float | None, float | None]:
    """Bootstrap interval of the mean of ``values``: items (from ``draws`` when given), or whole clusters (None
    below the minimum)."""
    if clusters is None:
        if draws is not None:
            return percentile_interval(draws, confidence)
        ci = bootstrap_mean_ci(values, seed=seed, n_resamples=n_resamples, confidence=confidence)
        return ci.low, ci.high
    if len(set(clusters)) < MIN_CLUSTERS_FOR_INTERVAL:
        return None, None
    cci = cluster_bootstrap_ci(values, clusters, seed=seed, n_resamples=n_resamples, confidence=confidence)
    return cci.low, cci.high


# ----------------------------------------------------------------------------- labels and items
def model_labels(ids: Sequence[str], methods: Sequence[str] | None = None) -> list[str]:
    """Unique display labels: the model id; ``id (method)`` where ids repeat; then ``#2, #3 …``.

    Examples
    --------
    >>> model_labels(["gpt2", "bert", "gpt2"], ["causal-sum", "pll-unmodified", "causal-diff-span"])
    ['gpt2 (causal-sum)', 'bert', 'gpt2 (causal-diff-span)']
    """
    ids = [str(i) for i in ids]
    methods = [str(m) for m in methods] if methods is not None else [""] * len(ids)
    labels = [i if ids.count(i) == 1 or not m else f"{i} ({m})" for i, m in zip(ids, methods, strict=True)]
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if labels.count(lab) == 1 else f"{lab} #{seen[lab]}")
    return out


def check_labels(labels: Sequence[str] | None, default: list[str]) -> list[str]:
    """The models' display labels: ``labels`` when given (one per model, each different), else ``default``.

    Parameters
    ----------
    labels : sequence of str, optional
        The caller's labels.
    default : list of str
        One label per model (e.g. from :func:`model_labels`); its length is the number of models.

    Returns
    -------
    list of str

    Raises
    ------
    DataError
        :data:`MSG_BAD_LABELS`: not one label per model, or two the same.
    """
    if labels is None:
        return default
    labels = [str(x) for x in labels]
    if len(labels) != len(default) or len(set(labels)) != len(labels):
        raise DataError(MSG_BAD_LABELS.format(n_models=len(default), n_labels=len(labels)))
    return labels


class BootstrapSettings(NamedTuple):
    """The seeded bootstrap of a comparison (checked by :func:`check_settings`; unpacks as a tuple)."""

    seed: int
    n_resamples: int
    confidence: float


def check_settings(seed: Any, n_resamples: Any, confidence: Any) -> BootstrapSettings:
    """The bootstrap settings of a comparison, checked with the project's bound messages.

    Parameters
    ----------
    seed : int
        Recorded; every resample comes from ``numpy.random.default_rng(seed)``.
    n_resamples : int
    confidence : float
        In (0, 1).

    Returns
    -------
    BootstrapSettings

    Raises
    ------
    DataError
        A setting out of its bounds (:mod:`biastest.stats.bootstrap`'s messages).
    """
    return BootstrapSettings(check_seed(seed), check_n_resamples(n_resamples), check_confidence(confidence))


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
    """

    model_id: str
    method: str
    own: float | None
    values: dict[tuple[str, int], float | None]
    ties: dict[tuple[str, int], bool]
    records: dict[tuple[str, int], Mapping[str, Any]]


def keyed(ids: Sequence[str]) -> list[tuple[str, int]]:
    """(id, occurrence) keys: the k-th repeat of an id is matched with the k-th repeat in another result.

    >>> keyed(["a", "b", "a"])
    [('a', 1), ('b', 1), ('a', 2)]
    """
    seen: dict[str, int] = {}
    out = []
    for i in ids:
        seen[i] = seen.get(i, 0) + 1
        out.append((str(i), seen[i]))
    return out


def _cluster_labels(items: ModelItems, keys: Sequence[tuple[str, int]], cluster_by: str | None) -> list[Any] | None:
    if cluster_by is None:
        return None
    first = next(iter(items.records.values()), {})
    if cluster_by not in first:
        raise DataError(MSG_BADCLUSTER_FIELD.format(field=cluster_by, choices=", ".join(sorted(first))))
    return [str(items.records[k][cluster_by]).strip() for k in keys]


def compare_items(
    models: Sequence[ModelItems],
    *,
    labels: Sequence[str] | None,
    what: str,
    quantity: ComparedQuantity,
    settings: BootstrapSettings,
    cluster_by: str | None = None,
    cluster_name: str | None = None,
) -> Comparison:
    """Match the models' items, then compare them on the items every model scored.

    Items are matched by key; the common items keep the first model's order, and an item any model could not
    score is left out for all and counted per model (``n_excluded``; ``n_unmatched`` for the items another model
    lacks). The comparison itself is :func:`compare_arrays`' (paired bootstrap, the item or cluster test, Holm).

    Parameters
    ----------
    models : sequence of ModelItems
        Two or more.
    labels : sequence of str, optional
        Display names (default: :func:`model_labels` of the ids and methods).
    what : str
        The items, in words (for the message when the models share none).
    quantity : ComparedQuantity
    settings : BootstrapSettings
        Checked (:func:`check_settings`).
    cluster_by : str, optional
        The item field that holds each item's cluster (read from the first model's records).
    cluster_name : str, optional
        What the clusters are called in the comparison (default ``cluster_by``).

    Returns
    -------
    Comparison

    Raises
    ------
    DataError
        Fewer than two models, no item in common, nothing scored by all, bad labels or cluster field.
    """
    if len(models) < 2:
        raise DataError(MSG_TOO_FEW_MODELS.format(n=len(models)))
    labels = check_labels(labels, model_labels([m.model_id for m in models], [m.method for m in models]))
    common = set(models[0].values)
    for m in models[1:]:
        common &= set(m.values)
    if not common:
        raise DataError(MSG_NOT_SAME_ITEMS.format(what=what))
    order = [k for k in models[0].values if k in common]  # the first result's order
    keys = [k for k in order if all(m.values[k] is not None for m in models)]
    if not keys:
        raise DataError(MSG_NOTHING_COMMON.format(n_common=len(order)))
    x = np.array([[m.values[k] for m in models] for k in keys], dtype=np.float64)
    meta = [
        {
            "label": label,
            "model_id": m.model_id,
            "method": m.method,
            "n_items": len(m.values),
            "n_excluded": sum(1 for k in order if m.values[k] is None),
            "n_unmatched": len(m.values) - len(order),
            "n_ties": sum(1 for k in keys if m.ties.get(k, False)),
            "own_estimate": m.own,
        }
        for m, label in zip(models, labels, strict=True)
    ]
    return _compare_matrix(x, meta, quantity=quantity, settings=settings,
                           clusters=_cluster_labels(models[0], keys, cluster_by),
                           cluster_by=cluster_name or cluster_by)


def compare_arrays(
    values: np.ndarray,
    *,
    labels: Sequence[str],
    seed: int,
    binary: bool,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    clusters: Sequence[Any] | None = None,
    cluster_by: str | None = None,
    kind: str = "values",
    measure: str = "mean value",
    scale: float = 100.0,
    unit: str = "%",
    reference: float = 50.0,
) -> Comparison:
    """Compare the columns of an (items × models) array of matched values (the core of every comparison).

    Parameters
    ----------
    values : ndarray (n, k)
        One row per item (already matched), one column per model: 0/1 indicators (``binary``) or numbers.
    labels : sequence of str
        One unique label per column.
    seed, n_resamples, confidence :
        Bootstrap settings.
    binary : bool
        0/1 verdicts (exact McNemar test) or numbers (sign test of the paired differences).
    clusters : sequence, optional
        One cluster label per item (cluster bootstrap and the sign test on cluster means).
    cluster_by : str, optional
        What the clusters are (recorded).
    kind, measure, scale, unit, reference :
        Recorded; estimates and differences are multiplied by ``scale``.

    Returns
    -------
    Comparison
    """
    settings = check_settings(seed, n_resamples, confidence)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise DataError(MSG_TOO_FEW_MODELS.format(n=1 if x.ndim < 2 else x.shape[1]))
    if x.shape[0] == 0:
        raise DataError(MSG_NOTHING_COMMON.format(n_common=0))
    labels = check_labels(labels, [f"model {j + 1}" for j in range(x.shape[1])])
    meta = [{"label": lab, "model_id": lab, "method": "", "n_items": x.shape[0], "n_excluded": 0, "n_unmatched": 0,
             "n_ties": 0, "own_estimate": None} for lab in labels]
    quantity = ComparedQuantity(kind=kind, measure=measure, binary=binary, scale=scale, unit=unit,
                                reference=reference)
    return _compare_matrix(x, meta, quantity=quantity, settings=settings,
                           clusters=None if clusters is None else [str(c) for c in clusters],
                           cluster_by=cluster_by or ("clusters" if clusters is not None else None))


def _compare_matrix(
    x: np.ndarray,
    meta: Sequence[Mapping[str, Any]],
    *,
    quantity: ComparedQuantity,
    settings: BootstrapSettings,
    clusters: list[Any] | None,
    cluster_by: str | None,
) -> Comparison:
    seed, n_resamples, confidence = settings
    binary, scale, statistic = quantity.binary, quantity.scale, quantity.statistic
    n_clusters = None if clusters is None else len(set(clusters))
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    draws = item_draws(x, seed=seed, n_resamples=n_resamples) if clusters is None else None
    rows = []
    for j, m in enumerate(meta):
        low, high = _interval(x[:, j], clusters, **kw, draws=None if draws is None else draws[:, j])
        rows.append(ModelEstimate(
            **m,
            estimate=scale * float(x[:, j].mean()),
            ci_low=None if low is None else scale * low,
            ci_high=None if high is None else scale * high,
        ))
    labels = [r.label for r in rows]
    pairs = []
    for i, j in itertools.combinations(range(len(meta)), 2):
        d = x[:, i] - x[:, j]
        low, high = _interval(d, clusters, **kw, draws=None if draws is None else draws[:, i] - draws[:, j])
        if binary:
            a, b = x[:, i] > 0.5, x[:, j] > 0.5
            disc = {
                "both": int(np.count_nonzero(a & b)),
                "a_only": int(np.count_nonzero(a & ~b)),
                "b_only": int(np.count_nonzero(~a & b)),
                "neither": int(np.count_nonzero(~a & ~b)),
            }
            p_exact = mcnemar_exact(disc["a_only"], disc["b_only"])
            item_test = TEST_MCNEMAR
        else:
            disc = {"a_higher": int(np.count_nonzero(d > 0)), "b_higher": int(np.count_nonzero(d < 0)),
                    "equal": int(np.count_nonzero(d == 0))}
            p_exact = sign_test(disc["a_higher"], disc["b_higher"])
            item_test = TEST_SIGN_PAIRED
        deff = None
        if clusters is None:
            p_value, test = p_exact, item_test
        else:
            p_value = cluster_sign_test(d, clusters, null=0.0)[0]
            test = TEST_CLUSTER_SIGN_PAIRED
            deff = design_effect(d, clusters)
        if p_value is None:
            test = TEST_NONE_NO_DISCORDANT
        pairs.append(
            PairedComparison(
                a=labels[i],
                b=labels[j],
                estimate_a=rows[i].estimate,
                estimate_b=rows[j].estimate,
                difference=scale * float(d.mean()),
                ci_low=None if low is None else scale * low,
                ci_high=None if high is None else scale * high,
                p_value=p_value,
                test=test,
                p_exact=p_exact,
                p_adjusted=None,
                discordant=disc,
                n_items=int(x.shape[0]),
                design_effect=deff,
            )
        )
    notes = []
    if n_clusters is not None and n_clusters < MIN_CLUSTERS_FOR_INTERVAL:
        notes.append(MSG_TOO_FEW_CLUSTERS.format(
                items=plural(int(x.shape[0]), "item"), clusters=plural(n_clusters, "independent cluster"),
                cluster_by=cluster_by, minimum=MIN_CLUSTERS_FOR_INTERVAL))
    if clusters is not None:
        family = TEST_CLUSTER_SIGN_PAIRED
    else:
        family = TEST_MCNEMAR if binary else TEST_SIGN_PAIRED
    return Comparison(
        kind=quantity.kind,
        measure=quantity.measure,
        unit=quantity.unit,
        reference=quantity.reference,
        models=tuple(rows),
        pairs=tuple(with_holm(pairs)),
        n_items=int(x.shape[0]),
        n_clusters=n_clusters,
        cluster_by=cluster_by,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        interval_method=INTERVAL_CLUSTERED if clusters is not None else INTERVAL_PAIRED,
        test=family,
        adjustment=ADJUST_HOLM,
        notes=tuple(notes),
        statistic=statistic,
        provenance=comparison_provenance(
            quantity.kind, seed=seed, n_resamples=n_resamples, confidence=confidence, cluster_by=cluster_by,
            statistic=statistic,
            models=[{"label": r.label, "model_id": r.model_id, "method": r.method} for r in rows]),
    )


def with_holm(pairs: Sequence[PairedComparison]) -> list[PairedComparison]:
    """The pairs with ``p_adjusted`` set: Holm's step-down adjustment of their ``p_value`` over the family.

    Parameters
    ----------
    pairs : sequence of PairedComparison
        Every pairwise comparison of one :class:`Comparison` (a pair without a test keeps ``p_adjusted`` None).

    Returns
    -------
    list of PairedComparison
    """
    adjusted = holm([p.p_value for p in pairs])
    return [replace(p, p_adjusted=q) for p, q in zip(pairs, adjusted, strict=True)]


def comparison_provenance(kind: str, **fields_: Any) -> dict[str, Any]:
    """The provenance of a comparison: :func:`biastest.provenance.provenance` with ``comparison=kind``.

    Parameters
    ----------
    kind : str
        The comparison's kind (:data:`KIND_STEREOTYPE` …).
    **fields_
        What else to record (settings, models, words …).

    Returns
    -------
    dict
    """
    return provenance(comparison=kind, **fields_)
