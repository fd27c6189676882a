"""An MCP server (the SDK's low-level one) that lists its tools over two pages, in a different order each time."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

SCHEMA = {"type": "object", "properties": {}}
listings = 0


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    global listings
    if params is not None and params.cursor == "page-2":
        return types.ListToolsResult(tools=[types.Tool(name="mid", input_schema=SCHEMA)])
    listings += 1
    first = ["zeta", "alpha"] if listings % 2 else ["alpha", "zeta"]
    return types.ListToolsResult(tools=[types.Tool(name=n, input_schema=SCHEMA) for n in first], next_cursor="page-2")


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} ok")])


async def main() -> None:
    server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
