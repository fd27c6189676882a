"""What model-written SQL may send to PostgreSQL: one read query, checked before it is sent.

The server-side guarantees (a READ ONLY transaction on a session with
``default_transaction_read_only``, ``statement_timeout``, a role with SELECT
only) stop writes. This check is the refusal list for what they do not stop,
chiefly on a superuser connection: file and program access (``COPY``,
``pg_read_file``, ``pg_ls_dir``, large objects), other servers (``dblink``),
changing the session or the server (``SET ROLE``, ``set_config``,
``pg_terminate_backend``, ``pg_stat_reset``), credentials (``pg_authid``),
extensions, and anything that is not a single SELECT / WITH / VALUES / TABLE
statement. Names are matched anywhere outside literals and comments, also
inside double quotes, so a column that happens to share one is refused too.

The statement is lexed (comments, string and dollar quoting, quoted
identifiers), so the query can then be wrapped as a subquery safely: a
statement that leaves a literal, a comment or a parenthesis open, or that has
a second statement, is refused.
"""

from __future__ import annotations

import re
from typing import Optional

from lits_mapeval.sql_guard import MAX_SQL_CHARS

READ_STATEMENTS = {"select", "with", "values", "table"}
WRITES = {"insert", "update", "delete", "merge", "truncate", "drop", "alter", "create", "grant", "revoke", "vacuum",
          "reindex", "cluster", "refresh", "comment", "lock", "import", "call", "do", "prepare", "execute",
          "listen", "notify", "load", "discard", "reset", "begin", "start", "commit", "rollback", "end",
          "savepoint", "release", "abort", "checkpoint", "security", "declare", "fetch", "move", "close"}
REFUSED_NAMES = re.compile(
    # server files and programs, large objects, other servers
    r"\b(pg_read_file|pg_read_binary_file|pg_ls_\w+|pg_stat_file|pg_file_\w+|pg_current_logfile|lo_\w+|loread"
    r"|lowrite|dblink\w*"
    # the session, other sessions and the server (some are allowed in a read-only transaction)
    r"|set_config|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile|pg_promote"
    r"|pg_switch_wal|pg_wal_\w+|pg_backup_\w+|pg_start_backup|pg_stop_backup|pg_create_\w+|pg_copy_\w+"
    r"|pg_drop_replication_slot|pg_logical_\w+|pg_replication_\w+|pg_stat_reset\w*|pg_advisory\w*"
    r"|pg_try_advisory\w*|pg_import_system_collations|pg_log_backend_memory_contexts|pg_sleep_until"
    # SQL run from a string, and whole tables, schemas or databases dumped as XML (a superuser's would hold
    # the password hashes)
    r"|query_to_xml\w*|cursor_to_xml\w*|table_to_xml\w*|schema_to_xml\w*|database_to_xml\w*"
    # credentials a superuser could read
    r"|pg_authid|pg_shadow|pg_user_mappings|pg_hba_file_rules|pg_ident_file_mappings)\b")
DOLLAR_TAG = re.compile(r"\$((?:[A-Za-z_]|[^\x00-\x7f])(?:[A-Za-z_0-9]|[^\x00-\x7f])*)?\$")
"""PostgreSQL's dollar-quote delimiter: any non-ASCII character counts as a letter."""
IDENTIFIER_START, IDENTIFIER_END = "\x00", "\x01"  # brackets a quoted identifier's text in the lexed statement
DATA_MODIFYING = re.compile(r"\b(insert|update|delete|merge|truncate)\b")


def _identifier_char(ch: str) -> bool:
    """Whether ``ch`` continues an identifier for PostgreSQL (so a ``$`` after it starts no dollar quote)."""
    return ch.isalnum() or ch in "_$" or ord(ch) > 127


def _lex(sql: str) -> tuple[str, Optional[str], Optional[int]]:
    """The statement with literals blanked and comments removed (quoted identifiers kept, unquoted), or a
    reason it cannot be checked; and where its first top-level semicolon is."""
    out: list[str] = []
    semicolon: Optional[int] = None
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end
            out.append(" ")
        elif sql.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            if depth:
                return "", "a comment is not closed", None
            out.append(" ")
        elif ch in "uU" and sql.startswith("&", i + 1):
            return "", "U& (Unicode-escaped) strings and identifiers are not accepted", None
        elif ch == "'":
            escapes = i > 0 and sql[i - 1] in "eE" and (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
            i += 1
            while i < n:
                if escapes and sql[i] == "\\":
                    i += 2
                elif sql[i] == "'":
                    if sql.startswith("''", i):
                        i += 2
                    else:
                        break
                else:
                    i += 1
            if i >= n:
                return "", "a string literal is not closed", None
            i += 1
            out.append("''")
        elif ch == '"':
            end = sql.find('"', i + 1)
            while end >= 0 and sql.startswith('""', end):
                end = sql.find('"', end + 2)
            if end < 0:
                return "", "a quoted identifier is not closed", None
            out.append(IDENTIFIER_START + sql[i + 1:end].replace('""', '"') + IDENTIFIER_END)
            i = end + 1
        elif ch == "$" and (i == 0 or not _identifier_char(sql[i - 1])):
            tag = DOLLAR_TAG.match(sql, i)
            if tag is None:
                out.append(ch)
                i += 1
                continue
            end = sql.find(tag.group(0), i + len(tag.group(0)))
            if end < 0:
                return "", "a dollar-quoted string is not closed", None
            i = end + len(tag.group(0))
            out.append("''")
        else:
            if ch == ";" and semicolon is None:
                semicolon = i
            out.append(ch)
            i += 1
    return "".join(out), None, semicolon


def refusal(sql: str) -> Optional[str]:
    """Why ``sql`` may not be sent (one line), or None for a single read query."""
    if len(sql) > MAX_SQL_CHARS:
        return f"the statement is longer than {MAX_SQL_CHARS} characters"
    if IDENTIFIER_START in sql or IDENTIFIER_END in sql:
        return "control characters \\x00 and \\x01 are not accepted"
    code, problem, _ = _lex(sql)
    if problem:
        return problem
    code = code.lower().strip().rstrip(";").rstrip()
    # structure: quoted identifiers are opaque (their parentheses and semicolons are not the server's);
    # names: their text is kept, so "pg_read_file"(...) is still found
    structure = re.sub(f"{IDENTIFIER_START}[^{IDENTIFIER_END}]*{IDENTIFIER_END}", " x ", code)
    code = code.replace(IDENTIFIER_START, " ").replace(IDENTIFIER_END, " ")
    if ";" in structure:
        return "send one statement per call"
    depth = 0
    for ch in structure:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return "a parenthesis is closed that was never opened"
    if depth:
        return "a parenthesis is not closed"
    words = re.findall(r"[a-z_][a-z_0-9]*", code)
    if not words:
        return "the statement is empty"
    first = words[0]
    if first == "copy":
        return "COPY is refused (no server files or programs)"
    if first in ("set", "reset"):
        second = " ".join(words[1:3])
        if second.startswith(("role", "session authorization", "local role")):
            return "SET ROLE / SET SESSION AUTHORIZATION is refused"
        if "default_transaction_read_only" in words or "transaction_read_only" in words:
            return "changing default_transaction_read_only is refused (the connection is read-only)"
        return "SET is refused (the session settings are fixed)"
    if first == "create" and "extension" in words[1:3]:
        return "CREATE EXTENSION is refused"
    if first not in READ_STATEMENTS:
        kind = "writes are refused" if first in WRITES else "only SELECT, WITH, VALUES or TABLE is accepted"
        return f"{first.upper()}: {kind} (the database is read-only)"
    name = REFUSED_NAMES.search(code)
    if name:
        return (f"{name.group(1)} is refused (no server files, large objects, other servers, credentials or "
                "session changes)")
    if first == "with" and DATA_MODIFYING.search(code):
        return "a data-modifying WITH is refused (the database is read-only)"
    if re.search(r"\binto\b", code):
        return "SELECT INTO is refused (the database is read-only)"
    return None


def statement_body(sql: str) -> str:
    """An accepted statement without its closing semicolon (and whatever comment follows it)."""
    _, _, semicolon = _lex(sql)
    return (sql if semicolon is None else sql[:semicolon]).strip()
