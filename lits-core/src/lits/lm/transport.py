"""A lean HTTP/1.1 transport for plain ``http://`` model servers, under httpx's client.

httpx's own connection pool costs 2–5 ms of CPU per call once dozens of calls
are in flight (one pool lock, scans over every connection), which under one
GIL is what bounded wide searches against a local server.  This transport
keeps idle keep-alive connections of the standard library's
:mod:`http.client` in a stack (O(1) per call) and maps socket failures onto
httpx's exceptions, so the retry layer above sees what it always saw.
``https://`` (remote APIs, where the network dominates) and everything else
goes through :class:`httpx.HTTPTransport` unchanged.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from typing import Optional

import httpx

class Interrupt:
    """Lets another thread cut one in-flight request short: a hedged call whose copy answered first.

    The transport attaches the request's socket while it waits on it; :meth:`fire` shuts that socket
    down, so the waiting read fails at once instead of running to its timeout.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: Optional[socket.socket] = None
        self.fired = False

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            if self.fired:
                raise httpx.ReadError("cut short: another copy of the request answered first")
            self._sock = sock

    def detach(self) -> bool:
        """Stop watching the socket; True when it was shut down meanwhile (it must not be reused)."""
        with self._lock:
            self._sock = None
            return self.fired

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            if self._sock is not None:
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)


#: Idle connections kept per server; more are closed when handed back.
MAX_IDLE = 128

_Key = tuple[str, int]


class LeanHTTPTransport(httpx.BaseTransport):
    """Plain-HTTP requests over reused :class:`http.client.HTTPConnection` s; the rest via ``fallback``."""

    def __init__(self, fallback: httpx.BaseTransport) -> None:
        self.fallback = fallback
        self._idle: dict[_Key, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http" or not url.host:
            return self.fallback.handle_request(request)
        key = (url.host, url.port or 80)
        timeouts = request.extensions.get("timeout") or {}
        body = request.read()
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw}
        target = url.raw_path.decode("ascii")
        interrupt = request.extensions.get("lits_interrupt")
        conn = self._take(key)
        phase = "write"
        try:
            if conn.sock is None:
                _connect(conn, timeouts.get("connect"))
            if isinstance(interrupt, Interrupt):
                assert conn.sock is not None
                interrupt.attach(conn.sock)
            _settimeout(conn, timeouts.get("write"))
            conn.request(request.method, target, body, headers)
            phase = "read"
            _settimeout(conn, timeouts.get("read"))
            response = conn.getresponse()
            data = response.read()
        except httpx.TransportError:
            conn.close()
            raise
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise _mapped(exc, phase) from exc
        except BaseException:
            conn.close()
            raise
        finally:
            cut = isinstance(interrupt, Interrupt) and interrupt.detach()
        self._give_back(key, conn, keep=not response.will_close and not cut)
        return httpx.Response(
            response.status,
            headers=response.getheaders(),
            stream=httpx.ByteStream(data),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason.encode("latin-1")},
            request=request,
        )

    def _take(self, key: _Key) -> http.client.HTTPConnection:
        """An idle connection still open on the server's side, or a new (unconnected) one."""
        while True:
            with self._lock:
                stack = self._idle.get(key)
                conn = stack.pop() if stack else None
            if conn is None:
                return http.client.HTTPConnection(key[0], key[1])
            if _still_open(conn):
                return conn
            conn.close()

    def _give_back(self, key: _Key, conn: http.client.HTTPConnection, *, keep: bool) -> None:
        with self._lock:
            stack = self._idle.setdefault(key, [])
            if keep and not self._closed and conn.sock is not None and len(stack) < MAX_IDLE:
                stack.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [conn for stack in self._idle.values() for conn in stack]
            self._idle.clear()
        for conn in idle:
            conn.close()
        self.fallback.close()


def _connect(conn: http.client.HTTPConnection, timeout: Optional[float]) -> None:
    conn.timeout = timeout
    try:
        conn.connect()
    except TimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "timed out connecting") from exc
    except OSError as exc:
        raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
    assert conn.sock is not None
    # A request's headers and body leave at once instead of waiting on an ACK.
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _settimeout(conn: http.client.HTTPConnection, timeout: Optional[float]) -> None:
    if conn.sock is not None:
        conn.sock.settimeout(timeout)


def _still_open(conn: http.client.HTTPConnection) -> bool:
    """False when the server has closed (or written unasked to) an idle connection."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        sock.setblocking(False)
        try:
            sock.recv(1, socket.MSG_PEEK)  # b"": closed; bytes: a reply nobody asked for
            return False
        finally:
            sock.setblocking(True)
    except BlockingIOError:
        return True
    except OSError:
        return False


def _mapped(exc: BaseException, phase: str) -> httpx.TransportError:
    """The httpx exception the retry layer expects for a failure after connecting."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, http.client.HTTPException):  # no reply at all, a bad status line, a cut-off body
        return httpx.RemoteProtocolError(detail)
    if isinstance(exc, TimeoutError):
        return httpx.WriteTimeout(detail) if phase == "write" else httpx.ReadTimeout(detail)
    return httpx.WriteError(detail) if phase == "write" else httpx.ReadError(detail)
