"""Same seed, same bytes: results do not depend on --concurrency, thread timing or a kill -9."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from lits.testing.scripted import listed_actions
from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import wait_for_calls

OUTPUTS = ("results", "paths", "terminal_nodes")


def jittery_obedient(prompt: str, body: dict) -> str:
    """First listed action (or Yes), after a random few milliseconds: threads finish in any order."""
    time.sleep(random.uniform(0, 0.01))
    listed = listed_actions(prompt)
    return listed[len(prompt) % len(listed)] if listed else "Yes"


@pytest.fixture(scope="module")
def jitter_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=jittery_obedient) as srv:
        yield srv


def _outputs(run: Path) -> dict[str, bytes]:
    return {
        f"{sub}/{p.name}": p.read_bytes()
        for sub in OUTPUTS
        if (run / sub).is_dir()
        for p in sorted((run / sub).iterdir())
    }


def _lits(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lits", *args], capture_output=True, text=True, timeout=timeout)


RUNS = {
    "mcts": ["search", "--search", "mcts", "--search-arg", "n_iterations=6", "--search-arg", "simulate=sample"],
    "bfs": ["search", "--search", "bfs", "--search-arg", "beam_width=3", "--search-arg", "early_stop=false"],
    "tree-parallel": [
        "search",
        "--search",
        "mcts",
        "--search-arg",
        "n_iterations=8",
        "--search-arg",
        "parallel_iterations=4",
    ],
    "chain": ["chain"],
}


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("method", sorted(RUNS))
def test_results_are_byte_identical_at_concurrency_1_4_and_16(tmp_path, jitter_server, method, seed):
    args = [
        *RUNS[method],
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=4,6",
        "--dataset-arg",
        f"seed={seed}",
        "--limit",
        "3",
        "--model",
        "m",
        "--base-url",
        jitter_server.base_url,
    ]
    if method != "chain":
        args += ["--search-arg", f"seed={seed}"] if "mcts" in RUNS[method] else []
    seen = {}
    for concurrency in (1, 4, 16):
        run = tmp_path / f"c{concurrency}"
        done = _lits(*args, "--concurrency", str(concurrency), "--save-dir", str(run), "--no-cache")
        assert done.returncode == 0, done.stderr
        seen[concurrency] = _outputs(run)
    assert seen[1] and len(seen[1]) >= 3
    assert seen[4] == seen[1] and seen[16] == seen[1]


def test_kill_9_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path):
    rng = random.Random(20261123)
    with FakeOpenAIServer(responder=jittery_obedient, latency=0.01) as srv:
        args = [
            "search",
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=4,6",
            "--limit",
            "3",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--search-arg",
            "n_iterations=8",
            "--search-arg",
            "early_stop=false",
            "--concurrency",
            "2",
        ]
        whole = tmp_path / "whole"
        assert _lits(*args, "--save-dir", str(whole)).returncode == 0
        calls_in_a_run = len(srv.requests)

        run = tmp_path / "killed"
        proc = subprocess.Popen(
            [sys.executable, "-m", "lits", *args, "--save-dir", str(run)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        kills = 0
        # The points are counts of model calls since the last start (the first: while Python starts, before
        # any); a fixed number of them, so a slow machine cannot turn the test into a livelock of restarts.
        for calls in [0] + [rng.randint(1, calls_in_a_run // 4) for _ in range(3)]:
            if not wait_for_calls(srv, len(srv.requests) + calls, proc):
                break
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
            again = (
                ["search", "--resume", "--save-dir", str(run)]
                if (run / "config.json").exists()
                else [*args, "--save-dir", str(run)]
            )  # killed before the run was set up
            proc = subprocess.Popen(
                [sys.executable, "-m", "lits", *again], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        assert proc.wait(timeout=300) == 0
    assert kills >= 2
    assert _outputs(run) == _outputs(whole)
    journals = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert journals == sorted(p.name for p in (whole / "checkpoints").iterdir())
    for name in journals:
        assert (run / "checkpoints" / name).read_bytes() == (whole / "checkpoints" / name).read_bytes()
