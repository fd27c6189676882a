"""MapEval-SQL end to end on the embedded model and through a real llama.cpp server.

The 270M base model answers badly; what is checked is that the runs are
correct: they finish, and the trajectory is a real tool call whose
observation came from the read-only database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

#: A chain's first step is what these tests read: a tool call and its observation.
ONE_STEP = ["--chain-arg", "max_steps=1"]


def _run(tmp_path: Path, *args: str) -> dict:
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
    save = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "lits", *args, "--dataset", "mapeval-sql", "--limit", "1", "--save-dir", str(save)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads((save / "results" / "0.json").read_text())
    record["inference"] = json.loads((save / "timings" / "0.json").read_text())["inference"]
    return record


def test_react_chain_calls_a_tool_on_the_embedded_model(tmp_path):
    first = _run(tmp_path, "chain", *ONE_STEP)["final_state"]["steps"][0]
    assert json.loads(first["action"]["text"])["tool"] in ("list_tables", "describe_table", "query_sql")
    assert first["observation"] and not first["observation"].startswith("Invalid tool call")


def test_mcts_runs_on_the_embedded_model(tmp_path):
    record = _run(tmp_path, "search", "--search-arg", "n_iterations=1", "--search-arg", "n_actions=2")
    assert record["mode"] == "search" and record["inference"]["calls"] > 0


def test_react_chain_runs_through_a_real_llama_cpp_server(tmp_path, gemma_server):
    record = _run(tmp_path, "chain", *ONE_STEP, "--model", "gemma", "--base-url", gemma_server, "--api", "completion")
    assert record["final_state"]["steps"] and record["inference"]["calls"] > 0
