"""The minimal-pair rule: two sentences of a pair differ only in the group term and the words that agree with it.

A sentence pair measures a preference between two groups only when nothing but the group changes; a pair
whose sentences also differ in another word ("Everyone *said* …" / "Everyone *agreed* …", "good" / "bad")
measures that word too. :func:`minimal_difference` compares the two sentences token by token and names every
difference that is neither the group term nor a word that agrees with it.

Tokens
------
A sentence is split into words and punctuation marks (:func:`tokens`):

* a **word** is a run of letters and digits, with inner hyphens and apostrophes (``African-American``,
  ``don't``); the possessive ``'s`` is a token of its own (``man's`` → ``man``, ``'s``), so that ``man's`` /
  ``woman's`` differ in the group term only;
* every other character that is not white space is a **punctuation** token of its own; curly quotes and
  apostrophes are read as straight ones;
* tokens are compared **case-insensitively** (``He`` at the start of a sentence equals ``he`` elsewhere);
  white space is never a token, so spacing is not a difference. A changed punctuation mark is a difference.

The rule
--------
The two token sequences are aligned (:class:`difflib.SequenceMatcher`, no junk heuristic). In each passage
where they differ, tokens inside an occurrence of the pair's group term (its own tokens, word-bounded, on
its own side) are set aside; what is left must be

* words replaced one for one by a word of the same agreement class (:data:`AGREEMENT_WORDS`: ``he`` → ``she``,
  ``his`` → ``her``, ``is`` → ``are``, ``a`` → ``an`` …), or
* in a passage that holds the group term, when the two sides leave unequal numbers of words, only words that
  may come or go with the group term (:data:`INSERTABLE`: articles, demonstratives, the possessive ``'s``:
  ``a man`` / ``women``) or that agree with a word of the other side.

Before aligning, the two sentences are also read word for word with their group terms set aside: when the
rest has as many tokens on each side and each is the same word or one of its agreement class, the pair is
minimal (``his … her`` / ``her … his`` aligns so, though not as one passage).

A pair **without two different group terms** (CrowS-Pairs names none; StereoSet names its target on both
sides and varies the filled-in blank) has no term to set aside and no place to anchor an inserted article:
there, insertable words may come or go anywhere, and one passage may differ beyond agreement words — the
term that varies, wherever it recurs (the same words replaced by the same words) — and it may be at most
:data:`MAX_VARYING_TOKENS` tokens long on each side. Every other difference is named, with the words of both
sides, by a :class:`Difference`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AGREEMENT_WORDS",
    "INSERTABLE",
    "MAX_VARYING_TOKENS",
    "MINIMAL_RULE",
    "Difference",
    "MinimalCheck",
    "format_differences",
    "minimal_difference",
    "tokens",
]

#: Words that may change with the group term, by agreement class: a word may be replaced only by a word of a
#: class it shares (``her`` is an object pronoun and a possessive determiner). Third-person pronouns agree with
#: the group's gender and number; articles and demonstratives with the term's first sound and number; forms of
#: *be*, *have* and *do* with its number (in the same tense). Nothing else — not a verb, an adjective or another
#: noun — may differ between the two sentences of a minimal pair.
AGREEMENT_WORDS: dict[str, frozenset[str]] = {
    "subject pronoun": frozenset({"he", "she", "they", "it"}),
    "object pronoun": frozenset({"him", "her", "them", "it"}),
    "possessive determiner": frozenset({"his", "her", "their", "its"}),
    "possessive pronoun": frozenset({"his", "hers", "theirs", "its"}),
    "reflexive pronoun": frozenset({"himself", "herself", "themselves", "themself", "itself"}),
    "article": frozenset({"a", "an", "the"}),
    "demonstrative": frozenset({"this", "that", "these", "those"}),
    "be, present": frozenset({"am", "is", "are"}),
    "be, past": frozenset({"was", "were"}),
    "have": frozenset({"has", "have"}),
    "do": frozenset({"does", "do"}),
    "possessive marker": frozenset({"'s", "'"}),
}
#: Words that may be present on one side only, next to the group term (``a man`` / ``women``, ``the man's`` /
#: ``her``): articles, demonstratives and the possessive marker.
INSERTABLE: frozenset[str] = (AGREEMENT_WORDS["article"] | AGREEMENT_WORDS["demonstrative"]
                              | AGREEMENT_WORDS["possessive marker"])
#: Longest varying term (tokens on each side) of a pair without two group terms (CrowS-Pairs, StereoSet).
MAX_VARYING_TOKENS = 4
#: The rule's name and version, recorded in a result's provenance (a change of the rule changes it).
MINIMAL_RULE = "minimal-pair-tokens-v1"

_TOKEN = re.compile(r"'s\b|\w+(?:(?:'(?!s\b)|-)\w+)*|[^\w\s]")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'", "“": '"', "”": '"', "„": '"'})
_CLASSES_OF: dict[str, frozenset[str]] = {}
for _name, _words in AGREEMENT_WORDS.items():
    for _w in _words:
        _CLASSES_OF[_w] = _CLASSES_OF.get(_w, frozenset()) | {_name}


def tokens(text: str) -> list[str]:
    """The tokens of ``text`` as the rule compares them (see the module docstring), case-folded.

    Examples
    --------
    >>> tokens("The man’s DOG—isn't it?")
    ['the', 'man', "'s", 'dog', '—', "isn't", 'it', '?']
    """
    return [t.casefold() for t in _raw_tokens(text)]


def _raw_tokens(text: str) -> list[str]:
    """The tokens of ``text`` as written (quotes straightened, case kept)."""
    return [m.group(0) for m in _TOKEN.finditer(text.translate(_QUOTES))]


@dataclass(frozen=True)
class Difference:
    """One passage where two sentences differ by more than the rule allows.

    Attributes
    ----------
    first, second : str
        The differing words of each sentence (its tokens as written, joined by spaces; "" when a side has none).
    why : {"changed", "added", "several passages", "too long"}
        ``changed``: words replaced by words outside their agreement class; ``added``: words on one side only
        that are not :data:`INSERTABLE`; ``several passages``: one of the varying passages of a pair without
        two group terms that has more than one (each is named); ``too long``: its one varying passage is
        longer than :data:`MAX_VARYING_TOKENS` tokens.
    """

    first: str
    second: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"first": self.first, "second": self.second, "why": self.why}


@dataclass(frozen=True)
class MinimalCheck:
    """The outcome of :func:`minimal_difference`.

    Attributes
    ----------
    differences : tuple of Difference
        Empty for a minimal pair.
    group_terms : bool
        Whether the pair was checked against two group terms (else: one varying passage allowed).
    """

    differences: tuple[Difference, ...]
    group_terms: bool

    @property
    def minimal(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {"minimal": self.minimal, "group_terms": self.group_terms,
                "differences": [d.to_dict() for d in self.differences]}


def _term_mask(toks: list[str], term: str) -> list[bool]:
    """Which tokens lie inside an occurrence of ``term`` (its own tokens, in order)."""
    mask = [False] * len(toks)
    want = tokens(term)
    if not want:
        return mask
    n = len(want)
    for i in range(len(toks) - n + 1):
        if toks[i:i + n] == want:
            for k in range(i, i + n):
                mask[k] = True
    return mask


def _agree(x: str, y: str) -> bool:
    return bool(_CLASSES_OF.get(x, frozenset()) & _CLASSES_OF.get(y, frozenset()))


def _passage_problem(ra: list[tuple[str, str]], rb: list[tuple[str, str]], pa: list[str], pb: list[str], *,
                     near_term: bool) -> Difference | None:
    """What is wrong with a differing passage (``pa``/``pb``) once group-term tokens are set aside (``ra``/``rb``).

    None when what is left is agreement: as many words on each side, each replaced by one of its class in
    order; or, on unequal sides in a passage that holds the group term (``near_term``), words that are
    insertable or agree with a word of the other side's passage (its group term included: ``his`` / ``her``
    where the pair names ``his`` / ``hers``).
    """
    if not ra and not rb:
        return None
    if len(ra) == len(rb):
        bad = [(wx, wy) for (x, wx), (y, wy) in zip(ra, rb, strict=True) if not _agree(x, y)]
        return Difference(" ".join(x for x, _ in bad), " ".join(y for _, y in bad), "changed") if bad else None
    extra_a = [w for x, w in ra if not near_term or (x not in INSERTABLE and not any(_agree(x, y) for y in pb))]
    extra_b = [w for y, w in rb if not near_term or (y not in INSERTABLE and not any(_agree(x, y) for x in pa))]
    if not extra_a and not extra_b:
        return None
    return Difference(" ".join(extra_a), " ".join(extra_b), "added")


def minimal_difference(first: str, second: str, group_term: str = "", counterpart: str = "") -> MinimalCheck:
    """Compare two sentences token by token under the minimal-pair rule (see the module docstring).

    Parameters
    ----------
    first, second : str
        The two sentences of a pair.
    group_term, counterpart : str
        The group term of each sentence; when either is empty or they are the same word, the pair is read as
        one without group terms (one varying passage allowed).

    Returns
    -------
    MinimalCheck

    Examples
    --------
    >>> minimal_difference("The man lost his keys.", "The woman lost her keys.", "man", "woman").minimal
    True
    >>> minimal_difference("Everyone said the man was good.", "Everyone agreed the woman was good.",
    ...                    "man", "woman").differences
    (Difference(first='said', second='agreed', why='changed'),)
    """
    oa, ob = _raw_tokens(first), _raw_tokens(second)
    ta, tb = [t.casefold() for t in oa], [t.casefold() for t in ob]
    with_terms = bool(group_term.strip() and counterpart.strip()) and tokens(group_term) != tokens(counterpart)
    ma = _term_mask(ta, group_term) if with_terms else [False] * len(ta)
    mb = _term_mask(tb, counterpart) if with_terms else [False] * len(tb)
    rest_a = [t for t, m in zip(ta, ma, strict=True) if not m]
    rest_b = [t for t, m in zip(tb, mb, strict=True) if not m]
    if with_terms and len(rest_a) == len(rest_b) and all(
            x == y or _agree(x, y) for x, y in zip(rest_a, rest_b, strict=True)):
        return MinimalCheck((), with_terms)  # one for one, word by word, once the terms are set aside
    sm = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False)
    out: list[Difference] = []
    varying: list[tuple[list[str], list[str], list[str], list[str]]] = []  # as written, then case-folded
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        ra = [(ta[i], oa[i]) for i in range(i1, i2) if not ma[i]]
        rb = [(tb[j], ob[j]) for j in range(j1, j2) if not mb[j]]
        near = not with_terms or any(ma[i1:i2]) or any(mb[j1:j2])
        problem = _passage_problem(ra, rb, ta[i1:i2], tb[j1:j2], near_term=near)
        if problem is None:
            continue
        if with_terms:
            out.append(problem)
        elif not any(ta[i1:i2] == a and tb[j1:j2] == b for _, _, a, b in varying):  # the varying term recurs
            varying.append((oa[i1:i2], ob[j1:j2], ta[i1:i2], tb[j1:j2]))
    if len(varying) > 1:
        out += [Difference(" ".join(a), " ".join(b), "several passages") for a, b, _, _ in varying]
    elif varying and max(len(varying[0][0]), len(varying[0][1])) > MAX_VARYING_TOKENS:
        out.append(Difference(" ".join(varying[0][0]), " ".join(varying[0][1]), "too long"))
    return MinimalCheck(tuple(out), with_terms)


def format_differences(differences: tuple[Difference, ...] | list[Difference], *, limit: int = 3) -> str:
    """The differences as text for a message: ``'said' → 'agreed'; '' → 'really'`` (at most ``limit``, then …)."""
    parts = [f"'{d.first}' → '{d.second}'" for d in differences[:limit]]
    if len(differences) > limit:
        parts.append("…")
    return "; ".join(parts)
