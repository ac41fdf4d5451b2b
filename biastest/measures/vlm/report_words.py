"""The words of the vision-language reports: the names of the four lists, an image's facts, the messages.

The two groups of image terms and the two lists of target terms are named once, by :func:`labels`, from the
user's own terms (``doctor / engineer``), and every text, hover label, table and figure
(:mod:`biastest.measures.vlm.report`, :mod:`biastest.measures.vlm.report_figures`) uses those names: an
image's side is said the same way in the grid's hover label, the app's detail panel and the table
(:func:`image_facts`). User text is HTML-escaped where it reaches Markdown or a hover label.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from biastest.measures.vlm.result import VLMResult
from biastest.report.text import esc, level_label
from biastest.spec import BiasSpec

__all__ = [
    "GRID_HOVER_FIELDS",
    "MSG_BAR_UNCONFIRMED",
    "MSG_BAR_UNCONFIRMED_CLUSTERS",
    "MSG_CHAT_RULE",
    "MSG_HOLM_NONE",
    "MSG_HOLM_SOME",
    "MSG_LEAN_UNCONFIRMED",
    "MSG_LEAN_UNCONFIRMED_CLUSTERS",
    "MSG_NO_CLUSTERS",
    "THIN_IMAGES",
    "Labels",
    "group_names",
    "image_facts",
    "labels",
    "leans_to",
    "level_label",
    "list_label",
    "target_names",
]

THIN_IMAGES = 5
"""Fewer images than this for an image term earns a hint (its interval will be wide)."""

MSG_LEAN_UNCONFIRMED = (
    "The sign test does not confirm this lean (p = {p}, {n_st} images leaning to the stereotype and {n_anti} "
    "away from it): with these {n} images we cannot tell it apart from no preference."
)
MSG_BAR_UNCONFIRMED = (
    "Why the interval and p disagree: the interval leaves out 50%, but the exact sign test does not confirm the "
    "lean (p = {p}): {n_st} of {n} image(s) lean to the stereotype and {n_anti} away from it, too few to tell "
    "apart from chance. The bootstrap interval of few, alike images is too narrow to trust alone."
)
MSG_LEAN_UNCONFIRMED_CLUSTERS = (
    "The sign test on cluster means does not confirm this lean (p = {p}, {above} clusters leaning to the "
    "stereotype and {below} away from it): with these {n} independent clusters we cannot tell it apart from no "
    "preference."
)
MSG_BAR_UNCONFIRMED_CLUSTERS = (
    "Why the interval and p disagree: the cluster interval leaves out 50%, but the sign test on cluster means does "
    "not confirm the lean (p = {p}): {above} of {n} clusters lean to the stereotype and {below} away from it, too "
    "few to tell apart from chance."
)
MSG_NO_CLUSTERS = (
    "**Clusters:** none, the {n} images are treated as independent. If pictures share prompts or image terms, "
    "choose those clusters: pictures of one family lean together and the interval would be wider."
)
MSG_HOLM_NONE = (
    "No single {family} stands out once the {m} {family} tests are corrected for multiple comparisons (Holm, at "
    "{alpha}%); the raw p-values are in the bars' hover labels and the downloads."
)
MSG_HOLM_SOME = (
    "{family_title}s whose lean survives the correction for {m} comparisons (Holm, at {alpha}%): {terms}."
)
MSG_NO_INTERVAL_LEAN = (
    "Too few independent clusters for an interval (see below), but {above} of the {n} clusters lean to the "
    "stereotype and {below} away (sign test on cluster means: p = {p}):"
)
MSG_NO_INTERVAL_NO_LEAN = (
    "With only {n} independent clusters ({by}) there is no interval, and the sign test on cluster means (p = {p}) "
    "cannot tell this lean apart from no preference, however many pictures each cluster has. More prompts or "
    "image terms would settle it."
)

GRID_HOVER_FIELDS = ("image term", "P(T1)", "P(T2)", "leans to", "answer", "image")
"""Lines of the grid's hover label, in order (:func:`image_facts`): ``T1``/``T2`` are written as the target lists'
labels, and "answer" as "most probable single term" (CLIP-like models) or "the model's answer"."""

MAX_LABEL_TERMS = 3
"""A list named by its terms shows at most this many of them ("+N more" after)."""
MAX_LABEL_TERM_CHARS = 40
"""A term longer than this is cut (with "…") in a list's label; it is shown whole where it stands alone."""

_FROM_TERMS = inspect.signature(BiasSpec.from_terms).parameters
PLACEHOLDER_NAMES = frozenset(
    _FROM_TERMS[k].default for k in ("group1_name", "group2_name", "stereotype1_name", "antistereotype1_name")
)
"""The names a spec built from four term boxes gets for its lists (not chosen by the user: never shown)."""

MSG_NEITHER = "neither list (the answer names none of the target terms)"
MSG_TIE = "neither list (equal probabilities)"
MSG_NEITHER_CHAT = "no list (no answer named one: refused or unparseable)"
MSG_TIE_CHAT = "no single list (the two orders named different lists)"
MSG_NOT_SCORED = "{count} image(s) got no answer and are left out of every score: {paths}."
MSG_NO_PROBABILITY = "no probability"


def _esc(value: Any) -> str:
    return esc(value)


def _pct(value: float | None) -> str:
    return "—" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.1f}%"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


# --------------------------------------------------------------------------- the names of the four lists
def list_label(name: str, terms: Sequence[str]) -> str:
    """How a list of terms is named everywhere in the results.

    A list of one term is named by that term; a list whose name is a placeholder
    (:data:`PLACEHOLDER_NAMES`: the user typed terms, not a name) by its terms, at most
    :data:`MAX_LABEL_TERMS` of them; a list the user (or the library) named, by its name.

    >>> list_label("Social group 1", ["man", "father"])
    'man / father'
    >>> list_label("Stereotype for group 1", ["doctor", "engineer", "surgeon", "pilot", "judge"])
    'doctor / engineer / surgeon +2 more'
    >>> list_label("Math", ["math", "algebra"])
    'Math'
    """
    terms = [str(t) for t in terms]

    def short(term: str) -> str:
        return term if len(term) <= MAX_LABEL_TERM_CHARS else term[: MAX_LABEL_TERM_CHARS - 1].rstrip() + "…"

    if len(terms) == 1:
        return short(terms[0])
    if name and name not in PLACEHOLDER_NAMES:
        return short(str(name))
    shown = " / ".join(short(t) for t in terms[:MAX_LABEL_TERMS])
    return shown + (f" +{len(terms) - MAX_LABEL_TERMS} more" if len(terms) > MAX_LABEL_TERMS else "")


@dataclass(frozen=True)
class Labels:
    """The names of the two groups of image terms and of the two lists of target terms (plain text).

    ``target1`` is the stereotype of ``group1``, ``target2`` that of ``group2``.
    """

    group1: str
    group2: str
    target1: str
    target2: str
    terms1: tuple[str, ...] = ()
    terms2: tuple[str, ...] = ()

    def group(self, k: int) -> str:
        return self.group1 if k == 1 else self.group2

    def target(self, k: int) -> str:
        return self.target1 if k == 1 else self.target2

    def side_of(self, term: str) -> int | None:
        """1 or 2: the target list holding ``term`` (case-insensitive); None for neither."""
        key = " ".join(str(term).split()).casefold()
        for k, terms in ((1, self.terms1), (2, self.terms2)):
            if key in {t.casefold() for t in terms}:
                return k
        return None


def _lists(result: VLMResult, key: str) -> list[tuple[str, list[str]]]:
    lists = result.spec.get(key) if isinstance(result.spec, Mapping) else None
    out = [(str(k), [str(t) for t in v] if isinstance(v, (list, tuple)) else [str(v)])
           for k, v in (lists.items() if isinstance(lists, Mapping) else [])]
    while len(out) < 2:
        out.append((f"list {len(out) + 1}", []))
    return out[:2]


def labels(result: VLMResult) -> Labels:
    """The labels of the result's four lists (:func:`list_label`), written once for every text and figure."""
    (g1n, g1), (g2n, g2) = _lists(result, "social_groups")
    (t1n, t1), (t2n, t2) = _lists(result, "attributes")
    names = [list_label(n, terms) if terms else n for n, terms in ((g1n, g1), (g2n, g2), (t1n, t1), (t2n, t2))]
    # two lists may never share a label (a library may name both alike): tell them apart by their order
    if names[0] == names[1]:
        names[0], names[1] = f"{names[0]} (group 1)", f"{names[1]} (group 2)"
    if names[2] == names[3]:
        names[2], names[3] = f"{names[2]} (list 1)", f"{names[3]} (list 2)"
    return Labels(*names, terms1=tuple(t1), terms2=tuple(t2))


def target_names(result: VLMResult) -> tuple[str, str]:
    """The labels of the target lists T1 and T2 (:func:`labels`)."""
    lab = labels(result)
    return lab.target1, lab.target2


def group_names(result: VLMResult) -> tuple[str, str]:
    """The labels of the two groups of image terms (:func:`labels`)."""
    lab = labels(result)
    return lab.group1, lab.group2


def leans_to(img: Any, lab: Labels) -> str:
    """Which list an image leans to and whose stereotype that is, in words (plain text)."""
    chat = bool(getattr(img, "by_order", ()))
    if img.verdict == "neither":
        return MSG_NEITHER_CHAT if chat else MSG_NEITHER
    if img.verdict not in ("T1", "T2"):
        return MSG_TIE_CHAT if chat else MSG_TIE
    side = 1 if img.verdict == "T1" else 2
    own = int(img.image_group)
    if side == own:
        return f"{lab.target(side)} (the stereotype of {lab.group(own)})"
    return f"{lab.target(side)} (the stereotype of {lab.group(side)}, not of {lab.group(own)})"


def _answer(result: VLMResult, img: Any, lab: Labels) -> tuple[str, str]:
    """The answer's field name and value; a single term on the other list than the lean is explained."""
    if getattr(img, "by_order", ()):  # a chat model asked in both orders: each answer, raw, and how it was read
        return "the model's answer", " · ".join(
            f"{a.order}: {a.answer!r} ({a.outcome})" if a.answer else f"{a.order}: {a.outcome}" for a in img.by_order)
    if result.model_kind != "clip":
        return "the model's answer", str(img.answer)
    value = str(img.answer)
    side = lab.side_of(value)
    lean = {"T1": 1, "T2": 2}.get(img.verdict)
    if side is not None and lean is not None and side != lean:
        value += f" (a term of {lab.target(side)}; together the terms of {lab.target(lean)} are more probable)"
    return "most probable single term", value


def _prob(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def image_facts(result: VLMResult, img: Any, lab: Labels | None = None) -> list[tuple[str, str]]:
    """``(field, value)`` lines describing one image's result (plain text), in :data:`GRID_HOVER_FIELDS` order.

    The one source of the grid's hover label, the app's hover card and detail panel, and the table's columns,
    so that they name an image's side in the same words.
    """
    lab = lab or labels(result)
    answer_field, answer = _answer(result, img, lab)
    return [
        ("image term", str(img.image_term)),
        (f"P({lab.target1})", _prob(img.p_t1)),
        (f"P({lab.target2})", _prob(img.p_t2)),
        ("leans to", leans_to(img, lab)),
        (answer_field, answer),
        ("image", str(img.image_id)),
    ]


def _signed(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}"


#: How a chat model's answers enter the stereotyped share (the report, the app's results page, docs/measures/vlm.md).
MSG_CHAT_RULE = (
    "Each picture was asked twice, once with each list named first. Refusals ('I cannot tell', 'both', "
    "'neither' …) and answers that are not one of the allowed answers are counted apart and left out of the "
    "stereotyped share's numerator and denominator; they never count as not stereotyped."
)


def _rate(rate: Any) -> str:
    """A rate as the summary shows it: estimate, interval and counts (or that there was nothing to count)."""
    if rate is None or rate.estimate is None:
        return "nothing to count"
    return (f"**{rate.estimate:.1f}%** ({level_label(rate.confidence, space=False)} interval {rate.low:.1f}–"
            f"{rate.high:.1f}%; {rate.k} of {rate.n})")
