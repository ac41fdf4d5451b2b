"""The house rules on imports (docs/DESIGN.md, "Rules of the house" 1), checked on the source's syntax trees.

* torch, transformers, diffusers and accelerate are imported only in
  ``biastest/models/`` (the one package that touches models);
* gradio is imported only in ``biastest/ui/`` and the app files ``app_*.py``;
* importing the library's core (measures, runner, stats, spec, models) does not load gradio.
* ray (an optional extra) is imported only by ``biastest/audit/ray_runner.py``.

Every ``import`` and ``from ... import`` counts wherever it stands (module
level, inside a function, under ``if TYPE_CHECKING``), and so does
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name.
Mentions in strings and docstrings do not.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scripts import house_stats

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = REPO_ROOT / "biastest"

MODEL_LIBRARIES = frozenset({"torch", "transformers", "diffusers", "accelerate"})
UI_LIBRARIES = frozenset({"gradio"})
MODELS_DIR = PACKAGE / "models"
UI_DIR = PACKAGE / "ui"
CORE_MODULES = ("biastest.measures", "biastest.runner", "biastest.stats", "biastest.spec", "biastest.models")


def _source_files() -> list[Path]:
    """Every .py file of the package and the app files at the top level."""
    return sorted(PACKAGE.rglob("*.py")) + sorted(REPO_ROOT.glob("app_*.py"))


def _literal_import_call(node: ast.Call) -> str | None:
    """The module named by ``importlib.import_module("x")`` / ``import_module("x")`` / ``__import__("x")``."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imported_modules(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """``(line, module)`` for every absolute import in ``source``.

    Parameters
    ----------
    source : str
        Python source text.
    filename : str
        For syntax error messages.

    Returns
    -------
    list of (int, str)
        ``from a.b import c`` gives ``a.b``; relative imports (``from . import x``)
        are left out, since they stay inside the package.
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call):
            name = _literal_import_call(node)
            if name is not None and not name.startswith("."):
                found.append((node.lineno, name))
    return found


def violations(files: list[Path], libraries: frozenset[str], allowed: tuple[Path, ...]) -> list[str]:
    """``path:line imports module`` for each import of ``libraries`` in a file outside ``allowed``.

    Parameters
    ----------
    files : list of Path
    libraries : frozenset of str
        Top-level package names (``torch`` also catches ``torch.nn``).
    allowed : tuple of Path
        Folders or files where these imports belong.
    """
    out = []
    for path in files:
        if any(path == a or a in path.parents for a in allowed):
            continue
        for line, module in imported_modules(path.read_text(encoding="utf-8"), str(path)):
            if module.split(".")[0] in libraries:
                shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
                out.append(f"{shown}:{line} imports {module}")
    return out


def test_the_scan_sees_the_files_and_the_imports() -> None:
    files = _source_files()
    rel = {p.relative_to(REPO_ROOT).as_posix() for p in files}
    assert {"biastest/models/vlm.py", "biastest/measures/vlm/score.py", "app_vqa.py"} <= rel
    # positive controls: the allowed places do import these libraries, and the scan finds it
    assert violations(files, MODEL_LIBRARIES, allowed=())
    assert violations(files, UI_LIBRARIES, allowed=())


def test_the_scan_catches_every_spelling(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        textwrap.dedent(
            """
            '''Docstrings may say torch and gradio.'''
            import os, torch.nn as nn
            from transformers import AutoModel
            from . import sibling
            def f():
                from diffusers.pipelines import x
                import importlib
                importlib.import_module("accelerate")
                __import__("gradio")
            text = "import torch"
            """
        ),
        encoding="utf-8",
    )
    found = [m for _, m in imported_modules(bad.read_text(encoding="utf-8"))]
    assert found == ["os", "torch.nn", "transformers", "diffusers.pipelines", "importlib", "accelerate", "gradio"]
    assert len(violations([bad], MODEL_LIBRARIES, allowed=())) == 4
    assert violations([bad], MODEL_LIBRARIES, allowed=(tmp_path,)) == []


def test_model_libraries_are_imported_only_in_models() -> None:
    bad = violations(_source_files(), MODEL_LIBRARIES, allowed=(MODELS_DIR,))
    assert bad == [], "torch/transformers/diffusers/accelerate outside biastest/models/:\n" + "\n".join(bad)


def test_ray_is_imported_only_by_the_ray_runner() -> None:
    """Ray is an optional extra: an audit in one process, and everything else, must run without it."""
    runner = PACKAGE / "audit" / "ray_runner.py"
    files = _source_files()
    assert violations(files, frozenset({"ray"}), allowed=())  # positive control: the runner does import it
    bad = violations(files, frozenset({"ray"}), allowed=(runner,))
    assert bad == [], "ray outside biastest/audit/ray_runner.py:\n" + "\n".join(bad)


def test_gradio_is_imported_only_in_ui_and_apps() -> None:
    apps = tuple(sorted(REPO_ROOT.glob("app_*.py")))
    bad = violations(_source_files(), UI_LIBRARIES, allowed=(UI_DIR, *apps))
    assert bad == [], "gradio outside biastest/ui/ and app_*.py:\n" + "\n".join(bad)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_imports_without_gradio(module: str) -> None:
    code = (
        "import importlib, sys\n"
        f"importlib.import_module({module!r})\n"
        "print('gradio' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", f"importing {module} in a fresh interpreter loaded gradio"



def ui_imports(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """``(line, module)`` for every import of ``biastest.ui`` (any spelling) in ``source``."""
    found = [(line, m) for line, m in imported_modules(source, filename) if m == "biastest.ui" or
             m.startswith("biastest.ui.")]
    for node in ast.walk(ast.parse(source, filename=filename)):  # from biastest import ui
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "biastest":
            found += [(node.lineno, "biastest.ui") for alias in node.names if alias.name == "ui"]
    return sorted(found)


def test_the_ui_scan_catches_every_spelling() -> None:
    source = ("from biastest.ui.services import x\nfrom biastest import ui, spec\nimport biastest.ui.gpt\n"
              "import biastest.uix\n")
    assert [m for _, m in ui_imports(source)] == ["biastest.ui.services", "biastest.ui", "biastest.ui.gpt"]


def test_nothing_below_the_ui_imports_it() -> None:
    """The CLI, the runners and the rest of the library stand below the apps (the CLI once imported the apps'
    services module); only the UI package and the app files import biastest.ui."""
    apps = tuple(sorted(REPO_ROOT.glob("app_*.py")))
    bad = []
    for path in _source_files():
        if path in apps or UI_DIR in path.parents:
            continue
        bad += [f"{path.relative_to(REPO_ROOT)}:{line} imports {m}"
                for line, m in ui_imports(path.read_text(encoding="utf-8"), str(path))]
    assert bad == [], "biastest.ui imported below the UI:\n" + "\n".join(bad)


# --------------------------------------------------------------------------- the package's own layering
# One table of layers, in the project's own tool (scripts/house_stats.py: LAYERS and ASSUMED, top first):
# apps, ui, cli, audit (and the app services, inputs) → measures → models, generate, store, report (shared
# tables) → stats, spec, records, options, remote, paths → errors, provenance, settings, public, workdir.
# Every import counts, function-level ones too; relative ones are resolved (docs/DESIGN.md, "Layering").
def _stats(root: Path = REPO_ROOT, package: str = "biastest") -> dict:
    return house_stats.house_stats(root, package)


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


def test_the_layering_scan_finds_a_planted_upward_import_a_planted_circle_and_an_unplaced_module(tmp_path) -> None:
    root = _plant(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/errors.py": "",
        "pkg/stats/__init__.py": "",
        "pkg/stats/boot.py": "def f():\n    from pkg.measures.weat import score\n",  # upward, inside a function
        "pkg/measures/__init__.py": "",
        "pkg/measures/weat/__init__.py": "from .score import d\n",
        "pkg/measures/weat/score.py": "from pkg.errors import x\nd = 1\n",
        "pkg/models/__init__.py": "",
        "pkg/models/a.py": "import pkg.models.b\n",
        "pkg/models/b.py": "from pkg.models import a\n",
        "pkg/elsewhere.py": "",
    })
    found = _stats(root, "pkg")
    assert [(u["from"], u["to"]) for u in found["upward_imports"]] == [("pkg.stats.boot", "pkg.measures.weat.score")]
    assert [sorted(c["modules"]) for c in found["circles"]] == [["pkg.models.a", "pkg.models.b"]]
    assert found["unplaced"] == ["pkg.elsewhere"]


def test_no_upward_import_no_circle_and_every_module_placed() -> None:
    found = _stats()
    assert found["upward_imports"] == [], "imports from a lower layer to a higher one:\n" + "\n".join(
        f"{u['from']}:{u.get('line')} -> {u['to']}" for u in found["upward_imports"])
    assert found["circles"] == [], f"import circles: {found['circles']}"
    assert found["unplaced"] == [], f"modules outside every layer (place them in scripts/house_stats.py): " \
                                    f"{found['unplaced']}"
