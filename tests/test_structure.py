"""Guards the sealing of groundwire's subpackages (docs/structure.md, "The rules").

A package uses another only through what that one exports from its ``__init__`` (or a public
module): a private module (``groundwire.a.b._c``, or anything below it) may be imported only
from inside the package that holds it (``groundwire.a.b``), at any depth; the root package's
own private modules (``groundwire._types``...) are the shared core, open to all. And no module
imports itself back through others: cycles count every import, also the ones inside
functions, since those only postpone the circle to the first call. Imports under
``if TYPE_CHECKING:`` never run and are left out of the cycle check (they still count as
boundary crossings).

The source is read with ``ast``; nothing is imported. Run this file as a script
(``python tests/test_structure.py``) to list what it finds without the allow-list.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "groundwire"

# Known violations left to their owners, to be emptied as they are fixed. Each entry is
# (importing module, imported private module).
ALLOWED_PRIVATE_IMPORTS: frozenset[tuple[str, str]] = frozenset()
"""Private imports left to their owners (empty: every package is sealed)."""

# Import cycles left to their owners, each as the sorted tuple of the modules in it.
ALLOWED_CYCLES: frozenset[tuple[str, ...]] = frozenset()


@dataclass(frozen=True)
class Import:
    """One import statement's target as seen from the module that runs it."""

    importer: str
    target: str
    line: int
    type_checking: bool


def _module_names() -> dict[str, Path]:
    """Every module under src/groundwire by dotted name (a package by its own name)."""
    names: dict[str, Path] = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_package(path: Path) -> bool:
    """True for a package's ``__init__.py``."""
    return path.name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    """True for the test of ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, guarded: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node below ``node`` with whether it sits under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield stmt, True
                yield from _walk(stmt, True)
            for stmt in child.orelse:
                yield stmt, guarded
                yield from _walk(stmt, guarded)
            continue
        yield child, guarded
        yield from _walk(child, guarded)


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """The modules ``name`` imports, at any depth of its source, resolved to dotted names.

    ``from P import n`` targets ``P.n`` when that is a module, else ``P`` itself.
    """
    package = name if _is_package(path) else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node, guarded in _walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, node.lineno, guarded)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                sub = f"{origin}.{alias.name}"
                target = sub if sub in modules else origin
                yield Import(name, target, node.lineno, guarded)


def _all_imports() -> list[Import]:
    modules = _module_names()
    found = [imp for name, path in modules.items() for imp in _imports(name, path, modules)]
    return [imp for imp in found if imp.target == ROOT or imp.target.startswith(ROOT + ".")]


def _private_owner(target: str) -> str | None:
    """The package whose private module ``target`` is (``groundwire.a.b`` for
    ``groundwire.a.b._c`` and ``groundwire.a.b._c.d``), or None when ``target`` is public."""
    parts = target.split(".")
    for depth in range(1, len(parts)):
        if parts[depth].startswith("_") and not parts[depth].startswith("__"):
            return ".".join(parts[:depth])
    return None


def private_imports() -> list[Import]:
    """Imports of a package's private module from a module outside that package.

    The root package's own private modules (``groundwire._types``, ``groundwire._env``) are the
    shared core every subpackage builds on, so they are open to all.
    """
    leaks: dict[tuple[str, str, int], Import] = {}
    for imp in _all_imports():
        owner = _private_owner(imp.target)
        if owner is None or owner == ROOT:
            continue
        if imp.importer != owner and not imp.importer.startswith(owner + "."):
            leaks.setdefault((imp.importer, imp.target, imp.line), imp)
    return list(leaks.values())


def import_cycles() -> list[tuple[str, ...]]:
    """The strongly connected groups of modules (two or more) in the runtime import graph."""
    graph: dict[str, set[str]] = {}
    for imp in _all_imports():
        if not imp.type_checking and imp.target != imp.importer:
            graph.setdefault(imp.importer, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[tuple[str, ...]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is a few hundred nodes.
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                cycles.append(tuple(sorted(group)))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_subpackage_imports_another_ones_private_module() -> None:
    """No module reaches into another subpackage's private module (bar the allow-list)."""
    leaks = [
        f"{imp.importer}:{imp.line} imports {imp.target}"
        for imp in private_imports()
        if (imp.importer, imp.target) not in ALLOWED_PRIVATE_IMPORTS
    ]
    assert leaks == [], "import what the package exports from its __init__:\n" + "\n".join(leaks)


def test_allow_list_names_only_real_violations() -> None:
    """An allow-list entry that no longer matches an import is removed, so the list shrinks."""
    found = {(imp.importer, imp.target) for imp in private_imports()}
    assert sorted(ALLOWED_PRIVATE_IMPORTS - found) == []
    assert sorted(ALLOWED_CYCLES - set(import_cycles())) == []


def test_no_import_cycles() -> None:
    """No module imports itself back, not even through an import inside a function."""
    cycles = [c for c in import_cycles() if c not in ALLOWED_CYCLES]
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checks_see_function_level_and_relative_imports() -> None:
    """The scanner resolves relative imports and finds imports nested in functions."""
    imports = _all_imports()
    assert imports, "no imports found: is src/groundwire where this test looks?"
    assert any(imp.target.startswith(ROOT + ".") for imp in imports)


if __name__ == "__main__":
    for imp in private_imports():
        tc = " (TYPE_CHECKING)" if imp.type_checking else ""
        print(f"private: {imp.importer}:{imp.line} -> {imp.target}{tc}")
    for cycle in import_cycles():
        print("cycle:", " <-> ".join(cycle))
