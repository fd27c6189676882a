"""MapEval-SQL for LiTS: importing this module registers the dataset, its tools, its policy prompt and the
``lits mapeval`` command."""

from typing import Callable

from lits.hookspecs import hookimpl
from lits_mapeval import dataset, prompts  # noqa: F401  (registration side effects)


@hookimpl
def register_commands(register: Callable[..., object]) -> None:
    register("mapeval", "lits_mapeval.cli:add_arguments",
             help="build the MapEval-SQL city into SQLite or PostgreSQL, serve its tools over MCP")


@hookimpl
def register_augmentors(register: Callable[..., object]) -> None:
    register("sql_validator", "lits_mapeval.sql_check:SqlValidator",
             description="compiles query_sql's SQL (SQLite EXPLAIN) before it runs; an error becomes the observation")
