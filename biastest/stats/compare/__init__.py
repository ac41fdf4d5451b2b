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
**Each model's own interval** is its result's — the one its main summary shows, with that result's method
(cluster or stratified bootstrap, jackknife for WEAT d) — wherever the comparison has the same statistic on the
same items (its estimate equals the result's headline: nothing left out), marked ``interval_from_result``
(:func:`with_own_intervals`; issue 28, one interval per statistic). Where items were left out, the model's
estimate differs from its own headline and the resampling below gives its interval, with a note. The intervals of
the **differences** are statistics of their own:
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

The package: :mod:`~biastest.stats.compare.records` (the named methods and the records),
:mod:`~biastest.stats.compare.resampling` (the tests, the paired bootstrap and its settings) and
:mod:`~biastest.stats.compare.paired` (matching the items and comparing them); every name is importable from here.
"""

from __future__ import annotations

from biastest.stats.compare.paired import (
    CLUSTER_FIELD,
    MSG_BAD_LABELS,
    MSG_BAD_RESULT,
    MSG_BAD_SCORE,
    MSG_BADCLUSTER_FIELD,
    MSG_NOT_SAME_ITEMS,
    MSG_NOT_SCORED,
    MSG_NOTHING_COMMON,
    MSG_RESAMPLED_MODELS,
    MSG_TOO_FEW_MODELS,
    check_labels,
    compare_arrays,
    compare_items,
    comparison_provenance,
    keyed,
    model_labels,
    with_holm,
    with_own_intervals,
)
from biastest.stats.compare.records import (
    ADJUST_HOLM,
    INTERVAL_CLUSTERED,
    INTERVAL_PAIRED,
    INTERVAL_WEAT,
    KIND_STEREOTYPE,
    KIND_TWOAFC,
    KIND_VLM_HARD,
    KIND_VLM_SOFT,
    KIND_WEAT,
    TEST_BOOTSTRAP,
    TEST_CLUSTER_SIGN_PAIRED,
    TEST_MCNEMAR,
    TEST_NONE_NO_DISCORDANT,
    TEST_SIGN_PAIRED,
    ComparedQuantity,
    Comparison,
    ModelEstimate,
    ModelItems,
    PairedComparison,
)
from biastest.stats.compare.resampling import (
    CHUNK_ELEMENTS,
    BootstrapSettings,
    bootstrap_p_value,
    check_settings,
    item_draws,
    mcnemar_exact,
    percentile_interval,
    sign_test,
)
from biastest.stats.multiple import holm

__all__ = [
    "ADJUST_HOLM",
    "CHUNK_ELEMENTS",
    "INTERVAL_CLUSTERED",
    "INTERVAL_PAIRED",
    "INTERVAL_WEAT",
    "MSG_BADCLUSTER_FIELD",
    "MSG_BAD_LABELS",
    "MSG_BAD_RESULT",
    "MSG_BAD_SCORE",
    "MSG_NOTHING_COMMON",
    "MSG_NOT_SAME_ITEMS",
    "MSG_NOT_SCORED",
    "MSG_RESAMPLED_MODELS",
    "MSG_TOO_FEW_MODELS",
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
    "with_own_intervals",
]
