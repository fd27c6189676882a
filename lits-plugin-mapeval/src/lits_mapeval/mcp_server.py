"""``lits-mapeval serve-mcp``: the MapEval-SQL tools as an MCP server (to come)."""

from __future__ import annotations

import argparse
from typing import Any


def add_serve_mcp_parser(sub: Any) -> None:
    p = sub.add_parser("serve-mcp", help="serve the MapEval-SQL tools as an MCP server")
    p.set_defaults(func=run_serve_mcp)


def run_serve_mcp(args: argparse.Namespace) -> int:
    raise ValueError("serve-mcp is not built yet")
