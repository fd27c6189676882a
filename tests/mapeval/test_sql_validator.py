"""``--memory-arg augmentors=sql_validator``: SQL that does not compile is refused before query_sql runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

import lits
from lits.errors import UserError
from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_mapeval.dataset import default_db
from lits_mapeval.sql_check import compile_error

BAD = '{"tool": "query_sql", "args": {"query": "SELEC count(*) FROM places"}}'
GOOD = '{"tool": "query_sql", "args": {"query": "SELECT count(*) FROM places"}}'


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LITS_CACHE_DIR", str(tmp_path / "cache"))


def _typo_then_fixed(prompt: str, body: dict) -> str:
    if "Answer Yes or No" in prompt:
        return "Yes"
    if "user: Observation: count(*)" in prompt:
        return "Thought: I have what I need\nAnswer: 1"
    if "user: Observation:" in prompt:  # told what is wrong with the SQL
        return f"Thought: fix the typo\nAction: {GOOD}"
    return f"Thought: count the places\nAction: {BAD}"


def test_sql_that_compiles_passes_and_sql_that_does_not_is_named():
    city = default_db()
    assert compile_error(city, "SELECT count(*) FROM places") is None
    assert "syntax error" in (compile_error(city, "SELEC count(*) FROM places") or "")
    assert compile_error(city, "SELECT nope FROM places") == "no such column: nope"


def test_two_statements_are_refused_as_the_tool_would():
    assert compile_error(default_db(), "SELECT 1; SELECT 2") is not None


def _run(tmp_path, **memory):
    with FakeOpenAIServer(responder=_typo_then_fixed) as srv:
        return lits.chain("mapeval-sql", limit=1, model="m", base_url=srv.base_url, save_dir=tmp_path / "run", **memory)


def test_a_query_that_does_not_compile_becomes_the_observation_without_a_tool_call(tmp_path):
    steps = _run(tmp_path, memory_args={"augmentors": "sql_validator"}).instances[0].record["final_state"]["steps"]
    assert steps[0]["observation"].startswith(
        'SQL error (checked before running; query_sql was not called): near "SELEC": syntax error'
    )
    assert steps[0]["error"] == steps[0]["observation"]
    assert steps[1]["observation"] == "count(*)\n24" and steps[2]["answer"] == "1"


def test_without_the_validator_the_tool_runs_the_bad_query(tmp_path):
    steps = _run(tmp_path).instances[0].record["final_state"]["steps"]
    assert steps[0]["error"] is None and "syntax error" in steps[0]["observation"]
    assert "checked before running" not in steps[0]["observation"]


def test_a_query_plan_the_tool_would_answer_is_not_refused():
    assert compile_error(default_db(), "EXPLAIN QUERY PLAN SELECT name FROM places") is None


def test_a_missing_database_file_is_one_line_before_any_call(tmp_path):
    with FakeOpenAIServer(responder=_typo_then_fixed) as srv:
        with pytest.raises(UserError) as caught:
            lits.chain(
                "mapeval-sql",
                limit=1,
                model="m",
                base_url=srv.base_url,
                save_dir=tmp_path / "run",
                memory_args={"augmentors": "sql_validator", "sql_db": str(tmp_path / "none.sqlite")},
            )
        assert srv.requests == []
    assert "no such SQLite file" in str(caught.value) and "\n" not in str(caught.value)


def test_the_default_city_is_built_once_aside_and_whole_under_concurrent_first_use():
    # The validator asks for the default city at every check, from concurrent expansions: each thread reads
    # the city the moment default_db returns, while the others may still be building it.
    import sqlite3
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import closing

    start = threading.Barrier(8)  # a first use: own_cache gives the test a cache folder with no city yet

    def first_use(_: int) -> tuple[Path, int]:
        start.wait()
        path = default_db()
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return path, conn.execute("SELECT count(*) FROM places").fetchone()[0]

    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(first_use, range(8)))
    with closing(sqlite3.connect(seen[0][0])) as conn:
        whole = conn.execute("SELECT count(*) FROM places").fetchone()[0]
    assert whole > 0 and seen == [(seen[0][0], whole)] * 8
    assert not list(seen[0][0].parent.glob(".*.tmp"))


def _counts_extra(prompt: str, body: dict) -> str:
    if "Answer Yes or No" in prompt:
        return "Yes"
    if "user: Observation:" in prompt:
        return "Thought: done\nAnswer: 1"
    return 'Thought: count\nAction: {"tool": "query_sql", "args": {"query": "SELECT count(*) FROM extra"}}'


def test_sql_is_checked_against_the_database_the_run_queries(tmp_path):
    import shutil
    import sqlite3

    own = tmp_path / "own.sqlite"
    shutil.copyfile(default_db(), own)
    with sqlite3.connect(own) as conn:
        conn.execute("CREATE TABLE extra (x INTEGER)")
    with FakeOpenAIServer(responder=_counts_extra) as srv:
        run = lits.chain(
            "mapeval-sql",
            limit=1,
            model="m",
            base_url=srv.base_url,
            save_dir=tmp_path / "run",
            dataset_args={"db": str(own)},
            memory_args={"augmentors": "sql_validator"},
        )
    steps = run.instances[0].record["final_state"]["steps"]
    assert steps[0]["error"] is None and steps[0]["observation"] == "count(*)\n0"
