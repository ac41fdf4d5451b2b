"""Planted chat models for the 2AFC test of a chat model: answers that follow the BLS share of women."""

from __future__ import annotations

import re

from biastest.measures.twoafc.labor import load_occupations_bls
from biastest.models.dummy import hashed_unit
from biastest.spec import TwoAFCSpec

#: The occupation → share of women (0–1) of the shipped BLS table.
BLS = {r["occupation"]: r["pct_female"] / 100 for r in load_occupations_bls()}
OCCUPATIONS = "Occupations vs gender (Liang & Acuna 2020)"
FEMALE = {"woman", "female", "she", "her", "hers", "daughter", "girl", "sister"}


def shown(user: str) -> tuple[str, str, str]:
    """The target and the two options of a question of the default template."""
    target = re.search(r"^Occupation: (.*)$", user, re.M).group(1)
    a = re.search(r"^A\. (.*)$", user, re.M).group(1)
    b = re.search(r"^B\. (.*)$", user, re.M).group(1)
    return target, a, b


def planted_answer(user: str, seed: int, *, q: float, refuse: float = 0.0, refuse_targets: frozenset = frozenset(),
                   words: bool = True) -> str:
    """Refuse with ``refuse`` (always for ``refuse_targets``); else option A with ``q``; else the female cue with the
    target's BLS share. Answers alternate between a label and the cue word itself (both read by the parser)."""
    target, a, b = shown(user)
    u = [hashed_unit(int(seed or 0), user, j) for j in range(4)]
    if target in refuse_targets or u[0] < refuse:
        return "I cannot answer that."
    if u[1] < q:
        label = "A"
    else:
        female = "A" if a in FEMALE else "B"
        label = female if u[2] < BLS[target] else ("B" if female == "A" else "A")
    if words and u[3] < 0.5:
        return a if label == "A" else b
    return label


def small_spec(n: int = 12, pairs: int = 6) -> TwoAFCSpec:
    """The first ``n`` BLS occupations and ``pairs`` gendered cue pairs."""
    cue_pairs = [("woman", "man"), ("female", "male"), ("she", "he"), ("her", "him"), ("girl", "boy"),
                 ("sister", "brother"), ("daughter", "son"), ("hers", "his")][:pairs]
    return TwoAFCSpec(name="small occupations", targets=tuple(list(BLS)[:n]), cue_pairs=tuple(cue_pairs),
                      cue1_name="female", cue2_name="male")
