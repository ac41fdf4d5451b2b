"""Psychometric curves of a chat model: which cue a stimulus is, along a continuum, in several contexts.

Black-box psychophysics (Liang & Acuna 2020; issue 25): stimuli with a known α between two cues (built in: first
names, α = the share of women with the name; or the user's CSV) are shown in each context sentence ("{stimulus}
is a nurse.") and the model is asked which cue the stimulus is, the cues in both orders, ``samples`` times. Per
context a psychometric function with a symmetric guess/lapse rate is fitted (the position habit of a model asked
in both orders), giving the PSE and JND with bootstrap intervals, and the PSE shift from a reference context
(``docs/measures/psychometric-chat.md``).

* :mod:`.templates` — the named question templates, the user's own, the contexts and cues (checked);
* :mod:`.options` — :class:`PsychometricChatOptions`;
* :mod:`.score` — the plan of questions and the reading of each answer (forced choice's strict parser);
* :mod:`.result` — :class:`PsychometricChatResult`, :class:`ContextSummary`, :class:`AskRow`;
* :mod:`.summary` — counts, fits, shifts, rates per context;
* :mod:`.run` — ``run(options, items, progress=, cancel=, model=, api_key=)``;
* :mod:`.report` — readings, the curves figure, tables, files;
* :mod:`.headless` — the command line's run and its cost.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.psychometric_chat import report
from biastest.measures.psychometric_chat.audit import AUDIT_USE
from biastest.measures.psychometric_chat.headless import CLI_FLAGS, cost, estimate_cost, headless, prepare
from biastest.measures.psychometric_chat.options import PsychometricChatOptions
from biastest.measures.psychometric_chat.result import AskRow, ContextSummary, LevelCounts, PsychometricChatResult
from biastest.measures.psychometric_chat.run import PsychometricItems
from biastest.measures.psychometric_chat.run import run as run_psychometric_chat
from biastest.measures.psychometric_chat.score import read_cue
from biastest.measures.psychometric_chat.templates import TEMPLATES, QuestionTemplate

__all__ = [
    "MEASURE",
    "TEMPLATES",
    "AskRow",
    "ContextSummary",
    "LevelCounts",
    "PsychometricChatOptions",
    "PsychometricChatResult",
    "PsychometricItems",
    "QuestionTemplate",
    "estimate_cost",
    "read_cue",
    "run_psychometric_chat",
]

MEASURE = Measure(
    name="psychometric-chat",
    kind="lm",
    title="Psychometric curves of a chat model: which cue a stimulus is along a continuum, per context (PSE, JND)",
    Options=PsychometricChatOptions,
    run=run_psychometric_chat,
    Result=PsychometricChatResult,
    report=report,
    card="docs/measures/psychometric-chat.md",
    headless=headless,
    prepare=prepare,
    spec_type="twoafc",
    extra={"cli_flags": CLI_FLAGS, "cost": cost, "templates": tuple(TEMPLATES), "audit": AUDIT_USE},
)
