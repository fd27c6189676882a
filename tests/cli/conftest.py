"""Fixtures for driving the real ``lits`` command against a loopback server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.testing.scripted import listed_actions
from lits.testing.servers.openai_compat import FakeOpenAIServer

SECRET = "sk-test-THIS-MUST-NEVER-BE-WRITTEN-0123456789"


def first_listed_action(prompt: str, body: dict) -> str:
    """Answer like a weak but obedient model: pick the first valid action listed."""
    listed = listed_actions(prompt)
    return listed[0] if listed else "Yes"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action) as srv:
        yield srv


@pytest.fixture
def lits_cmd(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m lits ARGS`` with a secret API key in the environment."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "OPENAI_API_KEY": SECRET, **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "lits", *args],
            capture_output=True,
            text=True,
            env=full_env,
            cwd=tmp_path,
            timeout=timeout,
        )

    return run


@pytest.fixture
def server_args(server: FakeOpenAIServer) -> list[str]:
    return [
        "--model",
        "fake-model",
        "--base-url",
        server.base_url,
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2",
        "--limit",
        "2",
    ]


OUTPUTS = ("results", "paths", "terminal_nodes")
#: Retry waits short enough for tests (the per-call budget still bounds every call).
QUICK_ENV = {"LITS_RETRY_BASE_WAIT": "0.01"}


def run_outputs(run: Path) -> dict[str, bytes]:
    """What a run found, by file: the bytes that must not depend on faults, threads or restarts."""
    return {
        f"{sub}/{p.name}": p.read_bytes()
        for sub in OUTPUTS
        if (run / sub).is_dir()
        for p in sorted((run / sub).iterdir())
    }


def one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The single ``lits: error:`` line of a failed command (and no traceback)."""
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("lits: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def wait_for_calls(server: FakeOpenAIServer, count: int, proc: subprocess.Popen[Any], timeout: float = 300) -> bool:
    """Wait until the server has seen ``count`` requests; False when the run exited first (it finished).

    Progress, not a clock, picks the moment: a loaded machine only makes the wait longer."""
    deadline = time.monotonic() + timeout
    while len(server.requests) < count:
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"the run made fewer than {count} model calls in {timeout} s (a hang)"
        time.sleep(0.01)
    return True
