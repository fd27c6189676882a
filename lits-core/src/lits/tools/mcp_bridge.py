"""A synchronous handle on one MCP server, for tools that run on worker threads.

The MCP SDK is asynchronous; LiTS tools are called from plain threads.  An
:class:`McpConnection` owns one background thread running its own event loop,
which holds the transport (a stdio subprocess or a streamable-HTTP client) and
the ``ClientSession``; tool calls are submitted to that loop and waited for
with a time budget.  A server that stops answering is restarted (stdio) or
reconnected (HTTP) once; after that every call raises :class:`McpServerLost`,
which fails the instance with one line naming the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import tempfile
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, Awaitable, Callable, NoReturn, TypeVar

from lits.io.secrets import KEY_ENV_VARS, redact_text
from lits.tools.base import ToolUnavailable

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

T = TypeVar("T")

INSTALL_HINT = "the MCP resource needs the MCP SDK: pip install 'lits-core[mcp]'"
#: Seconds a server may take to start and list its tools.
START_TIMEOUT = 30.0
#: Seconds a liveness check may take after a call failed without an answer.
PING_TIMEOUT = 5.0
#: Restarts allowed per connection before calls fail for good.
RESTARTS = 1


class McpServerLost(ToolUnavailable):
    """The MCP server died (again): the instance cannot go on without its tools."""


@dataclass(frozen=True)
class McpServerSpec:
    """Where the server is: a command to start (stdio) or a streamable-HTTP URL."""

    command: str | None = None
    url: str | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ValueError(
                'the mcp resource needs exactly one of --resource-arg command="..." (a server '
                "started over stdio) or --resource-arg url=http://127.0.0.1:PORT/mcp"
            )
        if self.command is not None and not shlex.split(self.command):
            raise ValueError("--resource-arg command is empty")

    @property
    def label(self) -> str:
        """How error messages name the server (URL credentials hidden)."""
        return f"`{self.command}`" if self.command else redact_text(str(self.url))


def import_sdk() -> ModuleType:
    """The ``mcp`` package, or one line saying how to install it."""
    from lits.runtime.extras import require

    return require("mcp", install="lits-core[mcp]", what="the MCP resource", package="the MCP SDK")


def server_environment(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without LiTS's model API keys, plus ``extra``: a tool server never needs them."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_ENV_VARS}
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


class McpConnection:
    """One MCP server, connected at :meth:`start` and used from any thread."""

    def __init__(self, spec: McpServerSpec, start_timeout: float = START_TIMEOUT) -> None:
        self.mcp = import_sdk()
        self.spec = spec
        self.start_timeout = start_timeout
        self.tools: list[Tool] = []  # the server's Tool descriptions, as listed at start-up
        self.instructions: str | None = None
        self.restarts_left = RESTARTS
        self._session: ClientSession | None = None
        self._lost: str | None = None  # why the server is gone for good
        self._stop: asyncio.Event | None = None
        self._holder: Future[None] | None = None
        self._finished = threading.Event()  # the holder task has left the SDK's context managers
        self._errlog: IO[str] | None = None
        self._lock = threading.Lock()  # one restart at a time
        self._generation = 0
        self._calls: dict[int, Future[CallToolResult]] = {}  # worker thread id -> its call in flight
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lits-mcp", daemon=True)
        self._thread.start()

    # -- start-up and shut-down ---------------------------------------------------------------------------

    def start(self) -> None:
        """Connect, initialize and list the tools; one line (``ValueError``) when the server cannot be reached."""
        try:
            self._connect()
        except ValueError:
            self.close()
            raise

    def _connect(self) -> None:
        ready: Future[tuple[list[Tool], str | None, ClientSession]] = Future()
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8") if self.spec.command else None
        stop_box: Future[asyncio.Event] = Future()
        self._finished = finished = threading.Event()
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(ready, stop_box, finished), self._loop)
        self._stop = stop_box.result(self.start_timeout)
        try:
            tools, instructions, session = ready.result(self.start_timeout)
        except FutureTimeout:
            self._holder.cancel()  # stuck before the session was up: stopping it cannot wait for a reply
            self._discard()
            self._close_errlog()
            raise ValueError(
                f"MCP server {self.spec.label} did not answer within {self.start_timeout:g} s of starting"
            ) from None
        except Exception as exc:
            self._discard()  # first: the server's stderr is complete once it has stopped
            why = self._why(exc)
            self._close_errlog()
            failed = "could not be started" if self.spec.command else "could not be reached"
            raise ValueError(f"MCP server {self.spec.label} {failed}: {why}") from None
        self._session, self.tools, self.instructions = session, tools, instructions
        self._generation += 1

    async def _hold(
        self,
        ready: Future[tuple[list[Tool], str | None, ClientSession]],
        stop_box: Future[asyncio.Event],
        finished: threading.Event,
    ) -> None:
        """Open the transport and session, report the tool list, then keep both open until told to stop.

        The same task enters and leaves the SDK's context managers (anyio requires it)."""
        stop = asyncio.Event()
        stop_box.set_result(stop)
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(self.mcp.ClientSession(read, write))
                init = await session.initialize()
                tools = await self._list_tools(session)
                if [t.name for t in tools] != [t.name for t in await self._list_tools(session)]:
                    tools.sort(key=lambda t: t.name)  # an unstable order would make runs differ: use the names'
                ready.set_result((tools, getattr(init, "instructions", None), session))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            finished.set()

    def _transport(self) -> Any:
        if self.spec.command:
            from lits.tools.mcp_stdio import bounded_stdio

            argv = shlex.split(self.spec.command)
            return bounded_stdio(argv, self.spec.cwd, server_environment(self.spec.env), self._errlog)
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(str(self.spec.url))

    async def _list_tools(self, session: ClientSession) -> list[Tool]:
        """Every page of the listing, in the server's order."""
        tools: list[Tool] = []
        page = await session.list_tools()
        for _ in range(100):  # a server that pages forever cannot hang the start
            tools.extend(page.tools)
            if not page.next_cursor:
                break
            page = await session.list_tools(params=self.mcp.types.PaginatedRequestParams(cursor=page.next_cursor))
        return tools

    def _why(self, exc: BaseException) -> str:
        """One line: the server's own last stderr line if it wrote one, else the exception."""
        for inner in getattr(exc, "exceptions", ()) or ():  # an anyio task group's ExceptionGroup
            return self._why(inner)
        last = self._stderr_tail()
        text = last or (str(exc) or type(exc).__name__)
        return redact_text(" ".join(text.split()))[:300]

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        with contextlib.suppress(Exception):
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [line.strip() for line in self._errlog.read().splitlines() if line.strip()]
            return lines[-1] if lines else ""
        return ""

    def _discard(self) -> None:
        """Stop the current session (and its server process), waiting a bounded time."""
        stop, holder = self._stop, self._holder
        self._stop, self._holder, self._session = None, None, None
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        if holder is None:
            return
        if not self._finished.wait(3):  # stuck: cancel it (the SDK then stops the process, in bounded time)
            holder.cancel()
            self._finished.wait(10)

    def _close_errlog(self) -> None:
        if self._errlog is not None:
            with contextlib.suppress(Exception):
                self._errlog.close()
            self._errlog = None

    def close(self) -> None:
        """Stop the server and the loop thread (idempotent)."""
        if not self._loop.is_running():
            return
        self._discard()
        self._close_errlog()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # -- calls ------------------------------------------------------------------------------------------

    def _submit(self, make: Callable[[ClientSession], Awaitable[T]]) -> Future[T]:
        session = self._session
        if session is None:
            raise McpServerLost(self._lost or f"MCP server {self.spec.label} is not running")

        async def run() -> T:
            return await make(session)

        return asyncio.run_coroutine_threadsafe(run(), self._loop)  # type: ignore[return-value]

    def call_tool(self, name: str, arguments: dict[str, object], budget: float) -> CallToolResult:
        """The server's ``CallToolResult``; raises the SDK's error for a refused call, ``TimeoutError`` after
        ``budget`` s, :class:`McpServerLost` when the server is gone and was already restarted."""
        for attempt in range(2):
            generation = self._generation
            future = self._submit(lambda s: s.call_tool(name, arguments))
            me = threading.get_ident()
            self._calls[me] = future
            try:
                return future.result(budget)
            except FutureTimeout:
                future.cancel()
                raise TimeoutError(f"no answer within {budget:g} s") from None
            except Exception as exc:
                if future.cancelled() or self._alive():
                    raise
                self._restart(generation, exc)
            finally:
                self._calls.pop(me, None)
        raise McpServerLost(f"MCP server {self.spec.label} stopped answering")  # pragma: no cover

    def cancel(self, thread_id: int | None) -> bool:
        """Cancel the call made by ``thread_id`` (its worker then ends at once)."""
        future = self._calls.get(thread_id) if thread_id is not None else None
        return bool(future is not None and future.cancel())

    def _alive(self) -> bool:
        try:
            self._submit(lambda s: s.send_ping()).result(PING_TIMEOUT)
            return True
        except Exception:
            return False

    def _restart(self, generation: int, cause: BaseException) -> None:
        """Start the server again once (another thread may have done it already); else give up for good."""
        with self._lock:
            if self._generation != generation and self._session is not None:
                return  # a concurrent call already restarted it
            self._discard()
            why = self._why(cause)
            self._close_errlog()
            if self.restarts_left <= 0:
                self._give_up(f"MCP server {self.spec.label} stopped again after a restart ({why})")
            self.restarts_left -= 1
            names = [t.name for t in self.tools]
            try:
                self._connect()
            except ValueError as exc:
                again = str(exc).removeprefix(f"MCP server {self.spec.label} ")
                self._give_up(f"MCP server {self.spec.label} stopped ({why}), and then {again}")
            if [t.name for t in self.tools] != names:
                self._discard()
                self._give_up(f"MCP server {self.spec.label} came back with other tools after a restart")

    def _give_up(self, why: str) -> NoReturn:
        """From now on every call fails with ``why`` (the instance, and any retry of it, fails in one line)."""
        self._lost = why
        raise McpServerLost(why)
