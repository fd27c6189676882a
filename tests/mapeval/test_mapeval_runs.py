"""``lits chain`` (ReAct) and ``lits search`` (MCTS) on mapeval-sql, by dataset name alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lits.testing.server import FakeOpenAIServer

QUERY = '{"tool": "query_sql", "args": {"query": "SELECT count(*) FROM places"}}'


def _agent(prompt: str, body: dict) -> str:
    if "Answer Yes or No" in prompt:
        return "Yes"
    if "Observation:" in prompt:
        return "Thought: I have what I need\nAnswer: 1"
    return f"Thought: look at the data\nAction: {QUERY}"


@pytest.mark.parametrize("command", [["chain"], ["search", "--search-arg", "n_iterations=2", "--search-arg", "n_actions=2"]])
def test_mapeval_sql_runs_end_to_end_on_a_real_database(tmp_path, command):
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(responder=_agent) as srv:
        result = subprocess.run(
            [sys.executable, "-m", "lits", *command, "--dataset", "mapeval-sql", "--limit", "3",
             "--model", "m", "--base-url", srv.base_url, "--save-dir", str(tmp_path / "run")],
            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    steps = record["final_state"]["steps"]
    assert steps[0]["observation"] == "count(*)\n24"
    assert record["eval"]["answer"] == "1"
    summary = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert summary["instances"] == 3 and 0 <= summary["accuracy"] <= 1
