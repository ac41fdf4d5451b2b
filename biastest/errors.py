"""Typed errors whose messages are written for the user.

Every error the product raises on purpose derives from :class:`BiastestError`.
Its ``message`` is a complete sentence in the user's words (what happened and
what to do); the UI shows it as-is and never shows a traceback. Messages are
module-level string constants (``MSG_*``) formatted with named fields, so tests
assert the exact text.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BiastestError",
    "SpecError",
    "ModelLoadError",
    "ModelKindError",
    "MethodError",
    "DataError",
    "EmbeddingError",
    "GenerationError",
    "StoreError",
    "SyncError",
    "OptionError",
    "PolicyError",
    "EndpointError",
    "UsageError",
    "SettingsError",
]


class BiastestError(Exception):
    """Base class of every error meant for the user.

    Parameters
    ----------
    message : str
        The complete, user-facing message (already formatted).
    **details : Any
        Machine-readable context (the offending value, the field name ...),
        kept in ``details`` for logs and tests; never required to read the
        message.
    """

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


class SpecError(BiastestError, ValueError):
    """A bias specification is invalid or cannot be read."""


class ModelLoadError(BiastestError, RuntimeError):
    """A model cannot be loaded (unknown id, no network, no weights, unsupported)."""


class ModelKindError(BiastestError, ValueError):
    """A model was loaded but is the wrong kind for the requested test."""


class MethodError(BiastestError, ValueError):
    """A scoring method is unknown or does not apply to the model kind."""


class DataError(BiastestError, ValueError):
    """Test data (sentences, pairs, images, words) is unusable as given."""


class EmbeddingError(BiastestError, ValueError):
    """Word embeddings cannot be loaded or too many terms are missing."""


class GenerationError(BiastestError, RuntimeError):
    """Generating sentences or images failed in a way the user must know."""


class StoreError(BiastestError, RuntimeError):
    """The local dataset store cannot be read or written."""


class SyncError(BiastestError, RuntimeError):
    """Syncing with the Hugging Face dataset failed (local rows are kept)."""


class OptionError(BiastestError, ValueError):
    """A run option (seed, resample count, confidence …) is outside what is allowed."""


class PolicyError(BiastestError, ValueError):
    """A request is refused by this deployment's policy (public mode: server paths, private addresses, uploads)."""


class EndpointError(BiastestError, RuntimeError):
    """A model behind an endpoint cannot score: no answer, no prompt log-probabilities, another model, an unreadable
    answer."""


class UsageError(BiastestError, ValueError):
    """The command line or an audit grid was used wrongly (an option that does not apply, a missing file …)."""


class SettingsError(BiastestError, ValueError):
    """An environment variable has a value the product cannot use (:mod:`biastest.settings`)."""
