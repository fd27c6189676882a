"""``lits chain`` (ReAct) and ``lits search`` (MCTS) on mapeval-sql, by dataset name alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer

QUERY = '{"tool": "query_sql", "args": {"query": "SELECT count(*) FROM places"}}'


def _agent(prompt: str, body: dict) -> str:
    if "Answer Yes or No" in prompt:
        return "Yes"
    if "user: Observation:" in prompt:  # a real tool result, not the worked example's
        return "Thought: I have what I need\nAnswer: 1"
    return f"Thought: look at the data\nAction: {QUERY}"


@pytest.mark.parametrize(
    "command", [["chain"], ["search", "--search-arg", "n_iterations=2", "--search-arg", "n_actions=2"]]
)
def test_mapeval_sql_runs_end_to_end_on_a_real_database(tmp_path, command):
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(responder=_agent) as srv:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                *command,
                "--dataset",
                "mapeval-sql",
                "--limit",
                "3",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--save-dir",
                str(tmp_path / "run"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    steps = record["final_state"]["steps"]
    assert steps[0]["observation"] == "count(*)\n24"
    assert record["eval"]["answer"] == "1"
    summary = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert summary["instances"] == 3 and 0 <= summary["accuracy"] <= 1


def _base_model(prompt: str, body: dict) -> str:
    """Continues a text prompt the way a base model does: after the cue, running on past the answer."""
    if "Answer Yes or No" in prompt:
        return " Yes"
    if "Observation:" in prompt.rsplit("\nQuestion:", 1)[-1]:
        return " I have what I need\nAnswer: 1\nAnswer: 2\nAnswer: 3"
    return f" look at the data\nAction: {QUERY}"


def test_mapeval_sql_runs_on_a_completion_endpoint_with_the_text_prompt(tmp_path):
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(responder=_base_model) as srv:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "chain",
                "--dataset",
                "mapeval-sql",
                "--limit",
                "1",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--api",
                "completion",
                "--save-dir",
                str(tmp_path / "run"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert result.returncode == 0, result.stderr
    steps = json.loads((tmp_path / "run" / "results" / "0.json").read_text())["final_state"]["steps"]
    assert steps[0]["think"] == "look at the data" and steps[0]["observation"] == "count(*)\n24"
    assert steps[1]["answer"] == "1"
