"""What the word-embedding measures' headless runs share: loading the embedding the user named.

A run records the embedding by its source name; with ``--trust-gensim-file`` (command line only) the measure's run
receives the embedding loaded with the opt-in instead (gensim's own files are pickles).
"""

from __future__ import annotations

from typing import Any

from biastest.models.embeddings import load_embeddings

__all__ = ["embedding_name", "trusted"]


def trusted(source: Any, trust_pickle: bool) -> Any:
    """``source`` as the runner takes it: loaded with the pickle opt-in when the user gave it, else unchanged."""
    return load_embeddings(source, trust_pickle=True) if trust_pickle else source


def embedding_name(source: Any, trust_pickle: bool) -> str:
    """The embedding's display name (the file's name, or the built-in source's)."""
    return load_embeddings(source, trust_pickle=trust_pickle).name
