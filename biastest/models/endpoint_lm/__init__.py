"""Causal language models behind an endpoint, scored through the OpenAI completions protocol.

:class:`EndpointCausalLM` stands in for
:class:`~biastest.models.lm.CausalLanguageModel` in the ``causal-sum`` and
``causal-diff-span`` scoring methods when the model runs on a server (vLLM,
llama.cpp's server, or anything that speaks the protocol as
lm-evaluation-harness's ``local-completions`` uses it). Each request is::

    POST {base_url}/completions
    {"model": NAME, "prompt": [[BOS, t1, …, tn], …], "echo": true, "logprobs": 1, "max_tokens": 1, "temperature": 0}

and each answer's ``choices[i].logprobs.token_logprobs`` holds one value per
prompt token — ``null`` for the first (nothing comes before it), then
``log P(t_j | BOS, t_1..t_{j−1})`` — followed by the one generated token's,
which is dropped.

Two ways to send a sentence
---------------------------
**Token ids** (the model's tokenizer is available: ``tokenizer=`` a Hub id
or a folder, or by default the served model's name): the prompt is
``[prefix_token_id, *encode(S)]`` with the same begin token and the same
token ids as in-process scoring, so the numbers are those of
:meth:`CausalLanguageModel.token_log_probs` on the same weights (tested to
1e-4 against a server doing real forward passes).

**Text** (no tokenizer: ``tokenizer=False``, or the served name is not a
loadable tokenizer): the server tokenizes each sentence itself, with its
default special tokens. The first token of every prompt then has no
log-probability: it is the server's begin token when the server adds one
(Llama-style tokenizers do; the numbers are then in-process causal-sum's),
otherwise the sentence's first word, which is left unscored and conditions
what follows without a begin token. A pair whose two sentences begin with
different tokens is therefore excluded (``first-token-unscored``) rather than
compared without its differing word, and ``causal-diff-span``, which needs
the model's token positions, is refused (:data:`MSG_SPAN_NEEDS_TOKENIZER`).
Provenance says which way was used.

Requests
--------
``batch_size`` prompts per request, at most ``concurrency`` requests at once.
Every request goes through one :class:`~biastest.remote.RunState`:
retries with backoff on 429, 5xx, time-outs and lost connections (honouring
``Retry-After``), a request budget and an overall time limit. When a limit
ends the run, what was scored is kept and the sentences not scored come back
as ``None`` (their pairs are listed as not scored, never given a value);
when nothing at all could be scored the run fails with
:data:`MSG_ENDPOINT_FAILED`. Answers are checked: one choice per prompt, one
log-probability per prompt token, the served model's name — a different
name, an answer without prompt log-probabilities (hosted chat-only models)
or an unreadable one ends the run with a message (:class:`EndpointError`),
never with a made-up score. A log-probability must be a finite number at most
0 (:func:`~biastest.models.endpoint_lm.served.is_logprob`; up to
:data:`~biastest.models.endpoint_lm.served.LOGPROB_TOLERANCE` = 1e-6 above 0
is float rounding and read as given): an answer holding +5, NaN or an infinity
is unreadable, none of its prompts is scored (their pairs are excluded as
``unreadable-answer``, counted and noted), and it is not asked again (a server
at temperature 0 would say the same); when every answer is so the run fails
with :data:`~biastest.models.endpoint_lm.causal.MSG_ALL_UNREADABLE`.

Keys and addresses
------------------
The key lives only in the ``openai`` client object, in memory: never in
:meth:`EndpointCausalLM.describe`, a log line or a ``repr``; the address is
recorded without credentials or query (:func:`biastest.remote.safe_base_url`).
The address passes the public-mode check before anything is sent, and every
request (redirects included) goes through the one outbound client,
:func:`biastest.remote.openai_client`, which connects only to the addresses
checked for it.

Which scoring methods an endpoint can serve is the measure's business
(:func:`biastest.measures.stereotype.options.check_endpoint_method`); this adapter only refuses
``causal-diff-span`` without the model's tokens (:meth:`EndpointCausalLM.check_method`).

Layout
------
:mod:`~biastest.models.endpoint_lm.served` holds what every served model
shares (:class:`ServedEndpoint`: the address check, the client, the model
list, the concurrent dispatch under one run); :mod:`~biastest.models.endpoint_lm.causal`
holds :class:`EndpointCausalLM`, its requests and the reading of its answers.
This package re-exports the public names of both.
"""

from __future__ import annotations

from biastest.models.endpoint_lm.causal import (
    ENDPOINT_METHODS,
    MSG_ENDPOINT_FAILED,
    MSG_ENDPOINT_PARTIAL,
    MSG_GARBLED,
    MSG_LOGPROB_COUNT,
    MSG_MODEL_MISMATCH,
    MSG_NO_COMPLETIONS,
    MSG_NO_PROMPT_LOGPROBS,
    MSG_NO_TOKENS,
    MSG_NOTE_TEXT,
    MSG_NOTE_TOKEN_IDS,
    MSG_REJECTED,
    MSG_SPAN_NEEDS_TOKENIZER,
    MSG_WHY,
    PROMPTS_TEXT,
    PROMPTS_TOKEN_IDS,
    EndpointCausalLM,
    load_tokenizer,
)
from biastest.models.endpoint_lm.served import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TIME_LIMIT,
    INFO_TIMEOUT,
    MSG_BAD_ENDPOINT,
    MSG_KEY_REFUSED,
    MSG_NEED_ENDPOINT_URL,
    MSG_NO_MODEL_NAME,
    MSG_NOT_SERVED,
    ProgressCallback,
    ServedEndpoint,
    check_endpoint_url,
    default_retry,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_REQUESTS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TIME_LIMIT",
    "ENDPOINT_METHODS",
    "EndpointCausalLM",
    "INFO_TIMEOUT",
    "MSG_BAD_ENDPOINT",
    "MSG_ENDPOINT_FAILED",
    "MSG_ENDPOINT_PARTIAL",
    "MSG_GARBLED",
    "MSG_KEY_REFUSED",
    "MSG_NEED_ENDPOINT_URL",
    "MSG_LOGPROB_COUNT",
    "MSG_MODEL_MISMATCH",
    "MSG_NOTE_TEXT",
    "MSG_NOTE_TOKEN_IDS",
    "MSG_NOT_SERVED",
    "MSG_NO_COMPLETIONS",
    "MSG_NO_MODEL_NAME",
    "MSG_NO_PROMPT_LOGPROBS",
    "MSG_NO_TOKENS",
    "MSG_REJECTED",
    "MSG_SPAN_NEEDS_TOKENIZER",
    "MSG_WHY",
    "PROMPTS_TEXT",
    "PROMPTS_TOKEN_IDS",
    "ProgressCallback",
    "ServedEndpoint",
    "check_endpoint_url",
    "default_retry",
    "load_tokenizer",
]
