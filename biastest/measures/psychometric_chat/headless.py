"""A psychometric test without the app: the command line's ``run psychometric-chat SPEC …``.

``SPEC`` is a 2AFC specification (e.g. the occupations one): the run is filed under it (its name is recorded); the
questions come from the flags — the continuum (``--continuum FILE``, default the built-in name continuum), the
contexts (``--context`` repeatable and/or ``--contexts-file``, one per line), the cues (``--cues man/woman``).

:func:`prepare` puts the command line's values in the options' terms (the app's seed 0 when none is given; the
texts of ``--template-file`` and ``--contexts-file``, read here and checked by the options; ``--no-cache``); it may
be applied twice. :func:`cost` is the run's size before it starts (forced choice's estimate and confirmation:
:mod:`biastest.measures.forced_choice.cost`). :func:`headless` runs :func:`~.run.run` and says what to record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from biastest.continuum import Continuum
from biastest.errors import UsageError
from biastest.measures.base import Headless, Inputs
from biastest.measures.forced_choice.cost import (
    CHARS_PER_TOKEN,
    CONFIRM_ABOVE_REQUESTS,
    TOKENS_PER_MESSAGE,
    Cost,
    is_hosted,
)
from biastest.measures.forced_choice.headless import DEFAULT_SEED, recorded_options
from biastest.measures.psychometric_chat.options import PsychometricChatOptions
from biastest.measures.psychometric_chat.report import export_files, readings
from biastest.measures.psychometric_chat.result import PsychometricChatResult
from biastest.measures.psychometric_chat.run import PsychometricItems, continuum_of, run
from biastest.measures.psychometric_chat.score import plan_questions
from biastest.measures.psychometric_chat.templates import MAX_CONTEXT_CHARS, MAX_CONTEXTS, MAX_TEMPLATE_CHARS
from biastest.remote import safe_base_url

__all__ = ["CLI_FLAGS", "MSG_COST", "MSG_TEXT_FILE", "continuum_of", "cost", "estimate_cost", "headless",
           "prepare"]

MSG_TEXT_FILE = "The {what} file '{path}' cannot be read ({problem})."
MSG_COST = (
    "This run asks {requests:,} questions ({contexts} contexts × {stimuli:,} stimuli{pairs} × 2 orders × {samples} "
    "sample(s)) of {model}{where}: about {prompt_tokens:,} prompt tokens and at most {answer_tokens:,} answer "
    "tokens (estimate: characters/4)."
)

#: The command line's flags that are not options (read by :func:`prepare`).
CLI_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--contexts-file", {"metavar": "FILE", "help": "context sentences, one per line, each with {stimulus} "
                         "(UTF-8; blank lines and lines starting with # are skipped); added after any --context"}),
    ("--template-file", {"metavar": "FILE", "help": "your own question template (UTF-8 text: system message, a line "
                         "---, user message with {context}, {first}, {second} and optionally {stimulus}); recorded "
                         "verbatim"}),
    ("--no-cache", {"action": "store_true", "default": None,
                    "help": "ask every question again (neither read nor write the response cache)"}),
)


def _read_text(path: str, what: str, limit: int) -> str:
    p = Path(path).expanduser()
    try:
        if p.stat().st_size > limit:
            raise UsageError(MSG_TEXT_FILE.format(what=what, path=path, problem="too large"))
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(MSG_TEXT_FILE.format(what=what, path=path, problem=type(exc).__name__)) from None


def prepare(values: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's values in the options' terms (see the module docstring)."""
    given = {k: v for k, v in values.items() if v is not None}
    given.setdefault("seed", DEFAULT_SEED)
    if "model_id" in given:
        given["model_id"] = str(given["model_id"]).strip()
    path = given.pop("template_file", None)
    if path is not None:
        given["template_text"] = _read_text(str(path), "question template", 4 * MAX_TEMPLATE_CHARS)
    path = given.pop("contexts_file", None)
    if path is not None:
        text = _read_text(str(path), "contexts", 4 * MAX_CONTEXTS * MAX_CONTEXT_CHARS)
        lines = [ln.strip() for ln in text.lstrip("\ufeff").splitlines()]
        given["contexts"] = [*given.get("contexts", ()), *(ln for ln in lines if ln and not ln.startswith("#"))]
    if given.pop("no_cache", None):
        given["use_cache"] = False
    return given


def estimate_cost(options: PsychometricChatOptions, continuum: Continuum) -> Cost:
    """Requests and estimated tokens (forced choice's rule: characters / 4 plus 4 per message)."""
    pairs = options.cue_pairs()
    questions = plan_questions(continuum, options.contexts, pairs, options.prompt(), samples=1,
                               temperature=options.temperature, max_tokens=options.max_answer_tokens,
                               top_logprobs=options.top_logprobs, seed=options.seed)
    per_sample = sum(math.ceil(len(content) / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE
                     for q in questions for _, content in q.request.messages)
    requests = len(questions) * options.samples
    hosted = is_hosted(options.endpoint)
    prompt_tokens, answer_tokens = per_sample * options.samples, requests * options.max_answer_tokens
    where = f" at {urlsplit(options.endpoint).hostname}" if options.endpoint else ""
    text = MSG_COST.format(requests=requests, contexts=len(options.contexts), stimuli=len(continuum),
                           pairs=f" × {len(pairs)} cue pairs" if len(pairs) > 1 else "",
                           samples=options.samples, model=options.model_id, where=where,
                           prompt_tokens=prompt_tokens, answer_tokens=answer_tokens)
    return Cost(requests, prompt_tokens, answer_tokens, hosted, hosted and requests > CONFIRM_ABOVE_REQUESTS, text)


def cost(values: Mapping[str, Any], inputs: Inputs) -> Cost:
    """The run's size before it starts, from the command line's values (the continuum file is read here)."""
    options = PsychometricChatOptions.parse(prepare(values))
    return estimate_cost(options, continuum_of(options))


def headline(result: PsychometricChatResult, where: str = "") -> str:
    """One line for the terminal: each context's PSE (or why there is none) and shift."""
    parts = []
    for s in result.summaries:
        fit, shift = s.fit, s.shift or {}
        if fit.get("status") == "ok":
            ci = fit.get("pse_ci")
            part = f"'{s.context}' PSE {fit['pse']:.2f}" + (f" ({ci[0]:.2f}–{ci[1]:.2f})" if ci else "")
            if shift.get("shift") is not None:
                part += f", shift {shift['shift']:+.2f}"
        else:
            part = f"'{s.context}' no fit ({fit.get('status')})"
        parts.append(part)
    return (f"Psychometric curves: {'; '.join(parts)}; {len(result.continuum['stimuli'])} stimuli × 2 orders × "
            f"{result.samples} asked of {result.model_id}{f' at {where}' if where else ''} (template "
            f"{result.template['name']}, seed {result.seed}).")


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the psychometric test with the options ``values``; see the module docstring."""
    options = PsychometricChatOptions.parse(prepare(values))
    where = safe_base_url(options.endpoint) if options.endpoint else ""
    result = run(options, PsychometricItems(continuum_of(options), inputs.spec), progress=progress,
                 api_key=api_key)
    notices = [*([result.stop_message] if result.stop_message else []), *readings(result)]
    return Headless("psychometric-chat", recorded_options(options, api_key), result, headline(result, where),
                    lambda: export_files(result), notices=notices)
