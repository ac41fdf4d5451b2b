"""Sentence pairs from single sentences: swap the group term for its counterpart.

:func:`pairs_from_templates` builds sentence pairs from stored or imported
:class:`~biastest.records.TestSentence` records (sentences about one group
term) by swapping in the spec's counterpart term with the data engineer's
rules (:func:`biastest.generate.counterfactual.swap_counterfactual`: case
kept, gendered agreeing words swapped for gender pairs). Freshly generated
sentences already come with their pairs from
:func:`biastest.generate.sentences.generate_sentences`.

:func:`minimal_checks` holds pairs from anywhere (imported, edited, generated, retrieved) to the minimal-pair
rule (:mod:`biastest.generate.minimal`): the test leaves out a pair whose sentences differ in more than the
group term and the words that agree with it, unless the user keeps such pairs (``keep_non_minimal``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from biastest.errors import DataError
from biastest.generate.counterfactual import swap_counterfactual
from biastest.generate.minimal import MINIMAL_RULE, MinimalCheck, format_differences, minimal_difference
from biastest.records import SentencePair, TestSentence
from biastest.spec import BiasSpec, contains_term

__all__ = ["PairBuild", "minimal_checks", "minimal_provenance", "pairs_from_templates"]

MSG_SKIP_GROUP_TERM = "Its group term '{term}' is in neither social group of the specification."
MSG_SKIP_ATTRIBUTE = "Its attribute term '{term}' is in neither attribute list of the specification."
MSG_SKIP_NO_GROUP_IN_TEXT = "The sentence does not contain its group term '{term}'."
MSG_SKIP_NO_ATTRIBUTE_IN_TEXT = "The sentence does not contain its attribute term '{term}'."
MSG_SKIP_NO_CHANGE = "Swapping '{term}' for '{counterpart}' did not change the sentence."
MSG_SKIP_DUPLICATE = "The same pair was already built from another sentence."
MSG_BAD_PAIRING = "Unknown pairing '{value}'. Choose 'positional' or 'all'."


@dataclass(frozen=True)
class PairBuild:
    """Pairs built from sentences, and the sentences that gave none.

    Attributes
    ----------
    pairs : tuple of SentencePair
    skipped : tuple of (int, str, str)
        ``(index of the sentence, sentence id, reason)``.
    """

    pairs: tuple[SentencePair, ...]
    skipped: tuple[tuple[int, str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": [p.to_row() for p in self.pairs], "skipped": [list(s) for s in self.skipped]}


def _counterparts(spec: BiasSpec, pairing: str) -> dict[str, list[str]]:
    if pairing not in ("positional", "all"):
        raise DataError(MSG_BAD_PAIRING.format(value=pairing))
    out: dict[str, list[str]] = {}
    if pairing == "positional" and len(spec.group1) == len(spec.group2):
        for a, b in zip(spec.group1, spec.group2, strict=True):
            out[a.casefold()] = [b]
            out[b.casefold()] = [a]
        return out
    for a in spec.group1:
        out[a.casefold()] = list(spec.group2)
    for b in spec.group2:
        out[b.casefold()] = list(spec.group1)
    return out


def pairs_from_templates(
    spec: BiasSpec,
    sentences: Sequence[TestSentence],
    *,
    pairing: str = "positional",
    agreement: bool = True,
) -> PairBuild:
    """Build stereotyped / anti-stereotyped pairs from single sentences.

    Each sentence's group term is swapped for its counterpart in the other
    social group (``positional``: the term at the same position, when both
    groups are equally long, else every term of the other group; ``all``:
    every term of the other group) with
    :func:`~biastest.generate.counterfactual.swap_counterfactual`. The
    sentence is the stereotyped version when its group (1 or 2) equals its
    attribute's side (stereotype of group 1 = side 1), otherwise the
    counterfactual is. The pair's template is the sentence with ``[T]`` at the
    group term and ``[R]`` at swapped agreeing words; its category is the name
    of the attribute list.

    Parameters
    ----------
    spec : BiasSpec
        Two groups and two attribute lists.
    sentences : sequence of TestSentence
    pairing : {"positional", "all"}
    agreement : bool
        Swap gendered agreeing words for gender pairs.

    Returns
    -------
    PairBuild
        Pairs in input order (duplicates dropped) and the skipped sentences
        with reasons (``MSG_SKIP_*``).
    """
    spec.check_two_groups("The stereotype score")
    counterparts = _counterparts(spec, pairing)
    list_name = {t.casefold(): spec.attribute1_name for t in spec.attributes1}
    list_name.update({t.casefold(): spec.attribute2_name for t in spec.attributes2})
    pairs: list[SentencePair] = []
    skipped: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    for i, s in enumerate(sentences):
        group = spec.group_of(s.group_term)
        side = spec.attribute_side(s.attribute_term)
        if group is None:
            skipped.append((i, s.id, MSG_SKIP_GROUP_TERM.format(term=s.group_term)))
            continue
        if side is None:
            skipped.append((i, s.id, MSG_SKIP_ATTRIBUTE.format(term=s.attribute_term)))
            continue
        if not contains_term(s.text, s.group_term):
            skipped.append((i, s.id, MSG_SKIP_NO_GROUP_IN_TEXT.format(term=s.group_term)))
            continue
        if not contains_term(s.text, s.attribute_term):
            skipped.append((i, s.id, MSG_SKIP_NO_ATTRIBUTE_IN_TEXT.format(term=s.attribute_term)))
            continue
        made_any = False
        for counterpart in counterparts[s.group_term.casefold()]:
            cf = swap_counterfactual(s.text, s.group_term, counterpart, agreement=agreement)
            if cf.text == s.text:
                skipped.append((i, s.id, MSG_SKIP_NO_CHANGE.format(term=s.group_term, counterpart=counterpart)))
                continue
            stereotyped_first = group == side
            st, anti = (s.text, cf.text) if stereotyped_first else (cf.text, s.text)
            gst, ganti = (s.group_term, cf.counterpart) if stereotyped_first else (cf.counterpart, s.group_term)
            pair = SentencePair(
                stereotyped=st,
                anti_stereotyped=anti,
                attribute_term=s.attribute_term,
                group_term_stereotyped=gst,
                group_term_anti=ganti,
                template=cf.template,
                category=list_name[s.attribute_term.casefold()],
                source=s.source,
                spec_name=spec.name,
                provenance={
                    "sentence_id": s.id,
                    "built_by": "pairs_from_templates",
                    "pairing": pairing,
                    "sentence_side": "stereotyped" if stereotyped_first else "anti_stereotyped",
                    "counterfactual": cf.to_dict(),
                },
            )
            if pair.id in seen:
                if not made_any:
                    skipped.append((i, s.id, MSG_SKIP_DUPLICATE))
                continue
            seen.add(pair.id)
            pairs.append(pair)
            made_any = True
    return PairBuild(pairs=tuple(pairs), skipped=tuple(skipped))


def minimal_checks(pairs: Sequence[SentencePair]) -> dict[int, MinimalCheck]:
    """The pairs that are not minimal: position in ``pairs`` → what differs beyond the group term.

    Each pair is checked with its own group terms
    (:func:`~biastest.generate.minimal.minimal_difference`; a pair without two different group terms may
    differ in one passage, the term that varies).
    """
    out = {}
    for i, p in enumerate(pairs):
        check = minimal_difference(p.stereotyped, p.anti_stereotyped, p.group_term_stereotyped, p.group_term_anti)
        if not check.minimal:
            out[i] = check
    return out


def minimal_provenance(pairs: Sequence[SentencePair], flagged: dict[int, MinimalCheck], *,
                       keep_non_minimal: bool) -> dict[str, Any]:
    """What a result records of the minimal-pair rule: the rule, the choice, and every pair it flags.

    ``n_not_minimal`` counts the flagged pairs; ``left_out`` says whether they were left out of the test
    (``keep_non_minimal`` False) or kept anyway; ``pairs`` lists each with its position in the input, id,
    sentences and differing words (stereotyped sentence's words first).
    """
    return {
        "rule": MINIMAL_RULE,
        "keep_non_minimal": bool(keep_non_minimal),
        "n_checked": len(pairs),
        "n_not_minimal": len(flagged),
        "left_out": bool(flagged) and not keep_non_minimal,
        "pairs": [{"index": i, "pair_id": pairs[i].id, "stereotyped": pairs[i].stereotyped,
                   "anti_stereotyped": pairs[i].anti_stereotyped,
                   "differences": format_differences(c.differences, limit=len(c.differences)),
                   "detail": [d.to_dict() for d in c.differences]} for i, c in sorted(flagged.items())],
    }
