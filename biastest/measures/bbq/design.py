"""Which BBQ questions are asked, in which answer order, and the exact requests.

* :func:`sample_items` — the chosen categories and context conditions; with ``n_items``, a seeded draw without
  replacement (``numpy.random.default_rng((seed, 1))`` per category, or over all, kept in file order).
* :func:`answer_orders` — the order the three answers are shown in, per question (see
  :data:`~biastest.measures.bbq.options.ORDER_SCHEMES`). An order is a tuple of the file's answer indices:
  ``(2, 0, 1)`` shows ``ans2`` as (A), ``ans0`` as (B), ``ans1`` as (C). ``balanced``: within each category and
  context condition the questions are shuffled (``default_rng((seed, 2))``) and dealt the six orders of the
  roles (target, non-target, unknown) in turn, so each role is shown in each position equally often (within
  one). ``shuffled``: each question's order is drawn by ``default_rng((seed, 3, category number, example_id))``.
  ``rotations``: the three rotations of the ``shuffled`` order.
* :func:`trials` — one :class:`Trial` per question × order × sample, each with its
  :class:`~biastest.models.chat_records.ChatRequest` (the prompt, the sampling settings, the seed, the sample).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biastest.measures.bbq.data import CATEGORIES, ROLES, BBQItem
from biastest.measures.bbq.prompt import render
from biastest.models.chat_records import ChatRequest

__all__ = ["ROLE_ORDERS", "Trial", "answer_orders", "sample_items", "trials"]

#: The six orders of the roles (target, non-target, unknown), as role indices.
ROLE_ORDERS = tuple(itertools.permutations(range(3)))
_SALT_SAMPLE, _SALT_BALANCE, _SALT_SHUFFLE = 1, 2, 3


def sample_items(items: Sequence[BBQItem], categories: Sequence[str], conditions: Sequence[str],
                 n_items: int | None, sample_per: str, seed: int) -> list[BBQItem]:
    """The questions asked, in file order (see the module docstring)."""
    pool = [it for it in items if it.category in categories and it.condition in conditions]
    if n_items is None:
        return pool
    rng = np.random.default_rng((seed, _SALT_SAMPLE))
    if sample_per == "overall":
        keep = set(rng.choice(len(pool), size=min(n_items, len(pool)), replace=False).tolist()) if pool else set()
        return [it for i, it in enumerate(pool) if i in keep]
    out: list[BBQItem] = []
    for category in categories:
        of = [it for it in pool if it.category == category]
        if of:
            keep = set(rng.choice(len(of), size=min(n_items, len(of)), replace=False).tolist())
            out.extend(it for i, it in enumerate(of) if i in keep)
    return out


def _shown(item: BBQItem, role_order: Sequence[int]) -> tuple[int, int, int]:
    """File indices of the answers in the order of the roles ``role_order`` (indices into :data:`ROLES`)."""
    return tuple(item.roles.index(ROLES[r]) for r in role_order)  # type: ignore[return-value]


def _shuffled(item: BBQItem, seed: int) -> tuple[int, int, int]:
    rng = np.random.default_rng((seed, _SALT_SHUFFLE, CATEGORIES.index(item.category) if item.category in CATEGORIES
                                 else len(CATEGORIES), item.example_id))
    return tuple(int(i) for i in rng.permutation(3))  # type: ignore[return-value]


def answer_orders(items: Sequence[BBQItem], scheme: str, seed: int) -> list[list[tuple[int, int, int]]]:
    """Per question, the orders it is shown in (one, or three for ``rotations``)."""
    if scheme == "shuffled":
        return [[_shuffled(it, seed)] for it in items]
    if scheme == "rotations":
        out = []
        for it in items:
            base = _shuffled(it, seed)
            out.append([base[k:] + base[:k] for k in range(3)])
        return out
    orders: list[list[tuple[int, int, int]]] = [[] for _ in items]
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        groups[(it.category, it.condition)].append(i)
    rng = np.random.default_rng((seed, _SALT_BALANCE))
    for key in sorted(groups):
        members = groups[key]
        for k, j in enumerate(rng.permutation(len(members)).tolist()):
            i = members[j]
            orders[i] = [_shown(items[i], ROLE_ORDERS[k % len(ROLE_ORDERS)])]
    return orders


@dataclass(frozen=True)
class Trial:
    """One request: a question, the order its answers are shown in, which sample, and the request itself."""

    item: BBQItem
    order: tuple[int, int, int]
    order_index: int
    sample: int
    request: ChatRequest


def trials(items: Sequence[BBQItem], template: str, scheme: str, *, seed: int, samples: int, temperature: float,
           max_tokens: int, top_logprobs: int) -> list[Trial]:
    """Every request of the run, question by question (orders, then samples)."""
    out = []
    for item, orders in zip(items, answer_orders(items, scheme, seed), strict=True):
        for k, order in enumerate(orders):
            prompt = render(template, item.context, item.question, [item.answers[i] for i in order])
            for s in range(samples):
                request = ChatRequest.ask(prompt, max_tokens=max_tokens, temperature=temperature, seed=seed,
                                          top_logprobs=top_logprobs, sample=s)
                out.append(Trial(item, order, k, s, request))
    return out
