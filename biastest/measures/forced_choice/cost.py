"""What a forced-choice run will cost before it starts: requests and an estimate of tokens.

``requests = n_pairs × 2 orders × samples``. Tokens are estimated, not counted (no tokenizer of a hosted model
is at hand): **prompt tokens** ≈ ⌈characters / 4⌉ of each request's messages (system + user), summed — the usual
rule of thumb for English text with BPE tokenizers (OpenAI's "about 4 characters per token"), plus 4 tokens per
message for the chat format; **answer tokens** ≤ ``requests × max_answer_tokens`` (an upper bound: an answer
stops at its first end token). A response cache can make a rerun cost less; the estimate does not subtract it.

A run at a **hosted** endpoint (:func:`is_hosted`: an address that is neither loopback nor private — any host
name but ``localhost`` counts as hosted, since it is not resolved here) with more than
:data:`CONFIRM_ABOVE_REQUESTS` requests asks for confirmation on the command line (``--yes`` confirms ahead).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from biastest.measures.forced_choice.options import ForcedChoiceOptions
from biastest.measures.forced_choice.result import ORDERS
from biastest.measures.forced_choice.score import plan_questions
from biastest.records import SentencePair
from biastest.remote.address import is_public_address

__all__ = ["CHARS_PER_TOKEN", "CONFIRM_ABOVE_REQUESTS", "MSG_COST", "Cost", "estimate_cost", "is_hosted"]

#: Characters per token of the estimate.
CHARS_PER_TOKEN = 4
#: Tokens the chat format adds per message (role markers), in the estimate.
TOKENS_PER_MESSAGE = 4
#: A hosted endpoint run with more requests than this asks for confirmation.
CONFIRM_ABOVE_REQUESTS = 200
MSG_COST = (
    "This run asks {requests:,} questions ({pairs:,} pairs × 2 orders × {samples} sample(s)) of {model}{where}: "
    "about {prompt_tokens:,} prompt tokens and at most {answer_tokens:,} answer tokens (estimate: characters/4)."
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
        Hosted and more than :data:`CONFIRM_ABOVE_REQUESTS` requests.
    text : str
        :data:`MSG_COST`, filled.
    limit : int
        The number of requests above which a hosted run asks for confirmation.
    """

    requests: int
    prompt_tokens: int
    answer_tokens: int
    hosted: bool
    needs_confirmation: bool
    text: str
    limit: int = CONFIRM_ABOVE_REQUESTS


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


def estimate_cost(options: ForcedChoiceOptions, pairs: Sequence[SentencePair]) -> Cost:
    """Requests and estimated tokens of a run of ``options`` on ``pairs`` (see the module docstring)."""
    questions = plan_questions(list(pairs), options.prompt(), samples=1, temperature=options.temperature,
                               max_tokens=options.max_answer_tokens, top_logprobs=options.top_logprobs,
                               seed=options.seed)
    per_sample = sum(math.ceil(len(content) / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE
                     for q in questions for _, content in q.request.messages)
    requests = len(pairs) * len(ORDERS) * options.samples
    hosted = is_hosted(options.endpoint)
    prompt_tokens, answer_tokens = per_sample * options.samples, requests * options.max_answer_tokens
    where = f" at {urlsplit(options.endpoint).hostname}" if options.endpoint else ""
    text = MSG_COST.format(requests=requests, pairs=len(pairs), samples=options.samples, model=options.model_id,
                           where=where, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens)
    return Cost(requests, prompt_tokens, answer_tokens, hosted, hosted and requests > CONFIRM_ABOVE_REQUESTS, text)
