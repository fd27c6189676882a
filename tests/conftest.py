"""Shared fixtures: registry isolation, the shared data root, and ``lits`` run as a user runs it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest

TESTS = Path(__file__).resolve().parent
# What a user confirmed (lits.runs.trust: commands and key destinations from files) is remembered in a folder
# of this test session, never in the user's own, and every `lits` a test starts inherits it.
os.environ["LITS_STATE_DIR"] = tempfile.mkdtemp(prefix="lits-state-")
# llama.cpp (the embedded model, the test servers) on one thread: two xdist workers share two cores, and llama.cpp's
# threads meet at every layer, so one thread the other worker pushed aside stalls its partner (6 PRM calls on a
# loaded machine: 151 s on two threads, 72 s on one).
os.environ.setdefault("LITS_LLAMA_THREADS", "1")
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

    One per session and worker: its tests are in lm/, math/ and mapeval/ files, which may run on either worker."""
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
#: Groups that take longest, longest first (estimated from a CI run's slowest tests, by group): handed out first,
#: so the short groups fill in around them and the two workers end together.
LONG_GROUPS = (
    "ray",
    "realmodel",
    "postgres",
    "view",
    "mcp",
    "lm/test_local_llama.py",
    "math/test_math_embedded.py",
    "mapeval/test_mapeval_embedded.py",
    "core/test_code_quality.py",
    "cli/test_cli_interrupt.py",
    "cli/test_cli_determinism.py",
)


def xdist_group(nodeid: str) -> str:
    """The worker group of a test: its server area (realmodel, ray, ...), else its file under tests/.

    A group runs on one worker, so a session or module server (a model, Ray, PostgreSQL) starts once per group
    and a module's fixtures once.  (The Gemma server, used from three files, may start once on each worker.)"""
    parts = nodeid.split("::", 1)[0].split("/")
    parts = parts[parts.index("tests") + 1 :] if "tests" in parts else parts
    return next((part for part in parts[:-1] if part in SERVER_AREAS), "/".join(parts))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` by :func:`xdist_group`, long groups first.

    xdist's own loadgroup reads ``xdist_group`` marks into the tests' ids, which pytest 9 no longer lets it
    change: every test went out alone, so both workers started every server and split every module."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            self.workqueue.move_to_end(min(self.workqueue, key=self._queue_place), last=False)
            super()._assign_work_unit(node)

        def _queue_place(self, group: str) -> tuple[int, int]:
            """LONG_GROUPS in their order, then the rest most tests first (as xdist orders them)."""
            long = LONG_GROUPS.index(group) if group in LONG_GROUPS else len(LONG_GROUPS)
            return long, -len(self.workqueue[group])

    return GroupScheduling(config, log)
