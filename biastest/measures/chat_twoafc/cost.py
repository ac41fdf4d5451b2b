"""What a 2AFC run of a chat model will cost before it starts: requests and an estimate of tokens.

``requests = targets × cue pairs × 2 orders × samples``; tokens are estimated as the forced-choice measure does
(:mod:`biastest.measures.forced_choice.cost`: ⌈characters / 4⌉ per message plus 4 for the chat format; answer
tokens at most ``requests × max_answer_tokens``), and a run at a hosted endpoint with more than
:data:`~biastest.measures.forced_choice.cost.CONFIRM_ABOVE_REQUESTS` requests asks for confirmation on the command
line (``--yes`` confirms ahead).
"""

from __future__ import annotations

import math
from urllib.parse import urlsplit

from biastest.measures.chat_twoafc.options import TwoAFCChatOptions
from biastest.measures.chat_twoafc.result import ORDERS
from biastest.measures.chat_twoafc.score import plan_questions
from biastest.measures.forced_choice.cost import (
    CHARS_PER_TOKEN,
    CONFIRM_ABOVE_REQUESTS,
    TOKENS_PER_MESSAGE,
    Cost,
    is_hosted,
)
from biastest.spec import TwoAFCSpec

__all__ = ["MSG_COST", "estimate_cost"]

MSG_COST = (
    "This run asks {requests:,} questions ({targets:,} targets × {pairs} cue pairs × 2 orders × {samples} "
    "sample(s)) of {model}{where}: about {prompt_tokens:,} prompt tokens and at most {answer_tokens:,} answer "
    "tokens (estimate: characters/4)."
)


def estimate_cost(options: TwoAFCChatOptions, spec: TwoAFCSpec) -> Cost:
    """Requests and estimated tokens of a run of ``options`` on ``spec`` (see the module docstring)."""
    targets, pairs = list(spec.targets), [tuple(p) for p in spec.cue_pairs]
    questions = plan_questions(targets, pairs, options.prompt(), samples=1, temperature=options.temperature,
                               max_tokens=options.max_answer_tokens, top_logprobs=options.top_logprobs,
                               seed=options.seed)
    per_sample = sum(math.ceil(len(content) / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE
                     for q in questions for _, content in q.request.messages)
    requests = len(targets) * len(pairs) * len(ORDERS) * options.samples
    hosted = is_hosted(options.endpoint)
    prompt_tokens, answer_tokens = per_sample * options.samples, requests * options.max_answer_tokens
    where = f" at {urlsplit(options.endpoint).hostname}" if options.endpoint else ""
    text = MSG_COST.format(requests=requests, targets=len(targets), pairs=len(pairs), samples=options.samples,
                           model=options.model_id, where=where, prompt_tokens=prompt_tokens,
                           answer_tokens=answer_tokens)
    return Cost(requests, prompt_tokens, answer_tokens, hosted, hosted and requests > CONFIRM_ABOVE_REQUESTS, text)
