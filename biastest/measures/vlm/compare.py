"""Comparing vision-language models on the same images (matched by ``image_id``).

The measure-specific part of a comparison: each model's per-image values (the probability of the
stereotypical answer, or whether the verdict is the image group's stereotype), handed to the generic
paired machinery of :mod:`biastest.stats.compare` (paired bootstrap interval and sign test for the soft score,
exact McNemar test for the hard one, Holm-adjusted p-values). The formulas are in that module's docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biastest.errors import DataError
from biastest.measures.vlm.result import VLMResult
from biastest.stats.compare import (
    KIND_VLM_HARD,
    KIND_VLM_SOFT,
    MSG_BAD_RESULT,
    MSG_BAD_SCORE,
    BootstrapSettings,
    ComparedQuantity,
    Comparison,
    ModelItems,
    check_settings,
    compare_items,
    keyed,
)

__all__ = ["compare_vlm"]


def _as_vlm(result: Any, index: int) -> VLMResult:
    if isinstance(result, VLMResult):
        return result
    if isinstance(result, Mapping):
        return VLMResult.from_dict(dict(result))
    raise DataError(MSG_BAD_RESULT.format(index=index, what="vision-language", type_name=type(result).__name__))


def compare_vlm(
    results: Sequence[Any],
    *,
    seed: int,
    score: str = "soft",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    labels: Sequence[str] | None = None,
    cluster_by: str | None = None,
) -> Comparison:
    """Compare vision-language models' bias scores on the same images (matched by ``image_id``).

    ``score="soft"``: ``x_mi = P(stereotypical answer | image i)`` (the seed's soft score), paired bootstrap
    interval, sign test of the paired differences. ``score="hard"``: ``x_mi = 1[the model's verdict is the image
    group's stereotype]`` (neither/tie count 0 for a model in this process; for a chat model asked in both orders,
    an image without a verdict — refused, unparseable, or orders that disagree — is left out, as its own score
    leaves such answers out), exact McNemar test. Images a model gave no probability for (soft) or did not score (a
    run stopped early) are left out for every model and counted. See the module docstring.

    Parameters
    ----------
    results : sequence of VLMResult (or their ``to_dict()``)
    seed : int
    score : {"soft", "hard"}
    n_resamples, confidence, labels :
        As in :func:`biastest.stats.compare.compare_arrays`.
    cluster_by : str, optional
        An image field forming clusters (``"image_prompt"``, ``"image_term"`` …).

    Returns
    -------
    Comparison
    """
    if score not in ("soft", "hard"):
        raise DataError(MSG_BAD_SCORE.format(value=score))
    seed, n_resamples, confidence = check_settings(seed, n_resamples, confidence)
    items = []
    for i, r in enumerate(results):
        r = _as_vlm(r, i)
        images = list(r.images)
        keys = keyed([img.image_id for img in images])
        values: dict[tuple[str, int], float | None] = {}
        ties: dict[tuple[str, int], bool] = {}
        for k, img in zip(keys, images, strict=True):
            if score == "soft":
                values[k] = None if img.p_stereotyped is None else float(img.p_stereotyped)
            elif getattr(r, "orders", None) and img.outcome not in ("stereotyped", "anti-stereotyped"):
                # a chat model asked in both orders: an image with no choice (refused, unparseable) or whose orders
                # disagree has no verdict — left out for every model and counted, never read as "not stereotyped"
                values[k] = None
            else:
                values[k] = float(img.outcome == "stereotyped")
                ties[k] = img.outcome not in ("stereotyped", "anti-stereotyped")
        records = {k: img.to_dict() for k, img in zip(keys, images, strict=True)}
        for k in keyed([str(x.get("image_id", "")) for x in getattr(r, "not_scored", ()) or ()]):
            values.setdefault(k, None)  # a run stopped early: the image is there, without an answer
        own = r.soft if score == "soft" else r.hard
        same_level = own is not None and abs(own.confidence - confidence) < 1e-12
        items.append(ModelItems(model_id=r.model_id, method=r.method, own=None if own is None else own.score,
                                values=values, ties=ties, records=records,
                                own_interval=r.headline_interval(score) if same_level else None))
    if score == "soft":
        measure = "soft bias score: mean probability of the stereotypical answer, %"
    else:
        measure = "hard bias score: % of images whose answer is their group's stereotype"
    quantity = ComparedQuantity(kind=KIND_VLM_SOFT if score == "soft" else KIND_VLM_HARD, measure=measure,
                                binary=score == "hard")
    return compare_items(items, labels=labels, what="images", cluster_by=cluster_by,
                         cluster_name=None if cluster_by is None else cluster_by.replace("_", " "),
                         quantity=quantity, settings=BootstrapSettings(seed, n_resamples, confidence))
