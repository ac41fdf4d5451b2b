"""Provenance: what produced a result, recorded with every result.

Every result object carries a provenance mapping built by :func:`provenance`
so that a number can be traced to the library version, the model, the method,
the seed and the time it was computed.
"""

from __future__ import annotations

import datetime as _dt
import platform
from functools import cache
from importlib import metadata
from typing import Any

from biastest import __version__

__all__ = ["provenance", "library_versions", "utc_now"]

_TRACKED = ("biastest", "numpy", "scipy", "torch", "transformers", "pandas", "gensim", "numpyro", "jax", "arviz")


def utc_now() -> str:
    """Return the current UTC time as an ISO-8601 string with a ``Z`` suffix."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def library_versions() -> dict[str, str]:
    """Return the installed versions of the libraries that shape results.

    Libraries that are not installed are omitted (not reported as unknown).
    Read once per process (installed versions do not change while it runs).
    """
    return dict(_library_versions())


@cache
def _library_versions() -> dict[str, str]:
    out: dict[str, str] = {"python": platform.python_version()}
    for name in _TRACKED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            if name == "biastest":
                out[name] = __version__
    return out


def provenance(**fields: Any) -> dict[str, Any]:
    """Build a provenance record.

    Parameters
    ----------
    **fields : Any
        What the caller knows about the computation: ``model_id``,
        ``model_revision``, ``method``, ``seed``, ``spec`` (name or dict),
        ``generator``, ``prompt`` ... Values must be JSON-serialisable.

    Returns
    -------
    dict
        ``fields`` plus ``created_at`` (UTC) and ``versions``.
    """
    record = dict(fields)
    record.setdefault("created_at", utc_now())
    record["versions"] = library_versions()
    return record
