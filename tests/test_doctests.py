"""The runnable examples in the docstrings (docs/DESIGN.md, rule 8) stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import biastest

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(biastest.__path__, prefix="biastest.")
    if not m.name.startswith("biastest.ui") and m.name != "biastest.__main__"
)


def _has_examples(name: str) -> bool:
    return any(t.examples for t in doctest.DocTestFinder().find(importlib.import_module(name)))


def test_the_examples_are_found():
    found = {name for name in MODULES if _has_examples(name)}
    assert {"biastest.stats.proportion", "biastest.stats.bootstrap", "biastest.measures.weat.score"} <= found


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
