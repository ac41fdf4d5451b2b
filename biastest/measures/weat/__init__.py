"""The WEAT measure (Caliskan et al. 2017), with MAC (Manzini et al. 2019) beside it.

WEAT effect size d with its interval over the words and the permutation test;
MAC, the mean cosine distance of protected words to attribute classes.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.weat import report
from biastest.measures.weat.compare import compare_weat
from biastest.measures.weat.headless import headless
from biastest.measures.weat.options import MACOptions, WEATOptions
from biastest.measures.weat.result import MACResult, WEATResult
from biastest.measures.weat.run import MACItems, WEATItems, run, run_mac
from biastest.measures.weat.score import mac, weat

__all__ = [
    "MEASURE",
    "MACItems",
    "MACOptions",
    "MACResult",
    "WEATItems",
    "WEATOptions",
    "WEATResult",
    "compare_weat",
    "mac",
    "run",
    "run_mac",
    "weat",
]

MEASURE = Measure(
    name="weat",
    kind="embeddings",
    title="WEAT effect size and permutation test (with MAC)",
    Options=WEATOptions,
    run=run,
    Result=WEATResult,
    report=report,
    compare=compare_weat,
    card="docs/measures/weat.md",
    headless=headless,
    label="WEAT / MAC",
    extra={"mac": {"Options": MACOptions, "run": run_mac, "Result": MACResult}},
)
