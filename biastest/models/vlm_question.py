"""What a vision-language model is asked, and the verdicts its answer is read into.

Both the in-process models and the endpoint adapter (:mod:`biastest.models.endpoint_vlm`) ask the test's
question and read the answer as one of the verdicts below; the vision-language measure
(:mod:`biastest.measures.vlm`) scores those verdicts. They live here, below both, so a model never imports
a measure.

A question may use the places ``{T1}`` and ``{T2}``: the target terms of attribute list 1 and 2, joined by
"or" when asked (:func:`fill_question`). A model that answers in text is asked in both orders
(:data:`ORDERS`): ``T1 first`` fills the places as written, ``T2 first`` swaps the two lists (the first place
gets list 2's terms), so each list is named first in one of the two questions.

Examples
--------
>>> from biastest.spec import BiasSpec
>>> spec = BiasSpec.from_terms(group1="man", group2="woman", stereotype1="doctor", antistereotype1="nurse")
>>> fill_question("Is this person a {T1} or a {T2}?", spec)
'Is this person a doctor or a nurse?'
>>> fill_question("Is this person a {T1} or a {T2}?", spec, order=ORDER_T2_FIRST)
'Is this person a nurse or a doctor?'
"""

from __future__ import annotations

import string
from typing import Any

from biastest.errors import MethodError

__all__ = [
    "MSG_BAD_QUESTION",
    "MSG_BAD_ORDER",
    "MSG_EMPTY_QUESTION",
    "ORDERS",
    "ORDER_T1_FIRST",
    "ORDER_T2_FIRST",
    "VERDICTS",
    "VERDICT_NEITHER",
    "VERDICT_T1",
    "VERDICT_T2",
    "VERDICT_TIE",
    "check_question",
    "fill_question",
    "lists_in_order",
]

VERDICT_T1 = "T1"
VERDICT_T2 = "T2"
VERDICT_NEITHER = "neither"
VERDICT_TIE = "tie"
#: Every verdict an image can get: the answer names list 1, list 2, neither, or (probabilities) both equally.
VERDICTS = (VERDICT_T1, VERDICT_T2, VERDICT_NEITHER, VERDICT_TIE)

#: The two orders a chat model is asked in: list 1's terms named first, or list 2's.
ORDER_T1_FIRST = "T1 first"
ORDER_T2_FIRST = "T2 first"
ORDERS = (ORDER_T1_FIRST, ORDER_T2_FIRST)
MSG_BAD_ORDER = "Unknown order {value!r}; choose one of: {choices}."

MSG_BAD_QUESTION = (
    "The question {question!r} can only use the places {{T1}} and {{T2}} (the target terms of group 1 and group 2), "
    "for example 'Is this person a {{T1}} or a {{T2}}?'."
)
MSG_EMPTY_QUESTION = "The question is empty. Type a question, for example 'Is this person a {T1} or a {T2}?'."


def check_question(question: str) -> str:
    """Validate a question (places ``{T1}``/``{T2}`` only); return it stripped.

    Raises
    ------
    MethodError
        :data:`MSG_EMPTY_QUESTION`, :data:`MSG_BAD_QUESTION`.
    """
    if not isinstance(question, str) or not question.strip():
        raise MethodError(MSG_EMPTY_QUESTION)
    q = question.strip()
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(q) if f is not None]
    except ValueError:
        raise MethodError(MSG_BAD_QUESTION.format(question=question)) from None
    if any(f not in ("T1", "T2") for f in fields):
        raise MethodError(MSG_BAD_QUESTION.format(question=question))
    return q


def lists_in_order(spec: Any, order: str = ORDER_T1_FIRST) -> tuple[list[str], list[str]]:
    """The two target lists in the order they are named: ``(first, second)`` (:data:`ORDERS`).

    Raises
    ------
    MethodError
        :data:`MSG_BAD_ORDER`.
    """
    if order not in ORDERS:
        raise MethodError(MSG_BAD_ORDER.format(value=order, choices=", ".join(ORDERS)))
    one, two = list(spec.attributes1), list(spec.attributes2)
    return (one, two) if order == ORDER_T1_FIRST else (two, one)


def fill_question(question: str, spec: Any, order: str = ORDER_T1_FIRST) -> str:
    """The question as asked: ``{T1}``/``{T2}`` become the lists' terms joined by "or".

    ``spec`` is a :class:`~biastest.spec.BiasSpec` (its ``attributes1`` and ``attributes2``). With ``order``
    ``T2 first`` the two lists swap places (:func:`lists_in_order`).
    """
    q = check_question(question)
    first, second = lists_in_order(spec, order)
    return q.format(T1=" or ".join(first), T2=" or ".join(second))
