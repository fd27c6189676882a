"""The real RAP split (590 cases) from ../shared/data/blocksworld."""

from __future__ import annotations

from pathlib import Path

import pytest

from lits_blocksworld.data import load_rap_split


@pytest.fixture(scope="session")
def bw_root(shared_data: Path) -> Path:
    return shared_data / "blocksworld"


@pytest.fixture(scope="session")
def rap_cases(bw_root: Path) -> list[dict]:
    return load_rap_split(bw_root)
