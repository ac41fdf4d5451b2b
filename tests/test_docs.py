"""The documentation stays navigable and true: the README is short, every relative link resolves, every source
file and command it names exists, each measure card lists its Options' fields, and docs/cli.md lists each measure's
flags as `run <measure> --help` has them; docs/DESIGN.md's worked example of a measure runs through the command
line, and its layer table is the one scripts/house_stats.py checks.

The README is the front door (what biastest is, ``make run``, ``make test``, a screenshot, a table of contents
into ``docs/``); the pages for each audience and the measures' cards live in ``docs/`` (see ``docs/DESIGN.md``).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
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


# --------------------------------------------------------------------------- names in the docs exist
#: A source path the docs name: ``biastest/…/x.py`` (and ``tests/``, ``scripts/``, ``benchmarks/``), in text, code or a
#: link (``../../tests/x.py``: from the repository root).
SOURCE_PATH = re.compile(r"(?<![\w./-])(?:\.\./)*((?:biastest|tests|scripts|benchmarks)/[\w./-]*?\.py)\b")
#: A command of the command line the docs name: ``python -m biastest COMMAND [run's MEASURE]``.
CLI_COMMAND = re.compile(r"python -m biastest ([\w-]+)(?: ([^\s`]+))?")
#: The worked example of docs/DESIGN.md ("Adding a measure") names a measure folder and a measure that are not in the
#: package: that is the example's point.
EXAMPLE_PATHS = ("biastest/measures/vector_norm/",)
EXAMPLE_MEASURES = ("vector-norm",)


def missing_source_paths(text: str, root: Path = REPO_ROOT) -> list[str]:
    """The source paths named in ``text`` that do not exist under ``root`` (the worked example's left out)."""
    named = dict.fromkeys(SOURCE_PATH.findall(text))
    return [p for p in named if not p.startswith(EXAMPLE_PATHS) and not (root / p).is_file()]


def unknown_commands(text: str, commands: set[str], measures: set[str]) -> list[str]:
    """``python -m biastest X`` with X no command, or ``run M`` with M a lower-case word that is no measure.

    ``run SPEC --kind …`` (a quoted name or a file) and placeholders (``MEASURE``, ``<measure>``) are not measures.
    """
    bad = []
    for command, arg in CLI_COMMAND.findall(text):
        if command not in commands:
            bad.append(command)
        elif (command == "run" and re.fullmatch(r"[a-z][a-z0-9-]*", arg or "")
              and arg not in measures and arg not in EXAMPLE_MEASURES):
            bad.append(f"run {arg}")
    return bad


def _cli_names() -> tuple[set[str], set[str]]:
    from biastest.cli import build_parser
    from biastest.cli.run import cli_measures

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices), {n for m in cli_measures() for n in (m.name, *m.aliases)}


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_source_path_and_command_the_docs_name_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not missing_source_paths(text), f"{page.name} names files that do not exist: {missing_source_paths(text)}"
    commands, measures = _cli_names()
    bad = unknown_commands(text, commands, measures)
    assert not bad, f"{page.name} names commands the CLI does not have: {bad}"


def test_the_name_checks_catch_a_planted_missing_file_and_command(tmp_path: Path) -> None:
    """Positive control: a missing module, a missing test file, an unknown command and an unknown measure are
    caught; real ones, the worked example and ``python -m biastest.spaces`` are not."""
    (tmp_path / "biastest" / "cli").mkdir(parents=True)
    (tmp_path / "biastest" / "cli" / "run.py").write_text("", encoding="utf-8")
    text = ("see biastest/cli/run.py and `biastest/metrics/weat.py`, [t](../tests/test_gone.py), "
            "biastest/measures/vector_norm/options.py")
    assert missing_source_paths(text, tmp_path) == ["biastest/metrics/weat.py", "tests/test_gone.py"]
    text = ("python -m biastest run weat SPEC; python -m biastest frobnicate; python -m biastest run wat X; "
            "python -m biastest run \"WEAT 7\" --kind embeddings; python -m biastest run MEASURE SPEC; "
            "python -m biastest run vector-norm SPEC; python -m biastest.spaces deploy gpt; "
            "`python -m biastest` calls main")
    assert unknown_commands(text, {"run", "audit"}, {"weat"}) == ["frobnicate", "run wat"]


# --------------------------------------------------------------------------- docs/cli.md's flag tables
CLI_PAGE = REPO_ROOT / "docs" / "cli.md"
COMMON_RUN_FLAGS = {"--out", "--csv", "--progress"}


def documented_flags(page_text: str, measure: str) -> set[str]:
    """The flags in the first column of the table under ``#### `run <measure>` …`` of docs/cli.md."""
    match = re.search(rf"^#### `run {re.escape(measure)}`.*?$(.*?)(?=^#{{2,4}} |\Z)", page_text, re.M | re.S)
    if match is None:
        return set()
    rows = [line for line in match.group(1).splitlines() if line.startswith("| ") and not line.startswith("|---")]
    return {flag for row in rows[1:] for flag in re.findall(r"`(--[a-z][a-z0-9-]*)", row.split("|")[1])}


def test_the_flag_table_of_each_measure_is_its_run_help() -> None:
    """docs/cli.md lists each measure's flags, as ``run <measure> --help`` has them, and no other measure's."""
    from biastest.cli.flags import flags_of
    from biastest.cli.run import _extra_flags, cli_measures

    text = CLI_PAGE.read_text(encoding="utf-8")
    for m in cli_measures():
        expected = {f.flag for f in flags_of(m.Options)} | {flag for flag, _ in _extra_flags(m)}
        documented = documented_flags(text, m.name)
        assert expected - documented == set(), f"run {m.name}: flags missing from docs/cli.md"
        assert documented - expected - COMMON_RUN_FLAGS == set(), f"run {m.name}: flags it does not take"


def test_the_flag_table_reader_sees_a_planted_table() -> None:
    """Positive control: the reader takes the first column of the measure's own table only."""
    text = ("#### `run weat`\n\n| flag | option |\n|---|---|\n| `--seed` | `seed` |\n"
            "| `--bootstrap N`, `--confidence` | not `--other` |\n\n"
            "#### `run bayes`\n\n| flag |\n|---|\n| `--draws` |\n")
    assert documented_flags(text, "weat") == {"--seed", "--bootstrap", "--confidence"}
    assert documented_flags(text, "bayes") == {"--draws"}
    assert documented_flags(text, "vlm") == set()


# --------------------------------------------------------------------------- the measure cards' options
def card_options(card_text: str) -> set[str]:
    """The option names in the first column of the table under a card's ``## Options`` (flags left out)."""
    match = re.search(r"^## Options\s*$(.*?)(?=^## |\Z)", card_text, re.M | re.S)
    if match is None:
        return set()
    rows = [line for line in match.group(1).splitlines() if line.startswith("| ") and not line.startswith("|---")]
    return {name for row in rows[1:] for name in re.findall(r"`([a-z][a-z0-9_]*)`", row.split("|")[1])}


def test_each_card_lists_its_measures_options_by_their_names() -> None:
    """Every field of a measure's Options is in its card's options table, and the table names no other."""
    from biastest.measures import MEASURES

    for measure in MEASURES.values():
        card = REPO_ROOT / measure.card
        named = card_options(card.read_text(encoding="utf-8"))
        fields = set(measure.Options.model_fields)
        assert fields - named == set(), f"{measure.card}: options missing from the table"
        assert named - fields == set(), f"{measure.card}: names in the table that are not options"


def test_the_card_reader_sees_a_planted_table() -> None:
    """Positive control: field names of the first column only, flags and other columns left out."""
    text = ("## Options\n\n| option (CLI flag) | default |\n|---|---|\n| `seed` (`--seed`) | `auto` |\n"
            "| `draws`, `tune` | 2,000 |\n\n## How to read it\n\n| `other` |\n")
    assert card_options(text) == {"seed", "draws", "tune"}


# --------------------------------------------------------------------------- docs/DESIGN.md's worked example runs
DESIGN = REPO_ROOT / "docs" / "DESIGN.md"
EXAMPLE_FILE = re.compile(r"^`biastest/measures/vector_norm/(\w+\.py)` —.*?^```python\n(.*?)^```", re.M | re.S)


def example_files(text: str) -> dict[str, str]:
    """File name → source of the worked example "adding a measure" in docs/DESIGN.md."""
    return dict(EXAMPLE_FILE.findall(text))


def test_the_worked_example_of_a_measure_runs_through_the_command_line(tmp_path, monkeypatch, capsys) -> None:
    """The files docs/DESIGN.md shows, written into a folder of ``biastest.measures`` and registered, run through
    ``run vector-norm`` with the flags their options declare, and refuse a bad value with their own message."""
    import biastest.measures

    files = example_files(DESIGN.read_text(encoding="utf-8"))
    assert set(files) == {"options.py", "score.py", "result.py", "run.py", "report.py", "__init__.py"}
    folder = tmp_path / "vector_norm"
    folder.mkdir()
    for name, source in files.items():
        (folder / name).write_text(source, encoding="utf-8")
    monkeypatch.setattr(biastest.measures, "__path__", [*biastest.measures.__path__, str(tmp_path)])
    try:
        _run_the_example(tmp_path, capsys)
    finally:  # the example leaves no module behind for the other tests
        for name in [m for m in sys.modules if m.startswith("biastest.measures.vector_norm")]:
            del sys.modules[name]
        if hasattr(biastest.measures, "vector_norm"):
            delattr(biastest.measures, "vector_norm")


def _run_the_example(tmp_path: Path, capsys) -> None:
    from biastest.audit import parse_grid, read_table, run_audit
    from biastest.cli import EXIT_OK, EXIT_USAGE, main
    from biastest.measures import MEASURES

    example = importlib.import_module("biastest.measures.vector_norm")
    options = importlib.import_module("biastest.measures.vector_norm.options")
    out = tmp_path / "norm.json"
    with MEASURES.registered(example.MEASURE):
        rc = main(["run", "norm", "WEAT 7: Math vs arts, male vs female terms", "--max-words", "3", "--seed", "5",
                   "--out", str(out), "--csv", str(tmp_path / "norm.csv")])
        assert rc == EXIT_OK, capsys.readouterr().err
        doc = json.loads(out.read_text(encoding="utf-8"))
        assert doc["test"] == "vector-norm" and doc["options"] == {"source": "glove-6b-50d", "seed": 5, "max_words": 3}
        assert doc["result"]["n_words"] == 12 and doc["result"]["mean_norm"] > 0
        assert example.VectorNormResult.from_dict({"norm": 1.5, "n_words": 2, "n_missing": 0}).mean_norm == 1.5
        capsys.readouterr()
        rc = main(["run", "vector-norm", "x", "--max-words", "0", "--out", str(tmp_path / "x.json")])
        assert rc == EXIT_USAGE
        assert capsys.readouterr().err.strip() == options.MSG_BAD_MAX_WORDS.format(value=0)
        # and through an audit, by the AuditUse its own __init__.py carries (no line in the audit's code)
        grid = {"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}],
                "specs": ["WEAT 7: Math vs arts, male vs female terms"], "methods": ["vector-norm"], "seeds": [5],
                "options": {"max_words": 3}}
        summary = run_audit(parse_grid(grid, base=tmp_path), tmp_path / "audit", progress=False)
        assert (summary.cells, summary.computed, summary.failed) == (1, 1, 0)
        row = read_table(tmp_path / "audit").set_index("method").loc["vector-norm"]
        assert row.statistic == "mean word-vector norm" and row.score == doc["result"]["mean_norm"]


def test_the_example_reader_finds_a_planted_file() -> None:
    """Positive control: a file's block is the first Python block after its heading line."""
    text = "`biastest/measures/vector_norm/run.py` — the run:\n\n```python\nx = 1\n```\n\n```python\ny = 2\n```\n"
    assert example_files(text) == {"run.py": "x = 1\n"}


# --------------------------------------------------------------------------- docs/DESIGN.md's layer table
def layer_table(text: str) -> dict[str, set[str]]:
    """Layer name → the units its row of DESIGN.md's layer table names (both columns; ``app_*.py`` as ``apps``,
    "the package root" as ``""``)."""
    match = re.search(r"^\s*\| layer \| units.*?$(.*?)(?=^\s*$)", text, re.M | re.S)
    out: dict[str, set[str]] = {}
    for line in (match.group(1).splitlines() if match else []):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or set(cells[0]) <= {"-"}:
            continue
        names = set(re.findall(r"`([\w*.]+)`", cells[1] + " " + cells[2]))
        names = {"apps" if n == "app_*.py" else n for n in names}
        out[cells[0]] = names | ({""} if "package root" in cells[2] else set())
    return out


def test_the_layer_table_of_design_md_is_the_one_house_stats_checks() -> None:
    from scripts.house_stats import ASSUMED, LAYERS

    expected = {name: set(units) | {u for u, (layer, _) in ASSUMED.items() if layer == name} for name, units in LAYERS}
    assert layer_table(DESIGN.read_text(encoding="utf-8")) == expected


def test_the_layer_table_reader_sees_a_planted_table() -> None:
    text = ("   | layer | units | and |\n   |---|---|---|\n   | top | `app_*.py`, `ui` | `runner` |\n"
            "   | bottom | `errors` | `settings`, the package root |\n\n")
    assert layer_table(text) == {"top": {"apps", "ui", "runner"}, "bottom": {"errors", "settings", ""}}
