"""The house rules of core's imports: no two modules import each other, imports between the rooms of a folder
run one way, and a folder holds at most twelve modules flat.

Read from the source with :mod:`ast` (imports inside functions and under ``TYPE_CHECKING`` count too: they
tie the modules as much as any other), so nothing is imported to check.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LITS = Path(__file__).resolve().parents[2] / "lits-core" / "src" / "lits"
MAX_FLAT = 12
#: Folders still over the limit, with the work that brings them under it.
CROWDED: dict[str, str] = {}
#: Room-to-room arrows that still run back up, with the work that removes them.
BACK_UP: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = ["lits", *path.relative_to(LITS).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(LITS.rglob("*.py")) if "templates" not in p.parts}


def _imports(path: Path) -> set[str]:
    """The lits modules that ``path`` imports (``from a import b`` names ``a.b`` when that is a module)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {name for name in found if name in MODULES}


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
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
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _folders() -> list[Path]:
    return sorted({p.parent for p in MODULES.values()})


def test_no_two_modules_of_core_import_each_other():
    # A package's __init__ that only hands names on is its face, not a room of its own.
    graph = {
        name: {t for t in targets if not _is_package(t)} for name, targets in GRAPH.items() if not _is_package(name)
    }
    assert _cycles(graph) == []


@pytest.mark.parametrize("folder", _folders(), ids=lambda f: str(f.relative_to(LITS)))
def test_imports_between_the_rooms_of_a_folder_run_one_way(folder: Path):
    """A room is a module of the folder or one of its sub-folders, whole."""

    def room(name: str) -> str | None:
        path = MODULES[name]
        if folder not in path.parents:
            return None
        return path.relative_to(folder).parts[0]

    rooms: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        here = room(name)
        if here is None:
            continue
        for target in targets:
            there = room(target)
            if there is not None and there != here and (here, there) not in BACK_UP:
                rooms.setdefault(here, set()).add(there)
    assert _cycles(rooms) == []


@pytest.mark.parametrize("folder", _folders(), ids=lambda f: str(f.relative_to(LITS)))
def test_a_folder_of_core_holds_at_most_twelve_modules_flat(folder: Path):
    if str(folder.relative_to(LITS)) in CROWDED:
        pytest.skip(CROWDED[str(folder.relative_to(LITS))])
    assert len(list(folder.glob("*.py"))) <= MAX_FLAT
