"""The same city, questions and observations on SQLite and PostgreSQL; connection errors and the pool."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Iterator

import psycopg
import pytest

from lits.tools import BaseTool, execute_tool_action
from lits_mapeval import pg_guard
from lits_mapeval.dataset import load_mapeval_sql, tool_context
from lits_mapeval.pg_database import ReadOnlyPostgres
from lits_mapeval.sql_tools import ReadOnlyDatabase, make_tools
from tests.mapeval.postgres.conftest import CITY_TABLES, SEED, PgServer, _free_port, build_db

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
SAME_ON_BOTH = [
    "SELECT count(*) AS n FROM places",
    "SELECT * FROM places ORDER BY name",
    "SELECT name, rating FROM places WHERE rating > 4 ORDER BY rating DESC, name",
    "SELECT * FROM distances",  # past the row cap
    "SELECT a.name, b.name, d.* FROM distances d JOIN places a ON a.place_id = d.origin_id "
    "JOIN places b ON b.place_id = d.destination_id ORDER BY d.duration_s DESC, d.origin_id, d.destination_id, d.mode "
    "LIMIT 40",  # past the character cap
    "SELECT sum(duration_s) AS total, avg(duration_s) AS mean, max(rating) AS best FROM distances, places "
    "WHERE places.place_id = distances.origin_id",
    "SELECT duration_s / 60 AS whole, duration_s / 60.0 AS minutes, round(duration_s / 60.0) AS rounded "
    "FROM distances WHERE mode = 'transit' ORDER BY origin_id, destination_id LIMIT 5",
    "SELECT types, count(*) AS n FROM places GROUP BY types ORDER BY types",
    "SELECT instruction FROM directions WHERE origin_id = 'P000' ORDER BY step_no",
    "SELECT name FROM places WHERE name LIKE 'M%' ORDER BY name",
    'SELECT "name" AS "the (name); -- x" FROM places WHERE name = \'Maple Hotel\'; -- done',
    "SELECT 'it''s; ok' AS quoted /* ; */",
    "SELECT name, price_level IS NULL AS unknown FROM places ORDER BY place_id LIMIT 3",
]


@pytest.fixture(scope="module")
def both(pg_city: str, sqlite_city: Path) -> Iterator[tuple[list[BaseTool], list[BaseTool]]]:
    with pytest.MonkeyPatch.context() as patch:
        from tests.mapeval.postgres.conftest import READER_PASSWORD

        patch.setenv("PGPASSWORD", READER_PASSWORD)
        pg = ReadOnlyPostgres(pg_city, max_rows=20)
        lite = ReadOnlyDatabase(sqlite_city, max_rows=20)
        yield make_tools(lite), make_tools(pg)
        pg.close()
        lite.close()


def _call(tools: list[BaseTool], tool: str, timeout: float | None = None, **args: str) -> str:
    return execute_tool_action(json.dumps({"tool": tool, "args": args}), tools, timeout)


def test_build_db_writes_the_same_rows_into_postgresql_as_into_sqlite(pg_server: PgServer, pg_city, sqlite_city):
    lite = sqlite3.connect(sqlite_city)
    with psycopg.connect(pg_server.superuser_url) as pg:
        for table in CITY_TABLES:
            rows = sorted(pg.execute(f"SELECT * FROM {table}").fetchall())
            assert rows and rows == sorted(lite.execute(f"SELECT * FROM {table}").fetchall()), table
    lite.close()


def test_both_backends_generate_the_same_questions_and_gold_answers(pg_city, sqlite_city, reader_password):
    from_sqlite = load_mapeval_sql(db=str(sqlite_city), seed=SEED, per_class=3)
    assert load_mapeval_sql(db=pg_city, seed=SEED, per_class=3) == from_sqlite
    assert len(from_sqlite) == 15


@pytest.mark.parametrize("sql", SAME_ON_BOTH)
def test_the_same_query_gives_the_same_observation_on_both_backends(both, sql):
    lite, pg = both
    expected = _call(lite, "query_sql", query=sql)
    assert not expected.startswith("SQL error")
    assert _call(pg, "query_sql", query=sql) == expected


@pytest.mark.parametrize(
    "tool, args",
    [
        ("list_tables", {}),
        ("describe_table", {"table": "places"}),
        ("describe_table", {"table": "distances"}),
        ("describe_table", {"table": "nowhere"}),
    ],
)
def test_the_schema_tools_give_the_same_observation_on_both_backends(both, tool, args):
    lite, pg = both
    assert _call(pg, tool, **args) == _call(lite, tool, **args)


def test_the_tool_context_tells_the_model_which_sql_dialect_to_write(both):
    lite, pg = (tools[0].db for tools in both)  # type: ignore[attr-defined]
    assert tool_context(lite).startswith("The map database is SQLite, with these tables")
    assert tool_context(pg).startswith("The map database is PostgreSQL, with these tables")
    assert tool_context(lite).split(", with", 1)[1] == tool_context(pg).split(", with", 1)[1]


def test_the_callers_time_out_cancels_the_running_query_and_the_next_one_answers(pg_city, reader_password):
    database = ReadOnlyPostgres(pg_city, time_budget=60.0)  # only the caller's 0.3 s time-out can stop it
    tools = make_tools(database)
    try:
        assert _call(tools, "query_sql", timeout=0.3, query=ENDLESS) == "Tool query_sql timed out after 0.3 s"
        assert not [t for t in threading.enumerate() if t.name == "tool-query_sql"]
        assert _call(tools, "query_sql", query="SELECT count(*) AS n FROM places") == "n\n24"
    finally:
        database.close()


def test_a_worker_waiting_for_a_connection_gives_up_with_its_callers_time_out(pg_city, reader_password):
    database = ReadOnlyPostgres(pg_city, time_budget=1.0, pool_size=1)  # one connection, held by a runaway query
    tools = make_tools(database)
    try:
        runaway = threading.Thread(target=_call, args=(tools, "query_sql"), kwargs={"query": ENDLESS})
        runaway.start()
        for _ in range(500):  # until the runaway query holds the connection (5 s at most)
            if database._running:
                break
            threading.Event().wait(0.01)
        assert _call(tools, "query_sql", timeout=0.3, query="SELECT 1 AS one") == "Tool query_sql timed out after 0.3 s"
        assert len([t for t in threading.enumerate() if t.name == "tool-query_sql"]) == 1  # the waiter is gone
        runaway.join(10)
        assert not runaway.is_alive()
        assert _call(tools, "query_sql", query="SELECT count(*) AS n FROM places") == "n\n24"
    finally:
        database.close()


def test_workers_share_a_small_pool_one_connection_each(pg_city, reader_password, monkeypatch):
    monkeypatch.setattr(pg_guard, "POSTGRES", pg_guard.POSTGRES | {"pg_backend_pid", "pg_sleep"})  # to look
    database = ReadOnlyPostgres(pg_city, pool_size=2)
    tools = make_tools(database)
    answers: list[str] = []
    try:
        workers = [
            threading.Thread(
                target=lambda: answers.append(
                    _call(tools, "query_sql", query="SELECT pg_backend_pid() AS pid FROM pg_sleep(0.2)")
                )
            )
            for _ in range(4)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
        assert len(answers) == 4 and all(a.startswith("pid\n") for a in answers)
        assert len(set(answers)) <= 2  # four workers, two server sessions
    finally:
        database.close()


def test_a_url_with_a_password_is_refused_in_one_line_without_the_password(pg_server: PgServer):
    url = f"postgresql://reader:hunter2@127.0.0.1:{pg_server.port}/city"
    with pytest.raises(ValueError, match="holds a password") as caught:
        ReadOnlyPostgres(url)
    assert "hunter2" not in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="holds a password"):
        ReadOnlyPostgres(f"postgresql://reader@127.0.0.1:{pg_server.port}/city?password=hunter2")


def test_the_password_can_come_from_a_pgpass_file(pg_server: PgServer, pg_city, tmp_path, monkeypatch):
    from tests.mapeval.postgres.conftest import READER_PASSWORD

    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg_server.port}:city:reader:{READER_PASSWORD}\n")
    passfile.chmod(0o600)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    database = ReadOnlyPostgres(pg_city)
    try:
        assert database.query("SELECT count(*) AS n FROM places") == "n\n24"
    finally:
        database.close()


def _connect_error(url: str) -> str:
    with pytest.raises(ValueError) as caught:
        ReadOnlyPostgres(url)
    return str(caught.value)


def test_a_server_that_is_down_is_one_line_naming_the_url(monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "irrelevant")
    url = f"postgresql://reader@127.0.0.1:{_free_port()}/city"
    message = _connect_error(url)
    assert message.startswith(f"cannot connect to PostgreSQL at {url}: ") and "\n" not in message
    assert "irrelevant" not in message


def test_an_authentication_failure_is_one_line_naming_the_url(pg_server: PgServer, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "wrong-secret")
    message = _connect_error(pg_server.reader_url)
    assert message.startswith(f"cannot connect to PostgreSQL at {pg_server.reader_url}: ")
    assert "password authentication failed" in message and "\n" not in message and "wrong-secret" not in message


def test_a_missing_database_is_one_line_naming_the_url(pg_server: PgServer):
    url = pg_server.url("postgres", "no_such_city")
    message = _connect_error(url)
    assert message.startswith(f"cannot connect to PostgreSQL at {url}: ")
    assert 'database "no_such_city" does not exist' in message and "\n" not in message


def test_build_db_refuses_a_url_with_a_password_in_one_line(pg_server: PgServer):
    done = build_db("--to", f"postgresql://builder:hunter2@127.0.0.1:{pg_server.port}/city")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("lits-mapeval: error: the PostgreSQL URL holds a password")
    assert done.stderr.count("\n") == 1 and "hunter2" not in done.stderr


def test_build_db_into_a_server_that_is_down_is_one_line(tmp_path):
    url = f"postgresql://builder@127.0.0.1:{_free_port()}/city"
    done = build_db("--to", url)
    assert done.returncode == 2
    assert done.stderr.startswith(f"lits-mapeval: error: cannot build the city into PostgreSQL at {url}: ")
    assert done.stderr.count("\n") == 1
