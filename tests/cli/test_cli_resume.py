"""An interrupted run continues with --resume without redoing finished instances."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import first_listed_action


def test_resume_finishes_an_interrupted_run_without_redoing_finished_instances(tmp_path):
    run = tmp_path / "run"
    with FakeOpenAIServer(responder=first_listed_action, latency=0.05) as srv:
        args = [
            "search",
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=2",
            "--limit",
            "3",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--search-arg",
            "n_iterations=2",
            "--concurrency",
            "1",
            "--save-dir",
            str(run),
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "lits", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.time() + 120
        while not (run / "results" / "0.json").exists() and time.time() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished_before = {p.name: p.stat().st_mtime_ns for p in (run / "results").iterdir()}
        assert "0.json" in finished_before and len(finished_before) < 3

        resumed = subprocess.run(
            [sys.executable, "-m", "lits", "search", "--resume", "--save-dir", str(run)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert resumed.returncode == 0, resumed.stderr
    assert "already done" in resumed.stderr
    after = {p.name: p.stat().st_mtime_ns for p in (run / "results").iterdir()}
    assert sorted(after) == ["0.json", "1.json", "2.json"]
    assert all(after[name] == mtime for name, mtime in finished_before.items())
    assert json.loads((run / "eval_results.json").read_text())["instances"] == 3


def test_resume_reuses_cached_answers_for_the_interrupted_instance(tmp_path):
    run = tmp_path / "run"
    with FakeOpenAIServer(responder=first_listed_action) as srv:
        base = [
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=2",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--save-dir",
            str(run),
        ]
        first = subprocess.run([sys.executable, "-m", "lits", "chain", *base], capture_output=True, text=True)
        assert first.returncode == 0, first.stderr
        paid = len(srv.requests)
        (run / "results" / "0.json").unlink()  # as if the instance had been interrupted
        again = subprocess.run(
            [sys.executable, "-m", "lits", "chain", "--resume", "--save-dir", str(run)], capture_output=True, text=True
        )
        assert again.returncode == 0, again.stderr
        assert len(srv.requests) == paid


def _stats_with_outputs(path: Path) -> bool:
    """Whether the run's saved figures already count policy outputs (false while absent or half written)."""
    try:
        return json.loads(path.read_text())["policy_stats"]["outputs"] > 0
    except (OSError, ValueError, KeyError, TypeError):
        return False


def test_a_killed_process_keeps_its_counters_up_to_a_few_seconds_before_the_kill(tmp_path):
    """Statistics are saved while instances run, not only when one finishes."""
    run = tmp_path / "run"
    with FakeOpenAIServer(responder=first_listed_action, latency=0.05) as srv:
        args = [
            "search",
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=4",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--search-arg",
            "n_iterations=200",
            "--search-arg",
            "early_stop=false",
            "--concurrency",
            "1",
            "--save-dir",
            str(run),
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "lits", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "LITS_STATS_EVERY": "0.2"},
        )
        deadline = time.time() + 120
        while not _stats_with_outputs(run / "stats" / "process-1.json") and time.time() < deadline:
            time.sleep(0.05)  # until the running process has saved its figures (not a guess at how soon)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (run / "results" / "0.json").exists()  # killed mid-instance
    saved = json.loads((run / "stats" / "process-1.json").read_text())
    assert saved["seconds"] > 0 and saved["busy_area"] > 0
    assert saved["policy_stats"]["outputs"] > 0
