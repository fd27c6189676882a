"""What model-written SQL may send to PostgreSQL: one read query, checked before it is sent.

The server-side guarantees (a READ ONLY transaction on a session with
``default_transaction_read_only``, ``statement_timeout``, a role with SELECT
only) stop writes. This check stops what they do not, chiefly on a superuser
connection, by allowing rather than refusing: one SELECT / WITH / VALUES /
TABLE statement (so no ``COPY``, ``SET ROLE``, ``DO``, extensions), no name
of the system catalogues (``pg_*``: ``pg_authid``, ``pg_settings``,
``pg_file_settings``...) or ``information_schema``, and no function that is
not on :data:`lits_mapeval.sql_functions.POSTGRES`. :func:`unlisted_names`
gives every name the statement could call that is not on that list, written
as a call (``name(``, also ``pg_catalog.name (``, ``"name"`` quoted, with
comments between) or as an attribute (``(x).name`` calls ``name(x)``); the
database asks the server which of them are functions (a CTE or alias name is
not) and refuses the query if any is.

The statement is lexed (comments, string and dollar quoting, quoted
identifiers), so the query can then be wrapped as a subquery safely: a
statement that leaves a literal, a comment or a parenthesis open, or that has
a second statement, is refused.
"""

from __future__ import annotations

import re

from lits_mapeval.sql_functions import POSTGRES
from lits_mapeval.sql_guard import MAX_SQL_CHARS

READ_STATEMENTS = {"select", "with", "values", "table"}
WRITES = {
    "insert",
    "update",
    "delete",
    "merge",
    "truncate",
    "drop",
    "alter",
    "create",
    "grant",
    "revoke",
    "vacuum",
    "reindex",
    "cluster",
    "refresh",
    "comment",
    "lock",
    "import",
    "call",
    "do",
    "prepare",
    "execute",
    "listen",
    "notify",
    "load",
    "discard",
    "reset",
    "begin",
    "start",
    "commit",
    "rollback",
    "end",
    "savepoint",
    "release",
    "abort",
    "checkpoint",
    "security",
    "declare",
    "fetch",
    "move",
    "close",
}
DOLLAR_TAG = re.compile(r"\$((?:[A-Za-z_]|[^\x00-\x7f])(?:[A-Za-z_0-9]|[^\x00-\x7f])*)?\$")
"""PostgreSQL's dollar-quote delimiter: any non-ASCII character counts as a letter."""
IDENTIFIER_START, IDENTIFIER_END = "\x00", "\x01"  # brackets a quoted identifier's text in the lexed statement
DATA_MODIFYING = re.compile(r"\b(insert|update|delete|merge|truncate)\b")
TOKEN = re.compile(
    r"\x00([^\x01]*)\x01"  # a quoted identifier (its exact text)
    r"|((?:[A-Za-z_]|[^\x00-\x7f])(?:[A-Za-z_0-9$]|[^\x00-\x7f])*)"  # a name (non-ASCII counts as a letter)
    r"|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"  # a number: a name right after it is a token of its own
    r"|(::|\S)"
)
NOT_FUNCTIONS = {
    "all",
    "and",
    "any",
    "array",
    "as",
    "between",
    "case",
    "cast",
    "cross",
    "distinct",
    "else",
    "end",
    "except",
    "exists",
    "from",
    "group",
    "having",
    "ilike",
    "in",
    "inner",
    "intersect",
    "is",
    "join",
    "lateral",
    "like",
    "limit",
    "not",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "row",
    "select",
    "similar",
    "some",
    "table",
    "then",
    "to",
    "union",
    "using",
    "values",
    "when",
    "where",
    "window",
    "with",
}
"""Unquoted keywords that may stand before a parenthesis and can never name a function (reserved, or
PostgreSQL's "column name" keywords)."""
SYSTEM_NAMES = "the system catalogues (pg_*) and information_schema are not readable (the tools list the tables)"
_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _identifier_char(ch: str) -> bool:
    """Whether ``ch`` continues an identifier for PostgreSQL (so a ``$`` after it starts no dollar quote)."""
    return ch.isalnum() or ch in "_$" or ord(ch) > 127


def _lex(sql: str) -> tuple[str, str | None, int | None]:
    """The statement with literals blanked and comments removed (quoted identifiers kept, unquoted), or a
    reason it cannot be checked; and where its first top-level semicolon is."""
    out: list[str] = []
    semicolon: int | None = None
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
            out.append(IDENTIFIER_START + sql[i + 1 : end].replace('""', '"') + IDENTIFIER_END)
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


def refusal(sql: str) -> str | None:
    """Why ``sql`` may not be sent (one line), or None for a single read query."""
    if len(sql) > MAX_SQL_CHARS:
        return f"the statement is longer than {MAX_SQL_CHARS} characters"
    if IDENTIFIER_START in sql or IDENTIFIER_END in sql:
        return "control characters \\x00 and \\x01 are not accepted"
    code, problem, _ = _lex(sql)
    if problem:
        return problem
    names = _names(code)
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
    # a pg_* name written as a call is a function: the allow-list's to refuse, with its own reason
    system = next((name for name, _, _, call in names if _is_system(name) and not call and name not in POSTGRES), None)
    if system is not None:
        return f"{system}: {SYSTEM_NAMES}"
    if first == "with" and DATA_MODIFYING.search(code):
        return "a data-modifying WITH is refused (the database is read-only)"
    if re.search(r"\binto\b", code):
        return "SELECT INTO is refused (the database is read-only)"
    return None


def _names(lexed: str) -> list[tuple[str, bool, bool, bool]]:
    """Every name in a lexed statement as PostgreSQL reads it (unquoted: ASCII letters folded to lower case;
    quoted: exactly), with whether it was quoted, follows a ``.`` and stands before a ``(``."""
    tokens: list[tuple[str | None, bool, str]] = []  # (name or None, quoted, the token's text)
    for match in TOKEN.finditer(lexed):
        quoted, plain = match.group(1), match.group(2)
        if quoted is not None:
            tokens.append((quoted, True, quoted))
        elif plain is not None:
            tokens.append((plain.translate(_FOLD), False, plain))
        else:
            tokens.append((None, False, match.group(0)))
    found = []
    for k, (name, quoted, _) in enumerate(tokens):
        if name is None:
            continue
        after_dot = k > 0 and tokens[k - 1][2] == "."
        before_paren = k + 1 < len(tokens) and tokens[k + 1][2] == "("
        found.append((name, quoted, after_dot, before_paren))
    return found


def _is_system(name: str) -> bool:
    folded = name.lower()
    return folded == "information_schema" or (folded.startswith("pg_") and folded != "pg_catalog")


def unlisted_names(sql: str) -> tuple[list[str], list[str]]:
    """The names in an accepted statement that could call a function not on the allow-list: those written as
    a call (``name(``) and those after a ``.``, which PostgreSQL reads as ``name(x)`` when ``x`` has no such
    column. Only the server knows which are functions (a CTE, an alias or a column is not)."""
    code, _, _ = _lex(sql)
    calls, attributes = set(), set()
    for name, quoted, after_dot, before_paren in _names(code):
        if name in POSTGRES:
            continue
        if before_paren and (quoted or name not in NOT_FUNCTIONS):
            calls.add(name)
        elif after_dot and not before_paren:
            attributes.add(name)
    return sorted(calls), sorted(attributes)


def statement_body(sql: str) -> str:
    """An accepted statement without its closing semicolon (and whatever comment follows it)."""
    _, _, semicolon = _lex(sql)
    return (sql if semicolon is None else sql[:semicolon]).strip()
