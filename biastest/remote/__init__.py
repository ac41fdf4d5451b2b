"""The one outbound module: every request biastest sends to another server goes through here.

The generators (:mod:`biastest.generate`) and the endpoint adapters
(:mod:`biastest.models.endpoint_lm`, :mod:`biastest.models.endpoint_vlm`) use
it alike:

* :mod:`~biastest.remote.address` — the public-mode address check
  (:func:`check_outbound_url`, :func:`check_base_url`), resolved once and
  pinned (:func:`pin`), with IPv6 forms normalised (:func:`normalise_address`);
* :mod:`~biastest.remote.http` — the one HTTP client (:func:`http_client`,
  :func:`openai_client`, :func:`download`): each request, and each redirect
  hop, connects to exactly the addresses checked for it;
* :mod:`~biastest.remote.retry` — retries with backoff, the request budget,
  the time limit and cancellation (:class:`RunState`);
* :mod:`~biastest.remote.openai_errors` — the ``openai`` client's failures in
  the project's words (:func:`translate_openai_error`).

The public-mode decision itself is :mod:`biastest.public`'s.
"""

from biastest.remote.address import (
    MSG_BAD_BASE_URL,
    MSG_BAD_URL,
    MSG_HOST_UNRESOLVED,
    MSG_PRIVATE_ADDRESS,
    Pinned,
    Resolver,
    UnresolvedHost,
    check_base_url,
    check_outbound_url,
    is_public_address,
    normalise_address,
    pin,
    safe_base_url,
)
from biastest.remote.http import LIMITS, PinnedTransport, download, http_client, openai_client
from biastest.remote.openai_errors import (
    MSG_AUTH_FAILED,
    MSG_MODEL_NOT_FOUND,
    MSG_QUOTA,
    MSG_REQUEST_REJECTED,
    retry_after,
    translate_openai_error,
)
from biastest.remote.retry import (
    DEADLINE_GRACE_SECONDS,
    MSG_BAD_LIMIT,
    POLL_SECONDS,
    REJECT_MALFORMED,
    STOP_BUDGET,
    STOP_CANCELLED,
    STOP_RATE_LIMITED,
    STOP_TIME,
    STOP_UNAVAILABLE,
    MalformedAnswer,
    RetryPolicy,
    RunLimits,
    RunState,
    RunStopped,
    TransientError,
    check_positive,
    mask_secret,
)

__all__ = [
    "DEADLINE_GRACE_SECONDS",
    "LIMITS",
    "MSG_AUTH_FAILED",
    "MSG_BAD_BASE_URL",
    "MSG_BAD_LIMIT",
    "MSG_BAD_URL",
    "MSG_HOST_UNRESOLVED",
    "MSG_MODEL_NOT_FOUND",
    "MSG_PRIVATE_ADDRESS",
    "MSG_QUOTA",
    "MSG_REQUEST_REJECTED",
    "POLL_SECONDS",
    "REJECT_MALFORMED",
    "STOP_BUDGET",
    "STOP_CANCELLED",
    "STOP_RATE_LIMITED",
    "STOP_TIME",
    "STOP_UNAVAILABLE",
    "MalformedAnswer",
    "Pinned",
    "PinnedTransport",
    "Resolver",
    "RetryPolicy",
    "RunLimits",
    "RunState",
    "RunStopped",
    "TransientError",
    "UnresolvedHost",
    "check_base_url",
    "check_outbound_url",
    "check_positive",
    "download",
    "http_client",
    "is_public_address",
    "mask_secret",
    "normalise_address",
    "openai_client",
    "pin",
    "retry_after",
    "safe_base_url",
    "translate_openai_error",
]
