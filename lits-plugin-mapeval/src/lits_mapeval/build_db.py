"""``lits-mapeval build-db``: the synthetic city as a database file (PostgreSQL: to come)."""

from __future__ import annotations

import argparse
from typing import Any

from lits_mapeval.database import build_database


def add_build_db_parser(sub: Any) -> None:
    p = sub.add_parser("build-db", help="build the synthetic city database")
    p.add_argument("--to", required=True, help="a SQLite file path")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run_build_db)


def run_build_db(args: argparse.Namespace) -> int:
    path = build_database(args.to, seed=args.seed)
    print(f"built {path}")
    return 0
