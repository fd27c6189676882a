"""A Ray run whose raylet is killed stops within a bound, in one line naming --resume, and keeps what finished;
--resume then completes it.  (A killed GCS is noticed after 30 s of silence; workers that need no GCS may
finish the run first, so that case is not pinned here.)"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from lits.runs.ray.watch import SILENT_FOR
from lits.testing.servers.openai_compat import FakeOpenAIServer

from tests.ray.conftest import (
    command_line,
    first_listed_action,
    kill_all,
    lits_process,
    outputs,
    process_tree,
    wait_for,
)
from tests.ray.test_ray_faults import _results, _stop

ARGS = [
    "search",
    "--model",
    "m",
    "--dataset",
    "blocksworld",
    "--dataset-arg",
    "steps=2,4",
    "--limit",
    "6",
    "--concurrency",
    "2",
    "--search-arg",
    "n_iterations=5",
]
INSTANCES = 6
#: The promise: a lost cluster is noticed within a minute; then the summary is written and Ray shut down.
LOST_BOUND = 60 + 2 * SILENT_FOR


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action, latency=0.05) as srv:
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


def _ray_processes_of(pid: int) -> list[str]:
    """Processes of the Ray instance that run ``pid`` started (its temp dir is in their command lines)."""
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [line for line in ps.splitlines() if f"lits-ray-{pid}-" in line]


def test_a_killed_raylet_stops_the_run_in_one_line_and_resume_completes_it(
    server: FakeOpenAIServer, uninterrupted: Path, tmp_path: Path
) -> None:
    process = "raylet"
    run = tmp_path / "ray"
    proc = lits_process(*ARGS, "--base-url", server.base_url, "--executor", "ray", "--save-dir", "ray", cwd=tmp_path)
    tree: list[int] = []
    try:
        wait_for(lambda: _results(run) >= 1 or proc.poll() is not None, 120, "the first result")
        tree = process_tree(proc.pid)
        victims = [pid for pid in tree if command_line(pid).split(" ")[0].endswith(f"/{process}")]
        assert len(victims) == 1 and _results(run) < INSTANCES, f"no {process} of this run to kill mid-run"
        kill_all(victims)
        code = proc.wait(timeout=LOST_BOUND)  # a hang fails here
    finally:
        _stop(proc, tree)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert code == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("lits: error: stopped: lost the Ray cluster: ")
    assert last.endswith("then run `lits search --resume --save-dir ray`")
    assert "Traceback" not in stderr
    finished = outputs(run)
    assert finished and all(finished[name] == outputs(uninterrupted)[name] for name in finished)
    assert _ray_processes_of(proc.pid) == []  # the run shut its Ray instance down

    resumed = lits_process("search", "--resume", "--save-dir", "ray", cwd=tmp_path)
    try:
        code = resumed.wait(timeout=180)
    finally:
        _stop(resumed, process_tree(resumed.pid) if resumed.poll() is None else [])
    assert code == 0, (tmp_path / "stderr.txt").read_text()
    assert outputs(run) == outputs(uninterrupted)
    assert json.loads((run / "eval_results.json").read_text())["instances"] == INSTANCES
