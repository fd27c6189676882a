"""``lits chain`` (ReAct) and ``lits search`` (MCTS) on mapeval-sql give the same answers on SQLite and PostgreSQL.

The model is a loopback server whose agent reads the question, writes the SQL a careful model would, and picks
the option its observation supports; so the runs solve questions, and any difference between the backends
(rows, number formatting, ordering) would change an observation or an answer.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.mapeval.postgres.conftest import READER_PASSWORD, SEED, PgServer

LIMIT = 4
PLACES = "JOIN places a ON a.place_id = d.origin_id JOIN places b ON b.place_id = d.destination_id"


def _sql_for(question: str) -> str:
    """The query a careful model would write for one of the generated questions."""
    if m := re.match(r"What is the rating of (.+)\?", question):
        return f"SELECT rating FROM places WHERE name = '{m[1]}'"
    if m := re.match(r"Which (\w+) is closest to (.+)\?", question):
        return (
            "SELECT q.name, n.distance_m FROM nearby n JOIN places p ON p.place_id = n.place_id JOIN places q "
            f"ON q.place_id = n.nearby_place_id WHERE p.name = '{m[2]}' AND n.type = '{m[1]}' "
            "ORDER BY n.distance_m, q.name"
        )
    if m := re.match(r"How many minutes does it take to go from (.+) to (.+) by (\w+)\?", question):
        return (
            f"SELECT d.duration_s FROM distances d {PLACES} WHERE a.name = '{m[1]}' AND b.name = '{m[2]}' "
            f"AND d.mode = '{m[3]}'"
        )
    if m := re.match(r"Driving from (.+) to (.+) and then on to (.+), how many", question):
        return (
            f"SELECT a.name, b.name, d.duration_s FROM distances d {PLACES} WHERE d.mode = 'driving' AND "
            f"((a.name = '{m[1]}' AND b.name = '{m[2]}') OR (a.name = '{m[2]}' AND b.name = '{m[3]}')) "
            "ORDER BY d.duration_s"
        )
    return "SELECT * FROM places WHERE name = 'nobody'"


def _pick(question: str, options: list[str], observation: str) -> int:
    """The 1-based option the observation supports (0: none of them)."""
    rows = [line.split(" | ") for line in observation.splitlines()[1:] if not line.startswith("[")]
    if not rows:
        return 0
    if question.startswith("What is the rating"):
        wanted = f"{float(rows[0][0]):.1f}"
    elif question.startswith("Which"):
        wanted = rows[0][0]
    elif question.startswith("How many minutes"):
        wanted = f"{round(int(rows[0][0]) / 60)} min"
    else:
        wanted = f"{sum(round(int(r[-1]) / 60) for r in rows)} min"
    return options.index(wanted) + 1 if wanted in options else 0


def _agent(prompt: str, body: dict[str, Any]) -> str:
    if "Answer Yes or No" in prompt:
        return "Yes"
    task = prompt.rsplit("user: Question: ", 1)[-1]
    question = task.split("\n", 1)[0]
    options = re.findall(r"^\d+\. (.*)$", task.split("\nassistant:", 1)[0], re.M)
    if "user: Observation: " not in task:
        return (
            f"Thought: look it up\nAction: {json.dumps({'tool': 'query_sql', 'args': {'query': _sql_for(question)}})}"
        )
    observation = task.rsplit("user: Observation: ", 1)[-1]
    return f"Thought: the rows say so\nAnswer: {_pick(question, options, observation)}"


def _run(save: Path, db: str, *command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    with FakeOpenAIServer(responder=_agent) as srv:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                *command,
                "--dataset",
                "mapeval-sql",
                "--dataset-arg",
                f"db={db}",
                "--dataset-arg",
                f"seed={SEED}",
                "--limit",
                str(LIMIT),
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--save-dir",
                str(save),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )


def _outcome(save: Path) -> list[dict[str, Any]]:
    """Per instance: the question, every step's action, observation and answer, and the evaluation."""
    out = []
    for k in range(LIMIT):
        record = json.loads((save / "results" / f"{k}.json").read_text())
        steps = [{f: s.get(f) for f in ("action", "observation", "answer")} for s in record["final_state"]["steps"]]
        out.append({"query": record.get("query"), "steps": steps, "eval": record["eval"]})
    return out


def _run_dir_text(save: Path) -> str:
    return "\n".join(
        p.read_text(errors="replace")
        for p in sorted(save.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".jsonl", ".log", ".txt")
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache"), "PGPASSWORD": READER_PASSWORD}


@pytest.mark.parametrize(
    "command",
    [["chain"], ["search", "--search-arg", "n_iterations=2", "--search-arg", "n_actions=2"]],
    ids=["react", "mcts"],
)
def test_the_same_run_gives_the_same_answers_on_sqlite_and_postgresql(tmp_path, env, pg_city, sqlite_city, command):
    on_sqlite = _run(tmp_path / "sqlite", str(sqlite_city), *command, env=env)
    on_postgres = _run(tmp_path / "postgres", pg_city, *command, env=env)
    assert on_sqlite.returncode == 0, on_sqlite.stderr
    assert on_postgres.returncode == 0, on_postgres.stderr
    expected = _outcome(tmp_path / "sqlite")
    assert _outcome(tmp_path / "postgres") == expected
    assert sum(r["eval"]["solved"] for r in expected) == LIMIT  # real observations, real answers
    config = json.loads((tmp_path / "postgres" / "config.json").read_text())
    assert config["dataset_args"]["db"] == pg_city
    assert READER_PASSWORD not in _run_dir_text(tmp_path / "postgres")
    if command == ["chain"]:  # `lits eval` re-judges the run from its save dir (it reconnects to the server)
        done = subprocess.run(
            [sys.executable, "-m", "lits", "eval", "--save-dir", str(tmp_path / "postgres")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads((tmp_path / "postgres" / "eval_results.json").read_text())["accuracy"] == 1.0


def test_a_url_with_a_password_is_refused_in_one_line_and_never_reaches_the_run_dir(
    tmp_path, env, pg_server: PgServer, pg_city
):
    url = f"postgresql://reader:{READER_PASSWORD}@127.0.0.1:{pg_server.port}/city"
    done = _run(tmp_path / "run", url, "chain", env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("lits: error: the PostgreSQL URL holds a password") and done.stderr.count("\n") == 1
    assert READER_PASSWORD not in done.stderr + done.stdout
    assert not (tmp_path / "run").exists() or READER_PASSWORD not in _run_dir_text(tmp_path / "run")


def test_a_superuser_connection_is_refused_in_one_line_naming_the_role_and_the_flag(
    tmp_path, env, pg_server: PgServer, pg_city
):
    done = _run(tmp_path / "run", pg_server.superuser_url, "chain", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lits: error: MapEval-SQL will not run the model's SQL as role 'postgres' at postgresql://")
    assert line.endswith(
        f"127.0.0.1:{pg_server.port}/city: it is a superuser; connect as a role that may only read "
        "(see the plugin README), or pass --dataset-arg allow_privileged_role=true to take the risk"
    )


def test_a_forced_superuser_connection_runs_with_a_one_line_warning(tmp_path, env, pg_server: PgServer, pg_city):
    done = _run(
        tmp_path / "run", pg_server.superuser_url, "chain", "--dataset-arg", "allow_privileged_role=true", env=env
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("lits: warning:")]
    assert len(warnings) == 1 and "as role 'postgres', which is a superuser" in warnings[0]
    assert "allow_privileged_role=true" in warnings[0]


def test_the_owner_of_the_tables_is_refused_for_its_write_rights(tmp_path, env, pg_server: PgServer, pg_city):
    done = _run(tmp_path / "run", pg_server.builder_url, "chain", env=env)
    assert done.returncode == 2
    assert "as role 'builder'" in done.stderr and "may write to public." in done.stderr
    assert done.stderr.count("\n") == 1
