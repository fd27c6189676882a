"""Shared fixtures: registry isolation, the shared data root, and ``lits`` run as a user runs it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterator

import pytest

TESTS = Path(__file__).resolve().parent
# What a user confirmed (lits.runs.trust: commands and key destinations from files) is remembered in a folder
# of this test session, never in the user's own, and every `lits` a test starts inherits it.
os.environ["LITS_STATE_DIR"] = tempfile.mkdtemp(prefix="lits-state-")
SHARED_DATA = TESTS.parents[0].parent / "shared" / "data"
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


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


@pytest.fixture
def run_lits(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``python -m lits ARGS`` in the test's folder, output captured: its own cache folder, no hedged copies
    (a test's call counts must not depend on how fast the machine answers)."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache"), "LITS_HEDGE_SHARE": "0"}
        return subprocess.run(
            [sys.executable, "-m", "lits", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
        )

    return run


@pytest.fixture(scope="session")
def gemma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real llama.cpp server (llama-cpp-python) with the embedded Gemma model, as users run it for chat.

    One per session: the tests that use it (lm/, math/, mapeval/) share one xdist group, so one worker
    starts it once."""
    from lits.lm.local import model_path
    from lits.testing.llama_server import llama_server

    log = tmp_path_factory.mktemp("gemma-server") / "server.log"
    with llama_server(model_path(), n_ctx=2048, extra=["--chat_format", "gemma"], log=log) as base:
        yield base


@pytest.fixture(scope="session")
def self_refine_example() -> ModuleType:
    """The docs' Self-Refine example module, imported once (its types register globally)."""
    name = "lits_docs_self_refine"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "self_refine.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the file runs
        spec.loader.exec_module(module)
    return sys.modules[name]


# Areas whose tests share one costly session server (a model, PostgreSQL, Ray, a browser).
SERVER_AREAS = frozenset({"realmodel", "ray", "view", "mcp", "postgres"})
#: Session servers used from several areas: the tests that use one run on one worker, which starts it once.
SHARED_SERVERS = ("gemma_server",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n``), keep a file's tests, a server area's, or a shared server's, on one worker.

    So module and session fixtures (servers) start once, not once per worker.
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        parts = item.path.relative_to(TESTS).parts
        shared = next((name for name in SHARED_SERVERS if name in getattr(item, "fixturenames", ())), None)
        group = shared or next((part for part in parts[:-1] if part in SERVER_AREAS), "/".join(parts))
        item.add_marker(pytest.mark.xdist_group(group))
