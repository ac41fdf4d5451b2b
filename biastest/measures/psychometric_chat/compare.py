"""Chat models' psychometric curves against each other: PSE per context and the difference of PSE shifts.

:func:`compare_psychometric_chat` — two or more :class:`~.result.PsychometricChatResult` on the same continuum
(stimuli matched by text and α) and contexts (matched by their text; a context not asked of every model is left
out and named). Every model's counts per context are refitted exactly as the measure fitted them (its sigmoid, its
own guess/lapse rate q: fitted, or fixed at its own position share) and **bootstrapped together**
(:func:`~biastest.stats.psychometric.shift.joint_pse_draws`): with the measure's default ``levels`` bootstrap the
same stimuli are drawn for every model and context (the stimuli are the shared sample: paired, as the measure's
own shift), otherwise each fit gets its own seeded generator. For model m and context c, ``PSE_m(c)``; its shift
from the reference context r (the first model's) ``S_m(c) = PSE_m(c) − PSE_m(r)``. Each added model B is compared
with the first, A:

    ΔPSE(c)   = PSE_B(c) − PSE_A(c)
    Δshift(c) = S_B(c) − S_A(c) = [PSE_B(c) − PSE_B(r)] − [PSE_A(c) − PSE_A(r)]

each with the percentile interval of the same expression over the joint bootstrap draws (draws where every PSE
it needs exists). A fit that is not ``"ok"`` gives no number (its status is named), never NaN; an interval from
fewer than two valid draws is not reported (:data:`~biastest.stats.psychometric.guess_lapse.MSG_GL_NO_INTERVAL`).
The reference context's shift is 0 by definition (no row). Seed: ``derived_seed(seed, 3)``, recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from biastest.errors import DataError
from biastest.measures.psychometric_chat.result import PsychometricChatResult
from biastest.measures.psychometric_chat.summary import derived_seed
from biastest.provenance import provenance
from biastest.stats.compare import model_labels
from biastest.stats.psychometric.fit import percentile_interval
from biastest.stats.psychometric.guess_lapse import MSG_GL_NO_INTERVAL
from biastest.stats.psychometric.shift import joint_pse_draws

__all__ = [
    "KIND_PSYCHOMETRIC_CHAT",
    "MSG_PC_BAD_RESULT",
    "MSG_PC_NO_COMMON_CONTEXT",
    "MSG_PC_NOT_SAME_CONTINUUM",
    "MSG_PC_TOO_FEW",
    "PsychometricComparison",
    "compare_psychometric_chat",
]

KIND_PSYCHOMETRIC_CHAT = "psychometric-chat-pse"

MSG_PC_TOO_FEW = "A comparison needs at least two psychometric results; got {n}."
MSG_PC_BAD_RESULT = "Result {index} is not a psychometric-chat result (got {type_name})."
MSG_PC_NOT_SAME_CONTINUUM = (
    "{label} was asked about another continuum than {first} (other stimuli or other α): the curves cannot be "
    "compared stimulus by stimulus. Ask every model the same continuum."
)
MSG_PC_NO_COMMON_CONTEXT = (
    "The reference context of {first} ({context!r}) was not asked of {label}: there is no shift to compare. Ask "
    "every model the same contexts."
)
MSG_PC_NO_FIT = "No PSE: the fit of {label} in this context is not full ({status})."


class PsychometricComparison(BaseModel):
    """The comparison (see the module docstring).

    Attributes
    ----------
    labels, model_ids : list of str
        One per model, the first is the baseline A.
    contexts : list of str
        The contexts every model was asked, in the first model's order; ``reference`` one of them.
    left_out : dict
        Label → the contexts of that model not asked of every model.
    per_model : list of dict
        Per model and context: ``pse`` with its interval, ``shift`` with its interval, the fit's status.
    rows : list of dict
        Per added model B and context: ΔPSE and Δshift (B − A) with intervals, their draws and a message.
    """

    model_config = ConfigDict(frozen=True)

    kind: str = KIND_PSYCHOMETRIC_CHAT
    labels: list[str]
    model_ids: list[str]
    contexts: list[str]
    reference: str
    left_out: dict[str, list[str]]
    per_model: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    sigmoid: str
    bootstrap: str
    paired: bool
    n_bootstrap: int
    confidence: float
    seed: int
    provenance: dict[str, Any] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _as_result(result: Any, index: int) -> PsychometricChatResult:
    if isinstance(result, PsychometricChatResult):
        return result
    if isinstance(result, Mapping):
        return PsychometricChatResult.from_dict(dict(result))
    raise DataError(MSG_PC_BAD_RESULT.format(index=index, type_name=type(result).__name__))


def _stimuli(result: PsychometricChatResult) -> list[tuple[str, float]]:
    return [(str(s["stimulus"]), float(s["alpha"])) for s in result.continuum["stimuli"]]


def _q(result: PsychometricChatResult) -> float | None:
    """The model's own q as its measure fitted it: fixed at its position share, or fitted (None)."""
    return result.guess_lapse_fixed if result.guess_lapse_mode == "position" else None


def _interval(draws: np.ndarray, confidence: float, n_bootstrap: int) -> tuple[list[float] | None, str | None]:
    ci = percentile_interval(draws, ci_level=confidence)
    if ci is None:
        return None, MSG_GL_NO_INTERVAL.format(valid=int(np.isfinite(draws).sum()), total=n_bootstrap)
    return [float(ci[0]), float(ci[1])], None


def _value(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _check_same(results: list[PsychometricChatResult], labels: list[str]) -> tuple[list[str], str]:
    first = results[0]
    for r, label in zip(results[1:], labels[1:], strict=True):
        if _stimuli(r) != _stimuli(first):
            raise DataError(MSG_PC_NOT_SAME_CONTINUUM.format(label=label, first=labels[0]))
    reference = next(s.context for s in first.summaries if s.reference)
    asked = [{s.context for s in r.summaries} for r in results]
    for r_asked, label in zip(asked[1:], labels[1:], strict=True):
        if reference not in r_asked:
            raise DataError(MSG_PC_NO_COMMON_CONTEXT.format(first=labels[0], context=reference, label=label))
    common = [s.context for s in first.summaries if all(s.context in a for a in asked)]
    return common, reference


def compare_psychometric_chat(results: Sequence[Any], *, seed: int, labels: Sequence[str] | None = None,
                              n_bootstrap: int | None = None, confidence: float | None = None
                              ) -> PsychometricComparison:
    """Compare chat models' PSEs and PSE shifts per context (see the module docstring).

    Parameters
    ----------
    results : sequence of PsychometricChatResult (or their ``to_dict()``)
        Two or more, on the same continuum; the first is the baseline.
    seed : int
        The joint bootstrap's seed (``derived_seed(seed, 3)`` is used and recorded).
    labels : sequence of str, optional
        Names of the models (default: their model ids, made unique).
    n_bootstrap, confidence : optional
        Default: the smallest ``n_bootstrap`` of the results, the first result's confidence.

    Raises
    ------
    DataError
        Fewer than two results, another continuum, the reference context missing from a model.
    """
    rs = [_as_result(r, i) for i, r in enumerate(results)]
    if len(rs) < 2:
        raise DataError(MSG_PC_TOO_FEW.format(n=len(rs)))
    names = model_labels(list(labels) if labels is not None else [r.served_model or r.model_id for r in rs])
    contexts, reference = _check_same(rs, names)
    b = int(n_bootstrap if n_bootstrap is not None else min(r.n_bootstrap for r in rs))
    level = float(confidence if confidence is not None else rs[0].confidence)
    used_seed = derived_seed(seed, 3)
    cells = [(m, c) for m in range(len(rs)) for c in contexts]
    by_context = [{s.context: s for s in r.summaries} for r in rs]
    datasets = []
    for m, c in cells:
        levels = by_context[m][c].levels
        datasets.append(([lv.alpha for lv in levels], [lv.k for lv in levels], [lv.n for lv in levels]))
    joint = joint_pse_draws(datasets, guess_lapses=[_q(rs[m]) for m, _ in cells], sigmoid=rs[0].sigmoid,
                            n_bootstrap=b, bootstrap=rs[0].bootstrap, seed=used_seed)
    where = {cell: i for i, cell in enumerate(cells)}
    status = {cell: joint.status[i] for cell, i in where.items()}

    def point(m: int, c: str) -> float:
        return joint.pse[where[(m, c)]]

    def draws(m: int, c: str) -> np.ndarray:
        return joint.draws[where[(m, c)]]

    per_model = []
    for m, label in enumerate(names):
        for c in contexts:
            pse_ci, _ = _interval(draws(m, c), level, b)
            row: dict[str, Any] = {"model": label, "context": c, "reference": c == reference,
                                   "fit_status": status[(m, c)], "pse": _value(point(m, c)), "pse_ci": pse_ci,
                                   "shift": None, "shift_ci": None}
            if c != reference:
                row["shift"] = _value(point(m, c) - point(m, reference))
                row["shift_ci"] = _interval(draws(m, c) - draws(m, reference), level, b)[0]
            per_model.append(row)
    rows = [_pair_row(names, m, c, reference, point, draws, status, level, b)
            for m in range(1, len(rs)) for c in contexts]
    left_out = {label: [s.context for s in r.summaries if s.context not in contexts]
                for label, r in zip(names, rs, strict=True)}
    return PsychometricComparison(
        labels=names, model_ids=[r.model_id for r in rs], contexts=contexts, reference=reference, left_out=left_out,
        per_model=per_model, rows=rows, sigmoid=rs[0].sigmoid, bootstrap=rs[0].bootstrap, paired=joint.paired,
        n_bootstrap=b, confidence=level, seed=used_seed,
        provenance=provenance(method="psychometric curves of chat models compared: ΔPSE and Δshift per context, "
                                     "joint percentile bootstrap of every model's and context's PSE", seed=used_seed))


def _pair_row(names: list[str], m: int, c: str, reference: str, point, draws, status: dict, level: float,
              b: int) -> dict[str, Any]:
    """Model m against the first in context c: ΔPSE and Δshift with their intervals (None and why, never NaN)."""
    a_label, b_label = names[0], names[m]
    row: dict[str, Any] = {"model_a": a_label, "model_b": b_label, "context": c, "reference": c == reference,
                           "pse_a": _value(point(0, c)), "pse_b": _value(point(m, c)), "pse_diff": None,
                           "pse_diff_ci": None, "shift_a": None, "shift_b": None, "shift_diff": None,
                           "shift_diff_ci": None, "message": None}
    bad = [(lab, status[(mm, cc)]) for lab, mm, cc in ((a_label, 0, c), (b_label, m, c), (a_label, 0, reference),
                                                       (b_label, m, reference)) if status[(mm, cc)] != "ok"]
    if status[(0, c)] == "ok" and status[(m, c)] == "ok":
        row["pse_diff"] = float(point(m, c) - point(0, c))
        row["pse_diff_ci"], row["message"] = _interval(draws(m, c) - draws(0, c), level, b)
    if c == reference:
        return row
    if bad:
        lab, st = bad[0]
        row["message"] = MSG_PC_NO_FIT.format(label=lab, status=st)
        return row
    shift_a, shift_b = point(0, c) - point(0, reference), point(m, c) - point(m, reference)
    row.update(shift_a=float(shift_a), shift_b=float(shift_b), shift_diff=float(shift_b - shift_a))
    d = (draws(m, c) - draws(m, reference)) - (draws(0, c) - draws(0, reference))
    row["shift_diff_ci"], why = _interval(d, level, b)
    row["message"] = row["message"] or why
    return row
