"""Every environment variable biastest reads, declared once and read here only.

Each variable is declared in :data:`DECLARATIONS`: its name (or names, in
fallback order: the first one set wins), what it means, its default, how its
value is parsed, and who reads it. No other module of the package reads
``os.environ`` (``tests/test_settings.py`` scans the package for it); they ask
this module through the small accessors below, which read the environment **at
each call** (no process-wide cache: a test's ``monkeypatch.setenv`` and an
operator's change before a restart both take effect). The one decision that is
made once per process is the public-mode decision, which
:func:`biastest.public.configure` makes at start from :func:`space_id`,
:func:`public_flag`, :func:`allowed_hosts` and :func:`bind_host`.

Rules every variable follows:

* a variable set to an empty (or blank) value counts as unset;
* a bad value either falls back to the documented default (the limits:
  :data:`MODEL_CACHE_SIZE_ENV`, :data:`SESSION_MAX_AGE_ENV`; an unknown word in
  a yes/no flag) or stops with :data:`MSG_BAD_PORT` (the server's port, where
  no guess is safe) — :class:`~biastest.errors.SettingsError`;
* secrets (``HF_TOKEN``, ``OPENAI_API_KEY``, a key named by the user with
  ``--api-key-env``/``api_key_env:``) are held in a :class:`Secret`, which
  never shows its value in a ``repr``, a ``str`` or :meth:`Settings.dump`.

The **Configuration** table of ``docs/deploying.md`` must follow
:data:`DECLARATIONS` exactly (the same variables, grouped the same way, with
the same defaults); ``tests/test_settings.py`` compares them.

Examples
--------
>>> s = Settings.from_env({"BIASTEST_PORT": "8080", "HF_TOKEN": "hf_secret"})
>>> s.port, s.host
(8080, '127.0.0.1')
>>> "hf_secret" in repr(s) or "hf_secret" in str(s.dump())
False
>>> s.hf_token.reveal()
'hf_secret'
"""

from __future__ import annotations

import contextlib
import hmac
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from biastest.errors import SettingsError

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "DATASET_ENV",
    "DATA_DIR_ENV",
    "DECLARATIONS",
    "DEFAULT_DATA_DIR",
    "DEFAULT_HOST",
    "DEFAULT_MODEL_CACHE_SIZE",
    "DEFAULT_PORT",
    "DEFAULT_SESSION_MAX_AGE",
    "ENDPOINT_ENV",
    "ENV_NAME",
    "HOST_ENVS",
    "MODELS_DIR_ENV",
    "MODEL_CACHE_SIZE_ENV",
    "MSG_BAD_ENV_NAME",
    "MSG_BAD_PORT",
    "OFFLINE_ENV",
    "OPENAI_KEY_ENV",
    "PORT_ENVS",
    "PROXY_ENVS",
    "PUBLIC_ENV",
    "SESSION_MAX_AGE_ENV",
    "SPACE_ID_ENV",
    "TELEMETRY_ENVS",
    "TOKEN_ENV",
    "Declaration",
    "Secret",
    "Settings",
    "allowed_hosts",
    "bind_host",
    "bind_port",
    "data_dir",
    "declaration",
    "hf_dataset",
    "hf_endpoint",
    "hf_token",
    "hub_offline",
    "model_cache_size",
    "models_dir",
    "openai_api_key",
    "public_flag",
    "secret_from",
    "session_max_age",
    "space_id",
    "turn_off_telemetry",
]

# --------------------------------------------------------------------------- names
SPACE_ID_ENV = "SPACE_ID"
PUBLIC_ENV = "BIASTEST_PUBLIC"
ALLOWED_HOSTS_ENV = "BIASTEST_ALLOWED_HOSTS"
#: The server's address: the first of these that is set (``GRADIO_SERVER_NAME`` is what Gradio and Docker images set).
HOST_ENVS = ("BIASTEST_HOST", "GRADIO_SERVER_NAME")
#: The server's port: the first of these that is set (a Space or a container platform sets ``PORT`` or
#: ``GRADIO_SERVER_PORT``).
PORT_ENVS = ("BIASTEST_PORT", "GRADIO_SERVER_PORT", "PORT")
DATA_DIR_ENV = "BIASTEST_DATA_DIR"
MODELS_DIR_ENV = "BIASTEST_MODELS_DIR"
MODEL_CACHE_SIZE_ENV = "BIASTEST_MODEL_CACHE_SIZE"
SESSION_MAX_AGE_ENV = "BIASTEST_SESSION_MAX_AGE"
DATASET_ENV = "BIASTEST_HF_DATASET"
TOKEN_ENV = "HF_TOKEN"
ENDPOINT_ENV = "HF_ENDPOINT"
OFFLINE_ENV = "HF_HUB_OFFLINE"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
#: Set off by :func:`turn_off_telemetry` (the suite launcher) when the operator has not set them.
TELEMETRY_ENVS = {"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"}
PROXY_ENVS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
DEFAULT_DATA_DIR = Path("~/.cache/biastest/store")
DEFAULT_MODEL_CACHE_SIZE = 3
#: Seconds without any change after which a session's folder (or a loose export) is removed.
DEFAULT_SESSION_MAX_AGE = 2 * 3600.0

#: The name of an environment variable a user may name (``--api-key-env``, ``api_key_env:``).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

MSG_BAD_PORT = "{name} must be a port number from 1 to 65535; it is '{value}'. Set it to a number such as 7860."
#: Does not quote the name: a user may have pasted the key itself where its variable's name belongs.
MSG_BAD_ENV_NAME = (
    "The name of the environment variable that holds a key must be letters, digits and '_', not starting with a "
    "digit (such as MY_ENDPOINT_KEY); what was given is not such a name (it is not shown: it may be the key itself)."
)

_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")


# --------------------------------------------------------------------------- secrets
class Secret:
    """A secret value (a token, a key) that never shows itself.

    ``repr``, ``str`` and :meth:`Settings.dump` show ``'***'``; :meth:`reveal`
    gives the value to the one caller that sends it.

    >>> key = Secret("sk-123")
    >>> key, str(key), key.reveal()
    (Secret('***'), '***', 'sk-123')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value itself (hand it only to the client that sends it)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and hmac.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash((Secret, self._value))


# --------------------------------------------------------------------------- parsers
# Each parser takes (name, value) with value the stripped, non-empty text of the first variable set, or None when
# none is; it returns the setting's value.
def _text(name: str, value: str | None) -> str | None:
    return value


def _flag(name: str, value: str | None) -> bool | None:
    """yes/no: ``1 true yes on`` → True, ``0 false no off`` → False, unset or any other word → None (ignored)."""
    if value is None:
        return None
    v = value.lower()
    return True if v in _YES else False if v in _NO else None


def _on(name: str, value: str | None) -> bool:
    return _flag(name, value) is True


def _hosts(name: str, value: str | None) -> tuple[str, ...]:
    """Comma-separated items, stripped and lower-cased; empty items dropped."""
    return tuple(item.strip().lower() for item in (value or "").split(",") if item.strip())


def _host(name: str, value: str | None) -> str:
    return value or DEFAULT_HOST


def _port(name: str, value: str | None) -> int:
    if value is None:
        return DEFAULT_PORT
    try:
        port = int(value)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise SettingsError(MSG_BAD_PORT.format(name=name, value=value[:40]), name=name)
    return port


def _path(name: str, value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


def _data_dir(name: str, value: str | None) -> Path:
    return Path(value or DEFAULT_DATA_DIR).expanduser()


def _cache_size(name: str, value: str | None) -> int:
    """A whole number, at least 1; anything else → the default."""
    try:
        return max(1, int(value)) if value is not None else DEFAULT_MODEL_CACHE_SIZE
    except ValueError:
        return DEFAULT_MODEL_CACHE_SIZE


def _seconds(name: str, value: str | None) -> float:
    """A number of seconds, at least 1; anything that is not a number → the default."""
    try:
        seconds = float(value) if value is not None else DEFAULT_SESSION_MAX_AGE
    except ValueError:
        seconds = DEFAULT_SESSION_MAX_AGE
    return max(1.0, seconds)


def _dataset(name: str, value: str | None) -> str:
    return value or ""


def _secret(name: str, value: str | None) -> Secret | None:
    return Secret(value) if value else None


# --------------------------------------------------------------------------- declarations
@dataclass(frozen=True)
class Declaration:
    """One setting and the environment variables it comes from.

    Attributes
    ----------
    field : str or None
        The :class:`Settings` attribute; None for a variable read by a library (Gradio, huggingface_hub, httpx),
        declared here so the operator finds it in the table.
    names : tuple of str
        The variables, in fallback order: the first one set (non-blank) wins.
    meaning : str
        What it does, in the operator's words.
    default : str
        The default as the table shows it.
    parse : callable or None
        ``parse(name, value)`` → the value; ``value`` is None when no variable is set.
    readers : tuple of str
        The functions (or libraries) that use the value.
    secret : bool
        Held in a :class:`Secret`; never shown.
    """

    field: str | None
    names: tuple[str, ...]
    meaning: str
    default: str
    parse: Callable[[str, str | None], Any] | None
    readers: tuple[str, ...]
    secret: bool = False


DECLARATIONS: tuple[Declaration, ...] = (
    Declaration("host", HOST_ENVS, "where the server listens (the address it binds)", DEFAULT_HOST, _host,
                ("biastest.ui.serve.main", "biastest.ui.common.launch_kwargs", "biastest.public.decide")),
    Declaration("port", PORT_ENVS, "the port the server listens on", str(DEFAULT_PORT), _port,
                ("biastest.ui.serve.main", "biastest.ui.common.launch_kwargs")),
    Declaration("space_id", (SPACE_ID_ENV,), "set by Hugging Face on a Space: the server is public", "unset",
                _text, ("biastest.public.decide",)),
    Declaration("public", (PUBLIC_ENV,), "`1` makes a server on 127.0.0.1 public (behind a reverse proxy); `0` cannot "
                "make a Space or a server bound to another address private", "unset", _flag,
                ("biastest.public.decide",)),
    Declaration("allowed_hosts", (ALLOWED_HOSTS_ENV,), "public mode only: hosts (names, addresses or CIDR ranges, "
                "comma-separated) that generator endpoints may reach although they are private", "unset", _hosts,
                ("biastest.public.decide",)),
    Declaration("data_dir", (DATA_DIR_ENV,), "the local dataset (append-only Parquet shards, images)",
                str(DEFAULT_DATA_DIR), _data_dir, ("biastest.store.local.default_store_dir",)),
    Declaration("models_dir", (MODELS_DIR_ENV,), "a folder of saved models and word-vector files, listed in the apps "
                "as \"on this machine\" (not in public mode)", "unset", _path,
                ("biastest.models.catalog.models_dir",)),
    Declaration("model_cache_size", (MODEL_CACHE_SIZE_ENV,), "models kept in memory per process (LRU); at least 1, "
                "a value that is not a whole number gives the default", str(DEFAULT_MODEL_CACHE_SIZE), _cache_size,
                ("biastest.models.cache.MODEL_CACHE",)),
    Declaration("session_max_age", (SESSION_MAX_AGE_ENV,), "seconds a session's files and Gradio's cached copies are "
                "kept without a change; at least 1, a value that is not a number gives the default",
                str(int(DEFAULT_SESSION_MAX_AGE)), _seconds, ("biastest.workdir.session_max_age",)),
    Declaration("hf_dataset", (DATASET_ENV,), "the Hugging Face dataset test data is shared through", "unset",
                _dataset, ("biastest.store.hub.HubSync", "biastest.store.importers.pull_public_biastestgpt")),
    Declaration("hf_token", (TOKEN_ENV,), "a write token for that dataset (and for deploying a Space)", "unset",
                _secret, ("biastest.store.hub.HubSync", "biastest.spaces.deploy_space"), secret=True),
    Declaration("hf_endpoint", (ENDPOINT_ENV,), "another Hugging Face Hub address (a mirror)", "unset", _text,
                ("biastest.store.hub.HubSync", "biastest.spaces.deploy_space", "biastest.models.catalog.hub_endpoint",
                 "huggingface_hub")),
    Declaration("hub_offline", (OFFLINE_ENV,), "`1`: no connection to the Hub; only models already cached can be "
                "tested", "unset", _on, ("biastest.ui.serve._index_html", "huggingface_hub")),
    Declaration("openai_api_key", (OPENAI_KEY_ENV,), "default key for generation with OpenAI (a key typed in the app "
                "is used for that session only, never stored)", "unset", _secret,
                ("biastest.generate.openai_chat.OpenAIChatGenerator", "biastest.runner.services.generate_pairs"),
                secret=True),
    Declaration(None, tuple(TELEMETRY_ENVS), "no calls home", "set off by the launcher", None,
                ("gradio", "huggingface_hub", "set by biastest.settings.turn_off_telemetry when unset")),
    Declaration(None, PROXY_ENVS, "private mode only: outbound requests go through this proxy (in either case, as "
                "httpx reads them)", "unset", None, ("httpx", "biastest.remote.http.http_client")),
)


def declaration(field: str) -> Declaration:
    """The declaration of the setting ``field``."""
    for d in DECLARATIONS:
        if d.field == field:
            return d
    raise KeyError(field)


def _get(field: str, environ: Mapping[str, str] | None = None) -> Any:
    """Read and parse one setting now (``environ`` defaults to ``os.environ``)."""
    env = os.environ if environ is None else environ
    d = declaration(field)
    for name in d.names:
        value = (env.get(name) or "").strip()
        if value:
            return d.parse(name, value)
    return d.parse(d.names[0], None)


# --------------------------------------------------------------------------- the snapshot
@dataclass(frozen=True)
class Settings:
    """Every setting, read from the environment at one moment (:meth:`from_env`).

    The fields are those of :data:`DECLARATIONS` (see there for meaning and default). Secrets are
    :class:`Secret` objects: neither ``repr`` nor :meth:`dump` shows them.
    """

    host: str
    port: int
    space_id: str | None
    public: bool | None
    allowed_hosts: tuple[str, ...]
    data_dir: Path
    models_dir: Path | None
    model_cache_size: int
    session_max_age: float
    hf_dataset: str
    hf_token: Secret | None
    hf_endpoint: str | None
    hub_offline: bool
    openai_api_key: Secret | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every setting now from ``environ`` (default ``os.environ``).

        Raises
        ------
        SettingsError
            A variable has a value with no safe fallback (:data:`MSG_BAD_PORT`).
        """
        return cls(**{f.name: _get(f.name, environ) for f in fields(cls)})

    def dump(self) -> dict[str, Any]:
        """JSON-ready values for a log; a secret shows as ``'***'`` when set."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Secret):
                value = str(value)
            elif isinstance(value, Path):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


# --------------------------------------------------------------------------- accessors (read at each call)
def bind_host(environ: Mapping[str, str] | None = None) -> str:
    """The address the server binds: ``BIASTEST_HOST``, else ``GRADIO_SERVER_NAME``, else 127.0.0.1."""
    return _get("host", environ)


def bind_port(environ: Mapping[str, str] | None = None) -> int:
    """The server's port: ``BIASTEST_PORT``, else ``GRADIO_SERVER_PORT``, else ``PORT``, else 7860.

    Raises
    ------
    SettingsError
        The first of them that is set is not a port number (:data:`MSG_BAD_PORT`).
    """
    return _get("port", environ)


def space_id(environ: Mapping[str, str] | None = None) -> str | None:
    """``SPACE_ID`` (set on a Hugging Face Space), or None."""
    return _get("space_id", environ)


def public_flag(environ: Mapping[str, str] | None = None) -> bool | None:
    """``BIASTEST_PUBLIC`` as yes (True), no (False) or unset/unrecognised (None)."""
    return _get("public", environ)


def allowed_hosts(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``BIASTEST_ALLOWED_HOSTS``: its comma-separated items, lower-cased."""
    return _get("allowed_hosts", environ)


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``BIASTEST_DATA_DIR`` or ``~/.cache/biastest/store``, with ``~`` expanded."""
    return _get("data_dir", environ)


def models_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """``BIASTEST_MODELS_DIR`` with ``~`` expanded (whether it exists is the catalog's question), or None."""
    return _get("models_dir", environ)


def model_cache_size(environ: Mapping[str, str] | None = None) -> int:
    """``BIASTEST_MODEL_CACHE_SIZE``: at least 1; default 3 (also for a value that is not a whole number)."""
    return _get("model_cache_size", environ)


def session_max_age(environ: Mapping[str, str] | None = None) -> float:
    """``BIASTEST_SESSION_MAX_AGE`` in seconds: at least 1; default two hours (also for a value that is no number)."""
    return _get("session_max_age", environ)


def hf_dataset(environ: Mapping[str, str] | None = None) -> str:
    """``BIASTEST_HF_DATASET`` (``namespace/name``), or ``""`` when unset."""
    return _get("hf_dataset", environ)


def hf_token(environ: Mapping[str, str] | None = None) -> str | None:
    """``HF_TOKEN`` itself, or None (hand it only to the Hub client)."""
    secret = _get("hf_token", environ)
    return secret.reveal() if secret else None


def hf_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """``HF_ENDPOINT`` (another Hub address), or None."""
    return _get("hf_endpoint", environ)


def hub_offline(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``HF_HUB_OFFLINE`` says yes (``1``, ``true``, ``yes``, ``on``)."""
    return _get("hub_offline", environ)


def openai_api_key(environ: Mapping[str, str] | None = None) -> str | None:
    """``OPENAI_API_KEY`` itself, or None (hand it only to the OpenAI client)."""
    secret = _get("openai_api_key", environ)
    return secret.reveal() if secret else None


def secret_from(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of the environment variable a user named (``--api-key-env VAR``, ``api_key_env: VAR``), or None.

    Parameters
    ----------
    name : str
        The variable's name, checked against :data:`ENV_NAME`.
    environ : mapping, optional
        Default ``os.environ``.

    Returns
    -------
    str or None
        The stripped value; None when the variable is unset or blank.

    Raises
    ------
    SettingsError
        ``name`` is not a variable's name (:data:`MSG_BAD_ENV_NAME`, which does not quote it: a user may have
        pasted the key itself).

    Examples
    --------
    >>> secret_from("MY_KEY", {"MY_KEY": " sk-1 "})
    'sk-1'
    >>> secret_from("MY_KEY", {}) is None
    True
    """
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise SettingsError(MSG_BAD_ENV_NAME)
    env = os.environ if environ is None else environ
    return (env.get(name) or "").strip() or None


def turn_off_telemetry() -> None:
    """Set Gradio's analytics and huggingface_hub's telemetry off unless the operator set them.

    This sets variables, it reads none of biastest's: Gradio and huggingface_hub read them when they load, so the
    suite launcher (:mod:`biastest.ui.serve`) calls it before importing them.
    """
    for name, value in TELEMETRY_ENVS.items():
        os.environ.setdefault(name, value)


@contextlib.contextmanager
def environ_set(name: str, value: str) -> Iterator[None]:
    """Set the environment variable ``name`` to ``value`` for the block, then restore it (or remove it).

    For a library that reads a variable of its own when it starts, here and in the processes it launches (the local
    Ray instance's cluster switch, :mod:`biastest.audit.ray_runner`); it reads none of biastest's settings.
    """
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved
