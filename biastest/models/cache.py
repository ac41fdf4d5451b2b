"""One process-wide, bounded model cache.

Models are expensive to load and identical for every user, so a model loads
once per process however many users click. The cache holds models only —
never user data. It is an LRU by count (``BIASTEST_MODEL_CACHE_SIZE``,
default 3). Concurrent requests for the same key wait for one load instead
of loading twice, and loads of different models never overlap
(:data:`LOAD_LOCK`): ``from_pretrained`` of transformers and diffusers
patches process-wide state while it loads (weight initialisation, the
meta device), so two loads in two threads — two users of a public server
choosing different models at the same moment — could corrupt each other
(seen: a GPT-2 loaded beside a CLIP model came up without its tied
``lm_head`` weights). Cache hits never wait for a load.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from biastest import settings

__all__ = ["LOAD_LOCK", "ModelCache", "MODEL_CACHE"]

#: Held while any model loads in this process (re-entrant: a loader may load a part through the cache).
LOAD_LOCK = threading.RLock()


class ModelCache:
    """Bounded LRU cache of loaded models, safe across threads.

    Parameters
    ----------
    max_items : int
        Number of models kept; the least recently used is dropped first.
    """

    def __init__(self, max_items: int = 3) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.max_items = max_items
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, loader: Callable[[], Any]) -> Any:
        """Return the cached value for ``key``, calling ``loader()`` on a miss.

        A loader that raises leaves nothing in the cache.
        """
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        with LOAD_LOCK:  # one load at a time in this process (a same-key request finds it loaded below)
            with self._lock:
                if key in self._items:  # loaded by another thread while we waited
                    self._items.move_to_end(key)
                    self.hits += 1
                    return self._items[key]
            value = loader()
            with self._lock:
                self.misses += 1
                self._items[key] = value
                self._items.move_to_end(key)
                while len(self._items) > self.max_items:
                    self._items.popitem(last=False)
            return value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def keys(self) -> list[Hashable]:
        """Cached keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        """Drop every cached model and reset the counters."""
        with self._lock:
            self._items.clear()
            self.hits = 0
            self.misses = 0


MODEL_CACHE = ModelCache(settings.model_cache_size())
