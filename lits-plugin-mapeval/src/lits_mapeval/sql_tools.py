"""SQL tools for the model. LLM-written SQL is hostile input, so:

* the connection is read-only at the SQLite level (``mode=ro`` URI + ``query_only``) and hardened by
  :mod:`lits_mapeval.sql_guard` (authorizer, SQLite limits, heap limit, the printf guard),
* every statement runs in autocommit mode and its cursor is closed afterwards, so no transaction, lock or
  frozen snapshot outlives a call,
* every query has a time budget enforced by *interrupting* it (progress handler + a timer calling
  ``Connection.interrupt``), never by abandoning a running thread; the tools also stop a query when the
  caller's own time-out fires (:meth:`DatabaseTool.interrupt`),
* results are read one row at a time and capped in rows and characters, with a note,
* every failure of the model's SQL is one line of text for the model; a database file that cannot be read
  (gone, unreadable, a disk error) is not the model's doing and raises :class:`~lits.tools.ToolUnavailable`
  (the instance fails and is retried or left to ``--resume``), as :class:`Database` backends must.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Iterator, Protocol, Sequence

from pydantic import BaseModel, Field

from lits.api import BaseTool, ToolUnavailable
from lits_mapeval.sql_guard import MAX_MEMORY_MB, MAX_SQL_CHARS, MAX_VALUE_BYTES, harden


# SQLite messages of a file that cannot be read any more: the database's fault, never the model's
_FILE_LOST = (
    "disk I/O error",
    "unable to open database file",
    "database disk image is malformed",
    "file is not a database",
    "closed database",
)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def render_rows(
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    max_rows: int,
    max_chars: int,
    show: Callable[[object], str] = str,
) -> str:
    """A header and rows read one at a time; only ``max_rows`` rows and about ``max_chars`` characters are kept
    (the same text whatever the backend)."""
    lines = [" | ".join(str(c) for c in columns)]
    size, seen = len(lines[0]), 0
    for row in rows:
        seen += 1
        if seen > max_rows:
            break
        if size <= max_chars:
            line = " | ".join(show(v)[: max_chars + 1] for v in row)
            lines.append(line)
            size += len(line) + 1
    text = "\n".join(lines)
    notes = []
    if seen > max_rows:
        notes.append(f"[only the first {max_rows} rows are shown]")
    if len(text) > max_chars:
        text = text[:max_chars]
        notes.append("[output truncated]")
    return "\n".join([text, *notes]) if notes else text


class Database(Protocol):
    """What the tools need from a read-only database (SQLite here, PostgreSQL in :mod:`lits_mapeval.pg_database`).

    Errors of the model's SQL come back as text; a backend that is gone raises :class:`~lits.tools.ToolUnavailable`."""

    #: The SQL dialect queries must be written in, told to the model in the tool context.
    dialect: str

    def query(self, sql: str) -> str: ...
    def tables(self) -> list[str]: ...
    def columns(self, table: str) -> list[str]: ...
    def describe(self, table: str) -> str: ...
    def interrupt(self, thread_id: int | None) -> bool: ...
    def close(self) -> None: ...


class ReadOnlyDatabase:
    """One read-only connection, shared by tool calls (serialized by a lock, waited for a bounded time)."""

    dialect = "SQLite"

    def __init__(
        self,
        path: str | Path,
        time_budget: float = 2.0,
        max_rows: int = 50,
        max_chars: int = 4000,
        max_value_bytes: int = MAX_VALUE_BYTES,
        max_memory_mb: int = MAX_MEMORY_MB,
        max_wait: float | None = None,
    ) -> None:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"SQLite database not found: {path}")
        self.path = path
        self.time_budget, self.max_rows, self.max_chars = time_budget, max_rows, max_chars
        self.max_value_bytes, self.max_memory_mb = max_value_bytes, max_memory_mb
        self.max_wait = 5 * time_budget if max_wait is None else max_wait
        # Autocommit (isolation_level=None): the driver never opens a transaction of its own. The busy timeout
        # is short because SQLite's busy wait cannot be interrupted.
        self._conn = sqlite3.connect(
            f"file:{path.resolve()}?mode=ro",
            uri=True,
            check_same_thread=False,
            isolation_level=None,
            timeout=min(1.0, time_budget / 2),
            cached_statements=16,
        )
        self._guard = harden(self._conn, max_value_bytes, max_memory_mb)
        self._lock = threading.Lock()
        self._state = threading.Lock()  # guards the fields below against the timer and interrupt()
        self._owner: int | None = None  # thread running a query now
        self._waiting: set[int] = set()  # threads waiting for the lock
        self._cancelled: set[int] = set()  # waiting threads whose caller gave up

    # -- running one query -------------------------------------------------------------------------------

    def query(self, sql: str) -> str:
        """Run one statement; always returns text (rows, a note or a one-line reason)."""
        me = threading.get_ident()
        if not self._acquire(me):
            return f"Query stopped: {self._busy()}"
        try:
            self._guard.refusal = None
            timed_out = threading.Event()
            timer = threading.Timer(self.time_budget, self._on_budget, (me, timed_out))
            deadline = time.monotonic() + self.time_budget
            self._conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
            timer.start()
            try:
                return self._run(sql)
            except sqlite3.Error as exc:
                if any(lost in str(exc) for lost in _FILE_LOST):
                    raise ToolUnavailable(
                        f"SQLite database {self.path} is unavailable: {_one_line(str(exc))}"
                    ) from None
                return self._explain(exc, timed_out.is_set() or time.monotonic() > deadline)
            except MemoryError:
                return f"Query stopped: it needed more than the {self.max_memory_mb} MB memory budget"
            finally:
                timer.cancel()
                timer.join()  # no timer thread outlives the call
                self._conn.set_progress_handler(None, 0)
                self._end_transaction()
        finally:
            self._release()

    def _run(self, sql: str) -> str:
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql)
            return self._render(cursor)
        finally:
            cursor.close()  # resets the statement: a half-read result holds no shared lock

    def _render(self, cursor: sqlite3.Cursor) -> str:
        return render_rows([d[0] for d in cursor.description or []], cursor, self.max_rows, self.max_chars)

    def _explain(self, exc: sqlite3.Error, late: bool) -> str:
        message = str(exc)
        if "interrupted" in message:
            return (
                f"Query stopped: it ran longer than the {self.time_budget:g} s budget"
                if late
                else "Query stopped: the tool call was cancelled"
            )
        if "user-defined function raised exception" in message and self._guard.refusal:
            return f"SQL error: {self._guard.refusal}"
        if "string or blob too big" in message:
            return f"SQL error: a value or row would exceed {self.max_value_bytes} bytes (string or blob too big)"
        if "query string is too large" in message:
            return f"SQL error: the statement is longer than {MAX_SQL_CHARS} characters"
        if "one statement at a time" in message:
            return "SQL error: send one statement per call"
        if message.startswith("not authorized") and self._guard.refusal:
            return f"SQL error: {self._guard.refusal}"
        if message == "not authorized":
            return (
                "SQL error: not authorized (the database is read-only: ATTACH, transactions, most PRAGMAs "
                "and some functions are refused)"
            )
        return f"SQL error: {_one_line(message)}"

    def _end_transaction(self) -> None:
        """Belt and braces: nothing may leave a transaction (and its lock) open after a call."""
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    # -- the lock and interruption --------------------------------------------------------------------------

    def _acquire(self, me: int) -> bool:
        """Wait for the connection at most ``max_wait`` s, and not at all once the caller gave up."""
        give_up = time.monotonic() + self.max_wait
        with self._state:
            self._waiting.add(me)
        try:
            while time.monotonic() < give_up:
                got = self._lock.acquire(timeout=0.05)
                with self._state:
                    if me in self._cancelled:
                        if got:
                            self._lock.release()
                        return False
                    if got:
                        self._owner = me
                        return True
            return False
        finally:
            with self._state:
                self._waiting.discard(me)
                self._cancelled.discard(me)

    def _release(self) -> None:
        with self._state:
            self._owner = None
        self._lock.release()

    def _busy(self) -> str:
        return f"the database was busy with other queries for {self.max_wait:g} s (or the call was cancelled)"

    @contextmanager
    def _session(self) -> Iterator[sqlite3.Connection]:
        """The connection for a fixed internal query, under the same bounded, cancellable wait."""
        if not self._acquire(threading.get_ident()):
            raise TimeoutError(self._busy())
        try:
            yield self._conn
        finally:
            self._release()

    def _on_budget(self, owner: int, late: threading.Event) -> None:
        """Timer callback: interrupt the query if ``owner`` is still the one running."""
        with self._state:
            if self._owner == owner:
                late.set()
                self._conn.interrupt()

    def interrupt(self, thread_id: int | None) -> bool:
        """Stop the query run by ``thread_id`` (or make it give up waiting); True when it will end promptly."""
        with self._state:
            if thread_id is not None and self._owner == thread_id:
                self._conn.interrupt()
                return True
            if thread_id in self._waiting:
                self._cancelled.add(thread_id)
                return True
        return False

    # -- fixed queries ----------------------------------------------------------------------------------------

    def tables(self) -> list[str]:
        with self._session() as conn:
            return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]

    def columns(self, table: str) -> list[str]:
        """Column names of ``table`` in schema order (empty for an unknown table)."""
        with self._session() as conn:
            return [r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))]

    def describe(self, table: str) -> str:
        """Columns and declared types of ``table`` (a known table)."""
        quoted = table.replace("'", "''")
        return self.query(f"SELECT name, type FROM pragma_table_info('{quoted}')")

    def close(self) -> None:
        self._conn.close()
        self._guard.close()


class NoArgs(BaseModel):
    pass


class TableArg(BaseModel):
    table: str = Field(description="table name")


class QueryArg(BaseModel):
    query: str = Field(description="one SELECT statement in the database's SQL dialect")


class DatabaseTool(BaseTool):
    """A tool bound to the read-only database (``db=...`` at construction)."""

    db: Database

    def interrupt(self, worker: threading.Thread) -> bool:
        """The caller's time-out stops this call's query instead of leaving it running."""
        return self.db.interrupt(worker.ident)


class ListTablesTool(DatabaseTool):
    name: ClassVar[str] = "list_tables"
    description: ClassVar[str] = "List the tables of the map database."
    args_schema: ClassVar[type[BaseModel] | None] = NoArgs

    def _run(self) -> str:
        return ", ".join(self.db.tables())


class DescribeTableTool(DatabaseTool):
    name: ClassVar[str] = "describe_table"
    description: ClassVar[str] = "Show the columns of one table."
    args_schema: ClassVar[type[BaseModel] | None] = TableArg

    def _run(self, table: str) -> str:
        tables = self.db.tables()
        if table not in tables:
            return _one_line(f"No table {table!r}; tables: {', '.join(tables)}")
        return self.db.describe(table)


class QuerySQLTool(DatabaseTool):
    name: ClassVar[str] = "query_sql"
    description: ClassVar[str] = "Run one read-only SQL query and return the rows."
    args_schema: ClassVar[type[BaseModel] | None] = QueryArg

    def _run(self, query: str) -> str:
        return self.db.query(query)


def make_tools(db: Database) -> list[BaseTool]:
    return [ListTablesTool(db=db), DescribeTableTool(db=db), QuerySQLTool(db=db)]
