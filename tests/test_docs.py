"""The documentation stays navigable: the README is short, and every relative link in it and in docs/ resolves.

The README is the front door (what biastest is, ``make run``, ``make test``, a screenshot, a table of contents
into ``docs/``); the pages for each audience and the measures' cards live in ``docs/`` (see ``docs/DESIGN.md``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
MAX_README_LINES = 200

#: ``[text](target)`` and ``![alt](target)``; the target ends at whitespace or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def markdown_files() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [README, *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def relative_links(text: str) -> list[str]:
    """The link targets of ``text`` that point into the repository (code blocks and inline code left out)."""
    text = INLINE_CODE.sub("", FENCE.sub("", text))
    out = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue  # http(s):, mailto: … and anchors within the page
        out.append(target.split("#", 1)[0])
    return out


def test_the_readme_is_at_most_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_the_readme_names_the_two_commands_and_links_every_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert "make run" in text and "make test" in text
    linked = {(README.parent / t).resolve() for t in relative_links(text)}
    pages = {p.resolve() for p in (REPO_ROOT / "docs").rglob("*.md")}
    assert pages <= linked, f"pages the README does not link: {sorted(str(p) for p in pages - linked)}"
    assert any(str(t).startswith("docs/screenshots/") for t in relative_links(text))


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_points_to_an_existing_file(page: Path) -> None:
    missing = [t for t in relative_links(page.read_text(encoding="utf-8")) if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(REPO_ROOT)} links to missing files: {missing}"


def test_the_link_check_sees_links_and_skips_code() -> None:
    """Positive control: the scanner finds a relative link and an image, and skips URLs, anchors and code."""
    text = (
        "[a](docs/a.md#x) ![](img/b.png) [web](https://example.org) [top](#top)\n"
        "`[not](code.md)`\n```\n[nor](block.md)\n```\n"
    )
    assert relative_links(text) == ["docs/a.md", "img/b.png"]
