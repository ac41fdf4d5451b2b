"""The house's size and import figures, read from the source's syntax trees (standard library only).

For the product code (``biastest/`` and the app files ``app_*.py`` beside it) this prints:

* the number of files and lines; every file over 700 lines, and how many are over 800;
* every function over 120 lines (name, file, length: ``def`` line to last line, decorators left out);
* every function with 14 or more parameters, and how many have more than 12 (every named parameter
  counts, ``*args`` and ``**kwargs`` included; the leading ``self``/``cls`` of a method does not);
* how many imports of the package's own modules sit inside functions;
* the import circles among the package's modules and the upward imports along :data:`LAYERS`.

An import is an edge wherever it stands (module level, inside a function, under ``if TYPE_CHECKING``);
``from pkg.sub import name`` points at ``pkg.sub.name`` when that is a module, else at ``pkg.sub``.
Only written imports count: importing ``pkg.sub.mod`` is not also counted as an import of ``pkg.sub``.

Usage::

    python scripts/house_stats.py            # a short readable report
    python scripts/house_stats.py --json     # the same figures as JSON
    python scripts/house_stats.py --root DIR --package NAME

:data:`LAYERS` and :func:`layer_of` are meant to be shared with ``tests/test_architecture.py``.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

LONG_FILE = 700
MAX_FILE = 800
LONG_FUNCTION = 120
MANY_PARAMETERS = 14
MAX_PARAMETERS = 12

# The target layering (docs: DESIGN "Layout"), top first. A module may import its own layer or any layer
# below it; importing a layer above is an "upward import". Units are the first name below the package
# (``biastest.store.local`` -> ``store``); "" is the package root (``biastest/__init__.py``); "apps" are
# the ``app_*.py`` files.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("apps/ui/cli/audit", frozenset({"apps", "ui", "cli", "audit"})),
    ("measures", frozenset({"measures"})),
    ("models/generate/store", frozenset({"models", "generate", "store"})),
    ("stats/spec/records", frozenset({"stats", "spec", "records"})),
    ("errors/provenance", frozenset({"errors", "provenance"})),
)

# Units the target layering does not name, and the layer this script assumes for each (with the reason).
ASSUMED: dict[str, tuple[str, str]] = {
    "__main__": ("apps/ui/cli/audit", "runs the CLI"),
    "spaces": ("apps/ui/cli/audit", "deploys the apps to Hugging Face Spaces"),
    "runner": ("apps/ui/cli/audit", "the apps' services (store, dataset, generation) for the UI"),
    "inputs": ("apps/ui/cli/audit", "loads specs, pairs, images and embedding sources for the CLI and the audit"),
    "report": ("models/generate/store", "shared tables, figures and exports the measures' reports use"),
    "paths": ("stats/spec/records", "resolving names read from data under their folder"),
    "specs": ("stats/spec/records", "the spec library, beside spec.py"),
    "continuum": ("stats/spec/records", "stimulus continua (names placed by α) and their CSV loader"),
    "options": ("stats/spec/records", "option bounds and their messages"),
    "remote": ("stats/spec/records", "the one outbound client, below models and generate"),
    "public": ("errors/provenance", "the public-mode decision, read by every layer"),
    "settings": ("errors/provenance", "every environment variable read once, for every layer"),
    "workdir": ("errors/provenance", "the working folder, used by every layer"),
    "words": ("errors/provenance", "counts in words (plurals) for every layer's messages"),
    "": ("errors/provenance", "the package root holds __version__ only"),
}


def layer_names() -> list[str]:
    """The layer names, top first."""
    return [name for name, _ in LAYERS]


def unit_of(module: str, package: str = "biastest") -> str:
    """The layering unit of a dotted module name (``"apps"`` for the app files)."""
    if module == package:
        return ""
    if module.startswith(package + "."):
        return module.split(".")[1]
    return "apps"


def layer_of(module: str, package: str = "biastest") -> tuple[int, str, bool] | None:
    """Where a module sits: ``(index, layer name, assumed)``, index 0 at the top; None when unplaced."""
    unit = unit_of(module, package)
    names = layer_names()
    for index, (name, units) in enumerate(LAYERS):
        if unit in units:
            return index, name, False
    if unit in ASSUMED:
        name = ASSUMED[unit][0]
        return names.index(name), name, True
    return None


@dataclass
class Module:
    """One source file and what the script learned from it."""

    name: str
    path: Path
    lines: int
    is_package: bool
    tree: ast.Module = field(repr=False)


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of a file below ``root`` and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def collect(root: Path, package: str) -> dict[str, Module]:
    """Every product source file: the package's ``*.py`` and the ``app_*.py`` files at ``root``."""
    files = sorted((root / package).rglob("*.py")) + sorted(root.glob("app_*.py"))
    modules: dict[str, Module] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        name, is_package = module_name(path, root)
        modules[name] = Module(name, path, len(text.splitlines()), is_package, ast.parse(text, filename=str(path)))
    return modules


def _resolve(module: Module, node: ast.Import | ast.ImportFrom, known: set[str], package: str) -> list[str]:
    """The package's own modules one import statement names."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
        candidates = [[t] for t in targets]
    else:
        base = node.module or ""
        if node.level:
            here = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
            here = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            base = ".".join([*here, base] if base else here)
        candidates = [[f"{base}.{alias.name}", base] for alias in node.names]
    found: list[str] = []
    for options in candidates:
        for name in options:
            if not (name == package or name.startswith(package + ".")):
                continue
            while name and name not in known:  # an attribute of a module: walk up to the module
                name = name.rpartition(".")[0]
            if name:
                if name not in found:
                    found.append(name)
                break
    return found


@dataclass
class Edge:
    """One import of the package's own module."""

    importer: str
    imported: str
    line: int
    in_function: bool


class _Walker(ast.NodeVisitor):
    """Functions (with their lengths and parameter counts) and own-package imports of one module."""

    def __init__(self, module: Module, known: set[str], package: str) -> None:
        self.module = module
        self.known = known
        self.package = package
        self.stack: list[tuple[str, str]] = []  # (kind, name)
        self.functions: list[dict] = []
        self.edges: list[Edge] = []

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        count = len(params) + (args.vararg is not None) + (args.kwarg is not None)
        in_class = bool(self.stack) and self.stack[-1][0] == "class"
        positional = [*args.posonlyargs, *args.args]
        if in_class and positional and positional[0].arg in ("self", "cls"):
            count -= 1
        qualname = ".".join([*(name for _, name in self.stack), node.name])
        self.functions.append(
            {
                "name": qualname,
                "file": self.module.path.name,
                "line": node.lineno,
                "length": node.end_lineno - node.lineno + 1,
                "parameters": count,
            }
        )
        self.stack.append(("function", node.name))
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(("class", node.name))
        self.generic_visit(node)
        self.stack.pop()

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        in_function = any(kind == "function" for kind, _ in self.stack)
        for target in _resolve(self.module, node, self.known, self.package):
            if target != self.module.name:
                self.edges.append(Edge(self.module.name, target, node.lineno, in_function))

    visit_Import = _import
    visit_ImportFrom = _import


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def shortest_cycle(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One shortest cycle through the first member of a component, as a path that returns to its start."""
    inside = set(members)
    start = members[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, ()) & inside):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [start]


def house_stats(root: Path = REPO_ROOT, package: str = "biastest") -> dict:
    """Every figure of the report, as JSON-ready values.

    Parameters
    ----------
    root : Path
        The folder that holds the package and the ``app_*.py`` files.
    package : str
        The package's name (its folder below ``root``).

    Returns
    -------
    dict
        ``files``, ``lines``, ``long_files``, ``files_over_max``, ``long_functions``,
        ``many_parameters``, ``functions_over_max_parameters``, ``function_imports``,
        ``function_imports_by_file``, ``circles``, ``upward_imports``, ``layers`` and ``assumed``.
    """
    modules = collect(root, package)
    known = set(modules)
    functions: list[dict] = []
    edges: list[Edge] = []
    for module in modules.values():
        walker = _Walker(module, known, package)
        walker.visit(module.tree)
        relative = str(module.path.relative_to(root))
        for record in walker.functions:
            record["file"] = relative
        functions.extend(walker.functions)
        edges.extend(walker.edges)

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for edge in edges:
        graph[edge.importer].add(edge.imported)
    circles = []
    for members in strongly_connected(graph):
        inside = set(members)
        circles.append(
            {
                "modules": members,
                "cycle": shortest_cycle(graph, members),
                "imports": [
                    {"from": e.importer, "to": e.imported, "line": e.line, "in_function": e.in_function}
                    for e in edges
                    if e.importer in inside and e.imported in inside
                ],
            }
        )

    upward = []
    unplaced: set[str] = {name for name in modules if layer_of(name, package) is None}
    for edge in edges:
        here, there = layer_of(edge.importer, package), layer_of(edge.imported, package)
        if here is None or there is None:
            unplaced.update(m for m, p in ((edge.importer, here), (edge.imported, there)) if p is None)
            continue
        if there[0] < here[0]:
            upward.append(
                {
                    "from": edge.importer,
                    "to": edge.imported,
                    "line": edge.line,
                    "in_function": edge.in_function,
                    "from_layer": here[1],
                    "to_layer": there[1],
                }
            )

    units = {unit_of(name, package) for name in modules}
    assumed = {unit: {"layer": ASSUMED[unit][0], "why": ASSUMED[unit][1]} for unit in sorted(units) if unit in ASSUMED}
    by_file: dict[str, int] = {}
    for edge in edges:
        if edge.in_function:
            file = str(modules[edge.importer].path.relative_to(root))
            by_file[file] = by_file.get(file, 0) + 1
    sizes = sorted(
        ({"file": str(m.path.relative_to(root)), "lines": m.lines} for m in modules.values()),
        key=lambda r: (-r["lines"], r["file"]),
    )
    by_length = sorted(functions, key=lambda f: (-f["length"], f["file"], f["line"]))
    by_params = sorted(functions, key=lambda f: (-f["parameters"], f["file"], f["line"]))
    return {
        "files": len(modules),
        "lines": sum(m.lines for m in modules.values()),
        "long_files": [r for r in sizes if r["lines"] > LONG_FILE],
        "files_over_max": sum(r["lines"] > MAX_FILE for r in sizes),
        "long_functions": [
            {k: f[k] for k in ("name", "file", "line", "length")} for f in by_length if f["length"] > LONG_FUNCTION
        ],
        "many_parameters": [
            {k: f[k] for k in ("name", "file", "line", "parameters")}
            for f in by_params
            if f["parameters"] >= MANY_PARAMETERS
        ],
        "functions_over_max_parameters": sum(f["parameters"] > MAX_PARAMETERS for f in functions),
        "function_imports": sum(by_file.values()),
        "function_imports_by_file": dict(sorted(by_file.items(), key=lambda kv: (-kv[1], kv[0]))),
        "circles": circles,
        "upward_imports": upward,
        "layers": [{"layer": name, "units": sorted(units_)} for name, units_ in LAYERS],
        "assumed": assumed,
        "unplaced": sorted(unplaced),
    }


def render(stats: dict) -> str:
    """The short readable report."""
    out = [f"{stats['files']} product files, {stats['lines']:,} lines"]
    out.append(
        f"\nFiles over {LONG_FILE} lines: {len(stats['long_files'])} ({stats['files_over_max']} over {MAX_FILE})"
    )
    out += [f"  {r['lines']:>6,}  {r['file']}" for r in stats["long_files"]]
    out.append(f"\nFunctions over {LONG_FUNCTION} lines: {len(stats['long_functions'])}")
    out += [f"  {f['length']:>6}  {f['file']}:{f['line']} {f['name']}" for f in stats["long_functions"]]
    out.append(
        f"\nFunctions with {MANY_PARAMETERS} or more parameters: {len(stats['many_parameters'])}"
        f" ({stats['functions_over_max_parameters']} over {MAX_PARAMETERS})"
    )
    out += [f"  {f['parameters']:>6}  {f['file']}:{f['line']} {f['name']}" for f in stats["many_parameters"]]
    out.append(f"\nImports of the package's own modules inside functions: {stats['function_imports']}")
    out += [f"  {n:>6}  {file}" for file, n in list(stats["function_imports_by_file"].items())[:10]]
    if len(stats["function_imports_by_file"]) > 10:
        out.append(f"  ... and {len(stats['function_imports_by_file']) - 10} more files")
    out.append(f"\nImport circles: {len(stats['circles'])}")
    for circle in stats["circles"]:
        out.append(f"  {len(circle['modules'])} modules, e.g. " + " -> ".join(circle["cycle"]))
        out.append("    " + ", ".join(circle["modules"]))
    out.append(f"\nUpward imports: {len(stats['upward_imports'])}")
    for u in stats["upward_imports"]:
        where = "in a function" if u["in_function"] else "module level"
        out.append(f"  {u['from']}:{u['line']} -> {u['to']}  ({u['from_layer']} -> {u['to_layer']}, {where})")
    out.append("\nLayers, top first: " + " -> ".join(layer_names()))
    for unit, info in stats["assumed"].items():
        out.append(f"  assumed: {unit or '(package root)'} in {info['layer']} ({info['why']})")
    if stats["unplaced"]:
        out.append("  not placed (left out of the upward check): " + ", ".join(stats["unplaced"]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print the report (or ``--json``) for the product code under ``--root``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="folder holding the package and app files")
    parser.add_argument("--package", default="biastest", help="the package's folder name below --root")
    args = parser.parse_args(argv)
    stats = house_stats(args.root.resolve(), args.package)
    print(json.dumps(stats, indent=2) if args.json else render(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
