"""2AFC questions to a chat model: for each target and cue pair, which cue fits the target, asked in both orders.

The psychophysics measure of Liang & Acuna (2020) for a model that answers (hosted chat APIs, chat endpoints,
local instruct models): for each target of a 2AFC specification (an occupation) and each cue pair (woman/man,
she/he …) the model is asked which cue is more likely, with the cues in both orders and ``samples`` seeded
samples; the response per target is P(cue 1 | target) among parseable answers with a cluster-aware interval;
refusals and unparseable answers are outcomes of their own; position bias and order consistency are reported;
the targets' P(female cue) is validated against the share of women in each occupation (the paper's Fig. 2).
See ``docs/measures/twoafc-chat.md`` and METHODS §4, §6.

* :mod:`.templates` — the named, versioned question templates and the user's own (checked);
* :mod:`.options` — :class:`TwoAFCChatOptions`;
* :mod:`.score` — the questions (targets × cue pairs × orders × samples, seeds) and the reading of each answer
  (the forced-choice measure's strict parser);
* :mod:`.result`, :mod:`.summary` — records, P(cue 1) and rates; the labour-statistics correlation is
  :mod:`biastest.measures.labour` (shared with the classifier's 2AFC);
* :mod:`.run`, :mod:`.cost`, :mod:`.headless`, :mod:`.report`, :mod:`.compare`, :mod:`.audit`.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.chat_twoafc import report
from biastest.measures.chat_twoafc.audit import AUDIT_USE
from biastest.measures.chat_twoafc.compare import KIND_TWOAFC_CHAT, compare_twoafc_chat
from biastest.measures.chat_twoafc.cost import estimate_cost
from biastest.measures.chat_twoafc.headless import CLI_FLAGS, cost, headless, prepare
from biastest.measures.chat_twoafc.options import TwoAFCChatOptions
from biastest.measures.chat_twoafc.result import CueAsk, LabourValidation, TargetRecord, TwoAFCChatResult
from biastest.measures.chat_twoafc.run import TwoAFCChatItems
from biastest.measures.chat_twoafc.run import run as run_twoafc_chat
from biastest.measures.chat_twoafc.templates import TEMPLATES, ChatTemplate, custom_template, get_template
from biastest.measures.labour import labour_validation

__all__ = [
    "KIND_TWOAFC_CHAT",
    "MEASURE",
    "TEMPLATES",
    "ChatTemplate",
    "CueAsk",
    "LabourValidation",
    "TargetRecord",
    "TwoAFCChatItems",
    "TwoAFCChatOptions",
    "TwoAFCChatResult",
    "compare_twoafc_chat",
    "custom_template",
    "estimate_cost",
    "get_template",
    "labour_validation",
    "run_twoafc_chat",
]

MEASURE = Measure(
    name="twoafc-chat",
    kind="lm",
    title="2AFC of a chat model: P(cue 1 | target) per target, both orders, validated against labour statistics",
    Options=TwoAFCChatOptions,
    run=run_twoafc_chat,
    Result=TwoAFCChatResult,
    report=report,
    compare=compare_twoafc_chat,
    card="docs/measures/twoafc-chat.md",
    headless=headless,
    prepare=prepare,
    spec_type="twoafc",
    extra={"cli_flags": CLI_FLAGS, "cost": cost, "templates": tuple(TEMPLATES), "audit": AUDIT_USE,
           "model_kind": ("twoafc", "chat")},
)
