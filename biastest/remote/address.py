"""Outbound addresses: the public-mode check, resolved once and pinned.

In public mode (:mod:`biastest.public`) every outbound request goes to public
addresses only: a host must resolve to global addresses; private, loopback,
link-local (cloud metadata), shared and reserved ranges are refused on the
address check itself, before any connection. The operator may allow hosts with
``BIASTEST_ALLOWED_HOSTS`` (comma-separated host names, addresses or CIDR
ranges).

A check and a connection that resolve the name separately can be told two
different things (DNS rebinding: public when checked, 127.0.0.1 when
connected), so :func:`pin` resolves a request's host **once**, checks every
address it got, and returns them: the transport of :mod:`biastest.remote.http`
connects to exactly those. IPv6 forms that carry an IPv4 address
(IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, NAT64
``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo) are judged by the IPv4 address
they carry, and a scope (``fe80::1%eth0``) is dropped before the check
(:func:`normalise_address`).
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from biastest.errors import GenerationError, PolicyError
from biastest.public import Policy, current

__all__ = [
    "MSG_BAD_BASE_URL",
    "MSG_BAD_URL",
    "MSG_HOST_UNRESOLVED",
    "MSG_PRIVATE_ADDRESS",
    "Pinned",
    "Resolver",
    "UnresolvedHost",
    "check_base_url",
    "check_outbound_url",
    "is_public_address",
    "normalise_address",
    "pin",
    "safe_base_url",
]

MSG_BAD_URL = "The service address {value!r} is not a web address. Give one such as https://api.example.com/v1."
MSG_HOST_UNRESOLVED = "The host '{host}' of the service address could not be found. Check the address."
MSG_PRIVATE_ADDRESS = (
    "This server is public, so it only connects to public internet addresses, and '{host}' points to a private, "
    "loopback or link-local address. Use a publicly reachable service, or run biastest on your own computer to "
    "use a local one."
)
MSG_BAD_BASE_URL = "The service address {value!r} is not a web address. Give one such as http://localhost:8000/v1."

#: Name resolution: ``resolver(host, port)`` -> the host's addresses, in the order to try them.
Resolver = Callable[[str, int], Sequence[str]]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215 local-use translation prefix
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class UnresolvedHost(OSError):
    """A host name that did not resolve (private mode: a connection failure like any other)."""


@dataclass(frozen=True)
class Pinned:
    """A request's host, resolved once: the only addresses a connection to it may use.

    Attributes
    ----------
    host : str
        The host as the URL names it (lower case, no brackets); TLS SNI and the Host header use it.
    port : int
    addresses : tuple of str
        The addresses checked, in the order to try them.
    """

    host: str
    port: int
    addresses: tuple[str, ...]

    def serves(self, host: str, port: int) -> bool:
        """Whether a connection to ``host:port`` is the one this pin is for."""
        return port == self.port and host.strip("[]").lower().rstrip(".") == self.host.rstrip(".")


def normalise_address(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address a check must judge: the IPv4 address an IPv6 form carries, without a scope.

    Examples
    --------
    >>> [str(normalise_address(a)) for a in ("::127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1",
    ...                                      "2002:7f00:1::", "fe80::1%eth0", "[::1]", "8.8.8.8")]
    ['127.0.0.1', '10.0.0.1', '127.0.0.1', '127.0.0.1', 'fe80::1', '::1', '8.8.8.8']
    """
    ip = ipaddress.ip_address(address.strip().strip("[]").split("%", 1)[0])
    if not isinstance(ip, ipaddress.IPv6Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):  # not :: or ::1, which are themselves
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def is_public_address(address: str) -> bool:
    """Whether an IP address is globally routable (not private, loopback, link-local, shared, reserved …).

    IPv4 addresses embedded in IPv6 (mapped, IPv4-compatible, 6to4, Teredo, NAT64 well-known prefix) are judged
    by the IPv4 address they carry (:func:`normalise_address`); the NAT64 local-use prefix is never public.

    Examples
    --------
    >>> is_public_address("8.8.8.8"), is_public_address("169.254.169.254"), is_public_address("::ffff:10.0.0.1")
    (True, False, False)
    >>> is_public_address("::127.0.0.1")
    False
    """
    ip = normalise_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip in _NAT64_LOCAL:
        return False
    return bool(ip.is_global) and not ip.is_multicast


def _system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))  # the system's order, once each


def _literal(host: str) -> str | None:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    return host


def _allowed(policy: Policy, host: str, addresses: Sequence[str]) -> bool:
    h = host.lower().rstrip(".")
    if h in policy.allowed_hosts:
        return True
    if policy.allowed_networks and addresses:
        ips = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses]
        return all(any(ip in net for net in policy.allowed_networks) for ip in ips)
    return False


def _parse(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of an http(s) address, or :data:`MSG_BAD_URL`."""
    try:
        parts = urllib.parse.urlsplit(url or "")
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except (ValueError, TypeError, AttributeError):
        parts, host, port = None, "", 0
    if parts is None or parts.scheme not in ("http", "https") or not host:
        shown = (url or "")[:100] if isinstance(url, str) else url
        raise PolicyError(MSG_BAD_URL.format(value=shown))
    return parts.scheme, host, port


def _lookup(host: str, port: int, resolver: Resolver | None) -> tuple[str, ...]:
    """The host's addresses, resolved once (an address literal is itself: no lookup)."""
    literal = _literal(host)
    if literal is not None:
        return (literal,)
    try:
        addresses = tuple(dict.fromkeys(str(a) for a in (resolver or _system_resolver)(host, port)))
    except (OSError, UnicodeError, ValueError) as exc:
        raise UnresolvedHost(str(exc)) from None
    if not addresses:
        raise UnresolvedHost("no address")
    return addresses


def pin(url: str, *, policy: Policy | None = None, resolver: Resolver | None = None) -> Pinned:
    """Resolve the host of ``url`` once and check every address it got; the addresses to connect to.

    Parameters
    ----------
    url : str
        An http(s) address.
    policy : Policy, optional
        Default :func:`biastest.public.current`.
    resolver : callable(host, port) -> list of str, optional
        Name resolution (default: the system's ``getaddrinfo``); tests pass their own.

    Returns
    -------
    Pinned
        The host, the port and the checked addresses. In private mode and for a host the operator allows by
        name the addresses are not judged, but they are pinned all the same.

    Raises
    ------
    PolicyError
        Not an http(s) address (:data:`MSG_BAD_URL`); in public mode, a host that cannot be resolved
        (:data:`MSG_HOST_UNRESOLVED`) or that resolves to any non-public address not on the operator's
        allow-list (:data:`MSG_PRIVATE_ADDRESS`).
    UnresolvedHost
        Private mode and the host cannot be resolved.
    """
    policy = policy or current()
    _, host, port = _parse(url)
    if not policy.public or host.lower().rstrip(".") in policy.allowed_hosts:
        return Pinned(host.lower(), port, _lookup(host, port, resolver))
    try:
        addresses = _lookup(host, port, resolver)
    except UnresolvedHost:
        raise PolicyError(MSG_HOST_UNRESOLVED.format(host=host[:100]), host=host) from None
    if not _allowed(policy, host, addresses) and not all(is_public_address(a) for a in addresses):
        raise PolicyError(MSG_PRIVATE_ADDRESS.format(host=host[:100]), host=host)
    return Pinned(host.lower(), port, addresses)


def check_outbound_url(url: str, *, policy: Policy | None = None, resolver: Resolver | None = None) -> str:
    """Check an outbound http(s) address against the policy, before any connection.

    In private mode, and for a host the operator allows by name, only the form is checked (no name lookup). The
    connection itself is made through
    :func:`pin`, which resolves and checks again, once, and connects to what it checked.

    Parameters
    ----------
    url : str
        The address (``https://host[:port]/path``).
    policy : Policy, optional
        Default :func:`biastest.public.current`.
    resolver : callable(host, port) -> list of str, optional
        Name resolution (default: the system's ``getaddrinfo``); tests pass their own.

    Returns
    -------
    str
        ``url`` unchanged.

    Raises
    ------
    PolicyError
        As :func:`pin`.
    """
    policy = policy or current()
    _, host, _ = _parse(url)
    if policy.public and host.lower().rstrip(".") not in policy.allowed_hosts:
        pin(url, policy=policy, resolver=resolver)
    return url


def safe_base_url(base_url: str | None) -> str:
    """The endpoint for display and provenance: no user:password, no query string."""
    if not base_url:
        return "https://api.openai.com/v1"
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_base_url(base_url: str) -> str:
    """A service's base address: a web address (:data:`MSG_BAD_BASE_URL`) that the policy allows.

    Raises
    ------
    GenerationError
        Not an http(s) address with a host and a valid port.
    PolicyError
        Public mode and the address is not public (:func:`check_outbound_url`).
    """
    try:
        parts = urllib.parse.urlsplit(base_url or "")
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except (ValueError, TypeError):
        ok = False
    if not ok:
        shown = safe_base_url(base_url)[:100] if isinstance(base_url, str) and base_url else base_url
        raise GenerationError(MSG_BAD_BASE_URL.format(value=shown))
    check_outbound_url(base_url)  # public mode: public addresses only, checked before any connection
    return base_url
