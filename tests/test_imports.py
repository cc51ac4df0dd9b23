"""The layout's rules, read from the import statements (anywhere in a module, functions included):
imports run one way (no circle among the project's modules), and the libraries know nothing of Luigi or tasks/."""
from __future__ import annotations

import ast
from pathlib import Path

from pipeline.data.resolver import CHECKOUT

PACKAGES = ("pipeline", "lattices", "tasks")


def module_name(path: Path) -> str:
    parts = path.relative_to(CHECKOUT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Project modules a file imports (`from a.b import c` counts as a.b.c when that is a module, else a.b)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        found.update(n for n in names if n.split(".")[0] in PACKAGES)
    return found


def import_graph() -> dict[str, set[str]]:
    files = [p for package in PACKAGES for p in (CHECKOUT / package).rglob("*.py")]
    modules = {module_name(p): p for p in files}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in imports_of(path):
            # the module itself when it is one, else its package; a package's __init__ is not followed
            while imported not in modules and "." in imported:
                imported = imported.rpartition(".")[0]
            if imported in modules and imported != name and imported not in PACKAGES:
                targets.add(imported)
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])):
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [node])):
            return found
    return None


def test_imports_run_one_way():
    cycle = find_cycle(import_graph())
    assert cycle is None, "modules import one another in a circle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_libraries_know_nothing_of_luigi_or_the_tasks():
    offenders = []
    for package in ("pipeline", "lattices"):
        for path in (CHECKOUT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                offenders += [f"{path.relative_to(CHECKOUT)}: {n}" for n in names
                              if n.split(".")[0] in ("luigi", "tasks")]
    assert not offenders, offenders
