"""MapEval-SQL on PostgreSQL under hostile SQL: every case comes back as one observation line and leaves every
table's checksum unchanged, on the read-only role and on a superuser connection forced with
``allow_privileged_role`` (where only the READ ONLY transaction and the refusal list stand in the way)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from lits.tools import BaseTool, execute_tool_action
from lits_mapeval.pg_database import ReadOnlyPostgres
from lits_mapeval.sql_tools import make_tools
from tests.mapeval.postgres.conftest import PgServer, table_checksums

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
    "doubling_rows_cte": ("WITH RECURSIVE d(n) AS (SELECT 1 UNION ALL SELECT d.n FROM d, "
                          "(SELECT 1 UNION ALL SELECT 2) AS two) SELECT count(*) FROM d", BOUNDED),
    "endless_cte": (ENDLESS, BOUNDED),
    "endless_distinct_cte": ("WITH RECURSIVE c(x) AS (SELECT 1 UNION SELECT x + 1 FROM c) SELECT count(*) FROM c",
                             BOUNDED),
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
    "pg_read_binary_file_quoted": ('SELECT "pg_read_binary_file"(\'/etc/passwd\')', REFUSED),
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
        REFUSED),
    "an_unclosed_comment": ("SELECT 1 /* ", REFUSED),
    "an_unclosed_dollar_quote": ("SELECT $q$ x", REFUSED),
    "a_unicode_escaped_identifier": ('SELECT U&"pg\\005fread_file"(\'/etc/passwd\')', REFUSED),
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
CATALOGUE = SHARED_WITH_SQLITE | POSTGRES_OWN


@pytest.fixture(scope="module", params=["reader", "postgres"])
def pg_tools(request: pytest.FixtureRequest, pg_server: PgServer, pg_city: str,
             monkeypatch_module: pytest.MonkeyPatch) -> Iterator[list[BaseTool]]:
    database = ReadOnlyPostgres(pg_server.url(request.param), time_budget=BUDGET, max_rows=20,
                                allow_privileged_role=request.param == "postgres")
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
def test_hostile_sql_is_one_observation_line_and_every_table_checksum_is_unchanged(pg_server, pristine, pg_tools,
                                                                                    sql, starts):
    observation = _query(pg_tools, sql)
    if starts:
        assert observation.startswith(tuple(f"{s}: " for s in starts.split("|"))), observation[:300]
        assert "\n" not in observation
    else:
        assert len(observation) <= 4000 + 100 and not observation.startswith(("SQL error", "Query stopped")), \
            observation[:300]
    assert table_checksums(pg_server) == pristine
    assert not Path(PROOF).exists()


def test_a_runaway_query_is_stopped_with_the_budget_named_and_the_next_query_answers(pg_tools):
    assert _query(pg_tools, "SELECT pg_sleep(1e6)") == "Query stopped: it ran longer than the 0.5 s budget"
    assert _query(pg_tools, "SELECT count(*) AS n FROM places") == "n\n24"


def test_every_query_runs_in_a_read_only_transaction_under_the_time_budget(pg_tools):
    observation = _query(pg_tools, "SELECT current_setting('transaction_read_only') AS tx, "
                                   "current_setting('default_transaction_read_only') AS session, "
                                   "current_setting('statement_timeout') AS timeout")
    header, row = observation.splitlines()
    assert header == "tx | session | timeout"
    tx, session, timeout = row.split(" | ")
    assert (tx, session) == ("on", "on")
    assert timeout.endswith("ms") and 0 < int(timeout.removesuffix("ms")) <= BUDGET * 1000
