"""The 2AFC measure: psychophysics of word embeddings (Liang & Acuna 2020).

PSE and JND of target words on female/male (or any) cue pairs, psychometric
fits, intervals from the data, the correlation of the PSE and of the JND with
labour statistics, and the paper's numbers on GloVe 6B 50d
(:func:`biastest.measures.twoafc.reproduce.reproduction_numbers`).
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.twoafc import report
from biastest.measures.twoafc.compare import compare_twoafc
from biastest.measures.twoafc.headless import headless, prepare
from biastest.measures.twoafc.labor import (
    jnd_labor_correlation,
    labor_statistics_correlation,
    load_occupations_bls,
)
from biastest.measures.twoafc.options import MSG_CORPUS_AND_REPLICATES, TwoAFCOptions
from biastest.measures.twoafc.result import (
    JNDLaborCorrelation,
    LaborCorrelation,
    PairPSE,
    TargetPSE,
    TwoAFCResult,
)
from biastest.measures.twoafc.run import TwoAFCItems, run
from biastest.measures.twoafc.score import PAPER_CUE_PAIRS
from biastest.measures.twoafc.summary import twoafc

__all__ = [
    "MEASURE",
    "MSG_CORPUS_AND_REPLICATES",
    "PAPER_CUE_PAIRS",
    "JNDLaborCorrelation",
    "LaborCorrelation",
    "PairPSE",
    "TargetPSE",
    "TwoAFCItems",
    "TwoAFCOptions",
    "TwoAFCResult",
    "compare_twoafc",
    "jnd_labor_correlation",
    "labor_statistics_correlation",
    "load_occupations_bls",
    "run",
    "twoafc",
]

MEASURE = Measure(
    name="twoafc",
    kind="embeddings",
    title="2AFC psychophysics: PSE and JND of words on cue pairs, psychometric fits",
    Options=TwoAFCOptions,
    run=run,
    Result=TwoAFCResult,
    report=report,
    compare=compare_twoafc,
    aliases=("2afc",),
    card="docs/measures/twoafc.md",
    headless=headless,
    prepare=prepare,
    spec_type="twoafc",
    label="2AFC psychophysics",
)
