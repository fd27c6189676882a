"""Fixtures for running the same search in this process and on Ray: a shared local Ray, process trees."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lits.testing.scripted import listed_actions

#: What a search found, by file: the bytes that must not depend on where instances ran.
OUTPUTS = ("results", "paths", "terminal_nodes")
#: eval_results.json fields that are wall-clock measurements by design.
#: Figures that measure time, not what the run computed (hedged copies go out when a reply is slow).
TIMINGS = {
    "seconds_per_instance",
    "seconds",
    "run_seconds",
    "calls_in_flight_avg",
    "hedged_calls",
    "hedges_won",
    "server_requests",
    "unused_replies",
    "estimated_replies",
    "queued_seconds",
    "server_seconds",
    "model_seconds",
    "model_seconds_per_solved",
}
#: A test cluster on loopback needs no tokens; nothing of Ray's reports usage.  No hedged copies: the tokens
#: they are billed for are in the cost figures compared here, and how many go out depends on timing.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "LITS_HEDGE": "off"}


def first_listed_action(prompt: str, body: dict[str, Any]) -> str:
    """A weak but obedient model: the first valid action listed, else Yes."""
    listed = listed_actions(prompt)
    return listed[0] if listed else "Yes"


def outputs(run: Path) -> dict[str, bytes]:
    """By file; a ``.NAME.tmp`` left by a kill mid-write is not an output (the atomic rename never ran)."""
    return {
        f"{sub}/{p.name}": p.read_bytes()
        for sub in OUTPUTS
        if (run / sub).is_dir()
        for p in sorted((run / sub).iterdir())
        if not p.name.startswith(".")
    }


def _drop_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_timings(v) for k, v in value.items() if k not in TIMINGS}
    return value


def eval_without_timings(run: Path) -> dict[str, Any]:
    return _drop_timings(json.loads((run / "eval_results.json").read_text()))  # type: ignore[no-any-return]


def records_per_instance(run: Path) -> dict[int, int]:
    """Inference records of calls (paid or cached) per instance; not the replies no call used (a hedged copy's)."""
    counts: dict[int, int] = {}
    for line in (run / "inference.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "unused":
            continue
        idx = record["context"].get("instance")
        counts[idx] = counts.get(idx, 0) + 1
    return counts


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance with 2 CPUs (so 2 workers) for the whole module: ray.init costs seconds."""
    import ray

    temp = tempfile.mkdtemp(prefix="lits-rt-", dir="/tmp")
    with pytest.MonkeyPatch.context() as patch:
        for key, value in RAY_ENV.items():
            patch.setenv(key, value)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR, _temp_dir=temp)
        try:
            yield
        finally:
            ray.shutdown()
            shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def lits_here(tmp_path: Path) -> Callable[..., int]:
    """``lits ARGS`` in this process (it uses the module's Ray when one is initialized)."""
    from lits.cli.main import main

    def run(*args: str) -> int:
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            return main(list(args))
        finally:
            os.chdir(cwd)

    return run


def lits_process(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python -m lits ARGS`` as its own process, output to files in ``cwd``."""
    full_env = {**os.environ, **RAY_ENV, **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "lits", *args],
        cwd=cwd,
        env=full_env,
        text=True,
        stdout=open(cwd / "stdout.txt", "w"),
        stderr=open(cwd / "stderr.txt", "w"),
    )


def _parents() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(name))
    return children


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children = _parents()
    todo, out = [pid], []
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_all(pids: list[int]) -> None:
    """SIGKILL exactly these processes (never by name: other tests' Ray instances must live)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)
