"""What a tool call costs through MCP: the MapEval-SQL tools in-process, over stdio and over streamable HTTP.

For each way: seconds from nothing to the listed tools (server start, handshake, listing), then the
median and 95th-percentile milliseconds of one `query_sql` call (the same small query, called
one after another through :func:`lits.tools.execute_tool_action`, as the transition calls tools).

    python benchmarks/mcp_overhead.py [--calls 200] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from lits.tools import execute_tool_action

QUERY = '{"tool": "query_sql", "args": {"query": "SELECT name, rating FROM places ORDER BY rating DESC LIMIT 5"}}'
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _measure(name: str, load: Callable[[], dict[str, Any]], calls: int) -> dict[str, Any]:
    started = time.perf_counter()
    resource = load()
    ready = time.perf_counter() - started
    tools = resource["tools"]
    expected = execute_tool_action(QUERY, tools)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        assert execute_tool_action(QUERY, tools) == expected
        times.append((time.perf_counter() - t0) * 1000)
    if "connection" in resource:
        resource["connection"].close()
    times.sort()
    return {
        "way": name,
        "ready_s": round(ready, 2),
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("LITS_CACHE_DIR", tempfile.mkdtemp(prefix="lits-mcp-bench-"))
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    from lits.tools.mcp import load_mcp_resource
    from lits_mapeval.dataset import load_mapeval_sql_resource

    load_mapeval_sql_resource()  # build the city once, outside the timings
    rows = [
        _measure("in-process", load_mapeval_sql_resource, args.calls),
        _measure("MCP stdio", lambda: load_mcp_resource(command="lits-mapeval serve-mcp"), args.calls),
    ]
    port = _free_port()
    server = subprocess.Popen(
        [str(BIN / "lits-mapeval"), "serve-mcp", "--http", "--port", str(port)], stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        rows.append(
            _measure(
                "MCP streamable HTTP (server already up)",
                lambda: load_mcp_resource(url=f"http://127.0.0.1:{port}/mcp"),
                args.calls,
            )
        )
    finally:
        server.terminate()
        server.wait(10)
    if args.markdown:
        print("| way | ready (s) | median call (ms) | p95 call (ms) |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r['way']} | {r['ready_s']} | {r['median_ms']} | {r['p95_ms']} |")
    else:
        for r in rows:
            print(r)


if __name__ == "__main__":
    main()
