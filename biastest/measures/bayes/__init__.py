"""The Bayesian estimate with control groups: a Bayesian cosine model of word-embedding bias.

Every (target word, attribute word) cosine distance enters a model beside neutral control words;
the result is highest posterior density intervals per word, connection and contrast, with
convergence checked (and the sampler re-run) before anything is reported. The formula and its
reference are in :mod:`.score`; the sampler in :mod:`.sampler`, the fit and its reading in
:mod:`.fit`, the result in :mod:`.result`, the report in :mod:`.report`.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.bayes import report
from biastest.measures.bayes.fit import fit_bayes
from biastest.measures.bayes.headless import headless
from biastest.measures.bayes.options import BayesOptions
from biastest.measures.bayes.result import BayesResult
from biastest.measures.bayes.run import BayesItems, available_models, run
from biastest.measures.bayes.score import BAYES_MODELS

__all__ = ["BAYES_MODELS", "MEASURE", "BayesItems", "BayesOptions", "BayesResult", "available_models",
           "fit_bayes", "run", "MSG_BAYES_NOT_IN_AUDIT"]

#: Why an audit does not run this measure (its grid's ``methods`` refuses it with these words).
MSG_BAYES_NOT_IN_AUDIT = (
    "The bayes test ({where}) gives posterior contrasts per word, not one score per cell for an audit's table. "
    "Run it on its own: python -m biastest run bayes SPEC."
)

MEASURE = Measure(
    name="bayes",
    kind="embeddings",
    title="Bayesian cosine model with control groups (posterior intervals per word and contrast)",
    Options=BayesOptions,
    run=run,
    Result=BayesResult,
    report=report,
    compare=None,
    card="docs/measures/bayes.md",
    headless=headless,
    label="Bayesian estimate with control groups",
    extra={"audit": False, "audit_refusal": MSG_BAYES_NOT_IN_AUDIT},
)
