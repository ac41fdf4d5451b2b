"""What the ``openai`` client's exceptions mean for a run, in the project's own words.

:func:`translate_openai_error` maps them to :class:`~biastest.remote.TransientError`
(retried), :class:`~biastest.remote.MalformedAnswer` or a fatal
:class:`~biastest.errors.GenerationError` whose message is one of the ``MSG_*``
constants here (never the provider's text). The generators and the endpoint
adapters share it.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping

from biastest.errors import GenerationError, PolicyError
from biastest.remote.retry import REJECT_MALFORMED, MalformedAnswer, TransientError

__all__ = [
    "MSG_AUTH_FAILED",
    "MSG_MODEL_NOT_FOUND",
    "MSG_QUOTA",
    "MSG_REQUEST_REJECTED",
    "retry_after",
    "translate_openai_error",
]

MSG_AUTH_FAILED = (
    "The service at {where} did not accept the API key (HTTP {status}). Check that the key is correct and "
    "active."
)
MSG_QUOTA = (
    "The account behind this API key has no quota left at {where}. Add credit or use another key, then run "
    "again."
)
MSG_MODEL_NOT_FOUND = (
    "The service at {where} does not know the model '{model}' (HTTP 404). Choose a model from the service's "
    "list."
)
MSG_REQUEST_REJECTED = (
    "The service at {where} rejected the request for model '{model}' (HTTP {status}). The model may not "
    "support chat, or a setting is not allowed for it; choose another model."
)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a service asks to wait (``retry-after-ms``, ``retry-after`` in seconds or as a date), or None."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def translate_openai_error(exc: BaseException, *, where: str, model: str) -> BaseException:
    """Map an ``openai`` exception to ours (never carrying the provider's text).

    Returns
    -------
    TransientError, MalformedAnswer or GenerationError
        Transient for 408/409/429/5xx, time-outs and connection failures;
        fatal GenerationError for 401/403 (key), 404 (model), 429 with
        ``insufficient_quota``, and other 4xx; MalformedAnswer for answers
        that cannot be parsed.
    """
    import openai  # the openai package loads when its first error is translated

    if isinstance(exc, PolicyError):
        return exc
    if isinstance(exc, openai.APIConnectionError) and isinstance(exc.__cause__, PolicyError):
        return exc.__cause__  # the guarded transport refused the address: final, never retried
    if isinstance(exc, openai.APITimeoutError):
        return TransientError("timeout")
    if isinstance(exc, openai.APIConnectionError):
        return TransientError("connection")
    if isinstance(exc, openai.APIResponseValidationError):
        return MalformedAnswer(REJECT_MALFORMED)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code = getattr(exc, "code", None)
        body = exc.body if isinstance(exc.body, Mapping) else {}
        if code is None and isinstance(body.get("error"), Mapping):
            code = body["error"].get("code")
        if status == 429 and code == "insufficient_quota":
            return GenerationError(MSG_QUOTA.format(where=where), status=status)
        headers = getattr(exc.response, "headers", None)
        if status in (408, 409, 429) or status >= 500:
            kind = "rate_limit" if status == 429 else "server_error"
            return TransientError(kind, retry_after=retry_after(headers), status=status)
        if status in (401, 403):
            return GenerationError(MSG_AUTH_FAILED.format(where=where, status=status), status=status)
        if status == 404:
            return GenerationError(MSG_MODEL_NOT_FOUND.format(where=where, model=model), status=status)
        return GenerationError(MSG_REQUEST_REJECTED.format(where=where, model=model, status=status), status=status)
    if isinstance(exc, json.JSONDecodeError | ValueError | KeyError | TypeError | AttributeError):
        return MalformedAnswer(REJECT_MALFORMED)
    return exc
