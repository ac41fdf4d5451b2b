"""The paired comparison: match the models' items, then compare them item by item (interval, test, Holm).

The formulas and references are in :mod:`biastest.stats.compare`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from biastest.errors import DataError
from biastest.provenance import provenance
from biastest.stats.clusters import (
    MIN_CLUSTERS_FOR_INTERVAL,
    MSG_TOO_FEW_CLUSTERS,
    cluster_sign_test,
    design_effect,
)
from biastest.stats.compare.records import (
    ADJUST_HOLM,
    INTERVAL_CLUSTERED,
    INTERVAL_PAIRED,
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
    BootstrapSettings,
    check_settings,
    item_draws,
    mcnemar_exact,
    mean_interval,
    sign_test,
)
from biastest.stats.multiple import holm
from biastest.words import plural

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
MSG_RESAMPLED_MODELS = (
    "{labels}: the interval shown here is the comparison's resampling on the items every model scored, not the "
    "model's own result's interval (items were left out, so the estimate differs from its own headline)."
)

#: The record field that carries an item's cluster label into :func:`compare_items` (``cluster_by``).
CLUSTER_FIELD = "__cluster__"


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
    cmp = _compare_matrix(x, meta, quantity=quantity, settings=settings,
                          clusters=_cluster_labels(models[0], keys, cluster_by),
                          cluster_by=cluster_name or cluster_by)
    return with_own_intervals(cmp, [m.own_interval for m in models])


def with_own_intervals(cmp: Comparison, own: Sequence[tuple[float | None, float | None] | None]) -> Comparison:
    """Each model's row with its result's own interval where it compares the same statistic on the same items.

    One interval per statistic (issue 28): a model's estimate in the comparison is its result's headline when no
    item was left out (``estimate`` equals ``own_estimate``); then its row shows the interval the result's main
    summary shows (``interval_from_result``), not a second resampling of the same number. The differences keep
    the comparison's own paired interval (a statistic of its own). Rows whose items differ keep the comparison's
    interval, and a note says which.
    """
    rows, resampled = [], []
    for m, interval in zip(cmp.models, own, strict=True):
        same = (interval is not None and m.own_estimate is not None and m.n_excluded == 0 and m.n_unmatched == 0
                and abs(m.estimate - m.own_estimate) <= 1e-9 * max(1.0, abs(m.own_estimate)))
        if same:
            assert interval is not None
            rows.append(replace(m, ci_low=interval[0], ci_high=interval[1], interval_from_result=True))
        else:
            rows.append(m)
            if interval is not None:
                resampled.append(m.label)
    notes = list(cmp.notes)
    if resampled:
        notes.append(MSG_RESAMPLED_MODELS.format(labels=", ".join(resampled)))
    return replace(cmp, models=tuple(rows), notes=tuple(notes))


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
        low, high = mean_interval(x[:, j], clusters, **kw, draws=None if draws is None else draws[:, j])
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
        low, high = mean_interval(d, clusters, **kw, draws=None if draws is None else draws[:, i] - draws[:, j])
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
