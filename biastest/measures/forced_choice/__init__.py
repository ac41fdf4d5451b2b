"""Forced choice: which of two sentences a chat model finds more plausible, asked in both orders.

For models that only answer (hosted chat APIs, chat endpoints, local instruct models): each sentence pair of the
stereotype test is shown as options A and B, in both orders, ``samples`` times per order; a strict parser reads
each answer; refusals and unparseable answers are outcomes of their own (METHODS §6,
``docs/measures/forced-choice.md``).

One folder holds the whole measure:

* :mod:`.templates` — the named, versioned prompt templates and the user's own (checked);
* :mod:`.parse` — the strict reading of an answer (label, sentence, refusal, unparseable);
* :mod:`.options` — :class:`ForcedChoiceOptions` (the chat model's options and the prompt, bootstrap, clusters);
* :mod:`.score` — the questions (both orders × samples, seeds) and the reading of each reply, the soft score;
* :mod:`.result` — :class:`ForcedChoiceResult`, :class:`ItemRecord`, :class:`Ask`, :class:`RateSummary`;
* :mod:`.summary` — the share, the rates, position bias, order consistency, per term;
* :mod:`.run` — ``run(options, items, progress=, cancel=, model=, api_key=)``;
* :mod:`.cost` — requests and tokens before a run;
* :mod:`.report` — readings, summary rows, CSV rows, files;
* :mod:`.compare` — models against each other on the same pairs, and agreement with a likelihood score;
* :mod:`.headless` — the command line's run.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.forced_choice import report
from biastest.measures.forced_choice.audit import AUDIT_USE
from biastest.measures.forced_choice.compare import Agreement, agreement_with_likelihood, compare_forced_choice
from biastest.measures.forced_choice.cost import Cost, estimate_cost, is_hosted
from biastest.measures.forced_choice.headless import CLI_FLAGS, cost, headless, prepare
from biastest.measures.forced_choice.options import ForcedChoiceOptions
from biastest.measures.forced_choice.parse import Parsed, parse_answer
from biastest.measures.forced_choice.result import Ask, ForcedChoiceResult, ItemRecord, RateSummary, TermRow
from biastest.measures.forced_choice.run import ForcedChoiceItems
from biastest.measures.forced_choice.run import run as run_forced_choice
from biastest.measures.forced_choice.templates import TEMPLATES, PromptTemplate, custom_template, get_template

__all__ = [
    "MEASURE",
    "TEMPLATES",
    "Agreement",
    "Ask",
    "Cost",
    "ForcedChoiceItems",
    "ForcedChoiceOptions",
    "ForcedChoiceResult",
    "ItemRecord",
    "Parsed",
    "PromptTemplate",
    "RateSummary",
    "TermRow",
    "agreement_with_likelihood",
    "compare_forced_choice",
    "custom_template",
    "estimate_cost",
    "get_template",
    "is_hosted",
    "parse_answer",
    "run_forced_choice",
]

MEASURE = Measure(
    name="forced-choice",
    kind="lm",
    title="Forced choice: which sentence of each pair a chat model finds more plausible (both orders)",
    Options=ForcedChoiceOptions,
    run=run_forced_choice,
    Result=ForcedChoiceResult,
    report=report,
    compare=compare_forced_choice,
    card="docs/measures/forced-choice.md",
    headless=headless,
    prepare=prepare,
    extra={"cli_flags": CLI_FLAGS, "cost": cost, "templates": tuple(TEMPLATES), "audit": AUDIT_USE},
)
