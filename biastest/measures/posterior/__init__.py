"""The posterior of embeddings given a sentiment classifier (Liang & Acuna 2020), sampled with NUTS.

A small classifier learns positive vs negative words from the VADER lexicon on the embedding's
vectors; NUTS samples ``p(s | +)`` and ``p(s | −)``, and two word groups are compared by their
distance to each posterior with a permutation test. The formula and its reference are in
:mod:`.score`; the read-outs in :mod:`.summary`, the result in :mod:`.result`, the report in :mod:`.report`.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.posterior import report
from biastest.measures.posterior.options import PosteriorOptions
from biastest.measures.posterior.result import PosteriorResult
from biastest.measures.posterior.run import PosteriorItems, run
from biastest.measures.posterior.score import load_default_groups

__all__ = ["MEASURE", "PosteriorItems", "PosteriorOptions", "PosteriorResult", "load_default_groups", "run"]

MEASURE = Measure(
    name="posterior",
    kind="embeddings",
    title="Posterior of embeddings given a sentiment classifier (NUTS), with a group distance test",
    Options=PosteriorOptions,
    run=run,
    Result=PosteriorResult,
    report=report,
    compare=None,
    card="docs/measures/posterior.md",
    label="Posterior of embeddings given a sentiment classifier",
    extra={"cli": False, "audit": False},  # no spec: it samples from a classifier trained on a lexicon (the app)
)
