"""Chat models against each other on the same targets: the house's paired comparison of P(cue 1 | target).

:func:`compare_twoafc_chat` — several :class:`~.result.TwoAFCChatResult` on the same specification, targets
matched by name: each target's value is its **P(cue 1 | target)** among its parseable answers (both orders, every
cue pair and sample; a target with no parseable answer for some model is left out for every model and counted),
compared with the paired machinery of :mod:`biastest.stats.compare` (paired bootstrap over targets of the
difference of mean P, exact sign test of the paired differences, Holm over the pairs). Targets are the units: the
cue pairs and orders are nested in them. The audit's report calls it for its ``twoafc-chat`` cells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biastest.errors import DataError
from biastest.measures.chat_twoafc.result import TwoAFCChatResult
from biastest.stats.compare import (
    MSG_BAD_RESULT,
    BootstrapSettings,
    ComparedQuantity,
    Comparison,
    ModelItems,
    check_settings,
    compare_items,
    keyed,
)

__all__ = ["KIND_TWOAFC_CHAT", "compare_twoafc_chat"]

#: The kind of a comparison of chat models' 2AFC answers (:attr:`biastest.stats.compare.Comparison.kind`).
KIND_TWOAFC_CHAT = "twoafc-chat-p-cue1"


def _as_result(result: Any, index: int) -> TwoAFCChatResult:
    if isinstance(result, TwoAFCChatResult):
        return result
    if isinstance(result, Mapping):
        return TwoAFCChatResult.from_dict(dict(result))
    raise DataError(MSG_BAD_RESULT.format(index=index, what="twoafc-chat", type_name=type(result).__name__))


def compare_twoafc_chat(results: Sequence[Any], *, seed: int, n_resamples: int = 10_000, confidence: float = 0.95,
                        labels: Sequence[str] | None = None, clusters: str | None = None) -> Comparison:
    """Compare chat models' P(cue 1 | target) on the same targets (see the module docstring).

    Parameters
    ----------
    results : sequence of TwoAFCChatResult (or their ``to_dict()``)
        Two or more, on the same targets.
    seed, n_resamples, confidence :
        Bootstrap settings (recorded).
    labels : sequence of str, optional
    clusters : None
        Accepted for the audit's call; the targets are the units (their cue pairs and orders are nested in them).

    Raises
    ------
    DataError
        Fewer than two results, no target in common, none answered parseably by all.
    """
    settings = check_settings(seed, n_resamples, confidence)
    models = []
    for i, raw in enumerate(results):
        r = _as_result(raw, i)
        keys = keyed([t.target.casefold() for t in r.targets])
        values = {k: (None if t.estimate is None else t.estimate / 100.0) for k, t in zip(keys, r.targets, strict=True)}
        records = {k: {"target": t.target} for k, t in zip(keys, r.targets, strict=True)}
        own = None if r.p_cue1_rate.estimate is None else r.p_cue1_rate.estimate / 100.0
        models.append(ModelItems(model_id=r.served_model or r.model_id, method=r.template["name"], own=own,
                                 values=values, ties=dict.fromkeys(keys, False), records=records))
    quantity = ComparedQuantity(kind=KIND_TWOAFC_CHAT, binary=False,
                                measure="P(cue 1 | target): mean over targets of the share of a target's parseable "
                                        "answers (every cue pair, both orders) that chose cue 1")
    return compare_items(models, labels=labels, what="targets", quantity=quantity,
                         settings=BootstrapSettings(*settings))
