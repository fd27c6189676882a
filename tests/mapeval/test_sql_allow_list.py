"""Model-written SQL may call only the functions on the plugin's allow-list (issue 41): whatever else a server
has is refused in one line that names the function, and everything a map question (and the plugin's own gold
SQL) needs still answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from lits.tools import BaseTool, execute_tool_action
from lits_mapeval import pg_guard
from lits_mapeval.database import build_database
from lits_mapeval.questions import generate_questions_from
from lits_mapeval.sql_check import compile_error
from lits_mapeval.sql_tools import ReadOnlyDatabase, make_tools


@pytest.fixture
def city(tmp_path: Path) -> Path:
    return build_database(tmp_path / "city.sqlite", seed=3)


@pytest.fixture
def tools(city: Path) -> Iterator[list[BaseTool]]:
    database = ReadOnlyDatabase(city, time_budget=2.0, max_rows=20)
    yield make_tools(database)
    database.close()


def _query(tools: list[BaseTool], sql: str) -> str:
    return execute_tool_action(json.dumps({"tool": "query_sql", "args": {"query": sql}}), tools)


@pytest.mark.parametrize(
    "sql, name",
    [
        ("SELECT sqlite_version()", "sqlite_version"),
        ("SELECT Load_Extension ('/tmp/x.so')", "load_extension"),
        ("SELECT \"load_extension\"('/tmp/x.so')", "load_extension"),
        ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
        ("SELECT name FROM places WHERE sqlite_compileoption_used('ENABLE_FTS3')", "sqlite_compileoption_used"),
    ],
    ids=[
        "sqlite_version",
        "load_extension_mixed_case",
        "load_extension_quoted",
        "fts3_tokenizer",
        "compile_options_in_a_where",
    ],
)
def test_a_sqlite_function_not_on_the_allow_list_is_refused_in_one_line_naming_it(tools, sql, name):
    observation = _query(tools, sql)
    assert observation == (
        f"SQL error: {name}() is not on the allow-list of SQLite functions a query may call "
        "(aggregates, math, text, date/time and casts; see the mapeval plugin README)"
    )


def test_the_sql_validator_names_the_function_that_is_not_on_the_allow_list(city):
    assert compile_error(city, "SELECT sqlite_source_id()") == (
        "sqlite_source_id() is not on the allow-list of SQLite functions a query may call (aggregates, math, "
        "text, date/time and casts; see the mapeval plugin README)"
    )


def test_the_functions_a_map_question_needs_still_answer_on_sqlite(tools):
    sql = (
        "SELECT types, count(*), round(avg(rating), 2), max(rating), group_concat(name, ', '), "
        "sum(user_ratings_total), min(lower(substr(name, 1, 3))), length(max(address)), "
        "max(rank) FROM (SELECT *, rank() OVER (PARTITION BY types ORDER BY rating DESC) AS rank FROM places) "
        "WHERE name LIKE '%a%' AND coalesce(price_level, 0) >= 0 GROUP BY types"
    )
    observation = _query(tools, sql)
    assert not observation.startswith(("SQL error", "Query stopped")), observation


class RecordingSource:
    """A question source that records every statement (with its parameters inlined) the generator runs."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.statements: list[str] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        inlined = sql
        for value in params:
            literal = str(value) if isinstance(value, (int, float)) else "'" + str(value).replace("'", "''") + "'"
            inlined = inlined.replace("?", literal, 1)
        self.statements.append(inlined)
        return self.conn.execute(sql, params)


def gold_statements(city: Path) -> list[str]:
    """Every statement the plugin's question generator runs to compute its gold answers (all classes)."""
    import sqlite3

    conn = sqlite3.connect(city)
    try:
        source = RecordingSource(conn)
        for seed in range(3):
            generate_questions_from(source, seed=seed, per_class=2)
        return list(dict.fromkeys(source.statements))
    finally:
        conn.close()


def test_the_plugins_own_gold_sql_passes_the_sqlite_allow_list(city, tools):
    statements = gold_statements(city)
    assert len(statements) > 10
    for sql in statements:
        observation = _query(tools, sql)
        assert not observation.startswith(("SQL error", "Query stopped")), (sql, observation)


def test_the_plugins_own_gold_sql_names_no_unlisted_postgresql_function(city):
    for sql in gold_statements(city):
        assert pg_guard.refusal(sql) is None, sql
        calls, attributes = pg_guard.unlisted_names(sql)
        assert not calls, (sql, calls)  # aliases and columns after a "." are the server's to tell apart


def test_every_name_written_as_a_call_or_an_attribute_is_found_however_it_is_spelled():
    sql = (
        'SELECT TS_STAT(1), pg_catalog . "ts_stat" /* ( */ (2), (x).query_to_xml, "Mixed"(3), '
        "lower(name), c.name FROM places AS c(name) WHERE x IN (1) AND EXISTS (SELECT 1)"
    )
    assert pg_guard.unlisted_names(sql) == (["Mixed", "c", "ts_stat"], ["query_to_xml"])
