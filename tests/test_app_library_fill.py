"""The library dropdown of /gpt and /vqa fills the term boxes on the user's pick only.

On ``.change`` the fill also ran after "New bias test" set the dropdown back to Custom: it emptied the boxes a
second time, after the reset, so a user who had started typing on a slow server lost the words (the same defect
was found by the word-embedding app's browser walk, where the spec message showed the fill's timer).
"""

from __future__ import annotations

import pytest

from biastest.ui import gpt, vqa


@pytest.mark.parametrize("build", [gpt.build_demo, vqa.build_demo], ids=["gpt", "vqa"])
def test_the_library_fills_the_boxes_on_the_users_pick_only(build):
    demo = build()
    library = next(k for k, b in demo.blocks.items() if getattr(b, "elem_id", None) == "spec-library")
    fills = [f for f in demo.fns.values() if any(t[0] == library for t in f.targets)
             and f.fn is not None and "fill_from_library" in repr(f.fn)]
    assert fills, "no listener fills the term boxes from the library"
    assert {t for f in fills for t in f.targets} == {(library, "input")}
    # and no listener at all runs when the reset sets the dropdown's value
    assert not [f for f in demo.fns.values() if (library, "change") in f.targets]
