"""BBQ, the Bias Benchmark for QA (Parrish et al., Findings of ACL 2022), asked of a chat model.

Each question — a context (ambiguous or disambiguated), a question (negative or non-negative) and three answers
(the target group, the other group, "unknown") — is asked with its answers in a shuffled, recorded order; the
answer is read strictly; accuracy per context condition and the paper's bias scores s_DIS and s_AMB are
reported per category and overall with intervals clustered by template, refusals and unreadable answers apart.
The card: ``docs/measures/bbq.md``.

* :mod:`.data` — the importer (:func:`load_bbq`: the official JSONL files and ``additional_metadata.csv``);
* :mod:`.prompt` — the templates (``bbq-v1``) and the strict parser;
* :mod:`.options` — :class:`BBQOptions` (the model's options of :class:`~biastest.measures.chat_common.ChatModelOptions`
  plus categories, sample, conditions, order, template);
* :mod:`.design` — the sample, the answer orders, the requests;
* :mod:`.score` — outcomes and scores (formulas in its docstring); :mod:`.result` — :class:`BBQResult`;
* :mod:`.run` — :func:`run`; :mod:`.cost` — the requests and tokens before a run; :mod:`.report` — CSV/JSON;
  :mod:`.headless` — the command line's run.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.bbq import report
from biastest.measures.bbq.audit import AUDIT_USE
from biastest.measures.bbq.cost import Cost, estimate_cost
from biastest.measures.bbq.data import CATEGORIES, BBQData, BBQItem, load_bbq
from biastest.measures.bbq.headless import CLI_FLAGS, cost, headless, prepare
from biastest.measures.bbq.options import BBQOptions
from biastest.measures.bbq.prompt import TEMPLATES, parse_reply
from biastest.measures.bbq.result import BBQResult, BBQRow, Estimate, GroupScores
from biastest.measures.bbq.run import BBQItems
from biastest.measures.bbq.run import run as run_bbq

__all__ = [
    "CATEGORIES",
    "MEASURE",
    "TEMPLATES",
    "BBQData",
    "BBQItem",
    "BBQItems",
    "BBQOptions",
    "BBQResult",
    "BBQRow",
    "Cost",
    "Estimate",
    "GroupScores",
    "estimate_cost",
    "load_bbq",
    "parse_reply",
    "run_bbq",
]

MEASURE = Measure(
    name="bbq",
    kind="chat",
    title="BBQ: bias in question answering of a chat model (Parrish et al. 2022)",
    Options=BBQOptions,
    run=run_bbq,
    Result=BBQResult,
    report=report,
    card="docs/measures/bbq.md",
    headless=headless,
    prepare=prepare,
    spec_type="none",
    extra={"cost": cost, "cli_flags": CLI_FLAGS, "audit": AUDIT_USE},
)
