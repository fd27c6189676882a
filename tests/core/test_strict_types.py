"""The seams a search author codes against type-check under ``mypy --strict`` (settings in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Where --strict holds; a package joins the list once it is clean.
STRICT = ["lits-core/src/lits/agents", "lits-core/src/lits/api.py", "lits-core/src/lits/runs"]


@pytest.mark.parametrize("source", STRICT)
def test_the_package_type_checks_under_mypy_strict(source: str) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", source], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
