"""``--attempts`` and ``--memory-arg`` from the command line, against a loopback server: seeds, prompts, kill -9."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lits.testing.scripted import listed_actions
from lits.testing.servers.openai_compat import FakeOpenAIServer

#: What must not depend on a kill: the results, the saved attempts (their memory included), the search files.
OUTPUTS = ("results", "attempts", "paths", "terminal_nodes")


def varied(prompt: str, body: dict) -> str:
    """A listed action picked by the prompt's length (notes change the pick), else a one-line lesson."""
    time.sleep(random.uniform(0, 0.01))
    listed = listed_actions(prompt)
    return listed[len(prompt) % len(listed)] if listed else "Check the goal before each move."


def _outputs(run: Path) -> dict[str, bytes]:
    return {
        f"{sub}/{p.name}": p.read_bytes()
        for sub in OUTPUTS
        if (run / sub).is_dir()
        for p in sorted((run / sub).iterdir())
    }


def _lits(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lits", *args], capture_output=True, text=True, timeout=300)


#: Kills before the run is let finish.
MAX_KILLS = 5


def _calls(run: Path) -> int:
    """Model calls the run has logged so far (a line torn by a kill counts once it ends)."""
    log = run / "inference.jsonl"
    return log.read_bytes().count(b"\n") if log.exists() else 0


def _alive_at(proc: subprocess.Popen[bytes], run: Path, calls: int, within: float = 120.0) -> bool:
    """Wait until the run has logged ``calls`` calls; False when the process ended first (or never got there)."""
    deadline = time.monotonic() + within
    while proc.poll() is None and time.monotonic() < deadline:
        if _calls(run) >= calls:
            return True
        time.sleep(0.01)
    return False


#: The agent of each kill test: a chain, and a search (whose attempts journal their trees).
AGENTS = {
    "chain": ["chain"],
    "search": ["search", "--search-arg", "n_iterations=3", "--search-arg", "early_stop=false"],
    "chain, memory over the run": ["chain", "--memory-arg", "scope=run", "--concurrency", "4"],
}


def _args(srv: FakeOpenAIServer, *more: str, agent: str = "chain") -> list[str]:
    return [
        *AGENTS[agent],
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
        "--attempts",
        "3",
        "--memory-arg",
        "augmentors=fact,reflection",
        *more,
    ]


def test_each_attempt_samples_on_its_own_seed_and_sees_the_notes(tmp_path):
    with FakeOpenAIServer(responder=varied) as srv:
        done = _lits(*_args(srv, "--limit", "1", "--save-dir", str(tmp_path / "r")))
        assert done.returncode == 0, done.stderr
        bodies = list(srv.requests)
    attempts = json.loads((tmp_path / "r" / "results" / "0.json").read_text())["attempts"]
    assert len(attempts) >= 2
    seeds = {body.get("seed") for body in bodies}
    assert {None, 10_000} <= seeds  # attempt 0 as a run without attempts, attempt 1 on its own stream
    later = [json.dumps(body) for body in bodies if body.get("seed") == 10_000]
    assert later and all("Notes from earlier attempts" in text for text in later if "valid actions" in text.lower())


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_kill_9_during_attempts_then_resume_equals_an_uninterrupted_run(tmp_path, agent):
    rng = random.Random(24)
    with FakeOpenAIServer(responder=varied, latency=0.01) as srv:
        whole = tmp_path / "whole"
        assert _lits(*_args(srv, "--save-dir", str(whole), agent=agent)).returncode == 0
        run = tmp_path / "killed"
        proc = subprocess.Popen(
            [sys.executable, "-m", "lits", *_args(srv, "--save-dir", str(run), agent=agent)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Kill points are counts of logged calls, not times, so a fast or a loaded machine kills mid-run alike.
        total = _calls(whole)
        points = sorted(rng.sample(range(1, total), MAX_KILLS))
        kills = 0
        for point in points:
            if not _alive_at(proc, run, point):
                break
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
            again = (
                [AGENTS[agent][0], "--resume", "--save-dir", str(run)]
                if (run / "config.json").exists()
                else _args(srv, "--save-dir", str(run), agent=agent)
            )
            proc = subprocess.Popen(
                [sys.executable, "-m", "lits", *again], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        assert proc.wait(timeout=300) == 0
    assert kills >= 1
    assert _outputs(run) == _outputs(whole)
    assert (
        json.loads((run / "eval_results.json").read_text())["pass_at"]
        == json.loads((whole / "eval_results.json").read_text())["pass_at"]
    )
