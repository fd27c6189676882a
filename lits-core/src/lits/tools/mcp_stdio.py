"""The stdio transport to an MCP server, reading each reply with a byte limit.

A tool result of 50 MB is no use to a model, and reading it whole is where the
time went (a reader that re-scans its buffer per chunk costs minutes on one
such line).  Here lines are split in one pass, and a line longer than
:data:`MAX_LINE_BYTES` is not kept: only its head is, and the call gets a result
made from that head which says how large the reply was.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, IO, AsyncIterator

if TYPE_CHECKING:
    from anyio.abc import Process
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

#: The longest reply line read whole; a longer one keeps only :data:`HEAD_BYTES` (tool results are capped
#: far below this anyway, see :data:`lits.tools.mcp.RESULT_CHARS`).
MAX_LINE_BYTES = 1_000_000
HEAD_BYTES = 64_000
#: What a cut reply's text ends with; :func:`lits.tools.mcp.result_text` reads the size back from it.
CUT_NOTE = "[reply cut: the server sent {size} bytes]"
CUT_PATTERN = re.compile(r"\n\[reply cut: the server sent (\d+) bytes\]$")
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_TEXT = re.compile(rb'"text"\s*:\s*"')
_PARTIAL_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{0,3})?$")


@dataclass(frozen=True)
class CutLine:
    """A line past the limit: its first bytes and its whole size."""

    head: bytes
    size: int


class LineSplitter:
    """Bytes in, lines out: each byte is looked at once, and a line past ``limit`` keeps only its head."""

    def __init__(self, limit: int = MAX_LINE_BYTES, head: int = HEAD_BYTES) -> None:
        self.limit, self.head = limit, head
        self._parts: list[bytes] = []
        self._size = 0
        self._over = False

    def feed(self, chunk: bytes) -> list[bytes | CutLine]:
        lines: list[bytes | CutLine] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._add(chunk[start : end if end >= 0 else len(chunk)])
            if end < 0:
                return lines
            lines.append(self._take())
            start = end + 1

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._over:
            return
        self._parts.append(piece)
        if self._size > self.limit:
            self._parts = [b"".join(self._parts)[: self.head]]
            self._over = True

    def _take(self) -> bytes | CutLine:
        line: bytes | CutLine = CutLine(self._parts[0], self._size) if self._over else b"".join(self._parts)
        self._parts, self._size, self._over = [], 0, False
        return line


def cut_reply(line: CutLine) -> dict[str, object] | None:
    """A JSON-RPC response for the request a cut line answered: its text's head and the note; None when the
    head does not say which request it answers."""
    found = _ID.search(line.head)
    if found is None:
        return None
    text = ""
    start = _TEXT.search(line.head)
    if start is not None:
        raw = line.head[start.end() :].decode("utf-8", "ignore")
        closing = re.search(r'(?<!\\)(?:\\\\)*"', raw)  # the string may end inside the head
        raw = raw[: closing.end() - 1] if closing else _PARTIAL_ESCAPE.sub("", raw)
        with contextlib.suppress(ValueError):
            text = json.loads(f'"{raw}"')
    note = CUT_NOTE.format(size=line.size)
    # Marked as an error so the SDK does not hold the head against the tool's output schema; the tool reads
    # the note and gives the head to the model as the result (see lits.tools.mcp.McpTool).
    return {
        "jsonrpc": "2.0",
        "id": json.loads(found.group(1)),
        "result": {"content": [{"type": "text", "text": f"{text}\n{note}"}], "isError": True},
    }


def _message(line: bytes | CutLine) -> SessionMessage | Exception:
    """A session message for one line, or the exception the session reports for a line it cannot read."""
    from mcp import types
    from mcp.shared.message import SessionMessage

    if isinstance(line, CutLine):
        reply = cut_reply(line)
        if reply is None:
            return ValueError(f"the MCP server sent a {line.size}-byte message that says no request id")
        line = json.dumps(reply).encode()
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


@contextlib.asynccontextmanager
async def bounded_stdio(
    argv: list[str], cwd: str | None, env: dict[str, str], errlog: IO[str] | None
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """The server started as ``argv`` (its own process group), as the SDK's read and write streams."""
    import anyio

    process = await anyio.open_process(argv, cwd=cwd, env=env, stderr=errlog, start_new_session=True)
    read_writer: MemoryObjectSendStream[SessionMessage | Exception]
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception]
    write_stream: MemoryObjectSendStream[SessionMessage]
    write_reader: MemoryObjectReceiveStream[SessionMessage]
    read_writer, read_stream = anyio.create_memory_object_stream(0)
    write_stream, write_reader = anyio.create_memory_object_stream(0)

    async def reader() -> None:
        assert process.stdout is not None
        splitter = LineSplitter()
        async with read_writer:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for chunk in process.stdout:
                    for line in splitter.feed(chunk):
                        if line:
                            await read_writer.send(_message(line))

    async def writer() -> None:
        assert process.stdin is not None
        async with write_reader:
            try:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(f"{text}\n".encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await read_writer.aclose()  # the session sees the end instead of waiting for a reply

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            tasks.cancel_scope.cancel()


async def _stop(process: Process) -> None:
    """Close the server's stdin, give it 2 s to leave, then kill its process group."""
    import anyio

    with contextlib.suppress(Exception):
        if process.stdin is not None:
            await process.stdin.aclose()
    with anyio.move_on_after(2):
        await process.wait()
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with anyio.move_on_after(2):
            await process.wait()
    with contextlib.suppress(Exception):
        await process.aclose()
