"""Hardening for a connection that runs model-written SQL.

The time budget (progress handler, ``Connection.interrupt``) acts only at
SQLite's loop steps, so one row's straight-line work (a few hundred function
calls at most in a short statement) must be cheap. SQLite's own limits keep
every value, statement, pattern and expression small enough for that; a
process-wide heap limit bounds what a query may allocate; an authorizer
refuses anything that is not a read, and every function that is not on the
allow-list :data:`lits_mapeval.sql_functions.SQLITE` (so ``load_extension``,
``readfile`` and the pointer-leaking ``fts3_tokenizer`` are never reachable).

Two built-ins stay expensive whatever the limits, so they are replaced by
:class:`FunctionGuard`, which refuses the expensive form and passes every
other call to SQLite's own function (results unchanged):

* ``printf``/``format``'s ``%.Nc`` repeats a character N times even once the
  output is past the length limit (4 s for N = 1e9 on SQLite 3.40);
* two-argument ``trim``/``ltrim``/``rtrim`` cost text length x character-set
  length (0.7 s for one call on 50 kB).
"""

from __future__ import annotations

import sqlite3
from typing import Callable

from lits_mapeval.sql_functions import SQLITE, not_listed

SqlValue = None | int | float | str | bytes
"""What SQLite passes to and takes from a user function."""

MAX_VALUE_BYTES = 10_000
"""Longest string or blob a query may build or read (SQLITE_LIMIT_LENGTH). The other quadratic built-ins
(``instr``, ``replace``, LIKE/GLOB) stay near a millisecond per call; a map value is a few hundred bytes."""
MAX_SQL_CHARS = 4_000
"""Longest statement; it also bounds how many calls one row's expressions can make."""
MAX_TRIM_CHARS = 64
MAX_MEMORY_MB = 64
"""SQLite's hard heap limit. With temp storage in memory it also bounds how long the one uninterruptible step of an
ORDER BY (sorting everything collected) can take: about 0.3 s at 64 MB, 1.5 s at 128 MB, 2+ s at 256 MB. It is
process-wide in SQLite (every connection shares it) and a PRAGMA can only lower it, so the lowest value asked for
by any database in the process wins; the soft limit (half of it) makes page caches give memory back first."""

LIMITS = {
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: MAX_SQL_CHARS,
    sqlite3.SQLITE_LIMIT_COLUMN: 100,
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 200,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
    sqlite3.SQLITE_LIMIT_VDBE_OP: 50_000,
    sqlite3.SQLITE_LIMIT_FUNCTION_ARG: 32,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 100,
    sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: 8,
    sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH: 1,
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,  # sorter helper threads would run outside the interrupt's reach
}

_READ_PRAGMAS = {"table_info", "table_list", "index_list", "foreign_key_list"}
_ENDING_TRANSACTION = {"COMMIT", "ROLLBACK", "RELEASE", "END"}


def authorize(action: int, arg1: str | None, arg2: str | None, *_: object) -> int:
    """No ATTACH/DETACH (also what ``VACUUM INTO`` needs), only read-only PRAGMAs, no transactions, only the
    allow-listed functions. Ending a transaction stays allowed so cleanup can always roll back."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _READ_PRAGMAS else sqlite3.SQLITE_DENY
    if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
        return sqlite3.SQLITE_OK if (arg1 or "").upper() in _ENDING_TRANSACTION else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in SQLITE:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _limit_connection(conn: sqlite3.Connection, max_value_bytes: int) -> None:
    for limit, value in LIMITS.items():
        conn.setlimit(limit, value)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)


def repeats_too_much(fmt: str, cap: int) -> bool:
    """Whether a printf format has a ``%c`` whose precision (repeat count) is ``*`` or above ``cap``.

    Parses a superset of what SQLite accepts between ``%`` and the conversion (flags, width, precision and
    ``l`` in any order): where SQLite would stop earlier, it stops the whole format, so erring towards
    "too much" never lets a long repeat through."""
    i, n = 0, len(fmt)
    while i < n:
        if fmt[i] != "%":
            i += 1
            continue
        i += 1
        risky = False
        while i < n and fmt[i] in "-+ #!0,123456789*.l":
            if fmt[i] == ".":
                j = i + 1
                while j < n and "0" <= fmt[j] <= "9":
                    j += 1
                digits = fmt[i + 1 : j]
                star = j < n and fmt[j] == "*" and not digits
                risky = risky or star or len(digits) > 9 or (digits != "" and int(digits) > cap)
                i = j + 1 if star else j
                continue
            i += 1
        if i < n and fmt[i] == "c" and risky:
            return True
        i += 1
    return False


class FunctionGuard:
    """Stands in for the built-ins whose cost one call can blow up, refuses those calls and hands every other call
    to SQLite's own function on a private in-memory connection (same limits), so results are unchanged."""

    def __init__(self, max_value_bytes: int) -> None:
        self.cap = max_value_bytes
        self.refusal: str | None = None
        self._engine = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        _limit_connection(self._engine, max_value_bytes)

    def authorize(self, action: int, arg1: str | None, arg2: str | None, *rest: object) -> int:
        """:func:`authorize`, remembering the function it refused so the reason can name it."""
        verdict = authorize(action, arg1, arg2, *rest)
        if verdict == sqlite3.SQLITE_DENY and action == sqlite3.SQLITE_FUNCTION:
            self.refusal = not_listed([(arg2 or "").lower()], "SQLite")
        return verdict

    def _refuse(self, why: str) -> None:
        self.refusal = why
        raise ValueError(why)

    def _builtin(self, name: str, args: tuple[SqlValue, ...]) -> SqlValue:
        marks = ", ".join("?" * len(args))
        return self._engine.execute(f"SELECT {name}({marks})", args).fetchone()[0]

    def printf(self, *args: SqlValue) -> SqlValue:
        """``printf``/``format``: ``%.Nc`` costs N steps even when the output is thrown away."""
        fmt = args[0] if args else None
        if isinstance(fmt, bytes):  # SQLite reads a blob format as text
            fmt = fmt.decode("utf-8", "replace")
        if isinstance(fmt, str) and repeats_too_much(fmt, self.cap):
            self._refuse(f"printf's %.Nc repeats a character at most {self.cap} times (a '*' count is refused)")
        return self._builtin("printf", args or (None,))

    def trimmer(self, name: str) -> Callable[[SqlValue, SqlValue], SqlValue]:
        """Two-argument ``trim``/``ltrim``/``rtrim`` cost (text length x character-set length)."""

        def call(text: SqlValue, chars: SqlValue) -> SqlValue:
            if isinstance(chars, (str, bytes)) and len(chars) > MAX_TRIM_CHARS:
                self._refuse(f"{name}() takes at most {MAX_TRIM_CHARS} characters to remove")
            return self._builtin(name, (text, chars))

        return call

    def install(self, conn: sqlite3.Connection) -> None:
        for name in ("printf", "format"):
            conn.create_function(name, -1, self.printf, deterministic=True)
        for name in ("trim", "ltrim", "rtrim"):
            conn.create_function(name, 2, self.trimmer(name), deterministic=True)

    def close(self) -> None:
        self._engine.close()


def harden(
    conn: sqlite3.Connection, max_value_bytes: int = MAX_VALUE_BYTES, max_memory_mb: int = MAX_MEMORY_MB
) -> FunctionGuard:
    """Apply limits, memory-only temp storage (so sorts and CTE queues count against the heap limit instead of
    filling the disk), the heap limit, ``query_only``, the printf guard and the authorizer (last: the set-up
    PRAGMAs would be refused). Returns the function guard so its refusals can be reported."""
    _limit_connection(conn, max_value_bytes)
    conn.execute("PRAGMA temp_store = MEMORY")
    hard = int(max_memory_mb) * 1024 * 1024
    conn.execute(f"PRAGMA hard_heap_limit = {hard}")
    (soft,) = conn.execute("PRAGMA soft_heap_limit").fetchone()
    if soft == 0 or soft > hard // 2:
        conn.execute(f"PRAGMA soft_heap_limit = {hard // 2}")
    conn.execute("PRAGMA query_only = ON")
    disable = getattr(conn, "enable_load_extension", None)  # absent when Python lacks the feature
    if disable is not None:
        disable(False)
    guard = FunctionGuard(max_value_bytes)
    guard.install(conn)
    conn.set_authorizer(guard.authorize)
    return guard
