"""The house rules on imports (docs/DESIGN.md, "Rules of the house" 1), checked on the source's syntax trees.

* torch, transformers, diffusers and accelerate are imported only in
  ``biastest/models/`` (the one package that touches models);
* gradio is imported only in ``biastest/ui/`` and the app files ``app_*.py``;
* importing the library's core (metrics, runner, stats, spec) does not load gradio.
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
#: The house's layers, top first (docs/DESIGN.md, "Layering"). A module may import modules of its own layer or
#: of a layer below; never one above, and no modules may import each other in a loop. A module is placed by the
#: longest prefix that names it; every module of the package must be placed (test below).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("app_gpt", "app_vqa", "app_psychophysics", "biastest.__main__", "biastest.ui", "biastest.cli",
     "biastest.audit", "biastest.inputs", "biastest.runner", "biastest.spaces"),
    ("biastest.measures",),
    ("biastest.models", "biastest.generate", "biastest.store", "biastest.report", "biastest.remote"),
    ("biastest.stats", "biastest.spec", "biastest.specs", "biastest.records", "biastest.options",
     "biastest.public", "biastest.settings", "biastest.workdir", "biastest.paths"),
    ("biastest.errors", "biastest.provenance", "biastest"),
)


def module_name(path: Path, root: Path = REPO_ROOT) -> str:
    """``biastest/models/lm.py`` → ``biastest.models.lm``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int | None:
    """Index of the layer of ``module`` (0 = top), by the longest prefix that names it; None if unplaced.

    A top-level name (``biastest``) places only itself, not the modules inside it.
    """
    best: tuple[int, int] | None = None
    for index, prefixes in enumerate(layers):
        for prefix in prefixes:
            if module == prefix or ("." in prefix and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return None if best is None else best[1]


def own_imports(files: list[Path], root: Path = REPO_ROOT, package: str = "biastest") -> dict[str, set[str]]:
    """Module → the package's own modules it imports (anywhere in the file), resolved to existing modules.

    ``from biastest.x import y`` counts as an import of ``biastest.x.y`` when that is a module, else of
    ``biastest.x``; relative imports are resolved against the importing module.
    """
    modules = {module_name(p, root): p for p in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Call):
                literal = _literal_import_call(node)
                targets = [literal] if literal else []
            for target in targets:
                while target and target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name and (target == package or target.startswith(package + ".")
                                                             or target in modules):
                    graph[name].add(target)
    return graph


def upward_imports(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """``a imports b`` for every import from a lower layer to a higher one."""
    out = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module, layers)
        for target in sorted(targets):
            there = layer_of(target, layers)
            if here is not None and there is not None and there < here:
                out.append(f"{module} imports {target} (layer {there} above {here})")
    return out


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _plant(tmp_path: Path, files: dict[str, str]) -> tuple[list[Path], Path]:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return sorted(tmp_path.rglob("*.py")), tmp_path


def test_the_layering_scan_finds_a_planted_upward_import_and_a_planted_circle(tmp_path: Path) -> None:
    files, root = _plant(tmp_path, {
        "biastest/__init__.py": "",
        "biastest/stats/__init__.py": "",
        "biastest/stats/boot.py": "def f():\n    from biastest.measures.weat import score\n",  # upward, in a function
        "biastest/measures/__init__.py": "",
        "biastest/measures/weat/__init__.py": "from .score import d\n",
        "biastest/measures/weat/score.py": "from biastest.stats import boot\nd = 1\n",
        "biastest/models/a.py": "import biastest.models.b\n",
        "biastest/models/b.py": "from biastest.models import a\n",
        "biastest/models/__init__.py": "",
    })
    graph = own_imports(files, root)
    assert graph["biastest.stats.boot"] == {"biastest.measures.weat.score"}
    assert graph["biastest.measures.weat"] == {"biastest.measures.weat.score"}  # relative import resolved
    assert upward_imports(graph) == [
        "biastest.stats.boot imports biastest.measures.weat.score (layer 1 above 3)"]
    assert import_circles(graph) == [
        ["biastest.measures.weat.score", "biastest.stats.boot"], ["biastest.models.a", "biastest.models.b"]]
    # and a clean house is clean
    clean = {k: v for k, v in graph.items() if k not in ("biastest.stats.boot", "biastest.models.a")}
    assert upward_imports(clean) == [] and import_circles(clean) == []


def test_every_module_has_a_layer() -> None:
    unplaced = [module_name(p) for p in _source_files() if layer_of(module_name(p)) is None]
    assert unplaced == [], f"modules outside every layer of LAYERS (place them): {unplaced}"
    assert layer_of("biastest.stats.compare") == 3 and layer_of("biastest.measures.weat.score") == 1  # control
