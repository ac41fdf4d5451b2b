"""Bias specifications: social groups and attribute lists (two of each, or one stereotype list per group), validated.

A :class:`BiasSpec` names two social groups (lists of terms, e.g. ``man,
father`` vs ``woman, mother``) and two attribute lists, where **order carries
meaning**: the first group is group 1 and the first attribute list is the
stereotype of group 1 (the anti-stereotype of group 2). It reads and writes the
original BiasTestGPT JSON form::

    {"name", "source", "url",
     "social_groups": {name1: [...], name2: [...]},
     "attributes": {nameA: [...], nameB: [...]},
     "templates": [...]}

Documents with more than two groups or attribute lists (three of the fifteen
original BiasTestGPT specs) load and round-trip unchanged, but a test refuses
them until two lists are chosen with :meth:`BiasSpec.select` — the original
silently ignored the third list.

Several protected groups (Manzini et al. 2019: Jewish, Christian and Muslim
terms) are written the same way, with one attribute list per group, in the
same order: attribute list *k* is the stereotype of group *k*. Such a spec
is a *group spec* (:attr:`BiasSpec.is_group_spec`, checked by
:meth:`BiasSpec.check_group_spec`); MAC and the Bayesian estimate take it with
any number of groups from two, while WEAT and the stereotype score compare
exactly two groups and refuse three or more with :data:`MSG_TWO_GROUPS_ONLY`
(:meth:`BiasSpec.check_two_groups`).

Term matching (:func:`term_regex`, :func:`contains_term`, :func:`find_terms`)
is case-insensitive, regex-escaped and word-bounded (``he`` never matches
``the``), and supports multi-word terms. Pairing (:func:`counterpart_pairs`,
:func:`term_combinations`) is deterministic: all pairs, positional
counterparts, or a seeded sample whose seed is recorded.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from biastest.errors import SpecError

__all__ = [
    "MAX_SPEC_BYTES",
    "MAX_TERMS_PER_LIST",
    "MSG_JSON_TOO_DEEP",
    "MSG_JSON_TOO_LARGE",
    "MSG_GROUPS_ATTRIBUTES_MISMATCH",
    "MSG_TWO_GROUPS_ONLY",
    "parse_spec_json",
    "read_spec_bytes",
    "MAX_TERM_LENGTH",
    "BiasSpec",
    "TermPairing",
    "TwoAFCSpec",
    "contains_term",
    "counterpart_pairs",
    "find_terms",
    "parse_terms",
    "term_combinations",
    "term_regex",
    "terms_regex",
]

MAX_TERMS_PER_LIST = 100
MAX_TERM_LENGTH = 60
MAX_TEMPLATES = 50

MSG_NOT_TEXT = "Every term must be text, but {list_name} contains {value!r} ({type_name}). Write each term as words."
MSG_EMPTY_TERM = "{list_name} contains an empty term. Remove the extra comma or fill in the term."
MSG_TERM_TOO_LONG = (
    "A term in {list_name} is {length} characters long ('{start}…'); terms may have at most {limit}. "
    "Use a short word or phrase."
)
#: How much of an over-long term its message quotes (the whole term, shown inline and in a toast, drowned the page).
TERM_QUOTE_LENGTH = 30
MSG_EMPTY_LIST = "{list_name} is empty. Add at least one term."
MSG_TOO_MANY_TERMS = (
    "{list_name} has {count} terms; a list may have at most {limit}. Split the test or shorten the list."
)
MSG_DUPLICATE_TERM = "The term '{term}' appears more than once in {list_name}. Remove the duplicate."
MSG_TERM_IN_BOTH_GROUPS = (
    "The term '{term}' is in both social groups ({list1} and {list2}). "
    "A term can describe only one of the groups being compared."
)
MSG_TERM_IN_BOTH_ATTRIBUTES = (
    "The term '{term}' is in both attribute lists ({list1} and {list2}). "
    "A term cannot be both the stereotype and the anti-stereotype."
)
MSG_TERM_GROUP_AND_ATTRIBUTE = (
    "The term '{term}' is both a social-group term ({group_list}) and an attribute ({attribute_list}). "
    "Use it in one role only."
)
MSG_TOO_FEW_LISTS = "A bias specification needs two {kind}; this one has {count}."
MSG_THIRD_ATTRIBUTE_LIST = (
    "This specification has {count} attribute lists ({names}), but a bias test compares exactly two: "
    "the stereotype of group 1 and its anti-stereotype. Choose two of them."
)
MSG_EXTRA_GROUPS = (
    "This specification has {count} social groups ({names}), but a bias test compares exactly two. Choose two of them."
)
MSG_TWO_GROUPS_ONLY = (
    "{test} compares exactly two social groups, but '{name}' has {count} ({names}). MAC and the Bayesian "
    "estimate take three or more groups; for {test}, choose two of them."
)
MSG_GROUPS_ATTRIBUTES_MISMATCH = (
    "With several social groups, each group needs its own stereotype attribute list, in the same order (the "
    "first list is the stereotype of the first group). '{name}' has {n_groups} groups ({groups}) but {n_attributes} "
    "attribute lists ({attributes})."
)
MSG_UNKNOWN_LIST = "There is no {kind} called '{name}' in this specification. Available: {available}."
MSG_BAD_NAME = "The specification needs a name (text), got {value!r}."
MSG_DUPLICATE_LIST_NAME = "Two {kind} are both called '{name}'. Give each list its own name."
MSG_BAD_DOCUMENT = "This is not a bias specification: {problem}."
MSG_BAD_JSON = "The file is not valid JSON ({problem}). Check that it was saved as a BiasTestGPT specification."
MSG_JSON_TOO_DEEP = (
    "The file nests lists or objects too deeply to be a specification. Check that it was saved as a BiasTestGPT "
    "specification."
)
MSG_JSON_TOO_LARGE = "The specification file is larger than {limit_kb} KB; a specification is a few kilobytes."
#: Largest specification text read (the largest library spec is ~20 KB).
MAX_SPEC_BYTES = 1_000_000
MSG_BAD_TEMPLATE = "The template {template!r} must contain the group slot [T] (and may contain the attribute slot [A])."
MSG_SAMPLE_NEEDS_SEED = "A sampled pairing needs a seed so that it can be repeated; give a whole number."
MSG_BAD_SAMPLE_SIZE = "The number of sampled pairs must be a positive whole number, got {value!r}."
MSG_UNKNOWN_PAIRING = "Unknown pairing '{mode}'. Choose one of: {choices}."
MSG_UNEQUAL_POSITIONAL = (
    "Positional pairing needs two social groups of the same length, but {list1} has {n1} terms and {list2} has "
    "{n2}. Use all pairs or a seeded sample instead."
)

_WS = re.compile(r"\s+")

TermList = tuple[str, tuple[str, ...]]


def read_spec_bytes(path: str | Path) -> bytes:
    """The bytes of a specification file, refused above :data:`MAX_SPEC_BYTES` (never read whole first)."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_SPEC_BYTES + 1)
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(MSG_JSON_TOO_LARGE.format(limit_kb=MAX_SPEC_BYTES // 1000))
    return data


def parse_spec_json(text: str | bytes) -> Any:
    """JSON of a specification: invalid, oversized or absurdly nested text is a :class:`SpecError`.

    The message never quotes the text (:data:`MSG_BAD_JSON` carries only the parser's position).
    """
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(MSG_JSON_TOO_LARGE.format(limit_kb=MAX_SPEC_BYTES // 1000))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(MSG_BAD_JSON.format(problem=f"{exc.msg} at line {exc.lineno}, column {exc.colno}")) from None
    except UnicodeDecodeError:
        raise SpecError(MSG_BAD_JSON.format(problem="it is not UTF-8 text")) from None
    except RecursionError:
        raise SpecError(MSG_JSON_TOO_DEEP) from None


def parse_terms(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """Split user input into terms.

    A string is split on commas and new lines; a sequence is taken as given.
    Surrounding white space is stripped and inner runs of white space
    collapse to one space. Empty entries are kept as ``""`` so that
    validation can name them (a trailing comma is forgiven).

    Parameters
    ----------
    value : str or iterable of str or None
        ``"man, father"`` or ``["man", "father"]``.

    Returns
    -------
    tuple of str
    """
    if value is None:
        return ()
    if isinstance(value, str):
        parts = re.split(r"[,\n;]", value)
        if parts and not parts[-1].strip():
            parts = parts[:-1]
        return tuple(_WS.sub(" ", p).strip() for p in parts)
    out = []
    for v in value:
        out.append(_WS.sub(" ", v).strip() if isinstance(v, str) else v)
    return tuple(out)


def _check_list(list_name: str, terms: Sequence[Any]) -> tuple[str, ...]:
    if len(terms) == 0:
        raise SpecError(MSG_EMPTY_LIST.format(list_name=list_name), list_name=list_name)
    if len(terms) > MAX_TERMS_PER_LIST:
        raise SpecError(
            MSG_TOO_MANY_TERMS.format(list_name=list_name, count=len(terms), limit=MAX_TERMS_PER_LIST),
            list_name=list_name,
        )
    seen: set[str] = set()
    for term in terms:
        if not isinstance(term, str):
            raise SpecError(
                MSG_NOT_TEXT.format(list_name=list_name, value=term, type_name=type(term).__name__),
                list_name=list_name,
            )
        if not term.strip():
            raise SpecError(MSG_EMPTY_TERM.format(list_name=list_name), list_name=list_name)
        if len(term) > MAX_TERM_LENGTH:
            raise SpecError(
                MSG_TERM_TOO_LONG.format(
                    start=term[:TERM_QUOTE_LENGTH], list_name=list_name, length=len(term), limit=MAX_TERM_LENGTH
                ),
                list_name=list_name,
            )
        key = term.casefold()
        if key in seen:
            raise SpecError(MSG_DUPLICATE_TERM.format(term=term, list_name=list_name), list_name=list_name, term=term)
        seen.add(key)
    return tuple(terms)


def _check_lists(kind: str, lists: Any) -> tuple[TermList, ...]:
    if isinstance(lists, Mapping):
        items = list(lists.items())
    else:
        items = [tuple(x) for x in lists]
    names: set[str] = set()
    out = []
    for name, terms in items:
        if not isinstance(name, str) or not name.strip():
            raise SpecError(MSG_BAD_DOCUMENT.format(problem=f"a list of {kind} has no name"))
        if name in names:
            raise SpecError(MSG_DUPLICATE_LIST_NAME.format(kind=kind, name=name))
        names.add(name)
        if isinstance(terms, str):
            terms = parse_terms(terms)
        elif not isinstance(terms, Sequence):
            raise SpecError(
                MSG_NOT_TEXT.format(list_name=name, value=terms, type_name=type(terms).__name__), list_name=name
            )
        out.append((name, _check_list(name, list(terms))))
    if len(out) < 2:
        raise SpecError(MSG_TOO_FEW_LISTS.format(kind=kind, count=len(out)))
    return tuple(out)


@dataclass(frozen=True)
class BiasSpec:
    """A bias specification: two social groups and two attribute lists.

    Construct it with :meth:`from_terms` (four lists, as typed in the app),
    :meth:`from_dict` (the BiasTestGPT JSON form) or directly. It validates
    itself on construction and raises :class:`~biastest.errors.SpecError`
    with a message for the user.

    Parameters
    ----------
    name : str
        Short name of the test.
    social_groups : tuple of (name, terms)
        In order; the first is group 1. Documents may carry more than two;
        tests need exactly two (see :meth:`select`).
    attributes : tuple of (name, terms)
        In order; the first is the stereotype of group 1.
    source, url : str
        Where the specification comes from.
    templates : tuple of str
        Optional sentence templates with ``[T]`` (group slot) and ``[A]``
        (attribute slot).
    """

    name: str
    social_groups: tuple[TermList, ...]
    attributes: tuple[TermList, ...]
    source: str = ""
    url: str = ""
    templates: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise SpecError(MSG_BAD_NAME.format(value=self.name))
        object.__setattr__(self, "social_groups", _check_lists("social groups", self.social_groups))
        object.__setattr__(self, "attributes", _check_lists("attribute lists", self.attributes))
        templates = tuple(self.templates or ())
        if len(templates) > MAX_TEMPLATES:
            raise SpecError(MSG_TOO_MANY_TERMS.format(list_name="Templates", count=len(templates), limit=MAX_TEMPLATES))
        for t in templates:
            if not isinstance(t, str) or "[T]" not in t:
                raise SpecError(MSG_BAD_TEMPLATE.format(template=t))
        object.__setattr__(self, "templates", templates)
        if len(self.social_groups) == len(self.attributes):  # two and two, or one stereotype list per group
            _check_roles_of(self.social_groups, self.attributes)

    @property
    def is_testable(self) -> bool:
        """Whether the spec has exactly two groups and two attribute lists."""
        return len(self.social_groups) == 2 and len(self.attributes) == 2

    def check_testable(self) -> BiasSpec:
        """Return ``self`` if it can be tested; otherwise raise a clear SpecError.

        Raises
        ------
        SpecError
            With :data:`MSG_THIRD_ATTRIBUTE_LIST` or :data:`MSG_EXTRA_GROUPS`.
        """
        if len(self.attributes) != 2:
            raise SpecError(
                MSG_THIRD_ATTRIBUTE_LIST.format(
                    count=len(self.attributes), names=", ".join(n for n, _ in self.attributes)
                )
            )
        if len(self.social_groups) != 2:
            raise SpecError(
                MSG_EXTRA_GROUPS.format(
                    count=len(self.social_groups), names=", ".join(n for n, _ in self.social_groups)
                )
            )
        return self

    @property
    def n_groups(self) -> int:
        """Number of social groups."""
        return len(self.social_groups)

    @property
    def is_group_spec(self) -> bool:
        """Whether each social group has its own stereotype list (as many attribute lists as groups, ≥ 2)."""
        return len(self.social_groups) == len(self.attributes) >= 2

    def check_two_groups(self, test: str) -> BiasSpec:
        """Return ``self`` for a two-group test (WEAT, the stereotype score); refuse 3+ groups in words.

        Raises
        ------
        SpecError
            :data:`MSG_TWO_GROUPS_ONLY` naming ``test`` when there are more than two groups; otherwise what
            :meth:`check_testable` raises.
        """
        if len(self.social_groups) > 2:
            raise SpecError(
                MSG_TWO_GROUPS_ONLY.format(test=test, name=self.name, count=len(self.social_groups),
                                           names=", ".join(n for n, _ in self.social_groups)),
                count=len(self.social_groups),
            )
        return self.check_testable()

    def check_group_spec(self) -> BiasSpec:
        """Return ``self`` if every group has its own stereotype list and no term has two roles.

        For MAC per group and the Bayesian estimate with any number of groups: as many attribute lists as
        groups (list *k* is the stereotype of group *k*), no term in two groups, in two attribute lists, or
        both a group term and an attribute.

        Raises
        ------
        SpecError
            :data:`MSG_GROUPS_ATTRIBUTES_MISMATCH`, :data:`MSG_TERM_IN_BOTH_GROUPS`,
            :data:`MSG_TERM_IN_BOTH_ATTRIBUTES` or :data:`MSG_TERM_GROUP_AND_ATTRIBUTE`.
        """
        if not self.is_group_spec:
            raise SpecError(MSG_GROUPS_ATTRIBUTES_MISMATCH.format(
                name=self.name, n_groups=len(self.social_groups), n_attributes=len(self.attributes),
                groups=", ".join(n for n, _ in self.social_groups),
                attributes=", ".join(n for n, _ in self.attributes)))
        _check_roles_of(self.social_groups, self.attributes)
        return self

    def stereotype_of(self) -> dict[str, str]:
        """Group name → the name of its stereotype attribute list (positional; :meth:`check_group_spec` first)."""
        return {g: a for (g, _), (a, _) in zip(self.social_groups, self.attributes, strict=False)}

    def select(self, *, groups: Sequence[str], attributes: Sequence[str], name: str | None = None) -> BiasSpec:
        """Choose two social groups and two attribute lists (in that order).

        Parameters
        ----------
        groups : sequence of two str
            Names of group 1 and group 2.
        attributes : sequence of two str
            Names of the stereotype of group 1 and of its anti-stereotype.
        name : str, optional
            Name of the new spec (default: this spec's name).
        """
        g = dict(self.social_groups)
        a = dict(self.attributes)
        for kind, wanted, have in (("social group", groups, g), ("attribute list", attributes, a)):
            for n in wanted:
                if n not in have:
                    raise SpecError(MSG_UNKNOWN_LIST.format(kind=kind, name=n, available=", ".join(have)))
        return BiasSpec(
            name=name or self.name,
            social_groups=tuple((n, g[n]) for n in groups),
            attributes=tuple((n, a[n]) for n in attributes),
            source=self.source,
            url=self.url,
            templates=self.templates,
        )

    # ------------------------------------------------------------- accessors
    @property
    def group1_name(self) -> str:
        return self.social_groups[0][0]

    @property
    def group2_name(self) -> str:
        return self.social_groups[1][0]

    @property
    def group1(self) -> tuple[str, ...]:
        """Terms of social group 1."""
        return self.social_groups[0][1]

    @property
    def group2(self) -> tuple[str, ...]:
        """Terms of social group 2."""
        return self.social_groups[1][1]

    @property
    def attribute1_name(self) -> str:
        return self.attributes[0][0]

    @property
    def attribute2_name(self) -> str:
        return self.attributes[1][0]

    @property
    def attributes1(self) -> tuple[str, ...]:
        """Stereotype attributes of group 1."""
        return self.attributes[0][1]

    @property
    def attributes2(self) -> tuple[str, ...]:
        """Anti-stereotype attributes of group 1 (stereotype of group 2)."""
        return self.attributes[1][1]

    @property
    def group_terms(self) -> tuple[str, ...]:
        """All terms of the (first two) social groups."""
        return self.group1 + self.group2

    @property
    def attribute_terms(self) -> tuple[str, ...]:
        """All terms of the (first two) attribute lists."""
        return self.attributes1 + self.attributes2

    def group_of(self, term: str) -> int | None:
        """Return 1 or 2 for a social-group term (case-insensitive), else None."""
        key = term.casefold()
        if key in {t.casefold() for t in self.group1}:
            return 1
        if key in {t.casefold() for t in self.group2}:
            return 2
        return None

    def attribute_side(self, term: str) -> int | None:
        """Return 1 (stereotype of group 1), 2, or None for an attribute term."""
        key = term.casefold()
        if key in {t.casefold() for t in self.attributes1}:
            return 1
        if key in {t.casefold() for t in self.attributes2}:
            return 2
        return None

    # ---------------------------------------------------------- construction
    @classmethod
    def from_terms(
        cls,
        *,
        group1: str | Iterable[str],
        group2: str | Iterable[str],
        stereotype1: str | Iterable[str],
        antistereotype1: str | Iterable[str],
        name: str = "Custom bias",
        group1_name: str = "Social group 1",
        group2_name: str = "Social group 2",
        stereotype1_name: str = "Stereotype for group 1",
        antistereotype1_name: str = "Anti-stereotype for group 1",
        source: str = "user",
        url: str = "",
        templates: Iterable[str] = (),
    ) -> BiasSpec:
        """Build a spec from the four term lists the app asks for.

        Each list may be a comma-separated string or a sequence of terms.
        """
        return cls(
            name=name,
            social_groups=((group1_name, parse_terms(group1)), (group2_name, parse_terms(group2))),
            attributes=(
                (stereotype1_name, parse_terms(stereotype1)),
                (antistereotype1_name, parse_terms(antistereotype1)),
            ),
            source=source,
            url=url,
            templates=tuple(templates),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BiasSpec:
        """Read the BiasTestGPT JSON form (order of groups and lists kept)."""
        if not isinstance(data, Mapping):
            raise SpecError(MSG_BAD_DOCUMENT.format(problem=f"expected an object, got {type(data).__name__}"))
        for key in ("name", "social_groups", "attributes"):
            if key not in data:
                raise SpecError(MSG_BAD_DOCUMENT.format(problem=f"the field '{key}' is missing"))
        for key in ("social_groups", "attributes"):
            if not isinstance(data[key], Mapping):
                raise SpecError(MSG_BAD_DOCUMENT.format(problem=f"'{key}' must map list names to lists of terms"))
        known = ("name", "source", "url", "social_groups", "attributes", "templates")
        templates = data.get("templates") or ()
        if isinstance(templates, str):
            templates = (templates,)
        return cls(
            name=data["name"],
            social_groups=tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in data["social_groups"].items()),
            attributes=tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in data["attributes"].items()),
            source=str(data.get("source", "") or ""),
            url=str(data.get("url", "") or ""),
            templates=tuple(templates),
            extra=tuple((k, v) for k, v in data.items() if k not in known),
        )

    def to_dict(self) -> dict[str, Any]:
        """Write the BiasTestGPT JSON form (key order as the original files)."""
        out: dict[str, Any] = {
            "name": self.name,
            "source": self.source,
            "url": self.url,
            "social_groups": {n: list(t) for n, t in self.social_groups},
            "attributes": {n: list(t) for n, t in self.attributes},
            "templates": list(self.templates),
        }
        out.update(dict(self.extra))
        return out

    @classmethod
    def from_json(cls, text: str | bytes) -> BiasSpec:
        """Parse one spec from JSON text."""
        return cls.from_dict(parse_spec_json(text))

    def to_json(self, *, indent: int | None = 2) -> str:
        """Serialise to BiasTestGPT JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def load_many(cls, path: str | Path) -> list[BiasSpec]:
        """Read a file holding one spec or a list of specs."""
        data = parse_spec_json(read_spec_bytes(path))
        if isinstance(data, list):
            return [cls.from_dict(d) for d in data]
        return [cls.from_dict(data)]

    def fingerprint(self) -> str:
        """A short content hash of the spec (stable across processes)."""
        payload = json.dumps({"g": self.social_groups, "a": self.attributes, "t": self.templates}, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _check_roles_of(groups: Sequence[TermList], attributes: Sequence[TermList]) -> None:
    """No term in two groups, in two attribute lists, or both a group term and an attribute (any number of lists)."""
    for (n1, t1), (n2, t2) in itertools.combinations(groups, 2):
        _check_disjoint(n1, t1, n2, t2, MSG_TERM_IN_BOTH_GROUPS)
    for (n1, t1), (n2, t2) in itertools.combinations(attributes, 2):
        _check_disjoint(n1, t1, n2, t2, MSG_TERM_IN_BOTH_ATTRIBUTES)
    attr_index = {t.casefold(): n for n, ts in attributes for t in ts}
    for gname, terms in groups:
        for t in terms:
            if t.casefold() in attr_index:
                raise SpecError(
                    MSG_TERM_GROUP_AND_ATTRIBUTE.format(term=t, group_list=gname,
                                                        attribute_list=attr_index[t.casefold()]),
                    term=t,
                )


def _check_disjoint(n1: str, t1: Sequence[str], n2: str, t2: Sequence[str], message: str) -> None:
    other = {t.casefold() for t in t2}
    for t in t1:
        if t.casefold() in other:
            raise SpecError(message.format(term=t, list1=n1, list2=n2), term=t)


# ------------------------------------------------------------------ matching
@lru_cache(maxsize=4096)
def term_regex(term: str) -> re.Pattern[str]:
    """Compiled pattern matching ``term`` as whole words, case-insensitively.

    Regex metacharacters in the term are escaped; a multi-word term matches
    across any run of white space; the match may not be preceded or followed
    by a letter, digit or underscore (so ``he`` does not match ``the`` or
    ``hero``, but does match ``he's`` and ``(he)``).
    """
    words = term.strip().split()
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


@lru_cache(maxsize=256)
def _terms_regex_cached(terms: tuple[str, ...]) -> re.Pattern[str]:
    ordered = sorted({t.strip() for t in terms if t.strip()}, key=lambda t: (-len(t), t))
    alts = "|".join(r"\s+".join(re.escape(w) for w in t.split()) for t in ordered)
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)", re.IGNORECASE)


def terms_regex(terms: Iterable[str]) -> re.Pattern[str]:
    """One compiled pattern matching any of ``terms`` (longest first)."""
    return _terms_regex_cached(tuple(terms))


def contains_term(text: str, term: str) -> bool:
    """Whether ``text`` contains ``term`` as whole words (case-insensitive)."""
    return term_regex(term).search(text) is not None


def find_terms(text: str, terms: Iterable[str]) -> list[str]:
    """The terms (as given) that occur in ``text``, in the order given."""
    return [t for t in terms if contains_term(text, t)]


# ------------------------------------------------------------------- pairing
@dataclass(frozen=True)
class TermPairing:
    """A deterministic list of term pairs and how it was made.

    Attributes
    ----------
    pairs : tuple of (str, str)
    mode : {"positional", "all", "sample"}
    seed : int or None
        The seed of a sampled pairing (recorded so it can be repeated).
    """

    pairs: tuple[tuple[str, str], ...]
    mode: str
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": [list(p) for p in self.pairs], "mode": self.mode, "seed": self.seed}


PairingMode = Literal["positional", "all", "sample"]


def _pairing(
    left: Sequence[str],
    right: Sequence[str],
    *,
    mode: str,
    n: int | None,
    seed: int | None,
    names: tuple[str, str],
) -> TermPairing:
    if mode == "positional":
        if len(left) != len(right):
            raise SpecError(MSG_UNEQUAL_POSITIONAL.format(list1=names[0], n1=len(left), list2=names[1], n2=len(right)))
        return TermPairing(tuple(zip(left, right, strict=True)), "positional")
    full = tuple(itertools.product(left, right))
    if mode == "all":
        return TermPairing(full, "all")
    if mode == "sample":
        if seed is None or isinstance(seed, bool) or not isinstance(seed, int):
            raise SpecError(MSG_SAMPLE_NEEDS_SEED)
        if n is None or isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise SpecError(MSG_BAD_SAMPLE_SIZE.format(value=n))
        rng = random.Random(seed)
        idx = sorted(rng.sample(range(len(full)), min(n, len(full))))
        return TermPairing(tuple(full[i] for i in idx), "sample", seed)
    raise SpecError(MSG_UNKNOWN_PAIRING.format(mode=mode, choices="positional, all, sample"))


def counterpart_pairs(
    spec: BiasSpec, *, mode: PairingMode = "positional", n: int | None = None, seed: int | None = None
) -> TermPairing:
    """Pairs (group-1 term, group-2 term) used to build counterfactuals.

    ``positional`` pairs the i-th terms of equally long groups (``man`` ↔
    ``woman``); ``all`` gives every combination; ``sample`` a seeded sample
    of ``n`` combinations, in a stable order. The original subsampled the
    longer list at random on every call; this never happens here.
    """
    spec.check_testable()
    return _pairing(spec.group1, spec.group2, mode=mode, n=n, seed=seed, names=(spec.group1_name, spec.group2_name))


def term_combinations(spec: BiasSpec, *, n: int | None = None, seed: int | None = None) -> TermPairing:
    """Pairs (group term, attribute term) to generate sentences for.

    All combinations when ``n`` is None, otherwise a seeded sample of ``n``.
    """
    spec.check_testable()
    mode = "all" if n is None else "sample"
    return _pairing(spec.group_terms, spec.attribute_terms, mode=mode, n=n, seed=seed, names=("groups", "attributes"))


# --------------------------------------------------------------- 2AFC specs
MSG_CUE_PAIR_SHAPE = "Each cue pair needs exactly two different words (like woman/man); got {value!r}."
MSG_CUE_IN_TARGETS = "The word '{term}' is both a target and a cue. Use it in one role only."


@dataclass(frozen=True)
class TwoAFCSpec:
    """A psychophysics specification: target words judged against cue pairs.

    Each cue pair ``(c1, c2)`` is one two-alternative forced choice (e.g.
    ``woman``/``man``); every target word (e.g. an occupation) is the
    stimulus. A PSE above 0.5 means the target sits closer to ``c1``.

    Parameters
    ----------
    name : str
    targets : tuple of str
    cue_pairs : tuple of (str, str)
    cue1_name, cue2_name : str
        Names of the two cue sides (e.g. ``female``, ``male``).
    source, url : str
    """

    name: str
    targets: tuple[str, ...]
    cue_pairs: tuple[tuple[str, str], ...]
    cue1_name: str = "cue 1"
    cue2_name: str = "cue 2"
    source: str = ""
    url: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise SpecError(MSG_BAD_NAME.format(value=self.name))
        object.__setattr__(self, "targets", _check_list("Target words", list(self.targets)))
        pairs = []
        for p in self.cue_pairs:
            if isinstance(p, str):
                p = tuple(x.strip() for x in re.split(r"[/|]", p))
            if (
                not isinstance(p, Sequence)
                or len(p) != 2
                or not all(isinstance(x, str) and x.strip() for x in p)
                or p[0].casefold() == p[1].casefold()
            ):
                raise SpecError(MSG_CUE_PAIR_SHAPE.format(value=p))
            pairs.append((p[0].strip(), p[1].strip()))
        if not pairs:
            raise SpecError(MSG_EMPTY_LIST.format(list_name="Cue pairs"))
        _check_list("Cue pairs", [f"{a}/{b}" for a, b in pairs])
        object.__setattr__(self, "cue_pairs", tuple(pairs))
        cues = {c.casefold() for p in pairs for c in p}
        for t in self.targets:
            if t.casefold() in cues:
                raise SpecError(MSG_CUE_IN_TARGETS.format(term=t), term=t)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TwoAFCSpec:
        """Read the JSON form written by :meth:`to_dict`."""
        if not isinstance(data, Mapping) or "targets" not in data or "cue_pairs" not in data:
            raise SpecError(MSG_BAD_DOCUMENT.format(problem="a 2AFC specification needs 'targets' and 'cue_pairs'"))
        return cls(
            name=data.get("name", "Custom 2AFC test"),
            targets=tuple(data["targets"]),
            cue_pairs=tuple(tuple(p) if not isinstance(p, str) else p for p in data["cue_pairs"]),
            cue1_name=data.get("cue1_name", "cue 1"),
            cue2_name=data.get("cue2_name", "cue 2"),
            source=data.get("source", ""),
            url=data.get("url", ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "url": self.url,
            "cue1_name": self.cue1_name,
            "cue2_name": self.cue2_name,
            "targets": list(self.targets),
            "cue_pairs": [list(p) for p in self.cue_pairs],
        }
