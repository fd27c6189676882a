"""``lits-mapeval build-db``: the synthetic city into a SQLite file or a PostgreSQL database."""

from __future__ import annotations

import argparse
from lits_mapeval.database import build_database, build_postgres
from lits_mapeval.pg_url import is_postgres_url


def add_build_db_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "build-db",
        help="build the synthetic city database",
        description="Build the synthetic city (same seed, same rows) into a SQLite file or a "
        "PostgreSQL database (the password from PGPASSWORD or ~/.pgpass, never the URL).",
    )
    p.add_argument(
        "--to",
        required=True,
        metavar="FILE|URL",
        help="a SQLite file path, or postgresql://user@host:port/name (its city tables are replaced)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--grant-select-to", metavar="ROLE", help="PostgreSQL: give this (read-only) role SELECT on the city's tables"
    )
    p.set_defaults(func=run_build_db)


def run_build_db(args: argparse.Namespace) -> int:
    if is_postgres_url(args.to):
        print(f"built {build_postgres(args.to, seed=args.seed, grant_select_to=args.grant_select_to)}")
        return 0
    if args.grant_select_to:
        raise ValueError("--grant-select-to applies to a PostgreSQL database only")
    print(f"built {build_database(args.to, seed=args.seed)}")
    return 0
