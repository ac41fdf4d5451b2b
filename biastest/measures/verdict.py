"""One verdict sentence that every measure's reading opens with.

A social scientist reads the first sentence of a result and stops there. That sentence says, in plain words, the
direction of the effect, its size, its interval and whether it can be told apart from no bias — and, for a run that
cannot support a conclusion (a sampler that did not converge, a run that stopped early, scores that are not
comparable with in-process ones), that it gives no verdict, without any claim of significance.

The builder reads the interval each result already carries (its ``low``/``high`` fields, of whatever method the
measure chose); it recomputes nothing. A measure describes its headline in a :class:`Claim` and calls
:func:`verdict`; a measure with one estimate per word (2AFC) calls :func:`count_verdict`.

Rules (in order):

1. the run cannot be read (:class:`Standing` other than ``OK``): "Verdict: no verdict — <why>.", then the estimate
   shown for reference only;
2. no estimate: "Verdict: no verdict — <why>.";
3. an interval: it excludes the no-bias value and the measure's own test (when it has one) agrees → "a <size> lean
   <direction> … distinguishable from no bias"; it excludes the value but the test does not agree, or it includes
   the value → "not distinguishable from no bias";
4. no interval (with its reason): the test decides, said as such; without a test the verdict is "undecided".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from biastest.report.text import level_label

__all__ = [
    "MSG_NOT_COMPARABLE",
    "MSG_NOT_CONVERGED",
    "MSG_PARTIAL",
    "PREFIX",
    "Claim",
    "Standing",
    "count_verdict",
    "run_standing",
    "share_claim",
    "size_word",
    "verdict",
]

#: The words every verdict starts with (the apps' step 3 and the tests look for it).
PREFIX = "Verdict:"

#: Why a run gives no verdict, by its standing (completed by :func:`verdict`).
MSG_NOT_CONVERGED = "the sampler did not converge, so this run cannot support a conclusion"
MSG_PARTIAL = "the run stopped before every item was answered, so this partial result cannot support a conclusion"
MSG_NOT_COMPARABLE = ("the scores come from text the server split into tokens itself, so they are not comparable "
                      "with in-process scores of the same model")
MSG_NO_VERDICT = PREFIX + " no verdict — {why}."
MSG_REFERENCE = " The {what} is {estimate}{interval}, shown for reference only: not evidence for or against a bias."
MSG_LEAN = (PREFIX + " {article} {size}lean {direction} — {what} of {estimate} ({interval}), distinguishable from no "
            "bias ({null}).")
MSG_INCLUDES = (PREFIX + " not distinguishable from no bias — {what} of {estimate} ({interval}, which includes "
                "the no-bias value {null}).")
MSG_UNCONFIRMED = (PREFIX + " not distinguishable from no bias — {what} of {estimate} ({interval}) leans {direction}, "
                   "but the test does not confirm it (p = {p}).")
MSG_TEST_LEAN = (PREFIX + " {article} {size}lean {direction} — {what} of {estimate} (no interval: {why}); the test "
                 "tells it apart from no bias ({null}; p = {p}).")
MSG_TEST_NONE = (PREFIX + " not distinguishable from no bias — {what} of {estimate} (no interval: {why}; the test "
                 "gives p = {p}).")
MSG_UNDECIDED = (PREFIX + " undecided — {what} of {estimate}, with no interval ({why}), so it cannot be told apart "
                 "from no bias ({null}).")
MSG_EXACTLY = PREFIX + " no lean either way — {what} of {estimate} is exactly the no-bias value {null}."
MSG_COUNT = (PREFIX + " {above} of {n} {units} lean {above_dir} beyond their {level} interval and {below} "
             "{below_dir}; {rest} cannot be told apart from no bias ({null}). By chance alone about {expected:.1f} "
             "would lean beyond their interval.")
MSG_COUNT_MISSING = " {k} more had no interval and are not counted."
MSG_COUNT_NONE = PREFIX + " no verdict on single {units} — {why}."


class Standing(Enum):
    """Whether a run can support a verdict at all."""

    OK = "ok"
    NOT_CONVERGED = "not converged"
    PARTIAL = "partial"
    NOT_COMPARABLE = "not comparable"


_WHY = {Standing.NOT_CONVERGED: MSG_NOT_CONVERGED, Standing.PARTIAL: MSG_PARTIAL,
        Standing.NOT_COMPARABLE: MSG_NOT_COMPARABLE}


@dataclass(frozen=True)
class Claim:
    """A measure's headline, as the verdict reads it (every number read from the result, none recomputed).

    Attributes
    ----------
    what : str
        The statistic's name in words ("stereotype score", "WEAT effect size d").
    estimate : float or None
        Its value (None: nothing could be estimated; ``no_interval`` then says why).
    low, high : float or None
        The interval the result carries (None: no interval; ``no_interval`` says why).
    null : float
        The value meaning no bias (50 for a share in %, 0 for a difference).
    above, below : str
        The direction of an estimate above / below ``null``, in words ("towards the stereotype").
    level : float
        The interval's level (0.95), printed as "95 %".
    interval_name : str
        What the interval is ("interval", "cluster interval", "highest-density interval").
    unit : str
        Appended to every number ("%" or "").
    digits : int
        Decimals printed.
    p_value, alpha : float or None, float
        The measure's own test of no bias, when it has one: a lean needs ``p_value < alpha`` too.
    size : str
        The size in words ("strong"; "" for none), from :func:`size_word`.
    no_interval : str
        Why there is no interval (or no estimate).
    """

    what: str
    estimate: float | None
    low: float | None
    high: float | None
    null: float
    above: str
    below: str
    level: float = 0.95
    interval_name: str = "interval"
    unit: str = ""
    digits: int = 1
    p_value: float | None = None
    alpha: float = 0.05
    size: str = ""
    no_interval: str = ""

    def number(self, x: float) -> str:
        """``x`` as the verdict prints it (its digits and unit; a sign where the null is 0)."""
        sign = "+" if self.null == 0 and x > 0 else ""
        text = f"{sign}{x:.{self.digits}f}".replace("-", "−")
        return f"{text} {self.unit}" if self.unit == "%" else text + self.unit

    def null_text(self) -> str:
        """The no-bias value as printed ("50 %", "0")."""
        return f"{self.null:g} {self.unit}" if self.unit == "%" else f"{self.null:g}{self.unit}"

    def interval(self) -> str:
        """The interval in words ("95 % interval 55.0–61.2 %"), or "" without one."""
        if self.low is None or self.high is None:
            return ""
        sep = " to " if self.null == 0 else "–"
        low, high = self.number(self.low), self.number(self.high)
        if self.unit == "%":
            low = low.removesuffix(" %")
        return f"{level_label(self.level)} {self.interval_name} {low}{sep}{high}"


def run_standing(provenance: Any) -> Standing:
    """``PARTIAL`` when the result's provenance says its model stopped before every item was answered (an endpoint
    run's ``provenance["model"]["complete"]`` is False), else ``OK``."""
    info = provenance.get("model") if isinstance(provenance, Mapping) else None
    if isinstance(info, Mapping) and info.get("complete") is False:
        return Standing.PARTIAL
    return Standing.OK


#: The size of a share's distance from 50 % in words (the cuts in points, as the stereotype score's reading).
SHARE_SIZES = ((5.0, 15.0), ("slight", "moderate", "strong"))


def share_claim(c: Any, *, what: str, above: str = "towards the stereotype",
                below: str = "against the stereotype") -> Claim:
    """The :class:`Claim` of a share in % with a cluster-aware summary
    (:class:`~biastest.stats.clusters.ClusterSummary`: its interval when shown, else its reason; its sign test)."""
    shown = bool(c.interval_shown)
    return Claim(what=what, estimate=c.estimate, low=c.low if shown else None, high=c.high if shown else None,
                 null=50, above=above, below=below, level=c.confidence, interval_name="cluster interval", unit="%",
                 p_value=c.p_value, alpha=1 - c.confidence, size=size_word(c.estimate - 50, *SHARE_SIZES),
                 no_interval=c.reason or "too few clusters")


def size_word(distance: float, cuts: tuple[float, float], words: tuple[str, str, str]) -> str:
    """The size of ``|distance|`` in words: ``words[0]`` below ``cuts[0]``, ``words[1]`` below ``cuts[1]``, else
    ``words[2]`` (e.g. ``(5, 15)`` and ``("slight", "moderate", "strong")`` for a share's points from 50 %)."""
    d = abs(distance)
    return words[0] if d < cuts[0] else words[1] if d < cuts[1] else words[2]


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _article(size: str) -> str:
    return "an" if (size or "lean")[0] in "aeiou" else "a"


def _direction(claim: Claim) -> str:
    return claim.above if claim.estimate > claim.null else claim.below


def verdict(claim: Claim, *, standing: Standing = Standing.OK, why: str = "") -> str:
    """The one verdict sentence (plain text, no Markdown) for ``claim`` (see the module's rules).

    ``standing`` other than ``OK`` gives no verdict, whatever the numbers; ``why`` then replaces the standing's
    own reason (:data:`MSG_NOT_CONVERGED`, :data:`MSG_PARTIAL`, :data:`MSG_NOT_COMPARABLE`).
    """
    est = claim.estimate
    if standing is not Standing.OK:
        text = MSG_NO_VERDICT.format(why=why or _WHY[standing])
        if est is None or not math.isfinite(est):
            return text
        interval = claim.interval()
        return text + MSG_REFERENCE.format(what=claim.what, estimate=claim.number(est),
                                           interval=f" ({interval})" if interval else "")
    if est is None or not math.isfinite(est):
        return MSG_NO_VERDICT.format(why=claim.no_interval or "nothing could be estimated")
    null = claim.null_text()
    fields = {"what": claim.what, "estimate": claim.number(est), "null": null}
    if est == claim.null:
        return MSG_EXACTLY.format(**fields)
    size = f"{claim.size} " if claim.size else ""
    lean = {"article": _article(claim.size), "size": size, "direction": _direction(claim)}
    confirmed = claim.p_value is None or claim.p_value < claim.alpha
    if claim.low is not None and claim.high is not None:
        interval = claim.interval()
        if claim.low <= claim.null <= claim.high:
            return MSG_INCLUDES.format(interval=interval, **fields)
        if not confirmed:
            return MSG_UNCONFIRMED.format(interval=interval, direction=lean["direction"], p=_p(claim.p_value),
                                          **fields)
        return MSG_LEAN.format(interval=interval, **lean, **fields)
    # a reason written to stand alone ("No interval: the 4 pairs fall into …") reads inside the sentence's brackets
    why = (claim.no_interval or "none was computed").removeprefix("No interval: ").rstrip(".")
    if claim.p_value is None:
        return MSG_UNDECIDED.format(why=why, **fields)
    if confirmed:
        return MSG_TEST_LEAN.format(why=why, p=_p(claim.p_value), **lean, **fields)
    return MSG_TEST_NONE.format(why=why, p=_p(claim.p_value), **fields)


def count_verdict(estimates: list[tuple[float, float | None, float | None]], *, null: float, units: str,
                  above: str, below: str, level: float, number: Callable[[float], str] = "{:g}".format,
                  no_interval: str = "") -> str:
    """The verdict of a measure with one estimate per unit (a 2AFC PSE per target word): how many units lean
    each way beyond their own interval, how many cannot be told apart from no bias, and how many would lean by
    chance alone at the interval's level.

    ``estimates``: (estimate, low, high) per unit, the intervals as the result carries them; ``units`` the plural
    noun ("target words"); ``no_interval`` why no unit has an interval (then no verdict).
    """
    with_ci = [(lo, hi) for _, lo, hi in estimates if lo is not None and hi is not None]
    if not with_ci:
        return MSG_COUNT_NONE.format(units=units, why=no_interval or "no unit has an interval")
    n_above = sum(1 for lo, _ in with_ci if lo > null)
    n_below = sum(1 for _, hi in with_ci if hi < null)
    return MSG_COUNT.format(above=n_above, n=len(with_ci), units=units, above_dir=above, level=level_label(level),
                            below=n_below, below_dir=below, rest=len(with_ci) - n_above - n_below,
                            null=number(null), expected=(1 - level) * len(with_ci),
                            ) + ("" if len(with_ci) == len(estimates) else MSG_COUNT_MISSING.format(
                                k=len(estimates) - len(with_ci)))
