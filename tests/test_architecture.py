"""The layout docs/architecture.md describes: layers that import only downwards (import-linter's
contracts in pyproject.toml), no import cycle anywhere, and modules a reader can take in."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 900


def test_the_import_contracts_hold():
    # import-linter of the interpreter running the tests: a ``lint-imports`` found first on
    # PATH may belong to another Python, whose newsquarry is another checkout's
    code = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append(
                        (w, iter(sorted(graph.find_modules_directly_imported_by(w) & modules)))
                    )
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        group.append(w)
                        if w == v:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_no_module_imports_another_in_a_circle():
    graph = grimp.build_graph("newsquarry.search", "newsquarry.api")
    modules = {m for m in graph.modules if m.startswith("newsquarry.")}
    assert _cycles(graph, modules) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "cyclic_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclic_pkg import b\n")
    (pkg / "b.py").write_text("from cyclic_pkg import a\n")
    (pkg / "c.py").write_text("from cyclic_pkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic_pkg", cache_dir=None)
    assert _cycles(graph, set(graph.modules)) == [["cyclic_pkg.a", "cyclic_pkg.b"]]


@pytest.mark.parametrize("folder", ["search", "api"])
def test_no_module_is_over_900_lines(folder):
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / folder).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def _unexplained_function_imports(source: str) -> list[int]:
    """Lines of imports inside a function with no ``lazy`` reason (an import kept lazy for
    start-up time says so; none may dodge a cycle). A run of imports one after another
    shares one reason, on any of its lines or on the line above it."""
    lines = source.splitlines()
    found: list[int] = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            for name in ("body", "orelse", "finalbody"):
                run: list[ast.stmt] = []
                body = getattr(node, name, None)
                if not isinstance(body, list):
                    continue
                for stmt in [*body, None]:
                    if isinstance(stmt, ast.Import | ast.ImportFrom):
                        run.append(stmt)
                        continue
                    if run:
                        first, last = run[0].lineno, run[-1].end_lineno or run[-1].lineno
                        said = lines[max(first - 2, 0) : last]
                        if not any("lazy" in line for line in said):
                            found.extend(s.lineno for s in run)
                    run = []
    return sorted(set(found))


@pytest.mark.parametrize("folder", ["search", "api"])
def test_every_import_inside_a_function_says_why(folder):
    unexplained = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in _unexplained_function_imports(path.read_text(encoding="utf-8"))
    ]
    assert unexplained == []


def test_an_unexplained_import_inside_a_function_is_found():
    source = "def f():\n    import json\n    return json\n\ndef g():\n    import csv  # lazy: start-up time\n"
    assert _unexplained_function_imports(source) == [2]


def _layered() -> set[str]:
    """Every module or package named in a layers contract of pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names: set[str] = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "layers":
            for layer in contract["layers"]:
                names.update(part.strip() for part in layer.replace("|", ":").split(":"))
    return names


def test_every_part_of_the_library_and_the_app_has_a_layer():
    parts = [("newsquarry.search", ROOT / "search"), ("newsquarry.api", ROOT / "api")]
    missing = [
        f"{package}.{path.stem}"
        for package, folder in parts
        for path in sorted(folder.iterdir())
        if (path.suffix == ".py" and path.stem != "__init__" or (path / "__init__.py").exists())
        and f"{package}.{path.stem}" not in _layered()
    ]
    assert missing == []
