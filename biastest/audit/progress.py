"""The audit's progress bar on stderr, shared by the in-process and the Ray runner."""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm

__all__ = ["progress_bar"]


def progress_bar(total: int, enabled: bool) -> Any:
    """A ``tqdm`` bar over ``total`` cells on stderr (disabled when not ``enabled`` or nothing to run)."""
    return tqdm(total=total, desc="cells", unit="cell", file=sys.stderr, disable=not enabled or total == 0,
                dynamic_ncols=True)
