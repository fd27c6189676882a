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
from tests.cli.conftest import first_listed_action, run_outputs, wait_for_calls

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


def _default_sigint() -> None:
    """A child started by a test worker that ignores SIGINT (as xdist's may) would inherit the ignoring, and a
    Ctrl-C while it starts would be lost: give it a terminal's default, as a user's shell does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lits", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def _wait_for(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _wait_for_line(proc: subprocess.Popen[str], text: str) -> list[str]:
    """Read the run's stderr up to the line containing ``text``; the lines read."""
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"the run exited without saying {text!r}: {''.join(lines)}")


def test_ctrl_c_stops_new_calls_at_once_and_writes_the_summary_and_a_resume_hint(slow_server, tmp_path):
    run = tmp_path / "run"
    proc = _start(*ARGS, "--base-url", slow_server.base_url, "--save-dir", str(run))
    _wait_for(run / "results" / "0.json")
    proc.send_signal(signal.SIGINT)
    said = _wait_for_line(proc, "lits: stopping")
    calls_when_stopped = len(slow_server.requests)
    out, rest = proc.communicate(timeout=120)  # generous: only a hang fails it
    err = "".join(said) + rest
    # no new model call after the stop: only the ones already in flight (one per instance worker) arrive
    assert len(slow_server.requests) - calls_when_stopped <= 2
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"continue with `lits search --resume --save-dir {run}`" in err
    summary = json.loads((run / "eval_results.json").read_text())
    finished = len(list((run / "results").iterdir()))
    assert summary["stopped"] == "interrupt" and summary["instances"] == finished < 4
    assert summary["total"] == 4 and summary["failed"] == 0
    assert "finished" in out  # the summary table was printed


def test_a_second_ctrl_c_exits_at_once_without_waiting_for_the_call_in_flight(tmp_path):
    with FakeOpenAIServer(responder=first_listed_action) as srv:
        srv.hold_next(1 << 16)  # no call is answered until the test releases them: one stays in flight
        run = tmp_path / "run"
        proc = _start(*ARGS, "--base-url", srv.base_url, "--save-dir", str(run))
        assert wait_for_calls(srv, 1, proc), proc.communicate()[1]  # a call is in flight
        proc.send_signal(signal.SIGINT)
        said = _wait_for_line(proc, "lits: stopping")  # the first Ctrl-C was handled: it waits for the call
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)  # exits while the held call is still unanswered
        assert srv.answered == 0
    err = "".join(said) + rest
    assert proc.returncode == 130
    assert "exiting at once" in err and "Traceback" not in err
    # at once: not the first Ctrl-C's way out (the in-flight call's grace period, then the summary)
    assert "instances finished and kept" not in err and not (run / "eval_results.json").exists()


def test_ctrl_c_at_random_points_then_resume_equals_an_uninterrupted_run(slow_server, tmp_path):
    whole = tmp_path / "whole"
    done = subprocess.run(
        [sys.executable, "-m", "lits", *ARGS, "--base-url", slow_server.base_url, "--save-dir", str(whole)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    calls_in_a_run = len(slow_server.requests)

    rng = random.Random(11)
    run = tmp_path / "interrupted"
    fresh = [*ARGS, "--base-url", slow_server.base_url, "--save-dir", str(run)]
    proc, interrupts = _start(*fresh), 0
    # The points are counts of model calls since the last start (the first: while Python starts, before any);
    # a fixed number of them, so a slow machine cannot turn the test into a livelock of restarts.
    for calls in [0] + [rng.randint(1, calls_in_a_run // 4) for _ in range(3)]:
        if not wait_for_calls(slow_server, len(slow_server.requests) + calls, proc):
            break
        proc.send_signal(signal.SIGINT)  # may land before the run handles Ctrl-C (Python is starting)
        proc.communicate(timeout=120)
        interrupts += 1
        again = ["search", "--resume", "--save-dir", str(run)] if (run / "config.json").exists() else fresh
        proc = _start(*again)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert interrupts >= 2
    assert run_outputs(run) == run_outputs(whole)
