"""MapEval-SQL over PostgreSQL (psycopg 3): the same tools, the same guarantees as over SQLite.

* The URL may not hold a password (it would reach ``config.json`` and logs): libpq reads it from
  ``PGPASSWORD`` or ``~/.pgpass``. Every message names the URL as ``postgresql://user@host:port/name``.
* Every session starts with ``default_transaction_read_only=on`` and ``statement_timeout`` = the time budget;
  every query runs in a READ ONLY transaction that is rolled back afterwards.
* :mod:`lits_mapeval.pg_guard` refuses what those do not stop (``COPY``, ``SET ROLE``, the system catalogues...)
  before anything is sent, and every function not on the allow-list (:mod:`lits_mapeval.sql_functions`) is
  refused once the server has said which of the query's names are functions; connecting as a superuser prints
  a one-line warning.
* The statement is first parsed alone by the server (nothing runs) to learn its columns, then run as a
  subquery with long values cut on the server and ``max_rows + 1`` rows at most, so a huge value or result
  never crosses the wire.
* Rows are rendered as SQLite's are (``render_rows``): numerics (from ``avg``, ``round``, ``x / 60.0``, REAL in
  SQLite) print as floats, booleans as 1/0, so equal values give equal observations. Columns without a name
  differ: PostgreSQL calls ``count(*)`` "count" where SQLite repeats the expression.
* Connections come from a small pool (one per worker); the caller's time-out cancels the running query.
* A server that is down, unreachable or out of connections is not the model's doing: the tools raise
  :class:`~lits.tools.ToolUnavailable`, so the instance fails (and is retried, or left to ``--resume``) instead
  of finishing on a "database was busy" observation. Errors in the model's SQL stay observations.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from decimal import Decimal
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from lits.api import ToolUnavailable
from lits_mapeval import pg_guard
from lits_mapeval.pg_url import safe_url
from lits_mapeval.sql_functions import not_listed
from lits_mapeval.sql_guard import MAX_VALUE_BYTES
from lits_mapeval.sql_tools import _one_line, render_rows

if TYPE_CHECKING:
    from psycopg import Connection

POOL_SIZE = 4
"""Connections at most: one per worker of a run (``--concurrency``); more workers wait for one."""
CONNECT_TIMEOUT_S = 10
PROBE_AFTER_S = 1.0
"""Seconds without a pooled connection after which the server itself is probed (down, or out of connections?)."""
# SQLSTATEs of a server that shut down, is starting or has no connection slot left: never the model's doing
_SERVER_GONE = {"57P01", "57P02", "57P03", "53300"}
SUPERUSER_TEMP_FILE_LIMIT = "256MB"
# Result types kept as they are (bounded in size, rendered like SQLite's numbers); others are cut to text.
_NUMERIC_TYPES = {"int2", "int4", "int8", "float4", "float8", "numeric", "bool", "oid"}
SQLITE_TYPES = {
    "text": "TEXT",
    "character varying": "TEXT",
    "character": "TEXT",
    "double precision": "REAL",
    "real": "REAL",
    "bigint": "INTEGER",
    "integer": "INTEGER",
    "smallint": "INTEGER",
    "bytea": "BLOB",
}
_warned: set[str] = set()
# Which of the query's unlisted names are functions: any written as a call; after a "." only when no table of
# the database's own schemas has a column by that name (then PostgreSQL reads it as the column).
_FUNCTIONS_AMONG = """
SELECT n FROM unnest(%s::text[]) AS n WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE p.proname = n)
UNION
SELECT n FROM unnest(%s::text[]) AS n WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE p.proname = n)
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
                  JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
                  WHERE a.attname = n AND a.attnum > 0 AND NOT a.attisdropped
                    AND s.nspname <> 'information_schema' AND s.nspname NOT LIKE 'pg\\_%%')
ORDER BY 1
"""
# The pool's reconnect warnings (several lines each) would reach stderr through logging's last resort; an
# unreachable server is reported by the tools instead, in one line.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def _reason(exc: BaseException) -> str:
    """The first line of a driver error, without libpq's 'connection failed:' framing."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _one_line(text.removeprefix("connection failed: "))


def _server_lost(conn: Connection, exc: BaseException) -> bool:
    """True when ``exc`` came from the connection or the server, not from the statement."""
    state = getattr(exc, "sqlstate", None) or ""
    return bool(conn.broken or conn.closed or state.startswith("08") or state in _SERVER_GONE)


def show(value: object) -> str:
    """A value as SQLite's row text shows the equal value."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, Decimal):  # numeric comes from avg, round, x / 60.0...: REAL in SQLite
        return str(float(value))
    if isinstance(value, memoryview):
        return str(bytes(value))
    return str(value)


#: Built-in roles whose members can write, read server files, run programs or signal other sessions.
PRIVILEGED_ROLES = (
    "pg_write_all_data",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_signal_backend",
    "pg_checkpoint",
    "pg_create_subscription",
)
_ROLE_RIGHTS = """
SELECT current_user, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
       ARRAY(SELECT b.rolname::text FROM pg_roles b WHERE b.rolname = ANY(%s) AND pg_has_role(current_user, b.oid,
             'MEMBER') ORDER BY 1),
       ARRAY(SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
               AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%%'
               AND (has_table_privilege(c.oid, 'INSERT') OR has_table_privilege(c.oid, 'UPDATE')
                    OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE'))
             ORDER BY 1 LIMIT 3)
FROM pg_roles WHERE rolname = current_user
"""


def privileges(conn: Any) -> tuple[str, str]:
    """The connected role and what it may do beyond reading ("" when nothing): superuser, role attributes,
    membership in a privileged built-in role, or a write privilege on a table."""
    row = conn.execute(_ROLE_RIGHTS, (list(PRIVILEGED_ROLES),)).fetchone()
    conn.rollback()
    role, superuser, createrole, createdb, replication, bypassrls, members, writable = row
    if superuser:  # may do anything: the rest follows
        return str(role), "is a superuser"
    found = [
        name
        for name, flag in (
            ("is a superuser", superuser),
            ("may create roles", createrole),
            ("may create databases", createdb),
            ("may replicate", replication),
            ("bypasses row security", bypassrls),
        )
        if flag
    ]
    if members:
        found.append("is a member of " + ", ".join(members))
    if writable:
        found.append("may write to " + ", ".join(writable))
    return str(role), "; ".join(found)


class ReadOnlyPostgres:
    """The read-only database the tools use, on a PostgreSQL server (interface of ``ReadOnlyDatabase``)."""

    dialect = "PostgreSQL"

    def __init__(
        self,
        url: str,
        time_budget: float = 2.0,
        max_rows: int = 50,
        max_chars: int = 4000,
        max_value_bytes: int = MAX_VALUE_BYTES,
        max_wait: float | None = None,
        pool_size: int = POOL_SIZE,
        allow_privileged_role: bool = False,
    ) -> None:
        self.url = safe_url(url)
        from lits.api import require

        install = "lits-plugin-mapeval[postgresql]"
        psycopg = require("psycopg", install=install, what="MapEval-SQL on PostgreSQL", package="psycopg 3")
        ConnectionPool = require(
            "psycopg_pool", install=install, what="MapEval-SQL on PostgreSQL", package="psycopg-pool"
        ).ConnectionPool
        self.time_budget, self.max_rows, self.max_chars = time_budget, max_rows, max_chars
        self.max_value_bytes = max_value_bytes
        self.max_wait = 5 * time_budget if max_wait is None else max_wait
        # standard_conforming_strings: backslashes in '...' are literal, as pg_guard's lexer reads them
        options = (
            f"-c default_transaction_read_only=on -c statement_timeout={int(time_budget * 1000)} "
            "-c standard_conforming_strings=on"
        )
        self._kwargs: dict[str, Any] = {
            "options": options,
            "connect_timeout": CONNECT_TIMEOUT_S,
            "application_name": "lits-mapeval",
        }
        try:  # a plain connection first: a server that is down or refuses us is one line now, not a pool time-out
            with psycopg.connect(url, **self._kwargs) as probe:
                self.superuser = probe.info.parameter_status("is_superuser") == "on"
                role, rights = privileges(probe)
        except psycopg.Error as exc:
            raise ValueError(f"cannot connect to PostgreSQL at {self.url}: {_reason(exc)}") from None
        if rights and not allow_privileged_role:
            raise ValueError(
                f"MapEval-SQL will not run the model's SQL as role {role!r} at {self.url}: it "
                f"{rights}; connect as a role that may only read (see the plugin README), or pass "
                "--dataset-arg allow_privileged_role=true to take the risk"
            )
        if self.superuser:  # a superuser may set what a role cannot: cap the temp files a sort or scan may write
            self._kwargs["options"] += f" -c temp_file_limit={SUPERUSER_TEMP_FILE_LIMIT}"
        if rights and self.url not in _warned:
            _warned.add(self.url)
            print(
                f"lits: warning: MapEval-SQL runs the model's SQL as role {role!r}, which {rights} "
                "(allow_privileged_role=true); only the READ ONLY transaction, the statement checks and the "
                "function allow-list stand between that SQL and the server",
                file=sys.stderr,
            )
        self._dsn = url
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs=self._kwargs,
            configure=self._configure,
            open=True,
            name="lits-mapeval",
        )
        self._state = threading.Lock()
        self._running: dict[int, Connection] = {}  # thread id -> the connection running its query
        self._waiting: set[int] = set()
        self._cancelled: set[int] = set()  # threads whose caller gave up (waiting or running)

    @staticmethod
    def _configure(conn: Connection) -> None:
        conn.autocommit = False
        conn.read_only = True  # psycopg opens every transaction with BEGIN READ ONLY

    # -- running one query -------------------------------------------------------------------------------

    def query(self, sql: str) -> str:
        """Run one read query; always returns text (rows, a note or a one-line reason)."""
        import psycopg

        refused = pg_guard.refusal(sql)
        if refused:
            return f"SQL error: {refused}"
        body = pg_guard.statement_body(sql)
        started = time.monotonic()
        try:
            with self._connection() as conn:
                try:
                    unlisted = self._unlisted_functions(conn, body)
                    if unlisted:
                        return f"SQL error: {not_listed(unlisted, 'PostgreSQL')}"
                    return self._run(conn, body, started)
                except psycopg.errors.QueryCanceled:
                    if threading.get_ident() in self._cancelled:
                        return "Query stopped: the tool call was cancelled"
                    return f"Query stopped: it ran longer than the {self.time_budget:g} s budget"
                except psycopg.Error as exc:
                    if _server_lost(conn, exc):
                        raise self._unavailable(exc) from None
                    primary = getattr(getattr(exc, "diag", None), "message_primary", None)
                    return f"SQL error: {_one_line(primary or _reason(exc))}"
                finally:
                    self._end_transaction(conn)
        except TimeoutError as exc:
            return f"Query stopped: {exc}"

    @staticmethod
    def _unlisted_functions(conn: Connection, body: str) -> list[str]:
        """The functions ``body`` would call that are not on the allow-list (the server's catalogue decides
        which of its unlisted names are functions; in the call's own READ ONLY transaction)."""
        calls, attributes = pg_guard.unlisted_names(body)
        if not calls and not attributes:
            return []
        return [row[0] for row in conn.execute(_FUNCTIONS_AMONG, (calls, attributes)).fetchall()]

    def _run(self, conn: Connection, body: str, started: float) -> str:
        columns = self._describe(conn, body)
        names = [self._type_name(conn, oid) for _, oid in columns]
        with conn.cursor() as cur:
            left_ms = max(1, int((self.time_budget - (time.monotonic() - started)) * 1000))
            # opens the READ ONLY transaction
            cur.execute(f"SET LOCAL statement_timeout = {left_ms}")
            aliases = f"({', '.join(f'c{k}' for k in range(len(columns)))})" if columns else ""
            picks = ", ".join(
                f"c{k}" if t in _NUMERIC_TYPES else f"left(c{k}::text, {self.max_value_bytes + 1})"
                for k, t in enumerate(names)
            )
            # binary=True: the extended query protocol, which cannot carry a second statement
            cur.execute(
                f"SELECT {picks} FROM (\n{body}\n) AS lits_query{aliases} LIMIT {self.max_rows + 1}", binary=True
            )
            return render_rows([name for name, _ in columns], cur, self.max_rows, self.max_chars, show)

    @staticmethod
    def _describe(conn: Any, body: str) -> list[tuple[str, int]]:
        """The statement's result columns (name, type oid), from the server's parser alone: nothing runs.

        A statement the server parses on its own has its parentheses, literals and comments closed in the
        server's own reading, so it cannot break out of the subquery it is then wrapped in, whatever the
        guard's lexer made of it."""
        from psycopg import errors, pq

        encoding = conn.info.encoding
        parsed = conn.pgconn.prepare(b"", body.encode(encoding))
        if parsed.status != pq.ExecStatus.COMMAND_OK:
            raise errors.error_from_result(parsed, encoding=encoding)
        described = conn.pgconn.describe_prepared(b"")
        if described.status != pq.ExecStatus.COMMAND_OK:
            raise errors.error_from_result(described, encoding=encoding)
        return [(described.fname(k).decode(encoding), described.ftype(k)) for k in range(described.nfields)]

    @staticmethod
    def _type_name(conn: Connection, oid: int) -> str:
        info = conn.adapters.types.get(oid)
        return info.name if info is not None and info.oid == oid else "other"  # arrays share their element's info

    def _unavailable(self, exc: BaseException) -> ToolUnavailable:
        return ToolUnavailable(f"PostgreSQL at {self.url} is unavailable: {_reason(exc)}")

    def _probe(self) -> None:
        """Raise :class:`ToolUnavailable` when a fresh connection to the server fails (down, unreachable, full)."""
        import psycopg

        try:
            psycopg.connect(self._dsn, **{**self._kwargs, "connect_timeout": 2}).close()
        except psycopg.Error as exc:
            raise self._unavailable(exc) from None

    def _end_transaction(self, conn: Connection) -> None:
        """Nothing outlives a call: the READ ONLY transaction is rolled back (a broken connection is dropped)."""
        try:
            conn.rollback()
        except Exception:
            pass

    # -- the pool and interruption ----------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection for this thread, waited for at most ``max_wait`` s and not once the caller gave up."""
        from psycopg_pool import PoolTimeout

        me = threading.get_ident()
        give_up = time.monotonic() + self.max_wait
        with self._state:
            self._waiting.add(me)
        conn = None
        probe_at = time.monotonic() + PROBE_AFTER_S
        try:
            while conn is None:
                with self._state:
                    if me in self._cancelled:
                        raise TimeoutError("the tool call was cancelled")
                    idle = len(self._running) < self._pool.max_size  # no connection busy: the pool cannot connect
                if time.monotonic() >= give_up:
                    self._probe()
                    raise TimeoutError(f"the database was busy with other queries for {self.max_wait:g} s")
                if idle and time.monotonic() >= probe_at:
                    self._probe()
                    probe_at = time.monotonic() + PROBE_AFTER_S
                try:
                    conn = self._pool.getconn(timeout=0.1)
                except PoolTimeout:
                    continue
            with self._state:
                self._waiting.discard(me)
                self._running[me] = conn
            yield conn
        finally:
            with self._state:
                self._waiting.discard(me)
                self._running.pop(me, None)
                self._cancelled.discard(me)
            if conn is not None:
                self._pool.putconn(conn)

    def interrupt(self, thread_id: int | None) -> bool:
        """Cancel the query run by ``thread_id`` (or make it give up waiting); True when it will end promptly."""
        with self._state:  # held while cancelling, so the connection cannot go back to the pool meanwhile
            if thread_id is None:
                return False
            conn = self._running.get(thread_id)
            if conn is None and thread_id not in self._waiting:
                return False
            self._cancelled.add(thread_id)
            if conn is not None:
                try:
                    conn.cancel_safe(timeout=1.0)
                except Exception:
                    return False
        return True

    # -- fixed queries ----------------------------------------------------------------------------------------

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with self._connection() as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except psycopg.Error as exc:
                if _server_lost(conn, exc):
                    raise self._unavailable(exc) from None
                raise
            finally:
                self._end_transaction(conn)

    def tables(self) -> list[str]:
        return [
            r[0]
            for r in self._rows(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_type = 'BASE TABLE' ORDER BY table_name COLLATE \"C\""
            )
        ]

    def columns(self, table: str) -> list[str]:
        """Column names of ``table`` in schema order (empty for an unknown table)."""
        return [
            r[0]
            for r in self._rows(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s ORDER BY ordinal_position",
                (table,),
            )
        ]

    def describe(self, table: str) -> str:
        """Columns and types of ``table``, with SQLite's type names, as the SQLite tool shows them."""
        rows = self._rows(
            "SELECT column_name::text, data_type::text FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        )
        typed = [(name, SQLITE_TYPES.get(kind, kind.upper())) for name, kind in rows]
        return render_rows(["name", "type"], typed, self.max_rows, self.max_chars)

    def question_rows(self) -> QmarkConnection:
        """A connection-like object for :func:`lits_mapeval.questions.generate_questions_from`."""
        return QmarkConnection(self)

    def close(self) -> None:
        self._pool.close()


class QmarkConnection:
    """``execute(sql, params)`` with SQLite's ``?`` placeholders, returning rows with ``fetchone``/``fetchall``:
    the part of ``sqlite3.Connection`` the question generator uses, over the pool."""

    def __init__(self, db: ReadOnlyPostgres) -> None:
        self._db = db

    def execute(self, sql: str, params: Sequence[object] = ()) -> _Rows:
        return _Rows(self._db._rows(sql.replace("?", "%s"), tuple(params)))


class _Rows:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)
