"""What every model behind an OpenAI-compatible endpoint shares (:class:`ServedEndpoint`).

The address check (:func:`check_endpoint_url`, public mode included), the
default limits and retries, the server's model list and version, and the
bounded, concurrent dispatch of requests under one
:class:`~biastest.remote.RunState`. :class:`~biastest.models.endpoint_lm.EndpointCausalLM`
and :class:`~biastest.models.endpoint_vlm.EndpointVLM` build on it; the
package docstring (:mod:`biastest.models.endpoint_lm`) describes the protocol.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, ClassVar

from biastest.errors import EndpointError, GenerationError, OptionError, PolicyError
from biastest.options import check_option
from biastest.remote import (
    MSG_QUOTA,
    STOP_CANCELLED,
    RetryPolicy,
    RunLimits,
    RunState,
    RunStopped,
    TransientError,
    check_base_url,
    openai_client,
    safe_base_url,
    translate_openai_error,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_REQUESTS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TIME_LIMIT",
    "INFO_TIMEOUT",
    "MSG_BAD_ENDPOINT",
    "MSG_KEY_REFUSED",
    "MSG_NEED_ENDPOINT_URL",
    "MSG_NOT_SERVED",
    "MSG_NO_MODEL_NAME",
    "ProgressCallback",
    "ServedEndpoint",
    "check_endpoint_url",
    "default_retry",
]

ProgressCallback = Callable[[int, int, str], None]

DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_REQUESTS = 2000
DEFAULT_TIME_LIMIT = 3600.0
DEFAULT_REQUEST_TIMEOUT = 120.0
#: Longest wait for the model list and the version (never retried, never fatal).
INFO_TIMEOUT = 10.0

MSG_NO_MODEL_NAME = (
    "Give the name of the model the endpoint serves (for example meta-llama/Llama-3.1-8B); the server's model list "
    "shows it."
)
#: An app's endpoint field left empty (the stereotype and vision-language apps check it before anything else).
MSG_NEED_ENDPOINT_URL = "Type the address of the server that serves the model, e.g. http://localhost:8000/v1."
MSG_BAD_ENDPOINT = "The endpoint address {value!r} is not a web address. Give one such as http://localhost:8000/v1."
MSG_NOT_SERVED = (
    "The endpoint at {where} does not serve a model named '{model}'. It serves: {served}. Give one of these."
)
MSG_KEY_REFUSED = (
    "The endpoint at {where} did not accept the API key (HTTP {status}). Check the key, or give none if the server "
    "needs none."
)


def default_retry() -> RetryPolicy:
    """Retries of one scoring request: 3 retries after 0.5, 1 and 2 s (or what ``Retry-After`` asks, capped)."""
    return RetryPolicy(max_retries=3, initial_delay=0.5, factor=2.0, max_delay=10.0)


def check_endpoint_url(base_url: Any) -> str:
    """An http(s) endpoint address, checked against the public-mode policy before any connection.

    Raises
    ------
    OptionError
        :data:`MSG_BAD_ENDPOINT` (not a web address).
    PolicyError
        Public mode and the address is private, loopback, link-local … (:mod:`biastest.public`).
    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise OptionError(MSG_BAD_ENDPOINT.format(value=base_url if not isinstance(base_url, str) else ""))
    try:
        return check_base_url(base_url.strip())
    except GenerationError:
        raise OptionError(MSG_BAD_ENDPOINT.format(value=safe_base_url(base_url.strip())[:100])) from None


def _version_url(base_url: str) -> str | None:
    """``/version`` beside the API root (vLLM serves it at the server's root), or None."""
    parts = urllib.parse.urlsplit(base_url)
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        return None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path[: -len("/v1")] + "/version", "", ""))


class ServedEndpoint:
    """What every model behind an OpenAI-compatible endpoint shares: the client, the server's model list and
    version, and the bounded, concurrent dispatch of requests under one :class:`RunState`.

    Subclasses (:class:`EndpointCausalLM`, :class:`biastest.models.endpoint_vlm.EndpointVLM`) build each
    request and read its answer; the address, the key and the limits are handled here once.

    Parameters
    ----------
    base_url, model, api_key, concurrency, limits, retry, seed, cancel :
        As :class:`EndpointCausalLM`.
    service : str
        The name under which the scoring requests are counted in :attr:`requests` (``completions``, ``chat``).

    Raises
    ------
    OptionError, PolicyError
        No model name, a bad address or one that public mode refuses, a bad concurrency.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None,
        concurrency: int,
        limits: RunLimits | None,
        retry: RetryPolicy | None,
        seed: int,
        cancel: threading.Event | None,
        service: str,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise OptionError(MSG_NO_MODEL_NAME)
        self.model_id = model.strip()
        self.revision: str | None = None  # a served model reports no commit; the server's version is recorded
        self.base_url = check_endpoint_url(base_url)
        self.where = safe_base_url(self.base_url)
        self.concurrency = check_option("concurrency", concurrency)
        self.limits = limits or RunLimits(max_requests=DEFAULT_MAX_REQUESTS, max_seconds=DEFAULT_TIME_LIMIT,
                                          request_timeout=DEFAULT_REQUEST_TIMEOUT)
        self.retry = retry or default_retry()
        self._seed = int(seed)
        self._cancel = cancel
        self._has_key = bool(api_key)
        self._client = openai_client(self.base_url, api_key=api_key or None, timeout=self.limits.request_timeout)
        self._service = service
        self._lock = threading.Lock()
        self._connected = False
        self.served_models: list[str] | None = None
        self.max_model_len: int | None = None
        self.server_version: str | None = None
        self.served_model: str | None = None
        self.fingerprints: set[str] = set()
        self.requests = {service: 0, "models": 0, "version": 0}
        self.transient: dict[str, int] = {}

    # What a subclass's endpoint answers when its route is missing, when it rejects a request, when it is garbled.
    _msg_not_found: ClassVar[str]
    _msg_rejected: ClassVar[str]
    _msg_garbled: ClassVar[str]

    def _translate(self, exc: BaseException) -> BaseException:
        """An exception of the OpenAI client as the error the run reports (transient ones are retried)."""
        mapped = translate_openai_error(exc, where=self.where, model=self.model_id)
        if isinstance(mapped, TransientError | PolicyError):
            return mapped
        if isinstance(mapped, GenerationError):
            status = mapped.details.get("status")
            if status == 404:
                return EndpointError(self._msg_not_found.format(where=self.where, model=self.model_id), status=status)
            if mapped.message == MSG_QUOTA.format(where=self.where):
                return EndpointError(mapped.message, status=status)
            if status in (401, 403):
                return EndpointError(MSG_KEY_REFUSED.format(where=self.where, status=status), status=status)
            return EndpointError(self._msg_rejected.format(where=self.where, model=self.model_id, status=status),
                                 status=status)
        # MalformedAnswer, or a body that is not JSON at all
        return EndpointError(self._msg_garbled.format(where=self.where), cause=type(exc).__name__)

    def _garbled(self, problem: str) -> EndpointError:
        return EndpointError(self._msg_garbled.format(where=self.where), problem=problem)

    def connect(self) -> ServedEndpoint:
        """Read the server's model list and version once (neither is required; failures are ignored).

        Raises
        ------
        EndpointError
            :data:`MSG_NOT_SERVED` when the server lists its models and this
            one is not among them.
        PolicyError
            Public mode refused an address (a redirect to a private host).
        """
        with self._lock:
            if self._connected:
                return self
            self._connected = True
        listing = self._get_json("/models", "models")
        data = listing.get("data") if isinstance(listing, dict) else None
        if isinstance(data, list):
            entries = {str(d.get("id")): d for d in data if isinstance(d, dict) and isinstance(d.get("id"), str)}
            self.served_models = sorted(entries)
            if entries and self.model_id not in entries:
                shown = ", ".join(self.served_models[:10]) + (" …" if len(entries) > 10 else "")
                raise EndpointError(MSG_NOT_SERVED.format(where=self.where, model=self.model_id, served=shown))
            limit = entries.get(self.model_id, {}).get("max_model_len")
            if isinstance(limit, int) and not isinstance(limit, bool) and limit > 1:
                self.max_model_len = limit
        url = _version_url(self.base_url)
        info = self._get_json(url, "version") if url else None
        if isinstance(info, dict) and isinstance(info.get("version"), str | int | float):
            self.server_version = str(info["version"])[:100]
        return self

    def _get_json(self, path: str, what: str) -> Any:
        import httpx2  # late, with openai: the OpenAI client (~0.4 s) loads only once an endpoint is asked
        import openai

        self.requests[what] += 1
        try:
            response = self._client.get(path, cast_to=httpx2.Response,
                                        options={"timeout": min(INFO_TIMEOUT, self.limits.request_timeout)})
            return response.json()
        except PolicyError:
            raise
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, PolicyError):
                raise exc.__cause__ from None
            return None
        except Exception:  # the list and the version are optional: an old server may have neither
            return None

    def _dispatch(
        self,
        jobs: Sequence[Any],
        request: Callable[[RunState, Any], Any],
        *,
        progress: ProgressCallback | None,
        message: str,
    ) -> tuple[list[Any], str | None, int, RunState]:
        """Send ``request(run, job)`` for every job, at most :attr:`concurrency` at once, under one run.

        Returns
        -------
        answers : list
            Per job, what ``request`` returned, or None for a job the run stopped before answering.
        stop : str or None
            Why the run stopped early (a ``STOP_*`` reason), or None.
        done : int
            Jobs answered.
        run : RunState
            The run's book-keeping (requests used, retries).

        Raises
        ------
        BaseException
            The first fatal error of a request (the requests in flight are given up), after the requests
            made are counted.
        """
        answers: list[Any] = [None] * len(jobs)
        halt = threading.Event()
        run = RunState(self.limits, self.retry, seed=self._seed, cancel=halt)
        stop: str | None = None
        fatal: BaseException | None = None
        done = 0
        queue = iter(range(len(jobs)))
        pending: dict[Future, int] = {}
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="biastest-endpoint") as pool:

            def fill() -> None:
                while stop is None and fatal is None and len(pending) < self.concurrency:
                    j = next(queue, None)
                    if j is None:
                        return
                    pending[pool.submit(request, run, jobs[j])] = j

            fill()
            while pending:
                finished, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                if self._cancel is not None and self._cancel.is_set() and not halt.is_set():
                    halt.set()
                    stop = stop or STOP_CANCELLED
                for future in finished:
                    j = pending.pop(future)
                    try:
                        answers[j] = future.result()
                    except RunStopped as exc:
                        stop = stop or exc.reason
                        continue
                    except BaseException as exc:  # fatal: give up the requests in flight, report this one
                        if fatal is None:
                            fatal = exc
                        halt.set()
                        continue
                    done += 1
                    if progress is not None:
                        progress(done, len(jobs), message)
                fill()
        with self._lock:
            self.requests[self._service] += run.requests_used
            for kind, count in run.transient.items():
                self.transient[kind] = self.transient.get(kind, 0) + count
        if fatal is not None:
            raise fatal
        return answers, stop, done, run
