"""Keyword shorthands for the tests: one call that builds a measure's options and items and runs it.

The product calls ``measure.run(Options.parse(...), Items(...))``; many tests give a handful of
keywords, and these helpers sort them into the options and the items so each test reads as before.
"""

from __future__ import annotations

from typing import Any

from biastest.measures import twoafc, weat
from biastest.options import BOUNDS, check_option

_TUPLES = ("replicates", "alpha_grid")


def _options(options_cls: type, given: dict[str, Any]) -> Any:
    """The options of ``given``; a ``None`` for a bounded option whose default is not ``None`` (a seed) is refused.

    ``Options.parse`` reads ``None`` as "the default" (a form left blank); the keyword runners these tests
    were written for refused a ``None`` seed, and the tests keep asserting that message.
    """
    for name, value in given.items():
        field = options_cls.model_fields.get(name)
        if value is None and name in BOUNDS and field is not None and field.default is not None:
            check_option(name, value)
    values = {k: (tuple(v) if k in _TUPLES and v is not None else v) for k, v in given.items()}
    if isinstance(values.get("corpus"), list):
        values["corpus"] = tuple(values["corpus"])
    return options_cls.parse(values)


def run_twoafc(*, progress: Any = None, **kw: Any) -> twoafc.TwoAFCResult:
    """:func:`biastest.measures.twoafc.run` with the items' keywords (targets, cue_pairs, labels, spec) picked out."""
    items = {k: kw.pop(k) for k in ("targets", "cue_pairs", "cue1_label", "cue2_label", "spec") if k in kw}
    return twoafc.run(_options(twoafc.TwoAFCOptions, kw), twoafc.TwoAFCItems(**items), progress=progress)


def run_weat(*, progress: Any = None, **kw: Any) -> weat.WEATResult:
    """:func:`biastest.measures.weat.run` with X, Y, A, B, names and spec picked out (``n_bootstrap`` = resamples)."""
    items = {k: kw.pop(k) for k in ("X", "Y", "A", "B", "names", "spec") if k in kw}
    if "n_bootstrap" in kw:
        kw["n_resamples"] = kw.pop("n_bootstrap")
    return weat.run(_options(weat.WEATOptions, kw), weat.WEATItems(**items), progress=progress)


def run_mac(*, progress: Any = None, **kw: Any) -> weat.MACResult:
    """:func:`biastest.measures.weat.run_mac` with words, attribute classes and spec picked out."""
    items = {k: kw.pop(k) for k in ("words", "attribute_classes", "spec") if k in kw}
    return weat.run_mac(_options(weat.MACOptions, kw), weat.MACItems(**items), progress=progress)
