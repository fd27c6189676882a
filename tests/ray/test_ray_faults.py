"""A Ray run survives a dead worker, and a killed driver's run resumes to what an uninterrupted run finds."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from lits.testing.servers.openai_compat import FakeOpenAIServer

from tests.ray.conftest import (
    command_line,
    first_listed_action,
    kill_all,
    lits_process,
    outputs,
    process_tree,
    records_per_instance,
    wait_for,
)

ARGS = [
    "search",
    "--model",
    "m",
    "--dataset",
    "blocksworld",
    "--dataset-arg",
    "steps=2,4",
    "--limit",
    "5",
    "--concurrency",
    "2",
    "--search-arg",
    "n_iterations=5",
]
INSTANCES = 5
TIMEOUT = 120


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action, latency=0.015) as srv:
        yield srv


@pytest.fixture(scope="module")
def uninterrupted(server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run in this process, from start to end."""
    from lits.cli.main import main

    run = tmp_path_factory.mktemp("uninterrupted") / "run"
    latency, server.latency = server.latency, 0.0  # only the runs to interrupt need to last: results never
    try:  # depend on reply times
        assert main([*ARGS, "--base-url", server.base_url, "--save-dir", str(run)]) == 0
    finally:
        server.latency = latency
    return run


def _results(run: Path) -> int:
    folder = run / "results"
    return len(list(folder.glob("*.json"))) if folder.is_dir() else 0


def assert_recorded_once(run: Path, reference: Path, redone: set[int]) -> None:
    """Each instance's calls are in the log once: exactly as in the reference for an instance that ran
    once; for one that ran again, its first attempt's records are not there (a call half cached when
    its worker died is two records, a cached and a paid one, so "about once": never twice)."""
    got, want = records_per_instance(run), records_per_instance(reference)
    assert got.keys() == want.keys()
    assert {i: got[i] for i in want if i not in redone} == {i: want[i] for i in want if i not in redone}
    assert all(0.9 * want[i] <= got[i] < 2 * want[i] for i in redone), (got, want)


def _stop(proc: subprocess.Popen[str], tree: list[int]) -> None:
    """Whatever of this run is still alive: only processes of its own tree that still look like it."""
    kill_all([pid for pid in tree if any(word in command_line(pid) for word in ("ray", "lits"))])
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    for scratch in Path(tempfile.gettempdir()).glob(f"lits-*-{proc.pid}-*"):  # its Ray's and workers' dirs
        shutil.rmtree(scratch, ignore_errors=True)


def test_killed_worker_loses_no_instance_and_counts_no_call_twice(
    server: FakeOpenAIServer, uninterrupted: Path, tmp_path: Path
) -> None:
    run = tmp_path / "ray"
    proc = lits_process(*ARGS, "--base-url", server.base_url, "--executor", "ray", "--save-dir", "ray", cwd=tmp_path)
    tree: list[int] = []
    try:
        wait_for(lambda: _results(run) >= 1 or proc.poll() is not None, TIMEOUT, "the first result")
        tree = process_tree(proc.pid)
        workers = [pid for pid in tree if command_line(pid).startswith("ray::InstanceWorker.run")]  # busy
        assert workers and _results(run) < INSTANCES, "no worker busy with an instance to kill"
        kill_all(workers[:1])
        code = proc.wait(timeout=TIMEOUT)
    finally:
        _stop(proc, tree)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert code == 0, stderr
    assert outputs(run) == outputs(uninterrupted)
    summary = json.loads((run / "eval_results.json").read_text())
    assert summary["instances"] == INSTANCES and summary["failed"] == 0
    assert summary["retried_instances"], "the run does not say which instances ran again"
    assert_recorded_once(run, uninterrupted, {int(i) for i in summary["retried_instances"]})
    assert "ran again on a restarted worker" in stderr


def test_resume_after_the_driver_is_killed_equals_an_uninterrupted_run(
    server: FakeOpenAIServer, uninterrupted: Path, tmp_path: Path
) -> None:
    run = tmp_path / "ray"
    proc = lits_process(*ARGS, "--base-url", server.base_url, "--executor", "ray", "--save-dir", "ray", cwd=tmp_path)
    tree: list[int] = []
    try:
        wait_for(lambda: _results(run) >= 1 or proc.poll() is not None, TIMEOUT, "the first result")
        tree = process_tree(proc.pid)
        kill_all([proc.pid])  # SIGKILL: no handler, no summary
        proc.wait(timeout=30)
    finally:
        _stop(proc, tree)  # the Ray instance it started
    finished_before = {int(p.stem) for p in (run / "results").glob("*.json")}
    assert 1 <= len(finished_before) < INSTANCES
    resumed = lits_process("search", "--resume", "--save-dir", "ray", cwd=tmp_path)
    tree = []
    try:
        code = resumed.wait(timeout=TIMEOUT)
    finally:
        _stop(resumed, process_tree(resumed.pid) if resumed.poll() is None else [])
    assert code == 0, (tmp_path / "stderr.txt").read_text()
    assert outputs(run) == outputs(uninterrupted)
    assert_recorded_once(run, uninterrupted, set(range(INSTANCES)) - finished_before)
    assert json.loads((run / "eval_results.json").read_text())["instances"] == INSTANCES
