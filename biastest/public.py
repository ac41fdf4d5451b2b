"""The one public-mode decision, and the checks that follow from it.

A server is **public** when it is bound to anything but a loopback address,
when it runs as a Hugging Face Space (``SPACE_ID`` is set), or when the
operator says so with ``BIASTEST_PUBLIC=1`` (for a server on 127.0.0.1 behind
a reverse proxy). The decision is made once per process, at start
(:func:`configure`, called by the launcher with the address it binds), and
logged. In public mode:

* **no server paths**: inputs that name a file or folder on the server (an
  embedding file by path, a model folder) are off; models load by Hub id only;
* **outbound requests go to public addresses only**: every endpoint the user
  types must resolve to global addresses; private, loopback, link-local (cloud
  metadata), shared and reserved ranges are refused on the address check
  itself, before any connection, and each request (redirects included)
  connects only to the addresses checked for it (:mod:`biastest.remote`). The
  operator may allow hosts with ``BIASTEST_ALLOWED_HOSTS`` (comma-separated
  host names, addresses or CIDR ranges);
* **uploads are bounded** in size (per file) and count (per upload and per
  session).

Self-hosted on 127.0.0.1, none of this applies: server paths and local
endpoints (vLLM, Ollama on localhost) keep working.

This module is plain Python (no gradio, no network library); the outbound
address check and the one HTTP client that applies it are
:mod:`biastest.remote`'s.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biastest import settings
from biastest.errors import PolicyError
from biastest.settings import PUBLIC_ENV

__all__ = [
    "MAX_FILES_PER_UPLOAD",
    "MAX_UPLOAD_BYTES",
    "MSG_SERVER_PATHS_OFF",
    "MSG_MODEL_PATH_OFF",
    "MSG_TOO_MANY_FILES",
    "MSG_FILE_TOO_LARGE",
    "Policy",
    "check_model_reference",
    "check_server_path",
    "check_upload",
    "configure",
    "current",
    "decide",
]

log = logging.getLogger("biastest.public")

#: Largest file accepted by an upload (Gradio refuses larger ones before they reach the disk).
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
#: Files accepted by one upload.
MAX_FILES_PER_UPLOAD = 100

MSG_SERVER_PATHS_OFF = (
    "This server is public, so it does not read files by their path on the server. Upload the file instead."
)
MSG_MODEL_PATH_OFF = (
    "This server is public, so models are loaded only from the Hugging Face Hub by their id (for example "
    "'gpt2' or 'openai/clip-vit-base-patch32'), not from folders on the server; '{value}' is not such an id."
)
MSG_TOO_MANY_FILES = "Upload at most {limit} files at a time; you chose {count}."
MSG_FILE_TOO_LARGE = "The file '{name}' is larger than {limit_mb} MB. Upload a smaller file."

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
# A Hugging Face Hub model id: "name" or "namespace/name" (letters, digits, '-', '_', '.'; no '..').
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?$")

def _is_loopback_host(host: str) -> bool:
    h = (host or "").strip().strip("[]").lower()
    if h in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _parse_allowed(items: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """Split the operator's allow-list (:func:`biastest.settings.allowed_hosts`) into host names and networks."""
    names: list[str] = []
    nets: list[Any] = []
    for item in items:
        try:
            nets.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            names.append(item.rstrip("."))
    return tuple(names), tuple(nets)


@dataclass(frozen=True)
class Policy:
    """What this process allows; one per process (:func:`current`).

    Attributes
    ----------
    public : bool
        Public mode (see the module docstring).
    reason : str
        Why, in words, for the start-up log.
    allowed_hosts : tuple of str
        Host names the operator allows even when they resolve to private addresses.
    allowed_networks : tuple of ip_network
        Address ranges the operator allows.
    """

    public: bool
    reason: str
    allowed_hosts: tuple[str, ...] = ()
    allowed_networks: tuple[Any, ...] = field(default_factory=tuple)

    @property
    def server_paths(self) -> bool:
        """Whether inputs may name files and folders on the server."""
        return not self.public

    def describe(self) -> str:
        """One line for the start-up log."""
        if not self.public:
            return (f"biastest: private mode ({self.reason}): server paths on, any endpoint allowed, "
                    f"uploads up to {MAX_UPLOAD_BYTES // 2**20} MB")
        allow = ", ".join([*self.allowed_hosts, *(str(n) for n in self.allowed_networks)]) or "none"
        return (f"biastest: PUBLIC mode ({self.reason}): server paths off, outbound requests to public addresses "
                f"only (operator allow-list: {allow}), uploads up to {MAX_UPLOAD_BYTES // 2**20} MB and "
                f"{MAX_FILES_PER_UPLOAD} files, no pickled files from uploads")


def decide(*, host: str | None = None, environ: Mapping[str, str] | None = None) -> Policy:
    """The public-mode decision for a server bound to ``host``.

    Parameters
    ----------
    host : str, optional
        The address the server binds (default :func:`biastest.settings.bind_host`: ``BIASTEST_HOST``,
        ``GRADIO_SERVER_NAME`` or 127.0.0.1).
    environ : mapping, optional
        The environment (default ``os.environ``), read through :mod:`biastest.settings`.

    Returns
    -------
    Policy
        Public when ``SPACE_ID`` is set, when ``host`` is not a loopback address, or when
        ``BIASTEST_PUBLIC=1``. ``BIASTEST_PUBLIC=0`` cannot make a Space or a server bound to a
        non-loopback address private.
    """
    names, nets = _parse_allowed(settings.allowed_hosts(environ))
    bound = (host or "").strip() or settings.bind_host(environ)
    space = settings.space_id(environ)
    if space:
        return Policy(True, f"running as the Hugging Face Space {space}", names, nets)
    if not _is_loopback_host(bound):
        return Policy(True, f"bound to {bound}, not a loopback address", names, nets)
    if settings.public_flag(environ):
        return Policy(True, f"{PUBLIC_ENV}=1", names, nets)
    return Policy(False, f"bound to {bound}", names, nets)


_lock = threading.Lock()
_policy: Policy | None = None


def configure(*, host: str | None = None, environ: Mapping[str, str] | None = None, quiet: bool = False) -> Policy:
    """Make (or remake) the process's decision for a server bound to ``host`` and log it.

    The launcher calls this once, before building the apps. It is process-wide
    configuration, not user data.
    """
    global _policy
    policy = decide(host=host, environ=environ)
    with _lock:
        _policy = policy
    if not quiet:
        log.warning(policy.describe()) if policy.public else log.info(policy.describe())
    return policy


def current() -> Policy:
    """The process's policy (decided from the environment on first use if :func:`configure` was not called)."""
    global _policy
    with _lock:
        if _policy is None:
            _policy = decide()
        return _policy


# --------------------------------------------------------------------------- server paths and model ids
def check_server_path(policy: Policy | None = None) -> None:
    """Refuse an input naming a server file in public mode (:data:`MSG_SERVER_PATHS_OFF`)."""
    if (policy or current()).public:
        raise PolicyError(MSG_SERVER_PATHS_OFF)


def check_model_reference(value: str, policy: Policy | None = None) -> str:
    """A model id a user typed, refused in public mode unless it is a Hub id that names no server folder.

    Parameters
    ----------
    value : str
        What the user typed (``gpt2``, ``org/model``, or a folder path when private).

    Returns
    -------
    str
        The stripped id.

    Raises
    ------
    PolicyError
        Public mode and ``value`` is a path, not a Hub id, or names an existing file or folder on the
        server (``from_pretrained`` would read it instead of the Hub) — :data:`MSG_MODEL_PATH_OFF`.
    """
    v = (value or "").strip()
    if not (policy or current()).public:
        return v
    shown = v[:80]
    if not _HUB_ID.match(v) or ".." in v or os.path.lexists(v) or os.path.lexists(os.path.expanduser(v)):
        raise PolicyError(MSG_MODEL_PATH_OFF.format(value=shown), value=shown)
    return v


# --------------------------------------------------------------------------- uploads
def check_upload(paths: Sequence[str | Path], *, limit: int = MAX_FILES_PER_UPLOAD) -> list[Path]:
    """Bound one upload: at most ``limit`` files, each at most :data:`MAX_UPLOAD_BYTES`.

    Applies in both modes (a private server is no place for a 5 GB upload either).
    """
    files = [Path(p) for p in paths]
    if len(files) > limit:
        raise PolicyError(MSG_TOO_MANY_FILES.format(limit=limit, count=len(files)))
    for f in files:
        try:
            size = f.stat().st_size
        except OSError:
            continue  # a vanished file is reported by the reader that needs it
        if size > MAX_UPLOAD_BYTES:
            raise PolicyError(MSG_FILE_TOO_LARGE.format(name=f.name[:100], limit_mb=MAX_UPLOAD_BYTES // 2**20))
    return files
