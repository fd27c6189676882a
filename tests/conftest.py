"""Shared fixtures: registry isolation and the shared data root."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def isolated_registry() -> Iterator[None]:
    """Registrations made inside the test are forgotten afterwards."""
    from lits.registry import isolated_registry as isolate

    with isolate():
        yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data; fails loudly (never skips) when it is missing."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data sets are missing: expected them at {SHARED_DATA}")
    return SHARED_DATA
