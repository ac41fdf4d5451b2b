"""Counts in words for every layer's messages: ``1 cluster``, ``2 clusters`` (never ``1 clusters``)."""

from __future__ import annotations

__all__ = ["IRREGULAR_PLURALS", "plural", "plural_word"]

#: Plurals that do not add "s" (every other word of a count takes "s").
IRREGULAR_PLURALS = {"analysis": "analyses", "child": "children", "person": "people",
                     "family": "families", "category": "categories", "this": "these", "is": "are", "was": "were",
                     "has": "have"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, the word in the plural unless ``n`` is 1: ``"1 cluster"``, ``"2 clusters"``, ``"0 pairs"``.

    ``many`` gives the plural form; else :data:`IRREGULAR_PLURALS`, else ``word + "s"`` (``"es"`` after s, x,
    z, ch, sh). The count is written with thousands separators.

    >>> plural(1, "cluster"), plural(2, "cluster"), plural(0, "pair"), plural(1500, "pair"), plural(3, "analysis")
    ('1 cluster', '2 clusters', '0 pairs', '1,500 pairs', '3 analyses')
    """
    return f"{n:,} {plural_word(n, word, many)}"


def plural_word(n: int, word: str, many: str | None = None) -> str:
    """The form of ``word`` that goes with ``n`` (see :func:`plural`), without the number."""
    if n == 1:
        return word
    if many is not None:
        return many
    if word in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[word]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"
