"""``lits-mapeval serve-mcp``: the MapEval-SQL tools as an MCP server.

The same tool objects a run uses in-process (the ``mapeval-sql`` resource: read-only database, time
budget, row cap) are served with the same names, descriptions and argument schemas (each tool's
pydantic ``args_schema`` as its JSON input schema); the server's instructions are the resource's
tool context.  So ``lits chain --dataset mapeval-sql --resource mcp --resource-arg
command="lits-mapeval serve-mcp"`` sees the same prompt and the same observations as a plain run.
Over stdio by default; ``--http`` serves streamable HTTP on loopback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lits.api import BaseTool, failure_reason

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_serve_mcp_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve-mcp", help="serve the MapEval-SQL tools as an MCP server (stdio, or --http)")
    p.add_argument(
        "--db",
        default=None,
        metavar="PATH",
        help="the database the tools read (default: the plugin's own city for --seed)",
    )
    p.add_argument("--seed", type=int, default=0, help="which synthetic city when --db is not given (default 0)")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="address for --http (loopback only; default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port for --http (default 8765)")
    p.set_defaults(func=run_serve_mcp)


def tool_schema(tool: BaseTool) -> dict[str, object]:
    """The JSON schema an in-process run shows the model for ``tool``'s arguments."""
    return tool.args_schema.model_json_schema() if tool.args_schema is not None else {"type": "object"}


def call(tool: BaseTool, arguments: dict[str, object]) -> tuple[str, bool]:
    """(text, is_error): the tool's output, or the reason it failed worded as an in-process run words it."""
    from pydantic import ValidationError

    try:
        validated = tool.validate_args(arguments)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'args'}: {e['msg']}" for e in exc.errors())
        return f"Invalid arguments for {tool.name}: {problems}", True
    try:
        value = tool.run(**validated)
    except Exception as exc:  # an error result, not a dead server
        return failure_reason(exc), True
    return value if isinstance(value, str) else str(value), False


def build_server(tools: list[BaseTool], instructions: str) -> Any:
    """An MCP ``Server`` (the SDK's low-level one) listing and calling ``tools``."""
    import anyio
    import mcp.types as types
    from mcp.server import Server

    by_name = {t.name: t for t in tools}
    listing = [types.Tool(name=t.name, description=t.description, input_schema=tool_schema(t)) for t in tools]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: Any) -> Any:
        tool = by_name.get(params.name)
        if tool is None:
            text, error = f"Unknown tool {params.name!r}; available tools: {', '.join(sorted(by_name))}", True
        else:
            text, error = await anyio.to_thread.run_sync(call, tool, dict(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)

    return Server("lits-mapeval", instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool)


def run_serve_mcp(args: argparse.Namespace) -> int:
    from lits.api import require

    require("mcp", install="lits-core[mcp]", what="serve-mcp", package="the MCP SDK")
    if args.http and args.host not in LOOPBACK:
        raise ValueError(
            f"--host {args.host} is not a loopback address: the tools are served without "
            "authentication, so only 127.0.0.1, localhost or ::1 are allowed"
        )
    from lits_mapeval.dataset import load_mapeval_sql_resource

    resource = load_mapeval_sql_resource(db=args.db, seed=args.seed)
    server = build_server(list(resource["tools"]), str(resource["tool_context"]))
    if args.http:
        _serve_http(server, args.host, args.port)
    else:
        _serve_stdio(server)
    return 0


def _serve_stdio(server: Any) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def _serve_http(server: Any, host: str, port: int, log: Any | None = None) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host)
    print(
        f"lits-mapeval: serving the MapEval-SQL tools at http://{host}:{port}/mcp", file=log or sys.stderr, flush=True
    )
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()
