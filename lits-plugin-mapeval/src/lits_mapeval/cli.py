"""``lits mapeval`` (and its older name ``lits-mapeval``): build the synthetic city into a database, serve its
tools over MCP."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from lits.api import register_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lits-mapeval", description="MapEval-SQL tools for LiTS.")
    add_arguments(parser)
    return parser


@register_command("mapeval", help="build the MapEval-SQL city into SQLite or PostgreSQL, serve its tools over MCP")
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sub-commands, on ``lits-mapeval``'s parser or on ``lits mapeval``'s."""
    from lits_mapeval.build_db import add_build_db_parser
    from lits_mapeval.mcp_server import add_serve_mcp_parser

    sub = parser.add_subparsers(dest="mapeval_command", metavar="COMMAND")
    add_build_db_parser(sub)
    add_serve_mcp_parser(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, OSError) as exc:
        print(f"lits-mapeval: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
