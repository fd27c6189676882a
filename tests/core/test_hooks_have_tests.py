"""Every hook spec is exercised by some test (after datasette's rule)."""

from __future__ import annotations

from pathlib import Path

from lits import hookspecs

TESTS = Path(__file__).resolve().parents[1]
DOCS = TESTS.parent / "docs" / "examples"


def test_every_hook_is_implemented_somewhere_a_test_runs():
    specs = sorted(name for name in dir(hookspecs) if name.startswith("register_"))
    core = (TESTS.parent / "lits-core" / "src" / "lits" / "builtins.py").read_text()
    tested = "".join(p.read_text() for p in TESTS.rglob("test_*.py"))
    missing = [s for s in specs if f"def {s}(" not in core and f"def {s}(" not in tested]
    assert specs and not missing, f"hooks with no implementation under test: {missing}"
