"""``--memory-arg augmentors=sql_validator``: SQL is compiled (SQLite's EXPLAIN) before ``query_sql`` runs it.

A query that does not compile is not sent to the tool: the step records SQLite's
message as its observation, so the model reads what is wrong without a tool call
being spent.  EXPLAIN only prepares the statement, on a read-only, hardened
connection to the database the run's ``query_sql`` reads (``--memory-arg
sql_db=PATH`` to name another).  A PostgreSQL database is not checked here: its
tool answers a bad query with PostgreSQL's own message.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lits.api import Augmentor, AugmentorContext, register_augmentor
from lits.structures.base import Step
from lits_mapeval.sql_guard import harden


def compile_error(database: Path, sql: str) -> str | None:
    """SQLite's reason ``sql`` does not compile against ``database``, or None when it does."""
    if sql.lstrip()[:7].upper() == "EXPLAIN":
        return None  # already only prepared when run: the tool answers it itself
    try:
        conn = sqlite3.connect(f"file:{database.resolve()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return f"cannot open {database}: {exc}"
    try:
        guard = harden(conn)
        conn.execute(f"EXPLAIN {sql}").close()
        return None
    except (sqlite3.Error, sqlite3.Warning) as exc:  # Warning: more than one statement
        if str(exc).startswith("not authorized") and guard.refusal:
            return guard.refusal
        return " ".join(str(exc).split())
    finally:
        conn.close()


@register_augmentor(
    "sql_validator",
    description="compiles query_sql's SQL (SQLite EXPLAIN) before it runs; an error becomes the observation",
)
class SqlValidator(Augmentor):
    """Refuses a ``query_sql`` call whose SQL does not compile; the reason is the step's observation."""

    OPTIONS = {"sql_db": ""}

    def check_options(self) -> None:
        given = str(self.options.get("sql_db") or "")
        if given and not Path(given).expanduser().is_file():
            raise ValueError(f"--memory-arg sql_db={given}: no such SQLite file")

    def _database(self, context: AugmentorContext) -> Path | None:
        """``sql_db``, else the run's own database (None: a PostgreSQL one)."""
        given = str(self.options.get("sql_db") or "")
        if given:
            return Path(given).expanduser()
        from lits_mapeval.dataset import default_db
        from lits_mapeval.pg_url import is_postgres_url

        db = context.resource_args.get("db")
        if is_postgres_url(db):
            return None
        if db:
            return Path(str(db)).expanduser()
        return default_db(int(str(context.resource_args.get("seed") or 0)))

    def check_step(self, state: object, step: Step, context: AugmentorContext) -> str | None:
        from lits.api import parse_tool_call  # here: importing lits.tools (pydantic tool models) at plugin load
        # cost every run ~half of plugin loading, and only a run with this augmentor needs it

        action = step.get_action()
        if action is None:
            return None
        try:
            name, args = parse_tool_call(action)
        except ValueError:
            return None  # the tool call itself is malformed: the transition says so
        sql = args.get("query")
        if name != "query_sql" or not isinstance(sql, str) or not sql.strip():
            return None
        database = self._database(context)
        if database is None:
            return None
        problem = compile_error(database, sql)
        if problem is None:
            return None
        return f"SQL error (checked before running; query_sql was not called): {problem}. Fix the query."
