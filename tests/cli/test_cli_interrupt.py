"""Ctrl-C stops a run within seconds, keeps what finished, and --resume completes it exactly."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import first_listed_action, run_outputs

ARGS = [
    "search",
    "--dataset",
    "blocksworld",
    "--dataset-arg",
    "steps=2,4",
    "--limit",
    "4",
    "--search-arg",
    "n_iterations=6",
    "--search-arg",
    "early_stop=false",
    "--concurrency",
    "2",
    "--model",
    "fake-model",
]


@pytest.fixture
def slow_server() -> Iterator[FakeOpenAIServer]:
    """Every reply takes 20 ms, so a run lasts a few seconds and can be interrupted mid-way."""
    with FakeOpenAIServer(responder=first_listed_action, latency=0.02) as srv:
        yield srv


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lits", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_ctrl_c_stops_within_seconds_and_writes_the_summary_and_a_resume_hint(slow_server, tmp_path):
    run = tmp_path / "run"
    proc = _start(*ARGS, "--base-url", slow_server.base_url, "--save-dir", str(run))
    _wait_for(run / "results" / "0.json")
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 5
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"continue with `lits search --resume --save-dir {run}`" in err
    summary = json.loads((run / "eval_results.json").read_text())
    finished = len(list((run / "results").iterdir()))
    assert summary["stopped"] == "interrupt" and summary["instances"] == finished < 4
    assert summary["total"] == 4 and summary["failed"] == 0
    assert "finished" in out  # the summary table was printed


def test_a_second_ctrl_c_exits_at_once(tmp_path):
    with FakeOpenAIServer(responder=first_listed_action, latency=3.0) as srv:  # calls that take long
        run = tmp_path / "run"
        proc = _start(*ARGS, "--base-url", srv.base_url, "--save-dir", str(run))
        _wait_for(run / "config.json")
        time.sleep(1.0)  # a call is in flight
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 1.5
    assert proc.returncode == 130
    assert "exiting at once" in err and "Traceback" not in err


def test_ctrl_c_at_random_points_then_resume_equals_an_uninterrupted_run(slow_server, tmp_path):
    whole = tmp_path / "whole"
    done = subprocess.run(
        [sys.executable, "-m", "lits", *ARGS, "--base-url", slow_server.base_url, "--save-dir", str(whole)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr

    rng = random.Random(11)
    run = tmp_path / "interrupted"
    fresh = [*ARGS, "--base-url", slow_server.base_url, "--save-dir", str(run)]
    proc, interrupts = _start(*fresh), 0
    while True:
        time.sleep(rng.uniform(0.5, 1.5))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGINT)  # may land before the run handles Ctrl-C (Python is starting)
        proc.communicate(timeout=30)
        interrupts += 1
        again = ["search", "--resume", "--save-dir", str(run)] if (run / "config.json").exists() else fresh
        proc = _start(*again)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert interrupts >= 1
    assert run_outputs(run) == run_outputs(whole)
