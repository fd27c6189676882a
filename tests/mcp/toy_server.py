"""A small MCP server for the tests (the SDK's high-level server): arithmetic, a refusal, a slow tool, a huge
result, crashes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

server = MCPServer("toy")


@server.tool()
def add(a: Annotated[int, Field(description="first addend")], b: int = 2) -> str:
    """Add two integers."""
    down = os.environ.get("TOY_DOWN")  # a test's outage: while this file exists, the server dies on every call
    if down and Path(down).exists():
        os._exit(5)
    return str(a + b)


@server.tool()
def paint(color: Literal["red", "blue"], sizes: list[int], note: str = "none") -> str:
    """Paint things."""
    return f"{color} {sum(sizes)} {note}"


@server.tool()
def refuse(reason: str) -> str:
    """Always refuses (an isError result carrying the reason)."""
    raise ToolError(reason)


@server.tool()
def sleep(seconds: float) -> str:
    """Take a while."""
    time.sleep(seconds)
    return "awake"


@server.tool()
def blob(megabytes: float) -> str:
    """A result of that many megabytes of text."""
    return "x" * int(megabytes * 1_000_000)


@server.tool()
def flaky() -> str:
    """Kill the server the first time (a marker file remembers), answer after that."""
    marker = Path(os.environ["TOY_MARKER"])
    if not marker.exists():
        marker.write_text("died once")
        os._exit(3)
    return "recovered"


@server.tool()
def crash() -> str:
    """Kill the server every time."""
    os._exit(4)


if __name__ == "__main__":
    server.run()
