"""The functions model-written SQL may call: an allow-list per dialect, not a list of what to refuse.

A map question needs aggregates, window functions, arithmetic and trigonometry (distances), text, date and
time functions and casts. Every other function is refused before the query runs, whatever it does, so a
function a server gains later (an extension, a new release) stays refused until it is listed here. That is
what keeps the functions that run SQL text (``ts_stat``, ``query_to_xml``, ``dblink``), read server files or
settings (``pg_read_file``, ``current_setting``) or dump tables (``table_to_xml``) away from a superuser
connection: nobody has to have thought of them. PostgreSQL's list is enforced by :mod:`lits_mapeval.pg_guard`
with the server's catalogue; SQLite's by the authorizer in :mod:`lits_mapeval.sql_guard`.

Names are PostgreSQL's and SQLite's own (lower case, as an unquoted name is folded); a type name that takes a
modifier (``numeric(10, 2)``, ``varchar(20)``) is listed too, since the server also has a function by that name.
"""

from __future__ import annotations

AGGREGATES = {"avg", "count", "max", "min", "sum"}
WINDOW = {
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
}
MATH = {
    "abs",
    "acos",
    "asin",
    "atan",
    "atan2",
    "ceil",
    "ceiling",
    "cos",
    "degrees",
    "exp",
    "floor",
    "ln",
    "log",
    "log10",
    "mod",
    "pi",
    "pow",
    "power",
    "radians",
    "random",
    "round",
    "sign",
    "sin",
    "sqrt",
    "tan",
    "trunc",
}
TEXT = {
    "coalesce",
    "concat",
    "concat_ws",
    "format",
    "length",
    "lower",
    "ltrim",
    "nullif",
    "octet_length",
    "replace",
    "rtrim",
    "substr",
    "substring",
    "trim",
    "upper",
}
COMMON = AGGREGATES | WINDOW | MATH | TEXT

POSTGRES = frozenset(
    COMMON
    | {
        # aggregates
        "array_agg",
        "bool_and",
        "bool_or",
        "corr",
        "covar_pop",
        "covar_samp",
        "every",
        "mode",
        "percentile_cont",
        "percentile_disc",
        "stddev",
        "stddev_pop",
        "stddev_samp",
        "string_agg",
        "var_pop",
        "var_samp",
        "variance",
        # math
        "acosd",
        "asind",
        "atan2d",
        "atand",
        "cbrt",
        "cosd",
        "cot",
        "cotd",
        "div",
        "gcd",
        "greatest",
        "lcm",
        "least",
        "scale",
        "sind",
        "tand",
        "width_bucket",
        # text
        "ascii",
        "btrim",
        "char_length",
        "character_length",
        "chr",
        "initcap",
        "left",
        "lpad",
        "md5",
        "overlay",
        "position",
        "regexp_count",
        "regexp_like",
        "regexp_match",
        "regexp_matches",
        "regexp_replace",
        "regexp_split_to_array",
        "regexp_split_to_table",
        "regexp_substr",
        "repeat",
        "reverse",
        "right",
        "rpad",
        "split_part",
        "starts_with",
        "strpos",
        "to_char",
        "to_number",
        "translate",
        # arrays and rows of values
        "array_length",
        "array_position",
        "array_to_string",
        "cardinality",
        "generate_series",
        "string_to_array",
        "unnest",
        # date and time
        "age",
        "date_part",
        "date_trunc",
        "extract",
        "isfinite",
        "justify_days",
        "justify_hours",
        "justify_interval",
        "make_date",
        "make_interval",
        "make_time",
        "make_timestamp",
        "now",
        "overlaps",
        "timezone",
        "to_date",
        "to_timestamp",
        # JSON built from the rows
        "json_agg",
        "json_build_object",
        "jsonb_agg",
        "jsonb_build_object",
        "to_json",
        "to_jsonb",
        # casts and types with modifiers
        "bool",
        "bpchar",
        "char",
        "date",
        "float4",
        "float8",
        "int2",
        "int4",
        "int8",
        "interval",
        "name",
        "numeric",
        "text",
        "time",
        "timestamp",
        "timestamptz",
        "varchar",
    }
)
"""PostgreSQL functions a query may call (also as ``pg_catalog.name``); the rest of ``pg_proc`` is refused."""

SQLITE = frozenset(
    COMMON
    | {
        "->",
        "->>",
        "char",
        "glob",
        "group_concat",
        "hex",
        "ifnull",
        "iif",
        "instr",
        "like",
        "likelihood",
        "likely",
        "printf",
        "quote",
        "randomblob",
        "string_agg",
        "total",
        "typeof",
        "unhex",
        "unicode",
        "unlikely",
        "zeroblob",
        "acosh",
        "asinh",
        "atanh",
        "cosh",
        "log2",
        "sinh",
        "tanh",
        "date",
        "datetime",
        "julianday",
        "strftime",
        "time",
        "timediff",
        "unixepoch",
        "json",
        "json_array",
        "json_array_length",
        "json_extract",
        "json_group_array",
        "json_group_object",
        "json_object",
        "json_type",
        "json_valid",
    }
)
"""SQLite functions a query may call (the authorizer refuses the rest, ``load_extension`` and ``readfile``
among them)."""


def not_listed(names: list[str], dialect: str) -> str:
    """The one-line reason a query calling ``names`` (not on the allow-list) is refused."""
    shown = ", ".join(f"{name}()" for name in names)
    verb = "is" if len(names) == 1 else "are"
    return (
        f"{shown} {verb} not on the allow-list of {dialect} functions a query may call (aggregates, math, "
        "text, date/time and casts; see the mapeval plugin README)"
    )
