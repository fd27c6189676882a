"""A PostgreSQL server that goes down mid-run: the instances it left unfinished are failed, never "finished".

The run's own server (not the session's, which other tests share) is stopped with ``pg_ctl stop -m immediate``
by the model the moment the second instance starts, so the first instance finished and the rest need the
database; ``--resume`` after the server is back finishes them as an uninterrupted run would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.mapeval.postgres.conftest import (
    PG_BIN,
    READER_PASSWORD,
    SEED,
    PgServer,
    build_db,
    running_postgres,
    start_postgres,
    stop_postgres,
)
from tests.mapeval.postgres.test_pg_runs import LIMIT, _agent, _outcome


@pytest.fixture
def own_pg() -> Iterator[PgServer]:
    """A server with the city, for this test alone (it will be stopped and started again)."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL 15 binaries not found in {PG_BIN}: apt-get install postgresql")
    with running_postgres() as server:
        done = build_db("--to", server.builder_url, "--seed", str(SEED), "--grant-select-to", "reader")
        assert done.returncode == 0, done.stderr
        yield server


def _stopping_at_second_question(server: PgServer) -> Callable[[str, dict[str, Any]], str]:
    """The run's model, which stops the database once, when the second instance asks its first step."""
    questions: list[str] = []

    def reply(prompt: str, body: dict[str, Any]) -> str:
        question = prompt.rsplit("user: Question: ", 1)[-1].split("\n", 1)[0]
        if question not in questions:
            questions.append(question)
            if len(questions) == 2:
                stop_postgres(server)
        return _agent(prompt, body)

    return reply


def _lits(
    save: Path,
    responder: Callable[[str, dict[str, Any]], str],
    cache: Path,
    *args: str,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITS_CACHE_DIR": str(cache), "PGPASSWORD": READER_PASSWORD}
    with FakeOpenAIServer(responder=responder) as model:
        return subprocess.run(
            [sys.executable, "-m", "lits", *args, "--base-url", model.base_url, "--save-dir", str(save)],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )


def _new_run(
    server: PgServer, save: Path, responder: Callable[[str, dict[str, Any]], str], cache: Path, command: list[str]
) -> subprocess.CompletedProcess[str]:
    return _lits(
        save,
        responder,
        cache,
        *command,
        "--dataset",
        "mapeval-sql",
        "--dataset-arg",
        f"db={server.reader_url}",
        "--dataset-arg",
        f"seed={SEED}",
        "--limit",
        str(LIMIT),
        "--model",
        "m",
        "--concurrency",
        "1",
    )


@pytest.mark.parametrize(
    "command",
    [["chain"], ["search", "--search-arg", "n_iterations=2", "--search-arg", "n_actions=2"]],
    ids=["react", "mcts"],
)
def test_a_database_outage_fails_the_unfinished_instances_and_resume_finishes_them(tmp_path, own_pg, command):
    reference = _new_run(own_pg, tmp_path / "reference", _agent, tmp_path / "cache-reference", command)
    assert reference.returncode == 0, reference.stderr

    run = tmp_path / "run"
    cut = _new_run(own_pg, run, _stopping_at_second_question(own_pg), tmp_path / "cache", command)
    assert cut.returncode == 1, cut.stderr
    assert sorted(p.name for p in (run / "results").iterdir()) == ["0.json"]
    last = cut.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "lits: error: stopped after 3 instances failed in a row (PostgreSQL at "
        f"postgresql://reader@127.0.0.1:{own_pg.port}/city is unavailable"
    )
    assert f"; fix the server, then run `lits {command[0]} --resume --save-dir" in last  # like a model server
    assert "Traceback" not in cut.stderr

    start_postgres(own_pg)
    resumed = _lits(run, _agent, tmp_path / "cache", command[0], "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert _outcome(run) == _outcome(tmp_path / "reference")
    assert sum(r["eval"]["solved"] for r in _outcome(run)) == LIMIT
    assert json.loads((run / "results" / "0.json").read_text())["eval"]["solved"]
