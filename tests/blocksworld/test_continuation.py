"""Chain-in-Tree continuation under MCTS on BlocksWorld: chains, reopened dead ends, resume after kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import first_listed_action

CONTINUATION = ["--search-arg", "add_continuation=true", "--search-arg", "bn_method=sc_exact"]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    # Always the first valid action (so sampled steps agree), Yes to every question; a little latency.
    with FakeOpenAIServer(responder=first_listed_action, latency=0.005) as srv:
        yield srv


def lits(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lits", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LITS_HEDGE_SHARE": "0"},
    )


def search_args(server: FakeOpenAIServer) -> list[str]:
    return [
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=4",
        "--limit",
        "2",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--search-arg",
        "n_iterations=6",
        "--search-arg",
        "max_depth=4",
        "--search-arg",
        "early_stop=false",
        *CONTINUATION,
    ]


def outputs(run: Path) -> dict[str, bytes]:
    return {
        f"{sub}/{p.name}": p.read_bytes()
        for sub in ("results", "paths", "terminal_nodes", "checkpoints")
        if (run / sub).is_dir()
        for p in sorted((run / sub).iterdir())
    }


def test_a_chain_that_ends_unsolved_is_reopened_at_its_last_unbranched_node(tmp_path, server):
    done = lits(*search_args(server), "--save-dir", str(tmp_path / "run"), "--no-cache")
    assert done.returncode == 0, done.stderr
    stats = json.loads((tmp_path / "run" / "results" / "0.json").read_text())["search_stats"]
    assert stats["bn_branched"] == 0 and stats["bn_reopened"] >= 1
    assert stats["nodes"] > stats["bn_decisions"] + 1  # reopened nodes got the siblings the chain spared


def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path, server):
    args = search_args(server)
    whole = tmp_path / "whole"
    assert lits(*args, "--save-dir", str(whole)).returncode == 0
    run = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lits", *args, "--save-dir", str(run)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    journal = run / "checkpoints"
    deadline = time.monotonic() + 120
    while proc.poll() is None and not (journal.is_dir() and any(journal.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.02)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    resumed = lits("search", "--resume", "--save-dir", str(run))
    assert resumed.returncode == 0, resumed.stderr
    assert killed, "the run finished before it could be killed"
    assert outputs(run) == outputs(whole)
