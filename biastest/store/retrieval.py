"""Retrieval: the stored test items that fit a bias specification.

Step 2 of every app ("retrieve or generate test data") starts here:

* :func:`retrieve_sentences` — every stored sentence that contains (as whole
  words, case-insensitively, multi-word terms included — the matching of
  :func:`biastest.spec.contains_term`) a social-group term **and** an
  attribute term of the spec, with counts per attribute term and per group
  term (:class:`Coverage`) so the app can say which terms are under-covered
  and the generator can fill exactly those;
* :func:`retrieve_pairs` — the stereotyped / anti-stereotyped pairs for the
  spec: stored :class:`~biastest.records.SentencePair` records whose
  attribute and group terms belong to the spec, plus pairs built from stored
  sentences that carry a ``[T]`` template, by putting the spec's positional
  counterpart of the group term into the slot;
* :func:`retrieve_images` — stored images whose term is one of the given
  terms, with counts per term.

Which side of a pair is stereotyped is decided by the spec alone: a group-1
term with an attribute from attribute list 1, or a group-2 term with an
attribute from list 2, is the stereotyped sentence. A stored pair made for a
spec whose lists were in the other order is returned re-oriented (with the
original id in its provenance).

Look-ups go through the store's indexes (:meth:`TableView.term_rows`), never a
scan of every file per click.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from biastest.errors import SpecError
from biastest.provenance import provenance
from biastest.records import ATTRIBUTE_SLOT, GROUP_SLOT, SentencePair, TestImage, TestSentence
from biastest.spec import BiasSpec, counterpart_pairs
from biastest.store.folding import field_key, plain_word
from biastest.store.local import DatasetStore

__all__ = [
    "Coverage",
    "SentenceMatch",
    "SentenceRetrieval",
    "PairRetrieval",
    "ImageRetrieval",
    "retrieve_sentences",
    "retrieve_pairs",
    "retrieve_images",
    "fill_template",
    "SKIP_BOTH_GROUPS",
    "SKIP_BOTH_ATTRIBUTE_LISTS",
    "SKIP_NO_TEMPLATE",
    "SKIP_OTHER_SLOTS",
    "SKIP_TEMPLATE_MISMATCH",
    "SKIP_PAIR_GROUPS",
]

SKIP_BOTH_GROUPS = "contains terms of both social groups"
SKIP_BOTH_ATTRIBUTE_LISTS = "contains attributes of both attribute lists"
SKIP_NO_TEMPLATE = "no [T] template to build a pair from"
SKIP_OTHER_SLOTS = "template has slots other than [T] and [A]"
SKIP_TEMPLATE_MISMATCH = "template does not reproduce the sentence"
SKIP_PAIR_GROUPS = "pair's group terms are not one from each social group of the spec"

MSG_COVERAGE_OK = "Every term has at least {min_count} test sentences."
MSG_COVERAGE_THIN = "{count} term(s) have fewer than {min_count} test sentences: {terms}."

_SLOT = re.compile(r"\[[A-Z]+\]")


@dataclass(frozen=True)
class Coverage:
    """How many items each term of the spec has.

    Attributes
    ----------
    per_attribute : dict
        Every attribute term of the spec (spec order) → count (zero included).
    per_group : dict
        Every social-group term of the spec → count.
    total : int
        Number of items counted.
    """

    per_attribute: dict[str, int]
    per_group: dict[str, int]
    total: int

    def thin(self, min_count: int) -> list[tuple[str, str, int]]:
        """Terms with fewer than ``min_count`` items: ``(kind, term, count)``, kind ``attribute`` or ``group``."""
        out = [("attribute", t, c) for t, c in self.per_attribute.items() if c < min_count]
        out += [("group", t, c) for t, c in self.per_group.items() if c < min_count]
        return out

    def message(self, min_count: int) -> str:
        """One sentence for the user about the thin terms."""
        thin = self.thin(min_count)
        if not thin:
            return MSG_COVERAGE_OK.format(min_count=min_count)
        terms = ", ".join(f"{t} ({c})" for _, t, c in thin)
        return MSG_COVERAGE_THIN.format(count=len(thin), min_count=min_count, terms=terms)

    def to_dict(self) -> dict[str, Any]:
        return {"per_attribute": dict(self.per_attribute), "per_group": dict(self.per_group), "total": self.total}


@dataclass(frozen=True)
class SentenceMatch:
    """A stored sentence and the spec terms it was matched to.

    Attributes
    ----------
    sentence : TestSentence
    group_term, attribute_term : str
        The spec's spelling of the terms (the stored fields when they are
        spec terms found in the text, otherwise the first spec term found).
    group : int
        1 or 2.
    attribute_list : int
        1 (stereotype of group 1) or 2.
    """

    sentence: TestSentence
    group_term: str
    attribute_term: str
    group: int
    attribute_list: int

    @property
    def stereotyped(self) -> bool:
        """Group 1 with list 1, or group 2 with list 2."""
        return self.group == self.attribute_list

    def to_dict(self) -> dict[str, Any]:
        return {"sentence": self.sentence.to_row(), "group_term": self.group_term,
                "attribute_term": self.attribute_term, "group": self.group, "attribute_list": self.attribute_list}


@dataclass(frozen=True)
class SentenceRetrieval:
    """Result of :func:`retrieve_sentences`."""

    spec_name: str
    matches: tuple[SentenceMatch, ...]
    coverage: Coverage
    excluded: dict[str, int]
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def sentences(self) -> tuple[TestSentence, ...]:
        return tuple(m.sentence for m in self.matches)

    @property
    def texts(self) -> tuple[str, ...]:
        """Texts of the matched sentences (for a generator's duplicate check)."""
        return tuple(m.sentence.text for m in self.matches)

    def to_dict(self) -> dict[str, Any]:
        return {"spec_name": self.spec_name, "matches": [m.to_dict() for m in self.matches],
                "coverage": self.coverage.to_dict(), "excluded": dict(self.excluded), "provenance": self.provenance}


@dataclass(frozen=True)
class PairRetrieval:
    """Result of :func:`retrieve_pairs`.

    Attributes
    ----------
    pairs : tuple of SentencePair
        Stored pairs first (re-oriented if needed), then built ones; no two
        with the same id.
    stored, built, reoriented : int
    skipped : dict
        Reason → number of sentences or pairs left out.
    pairing : str
        How counterparts were chosen (``positional`` or ``all``).
    coverage : Coverage
        Pairs per attribute term and per group term (each pair counts for
        both of its group terms).
    """

    spec_name: str
    pairs: tuple[SentencePair, ...]
    stored: int
    built: int
    reoriented: int
    skipped: dict[str, int]
    pairing: str
    coverage: Coverage
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"spec_name": self.spec_name, "pairs": [p.to_row() for p in self.pairs], "stored": self.stored,
                "built": self.built, "reoriented": self.reoriented, "skipped": dict(self.skipped),
                "pairing": self.pairing, "coverage": self.coverage.to_dict(), "provenance": self.provenance}


@dataclass(frozen=True)
class ImageRetrieval:
    """Result of :func:`retrieve_images`: the images and the count per term."""

    images: tuple[TestImage, ...]
    per_term: dict[str, int]

    def thin(self, min_count: int) -> list[tuple[str, int]]:
        return [(t, c) for t, c in self.per_term.items() if c < min_count]

    def to_dict(self) -> dict[str, Any]:
        return {"images": [i.to_row() for i in self.images], "per_term": dict(self.per_term)}


# ------------------------------------------------------------- sentences
def _hits(view, terms: Sequence[str], within: np.ndarray | None = None) -> dict[str, np.ndarray]:
    return {t: view.term_rows(t, within=within) for t in terms}


def _union(hits: dict[str, np.ndarray]) -> np.ndarray:
    return np.unique(np.concatenate([*hits.values(), np.zeros(0, np.int64)]))


def _terms_of_rows(rows: np.ndarray, hits: dict[str, np.ndarray], terms: Sequence[str]) -> dict[int, list[str]]:
    """Row → the terms (in ``terms`` order) whose hit list holds it, for the sorted distinct ``rows``."""
    out: dict[int, list[str]] = {}
    for t in terms:
        hit = hits[t]
        at = np.searchsorted(rows, hit)
        inside = at < len(rows)
        inside[inside] = rows[at[inside]] == hit[inside]
        for r in hit[inside].tolist():
            out.setdefault(r, []).append(t)
    return out


def _choose(stored: str, found: list[str]) -> str:
    if len(found) == 1:
        return found[0]
    key = field_key(stored or "")
    for t in found:
        if field_key(t) == key:
            return t
    return found[0]


def retrieve_sentences(store: DatasetStore, spec: BiasSpec) -> SentenceRetrieval:
    """Every stored sentence containing a group term and an attribute term of ``spec``.

    A sentence that contains terms of both social groups, or attributes of
    both attribute lists, is left out (it cannot say which side it tests)
    and counted in ``excluded``.

    Parameters
    ----------
    store : DatasetStore
    spec : BiasSpec
        Must have exactly two groups and two attribute lists.

    Returns
    -------
    SentenceRetrieval
    """
    spec.check_testable()
    view = store.view("sentences")
    # Only rows with terms of both sides matter: the side with fewer regex-checked terms is found first,
    # and the other side's terms are checked only on its rows.
    def costly(terms: Sequence[str]) -> int:
        return sum(not plain_word(t) for t in terms)

    groups_first = costly(spec.group_terms) <= costly(spec.attribute_terms)
    g_terms, a_terms = spec.group_terms, spec.attribute_terms
    first, second = (g_terms, a_terms) if groups_first else (a_terms, g_terms)
    first_hits = _hits(view, first)
    mask = np.zeros(view.num_rows, dtype=bool)
    for hit in first_hits.values():
        mask[hit] = True
    second_hits = _hits(view, second, within=mask)
    rows = _union(second_hits)
    g_hits, a_hits = (first_hits, second_hits) if groups_first else (second_hits, first_hits)
    # Which terms each candidate row contains (from the hit lists, no re-scan).
    g_of = _terms_of_rows(rows, g_hits, spec.group_terms)
    a_of = _terms_of_rows(rows, a_hits, spec.attribute_terms)
    records = view.records(rows)
    per_attr = dict.fromkeys(spec.attribute_terms, 0)
    per_group = dict.fromkeys(spec.group_terms, 0)
    g_side = {t: spec.group_of(t) or 0 for t in spec.group_terms}
    a_side = {t: spec.attribute_side(t) or 0 for t in spec.attribute_terms}
    excluded = {SKIP_BOTH_GROUPS: 0, SKIP_BOTH_ATTRIBUTE_LISTS: 0}
    matches = []
    for r, sent in zip(rows.tolist(), records, strict=True):
        gs, as_ = g_of[r], a_of[r]
        if len({g_side[t] for t in gs}) > 1:
            excluded[SKIP_BOTH_GROUPS] += 1
            continue
        if len({a_side[t] for t in as_}) > 1:
            excluded[SKIP_BOTH_ATTRIBUTE_LISTS] += 1
            continue
        g = _choose(sent.group_term, gs)
        a = _choose(sent.attribute_term, as_)
        matches.append(SentenceMatch(sent, g, a, g_side[g], a_side[a]))
        per_attr[a] += 1
        per_group[g] += 1
    return SentenceRetrieval(
        spec_name=spec.name,
        matches=tuple(matches),
        coverage=Coverage(per_attr, per_group, len(matches)),
        excluded=excluded,
        provenance=provenance(method="retrieve-sentences", spec=spec.name, spec_fingerprint=spec.fingerprint(),
                              store=str(store.root), stored_rows=view.num_rows),
    )


# ------------------------------------------------------------------ pairs
def fill_template(template: str, group_term: str, attribute_term: str = "") -> str:
    """Put ``group_term`` into every ``[T]`` slot (and ``attribute_term`` into ``[A]``)."""
    out = template.replace(GROUP_SLOT, group_term)
    if attribute_term:
        out = out.replace(ATTRIBUTE_SLOT, attribute_term)
    return out


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _counterparts(spec: BiasSpec, pairing: str) -> tuple[dict[str, list[str]], str]:
    try:
        tp = counterpart_pairs(spec, mode=pairing)  # type: ignore[arg-type]
    except SpecError:
        if pairing != "positional":
            raise
        tp = counterpart_pairs(spec, mode="all")
    out: dict[str, list[str]] = {}
    for a, b in tp.pairs:
        out.setdefault(field_key(a), []).append(b)
        out.setdefault(field_key(b), []).append(a)
    return out, tp.mode


def _oriented(spec: BiasSpec, pair: SentencePair) -> tuple[SentencePair | None, bool]:
    side = spec.attribute_side(pair.attribute_term)
    gs, ga = spec.group_of(pair.group_term_stereotyped), spec.group_of(pair.group_term_anti)
    if side is None or gs is None or ga is None or gs == ga:
        return None, False
    if gs == side:
        return pair, False
    flipped = SentencePair(
        stereotyped=pair.anti_stereotyped, anti_stereotyped=pair.stereotyped, attribute_term=pair.attribute_term,
        group_term_stereotyped=pair.group_term_anti, group_term_anti=pair.group_term_stereotyped,
        template=pair.template, category=pair.category, source=pair.source, spec_name=spec.name,
        created_at=pair.created_at, provenance={**pair.provenance, "reoriented_from": pair.id},
    )
    return flipped, True


def retrieve_pairs(
    store: DatasetStore,
    spec: BiasSpec,
    *,
    sentences: SentenceRetrieval | None = None,
    pairing: Literal["positional", "all"] = "positional",
    build: bool = True,
) -> PairRetrieval:
    """The sentence pairs for ``spec``: stored pairs plus pairs built from templates.

    Parameters
    ----------
    store : DatasetStore
    spec : BiasSpec
    sentences : SentenceRetrieval, optional
        Reuse a retrieval already made for this spec.
    pairing : {"positional", "all"}
        Counterpart of a group term: the term at the same position in the
        other group (falls back to ``all`` when the groups differ in length;
        the mode used is recorded), or every term of the other group.
    build : bool
        Also build pairs from stored sentences with ``[T]`` templates.

    Returns
    -------
    PairRetrieval
    """
    spec.check_testable()
    view = store.view("pairs")
    out: dict[str, SentencePair] = {}
    skipped: dict[str, int] = {}
    stored = reoriented = built = 0
    rows = np.unique(np.concatenate([view.field_rows("attribute_term", a) for a in spec.attribute_terms]
                                    + [np.zeros(0, np.int64)]))
    for pair in view.records(rows):
        p, flipped = _oriented(spec, pair)
        if p is None:
            skipped[SKIP_PAIR_GROUPS] = skipped.get(SKIP_PAIR_GROUPS, 0) + 1
            continue
        if p.id not in out:
            out[p.id] = p
            stored += 1
            reoriented += int(flipped)
    mode = pairing
    if build:
        counter, mode = _counterparts(spec, pairing)
        sentences = sentences if sentences is not None else retrieve_sentences(store, spec)
        attr_list_name = {1: spec.attribute1_name, 2: spec.attribute2_name}
        for m in sentences.matches:
            tpl = m.sentence.template or ""
            reason = None
            if GROUP_SLOT not in tpl:
                reason = SKIP_NO_TEMPLATE
            elif set(_SLOT.findall(tpl)) - {GROUP_SLOT, ATTRIBUTE_SLOT}:
                reason = SKIP_OTHER_SLOTS
            elif _norm(fill_template(tpl, m.group_term, m.attribute_term)) != _norm(m.sentence.text):
                reason = SKIP_TEMPLATE_MISMATCH
            if reason:
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            for other_term in counter.get(field_key(m.group_term), []):
                other = fill_template(tpl, other_term, m.attribute_term)
                text = m.sentence.text.strip()
                if text[:1].isupper() and other[:1].islower():
                    other = other[:1].upper() + other[1:]
                g1_text, g2_text = (text, other) if m.group == 1 else (other, text)
                g1_term, g2_term = (m.group_term, other_term) if m.group == 1 else (other_term, m.group_term)
                if m.attribute_list == 1:
                    st, an, gst, gan = g1_text, g2_text, g1_term, g2_term
                else:
                    st, an, gst, gan = g2_text, g1_text, g2_term, g1_term
                pair = SentencePair(
                    stereotyped=st, anti_stereotyped=an, attribute_term=m.attribute_term,
                    group_term_stereotyped=gst, group_term_anti=gan, template=tpl,
                    category=attr_list_name[m.attribute_list], source="built:template", spec_name=spec.name,
                    provenance={"built_from": m.sentence.id, "pairing": mode},
                )
                if pair.id not in out:
                    out[pair.id] = pair
                    built += 1
    pairs = tuple(out.values())
    per_attr = dict.fromkeys(spec.attribute_terms, 0)
    per_group = dict.fromkeys(spec.group_terms, 0)
    a_key = {field_key(t): t for t in spec.attribute_terms}
    g_key = {field_key(t): t for t in spec.group_terms}
    for p in pairs:
        per_attr[a_key[field_key(p.attribute_term)]] += 1
        for g in (p.group_term_stereotyped, p.group_term_anti):
            per_group[g_key[field_key(g)]] += 1
    return PairRetrieval(
        spec_name=spec.name, pairs=pairs, stored=stored, built=built, reoriented=reoriented, skipped=skipped,
        pairing=mode, coverage=Coverage(per_attr, per_group, len(pairs)),
        provenance=provenance(method="retrieve-pairs", spec=spec.name, spec_fingerprint=spec.fingerprint(),
                              pairing=mode, store=str(store.root)),
    )


# ----------------------------------------------------------------- images
def retrieve_images(store: DatasetStore, terms: Sequence[str]) -> ImageRetrieval:
    """Stored images whose term is one of ``terms`` (case-insensitive, white space collapsed).

    An image counts for the term it was made for (its ``image_term``
    equals the term as whole words), e.g. the image terms of a VQA test.
    """
    view = store.view("images")
    per_term: dict[str, int] = {}
    images: dict[str, TestImage] = {}
    for t in terms:
        rows = view.field_rows("image_term", t)
        recs = view.records(rows)
        per_term[t] = len(recs)
        for r in recs:
            images.setdefault(r.id, r)
    return ImageRetrieval(tuple(images.values()), per_term)

