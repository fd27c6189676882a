"""MapEval-SQL on PostgreSQL under hostile SQL: every case comes back as one observation line and leaves every
table's checksum unchanged, on the read-only role and on a superuser connection forced with
``allow_privileged_role`` (where only the READ ONLY transaction, the statement checks and the function
allow-list stand in the way)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from lits.tools import BaseTool, execute_tool_action
from lits_mapeval import pg_guard
from lits_mapeval.pg_database import ReadOnlyPostgres
from lits_mapeval.sql_tools import make_tools
from tests.mapeval.postgres.conftest import PgServer, table_checksums
from tests.mapeval.test_sql_allow_list import gold_statements

BUDGET = 0.5
STOPPED, REFUSED, ROWS = "Query stopped", "SQL error", ""
BOUNDED = "Query stopped|SQL error"  # the time budget or temp_file_limit, whichever comes first
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
PROOF = "/tmp/lits-pg-hostile-proof"  # a file a hostile statement would create on the server

SHARED_WITH_SQLITE: dict[str, tuple[str, str]] = {  # the SQLite catalogue's cases that mean the same here
    "statement_of_10_MB": ("SELECT '" + "x" * 10_000_000 + "'", REFUSED),
    "1000_stacked_statements": ("SELECT 1;" * 1000, REFUSED),
    "300_stacked_statements_under_the_length_cap": ("SELECT 1;" * 300, REFUSED),
    "5000_nested_parentheses": ("SELECT " + "(" * 5000 + "1" + ")" * 5000, REFUSED),
    "1500_nested_parentheses_under_the_length_cap": ("SELECT " + "(" * 1500 + "1" + ")" * 1500, ROWS),
    "sum_of_1500_ones_under_the_length_cap": ("SELECT " + "+".join(["1"] * 1500), ROWS),
    "like_pattern_of_1_kB": ("SELECT name FROM places WHERE name LIKE '" + "%a" * 500 + "'", ROWS),
    "doubling_rows_cte": (
        "WITH RECURSIVE d(n) AS (SELECT 1 UNION ALL SELECT d.n FROM d, "
        "(SELECT 1 UNION ALL SELECT 2) AS two) SELECT count(*) FROM d",
        BOUNDED,
    ),
    "endless_cte": (ENDLESS, BOUNDED),
    "endless_distinct_cte": (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION SELECT x + 1 FROM c) SELECT count(*) FROM c",
        BOUNDED,
    ),
    "three_way_cross_join": ("SELECT count(*) FROM distances a, distances b, distances c", BOUNDED),
    "begin_a_transaction": ("BEGIN", REFUSED),
    "savepoint": ("SAVEPOINT keep", REFUSED),
    "delete": ("DELETE FROM places", REFUSED),
    "drop_table": ("DROP TABLE places", REFUSED),
    "update": ("UPDATE places SET rating = 0", REFUSED),
    "insert": ("INSERT INTO places (place_id, name, types, lat, lng) VALUES ('x', 'x', 'x', 0, 0)", REFUSED),
    "create_table": ("CREATE TABLE stolen (x int)", REFUSED),
    "vacuum": ("VACUUM", REFUSED),
    "reindex": ("REINDEX TABLE places", REFUSED),
    "a_select_then_a_drop": ("SELECT 1; DROP TABLE places", REFUSED),
}
POSTGRES_OWN: dict[str, tuple[str, str]] = {
    "copy_to_program": (f"COPY places TO PROGRAM 'touch {PROOF}'", REFUSED),
    "copy_to_a_file": (f"COPY (SELECT 1) TO '{PROOF}'", REFUSED),
    "copy_from_a_file": ("COPY places FROM '/etc/hostname'", REFUSED),
    "pg_sleep_1e6": ("SELECT pg_sleep(1e6)", BOUNDED),
    "generate_series_of_10_to_the_12_rows": ("SELECT count(*) FROM generate_series(1, 1000000000000)", BOUNDED),
    "all_rows_of_generate_series_10_to_the_12": ("SELECT * FROM generate_series(1, 1000000000000)", BOUNDED),
    "pg_read_file": ("SELECT pg_read_file('/etc/passwd')", REFUSED),
    "pg_read_binary_file_quoted": ("SELECT \"pg_read_binary_file\"('/etc/passwd')", REFUSED),
    "pg_ls_dir": ("SELECT * FROM pg_ls_dir('.')", REFUSED),
    "lo_import": ("SELECT lo_import('/etc/passwd')", REFUSED),
    "lo_export": (f"SELECT lo_export(1, '{PROOF}')", REFUSED),
    "dblink": ("SELECT * FROM dblink('dbname=city', 'DELETE FROM places') AS t(x text)", REFUSED),
    "create_extension": ("CREATE EXTENSION dblink", REFUSED),
    "set_role": ("SET ROLE postgres", REFUSED),
    "set_session_authorization": ("SET SESSION AUTHORIZATION postgres", REFUSED),
    "set_default_transaction_read_only_off": ("SET default_transaction_read_only = off", REFUSED),
    "set_config_read_only_off": ("SELECT set_config('default_transaction_read_only', 'off', false)", REFUSED),
    "set_transaction_read_write": ("SET TRANSACTION READ WRITE", REFUSED),
    "a_write_through_a_cte": ("WITH gone AS (DELETE FROM places RETURNING *) SELECT count(*) FROM gone", REFUSED),
    "an_update_through_a_cte": ("WITH x AS (UPDATE places SET rating = 0 RETURNING 1) SELECT 1", REFUSED),
    "select_into_a_new_table": ("SELECT * INTO stolen FROM places", REFUSED),
    "a_dollar_quoted_do_block": ("DO $$BEGIN DELETE FROM places; END$$", REFUSED),
    "query_to_xml_runs_a_string": ("SELECT query_to_xml('DELETE FROM places RETURNING 1', true, true, '')", REFUSED),
    "breaking_out_of_the_subquery": ("SELECT 1) AS x; DELETE FROM places; SELECT (1", REFUSED),
    "breaking_out_through_quoted_parentheses": ('SELECT 1 AS "(" ) AS x UNION ALL (SELECT 2 AS ")"', REFUSED),
    "breaking_out_through_a_dollar_quote_the_guard_does_not_know": (
        "SELECT $é$($é$ AS c0) AS x UNION ALL SELECT * FROM (SELECT repeat('x', 30000000) AS c0, $é$)$é$ AS b",
        REFUSED,
    ),
    "an_unclosed_comment": ("SELECT 1 /* ", REFUSED),
    "an_unclosed_dollar_quote": ("SELECT $q$ x", REFUSED),
    "a_unicode_escaped_identifier": ("SELECT U&\"pg\\005fread_file\"('/etc/passwd')", REFUSED),
    "nextval_writes": ("SELECT nextval('places_seq')", REFUSED),
    "select_for_update": ("SELECT * FROM places FOR UPDATE", REFUSED),
    "lock_table": ("LOCK TABLE places", REFUSED),
    "terminate_the_other_backends": ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", REFUSED),
    "password_hashes": ("SELECT rolname, rolpassword FROM pg_authid", REFUSED),
    "password_hashes_as_xml": ("SELECT table_to_xml('pg_catalog.pg_authid', true, false, '')", REFUSED),
    "a_table_as_xml": ("SELECT table_to_xml('places', true, false, '')", REFUSED),
    "a_schema_as_xml": ("SELECT schema_to_xml('pg_catalog', true, false, '')", REFUSED),
    "the_database_as_xml": ("SELECT database_to_xml(true, false, '')", REFUSED),
    "a_table_and_its_schema_as_xml": ("SELECT table_to_xml_and_xmlschema('places', true, false, '')", REFUSED),
    "reset_the_statistics": ("SELECT pg_stat_reset()", REFUSED),
    "an_advisory_lock_held_past_the_call": ("SELECT pg_advisory_lock(1)", REFUSED),
    "a_10_MB_value_is_cut_on_the_server": ("SELECT repeat('x', 10000000)", ROWS),
}
HASHES = "SELECT to_tsvector(rolpassword) FROM pg_authid"  # SQL text: only a function that runs it could read it
SQL_TEXT_AND_SERVER_STATE: dict[str, tuple[str, str]] = {  # issue 41: refused because they are not allow-listed
    "ts_stat_runs_a_query_string": (f"SELECT * FROM ts_stat('{HASHES}')", REFUSED),
    "ts_stat_schema_qualified": (f"SELECT word FROM pg_catalog.ts_stat('{HASHES}')", REFUSED),
    "ts_stat_quoted": (f"SELECT word FROM \"ts_stat\"('{HASHES}')", REFUSED),
    "ts_stat_upper_case_with_a_comment_before_the_parenthesis": (
        f"SELECT word FROM TS_STAT /* ( */\n  ('{HASHES}')",
        REFUSED,
    ),
    "ts_stat_quoted_and_schema_qualified_across_lines": (
        f'SELECT word FROM "pg_catalog"\n.\n"ts_stat"\t(\'{HASHES}\')',
        REFUSED,
    ),
    "ts_stat_as_an_attribute_of_a_text": (f"SELECT ('{HASHES}'::text).ts_stat", REFUSED),
    "ts_stat_as_an_attribute_of_a_column": ("SELECT (p.name).ts_stat FROM places p", REFUSED),
    "ts_stat_with_a_dollar_quoted_query": (
        "SELECT * FROM ts_stat($q$SELECT to_tsvector(rolname) FROM pg_roles$q$)",
        REFUSED,
    ),
    "query_to_xml_and_xmlschema": (
        "SELECT query_to_xml_and_xmlschema('SELECT * FROM pg_authid', true, false, '')",
        REFUSED,
    ),
    "xpath_over_query_to_xml": (
        "SELECT xpath('//text()', query_to_xml('SELECT rolpassword FROM pg_authid', true, false, ''))",
        REFUSED,
    ),
    "cursor_to_xml": ("SELECT cursor_to_xml('c', 10, true, false, '')", REFUSED),
    "table_to_xmlschema": ("SELECT table_to_xmlschema('places', true, false, '')", REFUSED),
    "a_server_setting": ("SELECT current_setting('data_directory')", REFUSED),
    "every_server_setting": ("SELECT name, setting FROM pg_settings", REFUSED),
    "the_configuration_files": ("SELECT * FROM pg_catalog.pg_file_settings", REFUSED),
    "the_build_configuration": ('SELECT * FROM "pg_config"', REFUSED),
    "a_server_file_schema_qualified": ("SELECT pg_catalog.pg_read_file('/etc/hostname')", REFUSED),
    "other_sessions": ("SELECT query FROM pg_stat_activity", REFUSED),
    "the_information_schema": ("SELECT * FROM information_schema.user_mapping_options", REFUSED),
    "the_server_version": ("SELECT version()", REFUSED),
    "an_unlisted_function_on_a_row_by_attribute": ("SELECT p.row_to_json FROM places p", REFUSED),
}
ORDINARY_FUNCTIONS: dict[str, str] = {  # what a map question needs stays allowed
    "aggregates_and_rounding": "SELECT types, count(*), round(avg(rating)::numeric, 2), max(rating), "
    "string_agg(name, ', ' ORDER BY name) FROM places GROUP BY types",
    "a_window_function": "SELECT name, rank() OVER (PARTITION BY types ORDER BY rating DESC) FROM places",
    "haversine_distance": "SELECT 2 * 6371000 * asin(sqrt(power(sin(radians(b.lat - a.lat) / 2), 2) + "
    "cos(radians(a.lat)) * cos(radians(b.lat)) * power(sin(radians(b.lng - a.lng) / 2), 2))) "
    "FROM places a, places b WHERE a.place_id = 'P000' AND b.place_id = 'P001'",
    "text_functions_and_casts": "SELECT upper(left(name, 3)), lower(pg_catalog.btrim(name)), length(name), "
    "split_part(opening_hours, '-', 1)::time, CAST(rating AS numeric(3, 1)), "
    "concat(name, ' (', types, ')'), \"substring\"(address, 1, 4), substring(address FROM 1 FOR 4) FROM places",
    "a_recursive_cte_with_a_column_list": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
    "WHERE x < 3) SELECT c.x, coalesce(nullif(c.x, 2), 0) FROM c",
    "a_filtered_count_and_a_qualified_column": "SELECT count(*) FILTER (WHERE d.mode = 'walking'), "
    "min(d.duration_s) / 60.0 FROM public.distances AS d",
    "date_and_time": "SELECT date_trunc('hour', now()) <= now(), extract(hour FROM '10:30'::time), "
    "make_interval(mins => 5) > interval '1 minute'",
}
CATALOGUE = SHARED_WITH_SQLITE | POSTGRES_OWN | SQL_TEXT_AND_SERVER_STATE


@pytest.fixture(scope="module", params=["reader", "postgres"])
def pg_tools(
    request: pytest.FixtureRequest, pg_server: PgServer, pg_city: str, monkeypatch_module: pytest.MonkeyPatch
) -> Iterator[list[BaseTool]]:
    database = ReadOnlyPostgres(
        pg_server.url(request.param), time_budget=BUDGET, max_rows=20, allow_privileged_role=request.param == "postgres"
    )
    yield make_tools(database)
    database.close()


@pytest.fixture(scope="module")
def superuser_tools(pg_server: PgServer, pg_city: str) -> Iterator[list[BaseTool]]:
    """The tools on a superuser connection forced with ``allow_privileged_role`` (issue 41's set-up)."""
    database = ReadOnlyPostgres(pg_server.superuser_url, time_budget=BUDGET, max_rows=20, allow_privileged_role=True)
    yield make_tools(database)
    database.close()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    from tests.mapeval.postgres.conftest import READER_PASSWORD

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGPASSWORD", READER_PASSWORD)
        yield patch


def _query(tools: list[BaseTool], sql: str) -> str:
    return execute_tool_action(json.dumps({"tool": "query_sql", "args": {"query": sql}}), tools)


@pytest.fixture(scope="module")
def pristine(pg_server: PgServer, pg_city: str) -> dict[str, str]:
    """The tables and their checksums before any hostile statement."""
    return table_checksums(pg_server)


@pytest.mark.parametrize("sql, starts", list(CATALOGUE.values()), ids=list(CATALOGUE))
def test_hostile_sql_is_one_observation_line_and_every_table_checksum_is_unchanged(
    pg_server, pristine, pg_tools, sql, starts
):
    observation = _query(pg_tools, sql)
    if starts:
        assert observation.startswith(tuple(f"{s}: " for s in starts.split("|"))), observation[:300]
        assert "\n" not in observation
    else:
        assert len(observation) <= 4000 + 100 and not observation.startswith(("SQL error", "Query stopped")), (
            observation[:300]
        )
    assert table_checksums(pg_server) == pristine
    assert not Path(PROOF).exists()


@pytest.mark.parametrize(
    "sql",
    [
        SQL_TEXT_AND_SERVER_STATE[case][0]
        for case in (
            "ts_stat_runs_a_query_string",
            "ts_stat_schema_qualified",
            "ts_stat_quoted",
            "ts_stat_upper_case_with_a_comment_before_the_parenthesis",
            "ts_stat_as_an_attribute_of_a_text",
        )
    ],
)
def test_ts_stat_is_refused_as_not_on_the_allow_list_even_for_a_superuser(superuser_tools, sql):
    observation = _query(superuser_tools, sql)
    assert observation.startswith("SQL error: ts_stat() is not on the allow-list of PostgreSQL functions"), observation[
        :300
    ]
    assert "SCRAM" not in observation


@pytest.mark.parametrize("sql", list(ORDINARY_FUNCTIONS.values()), ids=list(ORDINARY_FUNCTIONS))
def test_the_functions_a_map_question_needs_still_answer_for_a_superuser(superuser_tools, sql):
    observation = _query(superuser_tools, sql)
    assert not observation.startswith(("SQL error", "Query stopped")), observation[:300]


def test_the_plugins_own_gold_sql_answers_on_postgresql_for_both_roles(pg_tools, sqlite_city):
    for sql in gold_statements(sqlite_city):
        observation = _query(pg_tools, sql)
        assert not observation.startswith(("SQL error", "Query stopped")), (sql, observation)


def test_a_runaway_query_is_stopped_with_the_budget_named_and_the_next_query_answers(pg_tools):
    endless = "SELECT count(*) FROM distances a, distances b, distances c, distances d"  # 7.5e12 rows
    assert _query(pg_tools, endless) == "Query stopped: it ran longer than the 0.5 s budget"
    assert _query(pg_tools, "SELECT count(*) AS n FROM places") == "n\n24"


def test_every_query_runs_in_a_read_only_transaction_under_the_time_budget(pg_tools, monkeypatch):
    monkeypatch.setattr(pg_guard, "POSTGRES", pg_guard.POSTGRES | {"current_setting"})  # only to look
    observation = _query(
        pg_tools,
        "SELECT current_setting('transaction_read_only') AS tx, "
        "current_setting('default_transaction_read_only') AS session, "
        "current_setting('statement_timeout') AS timeout",
    )
    header, row = observation.splitlines()
    assert header == "tx | session | timeout"
    tx, session, timeout = row.split(" | ")
    assert (tx, session) == ("on", "on")
    assert timeout.endswith("ms") and 0 < int(timeout.removesuffix("ms")) <= BUDGET * 1000
