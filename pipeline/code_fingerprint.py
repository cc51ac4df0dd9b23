"""The fingerprint of the code behind a module: its source and that of the project modules it imports.

A stage's artifact depends on the code that wrote it. `fingerprint("tasks.smt", follow=("pipeline", "lattices"))`
hashes the source of tasks/smt.py and, transitively, of every module of the `follow` packages it imports (found by
reading the import statements, nothing is executed), and the compiled sources a module names in a module-level
``COMPILED_SOURCES`` tuple (files beside it, such as the C++ of pipeline/smt/compiled_search.py). tasks/versions.py compares these fingerprints with the ones
recorded beside each stage's version, so that a change of code is never silently covered by an old version.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
from pathlib import Path
from typing import Iterable

__all__ = ["compiled_sources", "fingerprint", "imported_modules", "module_closure"]


def _source_path(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    return Path(spec.origin) if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def imported_modules(module: str) -> set[str]:
    """The modules `module` imports (absolute names; `from a import b` gives a.b when that is a module, else a)."""
    path = _source_path(module)
    if path is None:
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if _is_module(base) and _is_module(candidate) else base)
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:  # noqa: BLE001 - finding a submodule imports its package, whose import may fail here
        return False  # (mtdata's index creates its cache folder on import): no project module is lost by it


def module_closure(module: str, follow: Iterable[str]) -> list[str]:
    """`module` and every module of the `follow` packages reachable through imports from it, sorted."""
    prefixes = tuple(follow)
    within = lambda name: any(name == p or name.startswith(p + ".") for p in prefixes)  # noqa: E731
    seen, todo = {module}, [module]
    while todo:
        for name in imported_modules(todo.pop()):
            if within(name) and name not in seen and _source_path(name) is not None:
                seen.add(name)
                todo.append(name)
    return sorted(seen)


def compiled_sources(module: str) -> list[Path]:
    """The files named by the module's ``COMPILED_SOURCES = ("file", ...)`` (beside the module), read from its
    source without running it."""
    path = _source_path(module)
    if path is None:
        return []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMPILED_SOURCES" for t in node.targets):
            return [path.with_name(name) for name in ast.literal_eval(node.value)]
    return []


def fingerprint(module: str, follow: Iterable[str]) -> str:
    """sha256 (16 hex digits) of the sources of :func:`module_closure` and their compiled sources (names and
    contents)."""
    digest = hashlib.sha256()
    for name in module_closure(module, follow):
        digest.update(name.encode() + b"\0" + _source_path(name).read_bytes() + b"\0")
        for source in compiled_sources(name):
            digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
