"""A two-node Ray cluster on 127.0.0.1 (``ray start --head`` and a second ``ray start``) finds what one
process finds.

Which node each worker lands on is Ray's choice (soft node affinity, so a lost node's workers restart
elsewhere); on a cluster started a moment ago it is sometimes all one node, so it is not asserted.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lits.testing.servers.openai_compat import FakeOpenAIServer

from tests.ray.conftest import (
    RAY_ENV,
    eval_without_timings,
    first_listed_action,
    kill_all,
    lits_process,
    outputs,
    process_tree,
    records_per_instance,
    wait_for,
)

READY = "block forever"  # what `ray start --block` prints once the node is up


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_node(args: list[str], log: list[str]) -> subprocess.Popen[str]:
    ray = str(Path(sys.executable).parent / "ray")
    proc = subprocess.Popen(
        [ray, "start", "--block", "--num-cpus", "1", "--node-ip-address", "127.0.0.1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **RAY_ENV},
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)

    threading.Thread(target=read, daemon=True).start()
    return proc


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head node and a worker node, 1 CPU each; stopped by killing exactly the processes they started."""
    port, temp = _free_port(), tempfile.mkdtemp(prefix="lits-rc-", dir="/tmp")
    started: list[subprocess.Popen[str]] = []
    head_log: list[str] = []
    node_log: list[str] = []
    try:
        started.append(
            _start_node(
                [
                    "--head",
                    "--port",
                    str(port),
                    "--include-dashboard=false",
                    "--temp-dir",
                    temp,
                    "--disable-usage-stats",
                ],
                head_log,
            )
        )
        wait_for(lambda: any(READY in line for line in head_log), 90, "the Ray head node")
        started.append(_start_node([f"--address=127.0.0.1:{port}"], node_log))
        wait_for(lambda: any(READY in line for line in node_log), 90, "the second Ray node")
        yield f"127.0.0.1:{port}"
    finally:
        pids = [pid for proc in started for pid in process_tree(proc.pid)]
        kill_all(pids)
        for proc in started:
            proc.wait(timeout=30)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action, latency=0.01) as srv:
        yield srv


def _on_cluster(address: str, tmp_path: Path, *args: str) -> Path:
    proc = lits_process(*args, "--executor", "ray", "--ray-address", address, "--save-dir", "cluster", cwd=tmp_path)
    try:
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            kill_all(process_tree(proc.pid))
            proc.wait(timeout=30)
    assert code == 0, (tmp_path / "stderr.txt").read_text()
    return tmp_path / "cluster"


def test_scripted_search_on_two_nodes_equals_one_process(
    cluster: str, lits_here: Callable[..., int], tmp_path: Path
) -> None:
    args = ["search", "--model", "scripted", "--dataset", "blocksworld", "--dataset-arg", "steps=2,4", "--limit", "4"]
    assert lits_here(*args, "--save-dir", "here") == 0
    run = _on_cluster(cluster, tmp_path, *args)
    assert outputs(run) == outputs(tmp_path / "here")
    assert eval_without_timings(run) == eval_without_timings(tmp_path / "here")


def test_server_search_on_two_nodes_equals_one_process(
    cluster: str, lits_here: Callable[..., int], tmp_path: Path, server: FakeOpenAIServer
) -> None:
    args = [
        "search",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2,4",
        "--limit",
        "4",
        "--concurrency",
        "2",
        "--search-arg",
        "n_iterations=4",
    ]
    assert lits_here(*args, "--save-dir", "here") == 0
    run = _on_cluster(cluster, tmp_path, *args)
    assert outputs(run) == outputs(tmp_path / "here")
    assert eval_without_timings(run) == eval_without_timings(tmp_path / "here")
    assert records_per_instance(run) == records_per_instance(tmp_path / "here")
    assert server.max_in_flight <= 2
