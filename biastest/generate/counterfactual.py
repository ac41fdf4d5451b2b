"""Templates and counterfactuals of generated sentences.

A generated sentence for group term ``t`` becomes

* a **template**: every occurrence of ``t`` replaced by ``[T]`` and every
  other word that changes with it (agreeing words, an ``a``/``an`` article)
  replaced by ``[R]`` — the format of the original BiasTestGPT pair files;
* a **counterfactual**: the same sentence about the counterpart term
  ``t'`` (the spec's positional counterpart), built by rules or by a
  validated "minimal rewrite" from a language model.

Rules (:func:`swap_counterfactual`)
-----------------------------------
1. Every occurrence of the group term (escaped, word-bounded,
   case-insensitive; multi-word terms allowed) is replaced by the
   counterpart, with the case of the occurrence (``Man`` → ``Woman``,
   ``MAN`` → ``WOMAN``; a counterpart written with capitals, such as a name,
   keeps them).
2. **Only when the pair is a gender pair** — both terms have a known,
   opposite gender in :data:`MALE_TO_FEMALE` (``man``/``woman``,
   ``he``/``she``, ``father``/``mother``, ``boy``/``girl`` ...) — the
   pronouns of the *source* term's gender are swapped to the other gender
   (``he``/``she``, ``him``/``her``, ``his``/``her``/``hers``,
   ``himself``/``herself``), and when the group term is itself a pronoun
   the grammatical counterpart is used instead of the spec's (``His book``
   → ``Her book``, not ``Hers book``). Pronouns of the other gender are never
   touched (``She thanked him`` → ``He thanked him``), and gendered *nouns*
   other than the group term are kept (``The father helped his wife`` →
   ``The mother helped her wife``): they usually name other people.
   Measured on the 3,997 original BiasTestGPT pairs (``../shared/data``),
   this reproduces 666 of the 687 gender-pair counterfactuals ChatGPT wrote
   (97 %, ignoring spacing); swapping gendered nouns as well reproduced 661,
   swapping nothing but the term 423. Names and other terms of unknown
   gender get no agreement swaps: for those, use the LLM rewrite.
3. Ambiguous pronouns are resolved by the next word: ``her`` before a
   content word is possessive (→ ``his``), otherwise an object (→ ``him``);
   ``his`` before a content word → ``her``, otherwise → ``hers``. Double
   objects (``gave her flowers``) are read as possessive — a known limit.
4. An ``a``/``an`` article right before a replaced word is adjusted to the
   replacement's first letter (vowel letter → ``an``).

LLM rewrite (:func:`check_rewrite`)
-----------------------------------
The rewrite must be one sentence within the length rules, contain the
counterpart (the spec's or the grammatical one) and the attribute term,
no longer contain the group term, and differ minimally: its token edit
distance to the original may exceed the rule-based swap's by at most
``slack`` tokens (default 2), and it must meet the minimal-pair rule of
:mod:`biastest.generate.minimal` (differ only in the group term and the
words that agree with it, token by token).

Pairs from elsewhere (:func:`check_pair`)
-----------------------------------------
A pair typed, edited or imported by a user passes the same test as a
generated one: one sentence, read as the original, must contain its group
term (and the attribute term, when given), and the other must pass the
rewrite rules above against it (counterpart present, group term gone,
the minimal-pair rule; no edit-distance slack) — in either direction, since
either side may have been the generated original. What fails is described
by a :class:`PairProblem`, which names the differing words.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from biastest.generate.base import (
    SentenceRules,
    clean_answer,
    split_sentences,
    token_edit_distance,
)
from biastest.generate.minimal import Difference, minimal_difference
from biastest.records import GROUP_SLOT
from biastest.spec import contains_term, term_regex

__all__ = [
    "AGREEMENT_SLOT",
    "MALE_TO_FEMALE",
    "Counterfactual",
    "gender_of",
    "is_gender_pair",
    "swap_counterfactual",
    "check_pair",
    "check_rewrite",
    "diff_template",
    "PairProblem",
    "MINIMAL_SLACK",
    "PAIR_REJECT_MISSING_GROUP_TERM",
    "REWRITE_REJECT_EMPTY",
    "REWRITE_REJECT_NOT_ONE_SENTENCE",
    "REWRITE_REJECT_MISSING_COUNTERPART",
    "REWRITE_REJECT_MISSING_ATTRIBUTE",
    "REWRITE_REJECT_KEPT_GROUP_TERM",
    "REWRITE_REJECT_LENGTH",
    "REWRITE_REJECT_NOT_MINIMAL",
]

AGREEMENT_SLOT = "[R]"

REWRITE_REJECT_EMPTY = "rewrite_empty"
REWRITE_REJECT_NOT_ONE_SENTENCE = "rewrite_not_one_sentence"
REWRITE_REJECT_MISSING_COUNTERPART = "rewrite_missing_counterpart"
REWRITE_REJECT_MISSING_ATTRIBUTE = "rewrite_missing_attribute_term"
REWRITE_REJECT_KEPT_GROUP_TERM = "rewrite_kept_group_term"
REWRITE_REJECT_LENGTH = "rewrite_length"
REWRITE_REJECT_NOT_MINIMAL = "rewrite_not_minimal"
PAIR_REJECT_MISSING_GROUP_TERM = "pair_missing_group_term"

#: Tokens an LLM rewrite may change beyond what the rule-based swap changes (it must also meet the minimal-pair
#: rule, :func:`biastest.generate.minimal.minimal_difference`; checked pairs meet that rule alone).
MINIMAL_SLACK = 2

#: Gendered words, male form → female form (pronouns handled separately below).
MALE_TO_FEMALE: dict[str, str] = {
    "man": "woman", "men": "women", "boy": "girl", "boys": "girls", "male": "female", "males": "females",
    "father": "mother", "fathers": "mothers", "son": "daughter", "sons": "daughters",
    "brother": "sister", "brothers": "sisters", "uncle": "aunt", "uncles": "aunts",
    "grandfather": "grandmother", "grandfathers": "grandmothers", "grandson": "granddaughter",
    "grandsons": "granddaughters", "husband": "wife", "husbands": "wives", "boyfriend": "girlfriend",
    "boyfriends": "girlfriends", "dad": "mom", "dads": "moms", "daddy": "mommy", "grandpa": "grandma",
    "king": "queen", "kings": "queens", "prince": "princess", "princes": "princesses",
    "gentleman": "lady", "gentlemen": "ladies", "sir": "madam", "mr": "mrs", "nephew": "niece",
    "nephews": "nieces", "groom": "bride", "grooms": "brides", "fiance": "fiancee", "monk": "nun",
    "stepfather": "stepmother", "stepson": "stepdaughter", "masculine": "feminine", "guy": "gal",
    "guys": "gals", "lad": "lass", "lads": "lasses", "schoolboy": "schoolgirl", "schoolboys": "schoolgirls",
    "he": "she", "him": "her", "his": "her", "himself": "herself",
}
_FEMALE_TO_MALE: dict[str, str] = {f: m for m, f in MALE_TO_FEMALE.items() if m not in ("him", "his")}
_FEMALE_TO_MALE.update({"she": "he", "herself": "himself", "hers": "his", "mum": "dad", "mums": "dads"})
_MALE = set(MALE_TO_FEMALE)
_FEMALE = set(_FEMALE_TO_MALE) | {"her"}

# Words after which "her"/"his" is not a possessive determiner.
_FUNCTION_WORDS = frozenset(
    """a an the and or but nor so yet for to of in on at by with from into onto upon about above below over
    under after before during through across against among around behind beside between beyond near off out
    up down as than that this these those there here then when while where because if though although unless
    until since whether is are was were be been being am has have had do does did will would shall should can
    could may might must not no never also too very just only even still again once ever really quite
    rather all each every some any both either neither more most much many few less least""".split()
)

_WORD = re.compile(r"[A-Za-z]+")


def gender_of(term: str) -> str | None:
    """``"male"``, ``"female"`` or None for a term (any of its words, case-insensitive)."""
    words = term.casefold().split()
    male = any(w in _MALE for w in words)
    female = any(w in _FEMALE for w in words)
    if male == female:
        return None
    return "male" if male else "female"


def is_gender_pair(term: str, counterpart: str) -> bool:
    """Whether two group terms have known, opposite genders."""
    g1, g2 = gender_of(term), gender_of(counterpart)
    return g1 is not None and g2 is not None and g1 != g2


def _match_case(source: str, replacement: str) -> str:
    if len(source) > 1 and source.isupper():
        return replacement.upper()
    if source[:1].isupper() and replacement[:1].islower():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _next_word(text: str, end: int) -> str | None:
    m = re.match(r"\s*([A-Za-z]+)", text[end:])
    if not m:
        return None
    gap = text[end:end + m.start(1)]
    if gap.strip():  # punctuation in between
        return None
    return m.group(1).casefold()


def _swap_word(word: str, text: str, end: int, source_gender: str) -> str | None:
    """The opposite-gender form of ``word`` (a source-gender word), or None."""
    w = word.casefold()
    nxt = _next_word(text, end)
    content_next = nxt is not None and nxt not in _FUNCTION_WORDS
    if source_gender == "male":
        if w not in _MALE:
            return None
        if w == "his":
            return "her" if content_next else "hers"
        return MALE_TO_FEMALE[w]
    if w not in _FEMALE and w != "her":
        return None
    if w == "her":
        return "his" if content_next else "him"
    return _FEMALE_TO_MALE[w]


_PRONOUNS = frozenset({"he", "him", "his", "himself", "she", "her", "hers", "herself"})


@dataclass(frozen=True)
class Counterfactual:
    """A counterfactual sentence and the template shared with its original.

    Attributes
    ----------
    text : str
        The counterfactual sentence.
    template : str
        The original with ``[T]`` at the group term and ``[R]`` at other
        words that change ("" when a rewrite cannot be expressed that way).
    group_term : str
        The group term of the original (as in the spec).
    counterpart : str
        The word used in place of it (the spec counterpart, or the
        grammatical pronoun form for gender pairs).
    agreement : tuple of (str, str)
        Other words changed, (original, replacement), in order.
    method : {"rules", "llm"}
    edits : int
        Token edit distance between the original and the counterfactual.
    provenance : dict
    """

    text: str
    template: str
    group_term: str
    counterpart: str
    agreement: tuple[tuple[str, str], ...] = ()
    method: str = "rules"
    edits: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "template": self.template, "group_term": self.group_term,
                "counterpart": self.counterpart, "agreement": [list(p) for p in self.agreement],
                "method": self.method, "edits": self.edits, "provenance": self.provenance}


def _article_fix(text: str, start: int, replacement: str) -> tuple[int, int, str] | None:
    """Span and new form of an a/an article right before ``start`` if it must change."""
    m = re.search(r"(?<!\w)(an?)(\s+)$", text[:start], flags=re.IGNORECASE)
    if not m:
        return None
    article = m.group(1)
    want = "an" if replacement[:1].casefold() in "aeiou" else "a"
    if article.casefold() == want:
        return None
    return m.start(1), m.end(1), _match_case(article, want)


def swap_counterfactual(
    sentence: str,
    group_term: str,
    counterpart: str,
    *,
    agreement: bool = True,
) -> Counterfactual:
    """Build the counterfactual and the template of ``sentence`` by rules.

    Parameters
    ----------
    sentence : str
        Contains ``group_term`` (word-bounded).
    group_term, counterpart : str
        The term in the sentence and the term to put in its place.
    agreement : bool
        Swap agreeing gendered words when the pair is a gender pair (see the
        module documentation); False swaps the group term only.

    Returns
    -------
    Counterfactual
    """
    gender_pair = agreement and is_gender_pair(group_term, counterpart)
    source_gender = gender_of(group_term) if gender_pair else None
    pronoun_term = gender_pair and group_term.casefold() in _PRONOUNS and counterpart.casefold() in _PRONOUNS

    # (start, end, replacement, slot)
    edits: list[tuple[int, int, str, str]] = []
    spans = [(m.start(), m.end()) for m in term_regex(group_term).finditer(sentence)]
    used_counterpart = counterpart
    for i, (s, e) in enumerate(spans):
        rep = counterpart
        if pronoun_term and source_gender is not None:
            rep = _swap_word(sentence[s:e], sentence, e, source_gender) or counterpart
        if i == 0:
            used_counterpart = rep
        edits.append((s, e, _match_case(sentence[s:e], rep), GROUP_SLOT))

    def inside(pos: int) -> bool:
        return any(s <= pos < e for s, e in spans)

    if gender_pair and source_gender is not None:
        for m in _WORD.finditer(sentence):
            if inside(m.start()):
                continue
            if m.group(0).casefold() not in _PRONOUNS:
                continue
            rep = _swap_word(m.group(0), sentence, m.end(), source_gender)
            if rep is not None:
                edits.append((m.start(), m.end(), _match_case(m.group(0), rep), AGREEMENT_SLOT))

    # a/an before any replaced word
    for s, _e, rep, _slot in list(edits):
        fix = _article_fix(sentence, s, rep)
        if fix is not None and not any(fs == fix[0] for fs, *_ in edits):
            edits.append((fix[0], fix[1], fix[2], AGREEMENT_SLOT))
    edits.sort()

    out, tpl, changed, pos = [], [], [], 0
    for s, e, rep, slot in edits:
        out.append(sentence[pos:s])
        tpl.append(sentence[pos:s])
        out.append(rep)
        tpl.append(slot)
        if slot == AGREEMENT_SLOT:
            changed.append((sentence[s:e], rep))
        pos = e
    out.append(sentence[pos:])
    tpl.append(sentence[pos:])
    text = "".join(out)
    return Counterfactual(
        text=text,
        template="".join(tpl),
        group_term=group_term,
        counterpart=used_counterpart,
        agreement=tuple(changed),
        method="rules",
        edits=token_edit_distance(sentence, text),
        provenance={"gender_pair": bool(gender_pair), "spec_counterpart": counterpart},
    )


def diff_template(original: str, rewrite: str, group_term: str) -> str:
    """Template of ``original`` from its differences with ``rewrite``.

    Tokens inside the group term become ``[T]``; other tokens replaced one
    for one become ``[R]``. Returns ``""`` when the difference is not of
    that shape (insertions, deletions, uneven replacements outside the group
    term).
    """
    tok = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
    a = list(tok.finditer(original))
    b = [m.group(0) for m in tok.finditer(rewrite)]
    spans = [(m.start(), m.end()) for m in term_regex(group_term).finditer(original)]
    in_group = [any(s <= m.start() < e for s, e in spans) for m in a]
    sm = difflib.SequenceMatcher(a=[m.group(0).casefold() for m in a], b=[x.casefold() for x in b], autojunk=False)
    slots: dict[int, str] = {}
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 > i1 and all(in_group[i] for i in range(i1, i2)):
            for i in range(i1, i2):
                slots[i] = GROUP_SLOT
        elif op == "replace" and (i2 - i1) == (j2 - j1):
            for i in range(i1, i2):
                slots[i] = GROUP_SLOT if in_group[i] else AGREEMENT_SLOT
        else:
            return ""
    if GROUP_SLOT not in slots.values():
        return ""
    out: list[str] = []
    pos, last = 0, None
    for i, m in enumerate(a):
        slot = slots.get(i)
        if slot is None:
            last = None
            continue
        if slot == GROUP_SLOT and last == GROUP_SLOT and not original[pos:m.start()].strip():
            pos = m.end()  # one slot for a multi-word group term
            continue
        out.append(original[pos:m.start()])
        out.append(slot)
        pos, last = m.end(), slot
    out.append(original[pos:])
    return "".join(out)


def _rewrite_problem(
    original: str,
    text: str,
    *,
    group_term: str,
    counterpart: str,
    attribute_term: str,
    slack: int | None,
    agreement: bool,
    rules: SentenceRules | None = None,
) -> tuple[str | None, Counterfactual, str | None, int]:
    """The rewrite rules shared by :func:`check_rewrite` and :func:`check_pair`.

    Returns ``(reason or None, rule-based reference swap, counterpart found in text, token edits)``;
    ``rules`` (length bounds) and ``slack`` (None: not checked) apply to generated rewrites only, an empty
    ``attribute_term`` is not checked, and the minimal-pair rule always applies.
    """
    reference = swap_counterfactual(original, group_term, counterpart, agreement=agreement)
    found = next((c for c in (counterpart, reference.counterpart) if contains_term(text, c)), None)
    if found is None:
        return REWRITE_REJECT_MISSING_COUNTERPART, reference, None, 0
    if attribute_term and not contains_term(text, attribute_term):
        return REWRITE_REJECT_MISSING_ATTRIBUTE, reference, found, 0
    if contains_term(text, group_term) and not contains_term(found, group_term):
        return REWRITE_REJECT_KEPT_GROUP_TERM, reference, found, 0
    if rules is not None:
        n = len(text.split())
        if n < rules.min_words or n > rules.max_words:
            return REWRITE_REJECT_LENGTH, reference, found, 0
    edits = token_edit_distance(original, text)
    if slack is not None and edits > reference.edits + slack:
        return REWRITE_REJECT_NOT_MINIMAL, reference, found, edits
    if not minimal_difference(original, text, group_term, found).minimal:
        return REWRITE_REJECT_NOT_MINIMAL, reference, found, edits
    return None, reference, found, edits


def check_rewrite(
    original: str,
    answer: str,
    *,
    group_term: str,
    counterpart: str,
    attribute_term: str,
    rules: SentenceRules,
    slack: int = MINIMAL_SLACK,
    agreement: bool = True,
) -> tuple[Counterfactual | None, str | None]:
    """Validate an LLM "minimal rewrite" of ``original``.

    Parameters
    ----------
    original : str
        The accepted sentence with ``group_term``.
    answer : str
        The model's raw answer.
    group_term, counterpart, attribute_term : str
    rules : SentenceRules
        Length bounds applied to the rewrite.
    slack : int
        Tokens the rewrite may change beyond what the rule-based swap
        changes (the rewrite must also meet the minimal-pair rule).
    agreement : bool
        As for :func:`swap_counterfactual` (defines the reference swap).

    Returns
    -------
    (Counterfactual or None, reason or None)
        The counterfactual (``method="llm"``) and None, or None and a
        ``REWRITE_REJECT_*`` reason.
    """
    text = clean_answer(answer)
    if not text:
        return None, REWRITE_REJECT_EMPTY
    if len(split_sentences(text)) != 1:
        return None, REWRITE_REJECT_NOT_ONE_SENTENCE
    reason, reference, found, edits = _rewrite_problem(
        original, text, group_term=group_term, counterpart=counterpart, attribute_term=attribute_term,
        slack=slack, agreement=agreement, rules=rules,
    )
    if reason is not None:
        return None, reason
    template = diff_template(original, text, group_term)
    return Counterfactual(
        text=text,
        template=template,
        group_term=group_term,
        counterpart=found,
        agreement=(),
        method="llm",
        edits=edits,
        provenance={"reference_edits": reference.edits, "slack": slack, "spec_counterpart": counterpart},
    ), None


@dataclass(frozen=True)
class PairProblem:
    """Why a sentence pair is not a minimal pair about its two group terms.

    Attributes
    ----------
    reason : str
        ``PAIR_REJECT_MISSING_GROUP_TERM`` (the first sentence lacks its group
        term) or a ``REWRITE_REJECT_*`` reason about the second sentence.
    sentence : {"first", "second"}
        The sentence at fault.
    term : str
        The term concerned (the missing group term, counterpart or attribute
        term, or the group term kept in the second sentence).
    expected, found : str
        For ``REWRITE_REJECT_NOT_MINIMAL``: the words of the first difference
        (:attr:`differences`), as the first sentence and as the second
        sentence have them; empty otherwise.
    differences : tuple of Difference
        For ``REWRITE_REJECT_NOT_MINIMAL``: every difference beyond the group
        term and the words that agree with it
        (:func:`biastest.generate.minimal.minimal_difference`).
    """

    reason: str
    sentence: str
    term: str
    expected: str = ""
    found: str = ""
    differences: tuple[Difference, ...] = ()


def check_pair(
    first: str,
    second: str,
    *,
    group_term: str,
    counterpart: str,
    attribute_term: str = "",
    agreement: bool = True,
) -> PairProblem | None:
    """Check that two sentences differ only in their group terms, as a generated pair does.

    ``first`` must contain ``group_term``, ``second`` ``counterpart``, and both
    ``attribute_term`` when it is not empty; ``second`` must pass the rewrite rules of :func:`check_rewrite`
    against it (contain ``counterpart`` or its grammatical form and the
    attribute term, no longer contain ``group_term``, and differ from it only
    in the group term and the words that agree with it:
    :func:`biastest.generate.minimal.minimal_difference`), with ``first`` as the
    original — or, failing that, the same with the two sentences' roles
    exchanged (either side of a pair may be the generated original).

    Parameters
    ----------
    first, second : str
        The two sentences (e.g. stereotyped and anti-stereotyped).
    group_term, counterpart : str
        The group terms of ``first`` and ``second``.
    attribute_term : str
        The attribute term both sentences contain ("" to leave it unchecked).
    agreement : bool
        As for :func:`swap_counterfactual`.

    Returns
    -------
    PairProblem or None
        None for a minimal pair; otherwise what is wrong, found with
        ``first`` as the original.

    Examples
    --------
    >>> check_pair("He is good at math.", "She is good at math.", group_term="he", counterpart="she") is None
    True
    >>> check_pair("He loves numbers.", "She loves =cmd|' /C calc'!A0.", group_term="he", counterpart="she").reason
    'rewrite_not_minimal'
    """
    for side, term, sentence in (("first", group_term, first), ("second", counterpart, second)):
        if not contains_term(sentence, term):
            return PairProblem(PAIR_REJECT_MISSING_GROUP_TERM, side, term)
    for side, sentence in (("first", first), ("second", second)):
        if attribute_term and not contains_term(sentence, attribute_term):
            return PairProblem(REWRITE_REJECT_MISSING_ATTRIBUTE, side, attribute_term)
    kw = {"attribute_term": attribute_term, "slack": None, "agreement": agreement}
    reason, _, found, _ = _rewrite_problem(first, second, group_term=group_term, counterpart=counterpart, **kw)
    if reason is None:
        return None
    back, _, _, _ = _rewrite_problem(second, first, group_term=counterpart, counterpart=group_term, **kw)
    if back is None:
        return None
    if reason == REWRITE_REJECT_NOT_MINIMAL:
        differences = minimal_difference(first, second, group_term, found or counterpart).differences
        d = differences[0]
        return PairProblem(reason, "second", counterpart, expected=d.first, found=d.second, differences=differences)
    term = {REWRITE_REJECT_MISSING_ATTRIBUTE: attribute_term, REWRITE_REJECT_KEPT_GROUP_TERM: group_term}.get(
        reason, counterpart)
    return PairProblem(reason, "second", term)
