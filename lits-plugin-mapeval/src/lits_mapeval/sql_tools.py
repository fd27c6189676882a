"""SQL tools for the model. LLM-written SQL is hostile input, so:

* the connection is read-only at the SQLite level (``mode=ro`` URI + ``query_only``),
* an authorizer refuses ATTACH/DETACH, PRAGMA (other than a few read-only ones) and functions
  that load extensions, and extension loading stays disabled,
* every query has a time budget (a progress handler aborts it) and a row cap,
* results are truncated with a note.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Optional

from pydantic import BaseModel, Field

from lits.tools import BaseTool

_READ_PRAGMAS = {"table_info", "table_list", "index_list", "foreign_key_list"}


def _authorize(action: int, arg1: Optional[str], arg2: Optional[str], *_: Any) -> int:
    """SQLite authorizer: no ATTACH/DETACH, only read-only PRAGMAs, no file or extension functions."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _READ_PRAGMAS else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in ("load_extension", "readfile", "writefile"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class ReadOnlyDatabase:
    """One read-only connection, shared by tool calls (serialized by a lock)."""

    def __init__(self, path: str | Path, time_budget: float = 2.0, max_rows: int = 50, max_chars: int = 4000) -> None:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"SQLite database not found: {path}")
        self.path = path
        self.time_budget, self.max_rows, self.max_chars = time_budget, max_rows, max_chars
        self._conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, check_same_thread=False)
        self._conn.execute("PRAGMA query_only = ON")
        disable = getattr(self._conn, "enable_load_extension", None)  # absent when Python lacks the feature
        if disable is not None:
            disable(False)
        self._conn.set_authorizer(_authorize)
        self._lock = threading.Lock()

    def query(self, sql: str) -> str:
        with self._lock:
            deadline = time.monotonic() + self.time_budget
            self._conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
            try:
                cursor = self._conn.execute(sql)
                rows = cursor.fetchmany(self.max_rows + 1)
                columns = [d[0] for d in cursor.description or []]
            except sqlite3.DatabaseError as exc:
                if "interrupted" in str(exc):
                    return f"Query stopped: it ran longer than the {self.time_budget:g} s budget"
                return f"SQL error: {exc}"
            finally:
                self._conn.set_progress_handler(None, 0)
        lines = [" | ".join(columns)] + [" | ".join(str(v) for v in row) for row in rows[: self.max_rows]]
        text = "\n".join(lines)
        notes = []
        if len(rows) > self.max_rows:
            notes.append(f"[only the first {self.max_rows} rows are shown]")
        if len(text) > self.max_chars:
            text = text[: self.max_chars]
            notes.append("[output truncated]")
        return "\n".join([text, *notes]) if notes else text

    def tables(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
            return [r[0] for r in rows]

    def columns(self, table: str) -> list[str]:
        """Column names of ``table`` in schema order (empty for an unknown table)."""
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT name FROM pragma_table_info(?)", (table,))]

    def close(self) -> None:
        self._conn.close()


class NoArgs(BaseModel):
    pass


class TableArg(BaseModel):
    table: str = Field(description="table name")


class QueryArg(BaseModel):
    query: str = Field(description="one SQLite SELECT statement")


class DatabaseTool(BaseTool):
    """A tool bound to the read-only database (``db=...`` at construction)."""

    db: ReadOnlyDatabase


class ListTablesTool(DatabaseTool):
    name: ClassVar[str] = "list_tables"
    description: ClassVar[str] = "List the tables of the map database."
    args_schema: ClassVar[Optional[type[BaseModel]]] = NoArgs

    def _run(self) -> str:
        return ", ".join(self.db.tables())


class DescribeTableTool(DatabaseTool):
    name: ClassVar[str] = "describe_table"
    description: ClassVar[str] = "Show the columns of one table."
    args_schema: ClassVar[Optional[type[BaseModel]]] = TableArg

    def _run(self, table: str) -> str:
        if table not in self.db.tables():
            return f"No table {table!r}; tables: {', '.join(self.db.tables())}"
        return self.db.query(f"SELECT name, type FROM pragma_table_info('{table}')")


class QuerySQLTool(DatabaseTool):
    name: ClassVar[str] = "query_sql"
    description: ClassVar[str] = "Run one read-only SQL query and return the rows."
    args_schema: ClassVar[Optional[type[BaseModel]]] = QueryArg

    def _run(self, query: str) -> str:
        return self.db.query(query)


def make_tools(db: ReadOnlyDatabase) -> list[BaseTool]:
    return [ListTablesTool(db=db), DescribeTableTool(db=db), QuerySQLTool(db=db)]
