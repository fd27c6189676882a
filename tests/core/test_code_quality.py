"""Every distribution's source type-checks (mypy), lints clean and is formatted (ruff), with the settings in
pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [str(p) for p in sorted(ROOT.glob("lits-*/src/*")) if p.is_dir() and (p / "__init__.py").is_file()]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_sources_of_every_distribution_are_found():
    assert {Path(s).name for s in SOURCES} >= {
        "lits",
        "lits_blocksworld",
        "lits_crosswords",
        "lits_mapeval",
        "lits_math",
    }


def test_every_distribution_type_checks():
    checked = _run("mypy", *SOURCES)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_source_tests_and_benchmarks_lint_clean():
    linted = _run("ruff", "check", *SOURCES, "tests", "benchmarks")
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_source_tests_and_benchmarks_are_formatted():
    formatted = _run("ruff", "format", "--check", *SOURCES, "tests", "benchmarks")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
