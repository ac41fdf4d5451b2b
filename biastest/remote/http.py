"""The one HTTP client of every outbound request, with pinned connections.

:class:`PinnedTransport` resolves each request's host once, checks every
address with the public-mode policy (:func:`biastest.remote.address.pin`) and
connects to exactly those addresses, so a name cannot resolve to a public
address for the check and to 127.0.0.1 for the connection. The URL keeps its
host name, so TLS (SNI and certificate check) and the ``Host`` header use the
original host, and connections are pooled per host name. A redirect is a new
request through the same transport: each hop is resolved, checked and pinned
the same way. In public mode the process's proxy settings are not used (a proxy
would resolve the name itself); in private mode, where every address is allowed
and nothing needs pinning, a proxy set by ``HTTP(S)_PROXY`` is used as ``httpx``
uses it (a self-hosted server behind a company proxy).

:func:`http_client` builds the client, :func:`openai_client` the ``openai``
client around it (the endpoints and the generators use it), and
:func:`download` fetches a file an answer points to (image URLs).
"""

from __future__ import annotations

import contextvars
import urllib.parse
import urllib.request
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from biastest.public import Policy, current
from biastest.remote.address import Pinned, Resolver, UnresolvedHost, pin
from biastest.remote.retry import REJECT_MALFORMED, MalformedAnswer, TransientError

__all__ = ["LIMITS", "PinnedTransport", "download", "http_client", "openai_client"]

#: The pin of the request this thread (or task) is sending; the network backend connects to it only.
_PIN: contextvars.ContextVar[Pinned | None] = contextvars.ContextVar("biastest_remote_pin", default=None)

#: The connection pool of one client (as the ``openai`` client's own default).
LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)

_UNPINNED = "biastest refuses a connection to {host}:{port} that was not resolved and checked first"


class _PinnedBackend(httpcore2.SyncBackend):
    """Opens a connection to the addresses pinned for the request in flight, and to nothing else."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        pinned = _PIN.get()
        if pinned is None or not pinned.serves(host, port):
            raise httpcore2.ConnectError(_UNPINNED.format(host=host, port=port))
        failure: Exception | None = None
        for address in pinned.addresses:  # every one was checked; tried in the resolver's order
            try:
                return super().connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                           socket_options=socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # a pin holds at least one address
        raise failure


class PinnedTransport(httpx2.HTTPTransport):
    """An ``httpx2`` transport whose every request is resolved once, checked, and connected to what was checked.

    Parameters
    ----------
    policy : Policy, optional
        Fixed policy (default: :func:`biastest.public.current` at each request).
    resolver : callable(host, port) -> list of str, optional
        Name resolution (default: the system's ``getaddrinfo``).
    limits : httpx2.Limits, optional
        Connection pool limits (default :data:`LIMITS`).

    Notes
    -----
    In public mode a refused address raises :class:`~biastest.errors.PolicyError` before any connection; in
    private mode a name that does not resolve is an ``httpx2.ConnectError``, as it was without pinning.
    """

    def __init__(self, *, policy: Policy | None = None, resolver: Resolver | None = None,
                 limits: httpx2.Limits = LIMITS) -> None:
        super().__init__(limits=limits, trust_env=False)
        self._pool.close()
        # the pool HTTPTransport builds, with the pinned network backend
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PinnedBackend(),
        )
        self._policy = policy
        self._resolver = resolver

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            pinned = pin(str(request.url), policy=self._policy, resolver=self._resolver)
        except UnresolvedHost:
            raise httpx2.ConnectError(f"the host {request.url.host!r} could not be resolved", request=request) from None
        token = _PIN.set(pinned)
        try:
            return super().handle_request(request)
        finally:
            _PIN.reset(token)


def http_client(timeout: float, *, policy: Policy | None = None, resolver: Resolver | None = None) -> httpx2.Client:
    """An ``httpx2`` client through :class:`PinnedTransport` that follows redirects (each hop checked).

    In private mode with a proxy configured in the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``)
    and no fixed policy or resolver, the client goes through that proxy instead (nothing is refused in private
    mode, so there is nothing to pin).
    """
    if policy is None and resolver is None and not current().public and _proxy_configured():
        return httpx2.Client(timeout=timeout, follow_redirects=True, trust_env=True)
    transport = PinnedTransport(policy=policy, resolver=resolver)
    return httpx2.Client(transport=transport, timeout=timeout, follow_redirects=True, trust_env=False)


def _proxy_configured() -> bool:
    """Whether the environment names a proxy (as ``httpx`` reads it: ``*_PROXY`` in either case)."""
    return any(urllib.request.getproxies().get(scheme) for scheme in ("http", "https", "all"))


def openai_client(base_url: str | None, *, api_key: str | None, timeout: float,
                  organization: str | None = None) -> Any:
    """The ``openai`` client of a service, on :func:`http_client`, with the client's own retries off.

    Retries, backoff, the request budget and the time limit are :class:`~biastest.remote.RunState`'s. The key
    lives only in the returned object.
    """
    from openai import OpenAI  # the openai package loads when a client is first built

    # Servers without authentication ignore the header; the client insists on a value.
    return OpenAI(api_key=api_key or "no-key", base_url=base_url, organization=organization, max_retries=0,
                  timeout=timeout, http_client=http_client(timeout))


def download(url: str, *, timeout: float, max_bytes: int) -> bytes:
    """The body at ``url`` (redirects followed, each hop checked), at most ``max_bytes``.

    Raises
    ------
    MalformedAnswer
        Not an http(s) address, an answer other than 2xx (but 429 and 5xx), a redirect that cannot be
        followed, or a body over ``max_bytes``.
    TransientError
        ``timeout``, ``server_error`` (429, 5xx) or ``connection``.
    PolicyError
        Public mode refused an address (the first or a redirect's).
    """
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise MalformedAnswer(REJECT_MALFORMED)
    try:
        with http_client(timeout) as client, client.stream("GET", url) as response:
            status = response.status_code
            if status == 429 or status >= 500:
                raise TransientError("server_error", status=status)
            if not 200 <= status < 300:
                raise MalformedAnswer(REJECT_MALFORMED)
            data = bytearray()
            for chunk in response.iter_raw():
                data += chunk
                if len(data) > max_bytes:
                    raise MalformedAnswer(REJECT_MALFORMED)
    except httpx2.TimeoutException:
        raise TransientError("timeout") from None
    except (httpx2.UnsupportedProtocol, httpx2.TooManyRedirects, httpx2.InvalidURL):
        raise MalformedAnswer(REJECT_MALFORMED) from None
    except httpx2.TransportError:
        raise TransientError("connection") from None
    return bytes(data)
