"""MapEval-SQL on PostgreSQL with the embedded model: a real ReAct run whose every observation is the one the
SQLite tools give for the same action. The model is greedy and its prompt is the same on both backends, so equal
observations mean the same trajectory and the same answer on SQLite (one model run instead of two)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lits.tools import execute_tool_action
from lits_mapeval.dataset import evaluate, load_mapeval_sql
from lits_mapeval.sql_tools import ReadOnlyDatabase, make_tools
from tests.mapeval.postgres.conftest import READER_PASSWORD, SEED

pytestmark = pytest.mark.slow


def test_a_react_run_on_the_embedded_model_sees_what_sqlite_would_show(tmp_path, pg_city, sqlite_city):
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache"), "PGPASSWORD": READER_PASSWORD}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "chain",
            "--dataset",
            "mapeval-sql",
            "--dataset-arg",
            f"db={pg_city}",
            "--dataset-arg",
            f"seed={SEED}",
            "--model",
            "local",
            "--limit",
            "1",
            "--chain-arg",
            "max_steps=4",
            "--save-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    steps = record["final_state"]["steps"]
    tool_steps = [s for s in steps if s.get("action")]
    assert tool_steps, steps  # the model called a tool on PostgreSQL
    database = ReadOnlyDatabase(sqlite_city)
    try:
        tools = make_tools(database)
        for step in tool_steps:
            assert execute_tool_action(step["action"]["text"], tools) == step["observation"]
    finally:
        database.close()
    example = load_mapeval_sql(db=str(sqlite_city), seed=SEED)[0]
    assert record["eval"]["solved"] == evaluate(example, record["eval"]["answer"])["solved"]
