"""Case folding and term keys of the store's word index, matched exactly to the regex engine's IGNORECASE.

A term is looked up in the index of :mod:`biastest.store.view` by the folded word tokens every match of it
contains (:func:`term_keys`); short fields (terms) are compared by :func:`field_key`; on ASCII text the
word-bounded pattern of :func:`biastest.spec.term_regex` is decided by Arrow's RE2 engine
(:func:`ascii_term_pattern`).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["WORD", "ascii_term_pattern", "field_key", "fold", "plain_word", "term_keys"]

# Index keys must group exactly the strings that ``re.IGNORECASE`` treats as
# equal, character by character, so that the index never misses a row that
# the word-bounded regex would match. ``str.lower`` is not enough outside
# ASCII (e.g. the regex matches 'ſ' to 's' and 'İ' to 'i'), so non-ASCII text
# is mapped through the same simple lower-case mapping and extra case classes
# that the regex engine uses.
WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def _fold_tables() -> tuple[dict[int, int], frozenset[str]]:
    import _sre

    try:  # CPython's table of extra case-insensitive equivalences (e.g. s ~ ſ, i ~ ı)
        from re._casefix import _EXTRA_CASES  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - other interpreters
        _EXTRA_CASES = {}
    classes: dict[int, set[int]] = {}
    for lo, others in _EXTRA_CASES.items():
        members = {lo, *others}
        for m in list(members):
            members |= classes.get(m, set())
        for m in members:
            classes[m] = members
    rep: dict[int, int] = {}
    unsafe: set[str] = set()
    seen: set[int] = set()
    for members in classes.values():
        if id(members) in seen:
            continue
        seen.add(id(members))
        wordy = [m for m in members if chr(m).isalnum() or chr(m) == "_"]
        if 0 < len(wordy) < len(members):
            # A class with both word and non-word characters: map it to a
            # non-word member (tokens may only split, never merge) and send
            # terms that contain it to a full scan.
            target = min(m for m in members if m not in wordy)
            unsafe.update(chr(m) for m in members)
        else:
            target = min(members)
        for m in members:
            rep[m] = target
    table: dict[int, int] = {}
    for cp in range(0x110000):
        lo = _sre.unicode_tolower(cp)
        tgt = rep.get(lo, lo)
        if tgt != cp:
            table[cp] = tgt
    # Upper-case forms of unsafe characters are unsafe too.
    for cp, tgt in table.items():
        if chr(tgt) in unsafe:
            unsafe.add(chr(cp))
    return table, frozenset(unsafe)


def fold(text: str) -> str:
    """Case-fold ``text`` the way the regex engine's IGNORECASE compares it.

    ASCII text is simply lower-cased; other text is mapped character by
    character (same length), so word boundaries are kept.
    """
    if text.isascii():
        return text.lower()
    return text.translate(_fold_tables()[0])


def term_keys(term: str) -> tuple[str, ...] | None:
    """Index keys (folded word tokens) that every match of ``term`` contains.

    Returns None when the term cannot be looked up in the word index (it has
    no word characters, or characters whose case class mixes word and
    non-word characters); such a term is found by a full scan instead.
    """
    if not term.isascii() and any(ch in _fold_tables()[1] for ch in term):
        return None
    keys = tuple(WORD.findall(fold(term)))
    return keys or None


# On ASCII text the word-bounded pattern of :func:`biastest.spec.term_regex` is decided by Arrow's vectorised
# RE2 engine instead of a Python loop. RE2 has no look-behind, so the boundaries are spelled as "start or a
# non-word character" and "a non-word character or end" (the same answer to "is there a match?"), and ``\s`` /
# ``\w`` are spelled out as the ASCII characters that Python's Unicode ``\s`` / ``\w`` match.
_ASCII_WORD_CHARS = "".join(chr(i) for i in range(128) if re.fullmatch(r"\w", chr(i)))
_ASCII_SPACE_CLASS = "[" + "".join(f"\\x{i:02x}" for i in range(128) if re.fullmatch(r"\s", chr(i))) + "]+"
_ASCII_NONWORD_CLASS = "[^" + "".join(f"\\x{ord(c):02x}" for c in _ASCII_WORD_CHARS) + "]"


@lru_cache(maxsize=256)
def ascii_term_pattern(term: str) -> str | None:
    """RE2 pattern that finds ``term`` in ASCII text exactly where ``term_regex(term).search`` does.

    Returns None for a term that is not ASCII (or has no characters), which
    must be checked with :func:`biastest.spec.term_regex`. The pattern is
    lower-case: match it case-sensitively against ASCII text lower-cased
    (``pyarrow.compute.ascii_lower``), which is faster in RE2 than its
    case-insensitive mode and gives the same answer on ASCII text.
    """
    words = term.strip().lower().split()
    if not words or not term.isascii():
        return None
    body = _ASCII_SPACE_CLASS.join(
        "".join(c if c in _ASCII_WORD_CHARS else f"\\x{ord(c):02x}" for c in w) for w in words
    )
    return f"(?:^|{_ASCII_NONWORD_CLASS})(?:{body})(?:{_ASCII_NONWORD_CLASS}|$)"


def plain_word(term: str) -> bool:
    """Whether ``term`` is one ASCII word of word characters only.

    Such a term needs no regex check on ASCII rows: there the word index's
    tokens are exactly the maximal word runs, compared case-insensitively as
    the regex does. Any other term is checked on its candidate rows.
    """
    bare = term.strip()
    return bare.isascii() and WORD.fullmatch(bare) is not None


def field_key(value: str) -> str:
    """Key of a short field (a term) for exact, case-insensitive equality."""
    return fold(" ".join(str(value).split()))
