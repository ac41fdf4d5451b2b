"""What a BBQ run will cost before it runs: requests and an estimate of tokens.

Tokens are estimated as characters / 4 (rounded up; the usual rule of thumb for English text with the
tokenizers of hosted models — an estimate, not a count): the prompt tokens are the characters of every
message sent / 4, the answer tokens at most ``max_answer_tokens`` per request. A run through a **hosted**
endpoint (one whose host is not this machine or a private network address) with more than
:data:`CONFIRM_ABOVE` requests asks for confirmation first (the command line's ``--yes`` gives it).
"""

from __future__ import annotations

import ipaddress
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from biastest.remote import safe_base_url

__all__ = ["CHARS_PER_TOKEN", "CONFIRM_ABOVE", "MSG_COST", "MSG_CONFIRM", "CostEstimate", "estimate_cost",
           "is_hosted", "needs_confirmation"]

#: Characters per token of the estimate.
CHARS_PER_TOKEN = 4
#: Requests to a hosted endpoint above which a run asks for confirmation.
CONFIRM_ABOVE = 1_000

MSG_COST = (
    "{measure}: {n_items:,} questions, {n_requests:,} requests; about {prompt_tokens:,} prompt tokens and at most "
    "{answer_tokens:,} answer tokens (tokens estimated as characters / {per})."
)
MSG_CONFIRM = (
    "This run sends {n_requests:,} requests to the hosted endpoint {where} (more than {limit:,}), which may cost "
    "money. Continue? [y/N] "
)


@dataclass(frozen=True)
class CostEstimate:
    """Requests and estimated tokens of a run (see the module docstring)."""

    measure: str
    n_items: int
    n_requests: int
    prompt_chars: int
    prompt_tokens: int
    answer_tokens: int
    per_category: dict[str, int] = field(default_factory=dict)

    def message(self) -> str:
        """:data:`MSG_COST` filled in."""
        return MSG_COST.format(measure=self.measure, n_items=self.n_items, n_requests=self.n_requests,
                               prompt_tokens=self.prompt_tokens, answer_tokens=self.answer_tokens,
                               per=CHARS_PER_TOKEN)

    def confirmation(self, endpoint: str | None, *, limit: int = CONFIRM_ABOVE) -> str | None:
        """The question to ask before running (:data:`MSG_CONFIRM`), or None when no confirmation is needed."""
        if not needs_confirmation(self, endpoint, limit=limit):
            return None
        return MSG_CONFIRM.format(n_requests=self.n_requests, where=safe_base_url(endpoint), limit=limit)

    def as_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "n_items": self.n_items, "n_requests": self.n_requests,
                "prompt_chars": self.prompt_chars, "prompt_tokens": self.prompt_tokens,
                "answer_tokens": self.answer_tokens, "per_category": dict(self.per_category),
                "chars_per_token": CHARS_PER_TOKEN}


def estimate_cost(planned: list, *, max_answer_tokens: int, measure: str = "BBQ") -> CostEstimate:
    """The cost of the planned trials (:func:`biastest.measures.bbq.run.plan`'s second value)."""
    chars = sum(len(content) for t in planned for _, content in t.request.messages)
    return CostEstimate(measure=measure, n_items=len({t.item.key for t in planned}), n_requests=len(planned),
                        prompt_chars=chars, prompt_tokens=math.ceil(chars / CHARS_PER_TOKEN),
                        answer_tokens=len(planned) * max_answer_tokens,
                        per_category=dict(Counter(t.item.category for t in planned)))


def is_hosted(endpoint: str | None) -> bool:
    """Whether ``endpoint`` is elsewhere than this machine or a private network (None: a model in this process)."""
    if not endpoint:
        return False
    host = (urlsplit(endpoint).hostname or "").lower()
    if host in ("localhost", "") or host.endswith(".localhost"):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True  # a name: assume it is hosted (asking costs one keystroke; not asking may cost money)
    return not (address.is_loopback or address.is_private or address.is_link_local)


def needs_confirmation(cost: CostEstimate, endpoint: str | None, *, limit: int = CONFIRM_ABOVE) -> bool:
    """A hosted endpoint and more than ``limit`` requests."""
    return is_hosted(endpoint) and cost.n_requests > limit
