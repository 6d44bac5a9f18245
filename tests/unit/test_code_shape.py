"""The shape the code keeps: rules checked from the source, so breaking one fails CI.

* the core loads no UI library (checked by importing each core module in a fresh
  interpreter: an import done inside a function at run time still counts when it runs, but
  a module that pulls in Textual at import time is caught here, and import-linter catches
  the rest statically);
* no import cycles among miotui's modules (from the AST: every import, also the ones inside
  functions);
* no private name (``_x``) imported from another module;
* no module over 800 lines (a module may be long when it is one idea; split along real seams, not to fit a cap);
* no class with more than two bases (a class assembled from mixins that share state through
  ``self`` is one class spread over files: build it from objects it owns instead);
* no path of a developer's machine in the repository.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "miotui"
#: the core: what must work headless and never import the UI
CORE = ("miotui.problems", "miotui.driver", "miotui.driver.commands", "miotui.driver.tables", "miotui.formats.miopen.scan",
        "miotui.decoding.whole", "miotui.sources.follow", "miotui.formats.miopen.trace", "miotui.formats.miopen.levels", "miotui.catalog",
        "miotui.execute.runner", "miotui.execute.backends", "miotui.export", "miotui.decode_output",
        "miotui.decode_cli", "miotui.run_cli", "miotui.safe_text", "miotui.samplegen", "miotui.output_file",
        "miotui.formats.cudnn", "miotui.diff")
MAX_LINES = 800


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path) -> set[str]:
    """miotui modules ``name`` imports (relative imports resolved; ``from a import b`` counts
    ``a.b`` when that is a module, else ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


@pytest.mark.parametrize("module", CORE)
def test_the_core_loads_no_ui_library(module):
    code = (f"import sys, {module}; bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') "
            f"or m.startswith(('miotui.app', 'miotui.screens', 'miotui.widgets'))); print(bad); "
            f"sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, f"{module} loads {r.stdout.strip()} {r.stderr[-500:]}"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    graph = {name: imports_of(name, path) for name, path in MODULES.items()}
    # a package's __init__ importing its own submodules is not a cycle of the code's layers
    for name in graph:
        graph[name] = {m for m in graph[name] if not (MODULES[name].name == "__init__.py" and m.startswith(name + "."))}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_is_imported_from_another_module():
    offenders = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("miotui"):
                offenders += [f"{name}: from {node.module} import {a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert offenders == []


MAX_BASES = 2


def classes_with_many_bases(name: str, source: str) -> list[str]:
    """``module.Class (n bases)`` for each class of ``source`` with more than ``MAX_BASES``
    bases (keywords such as ``metaclass=`` are not bases), nested classes included."""
    return [f"{name}.{node.name} ({len(node.bases)} bases)" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ClassDef) and len(node.bases) > MAX_BASES]


def test_no_class_has_more_than_two_bases():
    offenders = [found for name, path in MODULES.items()
                 for found in classes_with_many_bases(name, path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_base_counter_finds_a_class_of_mixins():
    source = ("class Scanner(CallRouting, CatJoining, WholeBlocks):\n    pass\n"
              "class Two(A, B, metaclass=M):\n    class Inner(A, B, C, D):\n        pass\n")
    assert classes_with_many_bases("m", source) == ["m.Scanner (3 bases)", "m.Inner (4 bases)"]


def test_no_module_is_too_long_to_hold():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_path_of_a_developers_machine():
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    hits = []
    for rel in tracked:
        path = ROOT / rel
        if path.suffix not in (".py", ".md", ".toml", ".cfg", ".json", ".tcss", ".txt", "") or not path.is_file():
            continue
        if rel.startswith("tests/data/"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for marker in ("/work/shared", "/work/main", "/work/wt-"):   # this machine's checkouts
            if marker in text and rel != "tests/unit/test_code_shape.py":
                hits.append(f"{rel}: {marker}")
    assert hits == []
