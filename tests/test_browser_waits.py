"""The browser tests' waits scale with the machine's load (tests/browser_helpers.py, WAIT_SCALE)."""

from __future__ import annotations

from tests import browser_helpers
from tests.browser_helpers import WAIT_SCALE, _scaled, _scaled_waits


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def set_default_timeout(self, timeout):
        self.calls.append(("default", timeout))

    def wait_for(self, *, state=None, timeout=None):
        self.calls.append(("wait", timeout))


def test_explicit_bounds_and_defaults_are_multiplied_and_missing_ones_left_alone() -> None:
    assert WAIT_SCALE >= 2  # a wait an idle machine meets in 10 s gets at least 20 on a loaded one
    rec = _Recorder()
    _scaled(_Recorder.set_default_timeout)(rec, 60_000)
    _scaled(_Recorder.wait_for)(rec, state="visible", timeout=10_000)
    _scaled(_Recorder.wait_for)(rec, state="visible")
    assert rec.calls == [("default", 60_000 * WAIT_SCALE), ("wait", 10_000 * WAIT_SCALE), ("wait", None)]


def test_the_patch_is_undone_when_the_browser_closes() -> None:
    from playwright.sync_api import Browser, Locator, Page

    before = (Locator.wait_for, Page.wait_for_function, Browser.new_context)
    with _scaled_waits():
        assert Locator.wait_for is not before[0] and Locator.wait_for.__wrapped__ is before[0]
        assert Browser.new_context is not before[2]
    assert (Locator.wait_for, Page.wait_for_function, Browser.new_context) == before
    assert browser_helpers.PLAYWRIGHT_DEFAULT_TIMEOUT == 30_000
