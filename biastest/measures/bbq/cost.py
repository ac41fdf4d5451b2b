"""What a BBQ run will cost before it starts: requests and an estimate of tokens.

``requests = questions × orders (1, or 3 with rotations) × samples`` — the whole benchmark is 58,476 questions.
Tokens are estimated, not counted (no tokenizer of a hosted model is at hand): **prompt tokens** ≈
⌈characters / 4⌉ of each request's messages, summed — the usual rule of thumb for English text with BPE
tokenizers (OpenAI's "about 4 characters per token") — plus 4 tokens per message for the chat format; **answer
tokens** ≤ ``requests × max_answer_tokens`` (an upper bound). A response cache can make a rerun cost less; the
estimate does not subtract it.

A run at a **hosted** endpoint (:func:`is_hosted`: an address that is neither loopback nor private; any host name
but ``localhost`` counts as hosted, since it is not resolved here) with more than
:data:`CONFIRM_ABOVE_REQUESTS` requests asks for confirmation on the command line (``--yes`` confirms ahead).
The names follow the forced-choice measure's (``Cost``, ``estimate_cost``, ``is_hosted``), so the command line
reads both alike (``extra["cost"]``).
"""

from __future__ import annotations

import ipaddress
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from biastest.measures.bbq.options import BBQOptions
from biastest.measures.bbq.run import plan
from biastest.remote.address import is_public_address

__all__ = ["CHARS_PER_TOKEN", "CONFIRM_ABOVE_REQUESTS", "MSG_BUDGET", "MSG_COST", "TOKENS_PER_MESSAGE", "Cost",
           "estimate_cost", "is_hosted"]

#: Characters per token of the estimate.
CHARS_PER_TOKEN = 4
#: Tokens the chat format adds per message (role markers), in the estimate.
TOKENS_PER_MESSAGE = 4
#: A hosted endpoint run with more requests than this asks for confirmation.
CONFIRM_ABOVE_REQUESTS = 200
MSG_COST = (
    "This BBQ run asks {requests:,} questions ({questions:,} BBQ questions × {orders} order(s) × {samples} "
    "sample(s)) of {model}{where}: about {prompt_tokens:,} prompt tokens and at most {answer_tokens:,} answer "
    "tokens (estimate: characters/4)."
)
MSG_BUDGET = (
    " The request budget (--max-requests {budget:,}) is smaller: the run would stop early with the rest not asked; "
    "raise it to ask everything."
)
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


@dataclass(frozen=True)
class Cost:
    """The size of a run before it starts.

    Attributes
    ----------
    requests : int
    prompt_tokens : int
        Estimated (characters / 4, plus the chat format's tokens).
    answer_tokens : int
        Upper bound (``requests × max_answer_tokens``).
    hosted : bool
        The endpoint is neither loopback nor private.
    needs_confirmation : bool
        Hosted and more than ``limit`` requests.
    text : str
        :data:`MSG_COST`, filled.
    limit : int
        The number of requests above which a hosted run asks for confirmation.
    questions : int
        BBQ questions asked.
    prompt_chars : int
        Characters of every message sent.
    per_category : dict
        Requests per category.
    """

    requests: int
    prompt_tokens: int
    answer_tokens: int
    hosted: bool
    needs_confirmation: bool
    text: str
    limit: int = CONFIRM_ABOVE_REQUESTS
    questions: int = 0
    prompt_chars: int = 0
    per_category: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens, "answer_tokens": self.answer_tokens,
                "hosted": self.hosted, "needs_confirmation": self.needs_confirmation, "limit": self.limit,
                "questions": self.questions, "prompt_chars": self.prompt_chars,
                "per_category": dict(self.per_category), "chars_per_token": CHARS_PER_TOKEN}


def is_hosted(endpoint: str | None) -> bool:
    """Whether an endpoint is hosted elsewhere: not loopback, not a private address (None: a model here).

    >>> is_hosted("http://127.0.0.1:8000/v1"), is_hosted("http://10.1.2.3/v1"), is_hosted("https://api.x.com/v1")
    (False, False, True)
    """
    if not endpoint:
        return False
    host = (urlsplit(str(endpoint).strip()).hostname or "").strip("[]").lower()
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return True  # a name: not resolved here, so counted as hosted
    return is_public_address(host)


def estimate_cost(options: BBQOptions, items: Any = None, *, limit: int = CONFIRM_ABOVE_REQUESTS) -> Cost:
    """Requests and estimated tokens of a run of ``options`` on ``items`` (see the module docstring)."""
    _, planned = plan(options, items)
    chars = sum(len(content) for t in planned for _, content in t.request.messages)
    prompt_tokens = sum(math.ceil(len(content) / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE
                        for t in planned for _, content in t.request.messages)
    requests = len(planned)
    questions = len({t.item.key for t in planned})
    hosted = is_hosted(options.endpoint)
    answer_tokens = requests * options.max_answer_tokens
    where = f" at {urlsplit(options.endpoint).hostname}" if options.endpoint else ""
    text = MSG_COST.format(requests=requests, questions=questions, orders=3 if options.order == "rotations" else 1,
                           samples=options.samples, model=options.model_id, where=where, prompt_tokens=prompt_tokens,
                           answer_tokens=answer_tokens)
    if options.endpoint and requests > options.max_requests:
        text += MSG_BUDGET.format(budget=options.max_requests)
    return Cost(requests, prompt_tokens, answer_tokens, hosted, hosted and requests > limit, text, limit, questions,
                chars, dict(Counter(t.item.category for t in planned)))
