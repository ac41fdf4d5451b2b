"""``scripts/house_stats.py`` finds what it is meant to find, on a tiny planted package."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "scripts" / "house_stats.py"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def _planted(root: Path) -> None:
    """A package ``toy`` with a long function, a many-parameter function and a two-module circle."""
    _write(root / "toy" / "__init__.py", '"""Toy."""\n')
    body = "".join(f"    x{i} = {i}\n" for i in range(130))
    _write(root / "toy" / "long.py", f"def long_one():\n{body}    return x0\n")
    params = ", ".join(f"p{i}" for i in range(15))
    _write(
        root / "toy" / "many.py",
        f"""\
        def many(*, {params}):
            return p0


        class Holder:
            def method(self, a, b):
                return a + b
        """,
    )
    _write(root / "toy" / "a.py", "from toy.b import B\n\nA = 1\n")
    _write(root / "toy" / "b.py", "B = 2\n\n\ndef late():\n    from toy import a\n\n    return a.A\n")
    _write(root / "app_toy.py", "import toy.many\n")


def _run(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), "--package", "toy", *extra],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


def test_finds_planted_long_function_many_parameters_and_circle(tmp_path: Path) -> None:
    _planted(tmp_path)
    stats = json.loads(_run(tmp_path, "--json").stdout)

    assert stats["files"] == 6
    assert [(f["name"], f["file"], f["length"]) for f in stats["long_functions"]] == [("long_one", "toy/long.py", 132)]
    assert [(f["name"], f["parameters"]) for f in stats["many_parameters"]] == [("many", 15)]
    assert stats["functions_over_max_parameters"] == 1
    assert stats["function_imports"] == 1
    assert stats["function_imports_by_file"] == {"toy/b.py": 1}
    [circle] = stats["circles"]
    assert circle["modules"] == ["toy.a", "toy.b"]
    assert circle["cycle"] in (["toy.a", "toy.b", "toy.a"], ["toy.b", "toy.a", "toy.b"])
    assert {(i["from"], i["to"], i["in_function"]) for i in circle["imports"]} == {
        ("toy.a", "toy.b", False),
        ("toy.b", "toy.a", True),
    }


def test_readable_report_names_the_findings(tmp_path: Path) -> None:
    _planted(tmp_path)
    text = _run(tmp_path).stdout
    assert "6 product files" in text
    assert "toy/long.py:1 long_one" in text
    assert "toy/many.py:1 many" in text
    assert "Import circles: 1" in text
    assert "toy.a -> toy.b -> toy.a" in text


def test_no_circle_without_the_back_import(tmp_path: Path) -> None:
    _planted(tmp_path)
    _write(tmp_path / "toy" / "b.py", "B = 2\n")
    stats = json.loads(_run(tmp_path, "--json").stdout)
    assert stats["circles"] == []
    assert stats["function_imports"] == 0


def test_layer_table_places_the_units() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import house_stats
    finally:
        sys.path.remove(str(SCRIPT.parent))
    assert house_stats.layer_of("biastest.cli")[:2] == (0, "apps/ui/cli/audit")
    assert house_stats.layer_of("app_gpt")[0] == 0
    assert house_stats.layer_of("biastest.errors")[:2] == (4, "errors/provenance")
    assert house_stats.layer_of("biastest.store.local")[0] > house_stats.layer_of("biastest.measures.base")[0]
    assert house_stats.layer_of("biastest.no_such_unit") is None
