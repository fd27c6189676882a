"""A lean HTTP/1.1 transport for plain ``http://`` model servers, under httpx's client.

httpx's own connection pool costs 2–5 ms of CPU per call once dozens of calls
are in flight (one pool lock, scans over every connection), which under one
GIL is what bounded wide searches against a local server.  This transport
keeps idle keep-alive connections in a stack (O(1) per call), reads each
reply with its own small HTTP/1.1 reader (:mod:`http.client` parses headers
with the email package: a fifth of a call's client CPU) and maps socket
failures onto httpx's exceptions, so the retry layer above sees what it
always saw (malformed replies raise :mod:`http.client`'s exceptions first).
``https://`` (remote APIs, where the network dominates) and everything else
goes through :class:`httpx.HTTPTransport` unchanged.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from dataclasses import dataclass
from typing import BinaryIO, Callable

import httpx


class Interrupt:
    """Lets another thread cut one in-flight request short: a hedged call whose copy answered first.

    The transport attaches the request's socket while it waits on it; :meth:`fire` shuts that socket
    down, so the waiting read fails at once instead of running to its timeout.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.fired = False
        #: Whether firing cut a request that was on its socket (sent, or being sent): one the server may
        #: answer and bill.  False when it fired before the request got that far (it is never sent).
        self.cut = False

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
            self.cut = self._sock is not None
            if self._sock is not None:
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)


#: Idle connections kept per server; more are closed when handed back.
MAX_IDLE = 128

_Key = tuple[str, int]


class LeanHTTPTransport(httpx.BaseTransport):
    """Plain-HTTP requests over reused :class:`Connection` s; the rest via the transport ``fallback()`` makes.

    The fallback is made on its first request: httpx's transport loads the CA bundle (~45 ms), which
    a plain-HTTP server never needs.
    """

    def __init__(self, fallback: Callable[[], httpx.BaseTransport]) -> None:
        self._make_fallback = fallback
        self._fallback: httpx.BaseTransport | None = None
        self._idle: dict[_Key, list[Connection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def fallback(self) -> httpx.BaseTransport:
        with self._lock:
            if self._fallback is None:
                self._fallback = self._make_fallback()
            return self._fallback

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http" or not url.host:
            return self.fallback.handle_request(request)
        key = (url.host, url.port or 80)
        timeouts = request.extensions.get("timeout") or {}
        body = request.read()
        interrupt = request.extensions.get("lits_interrupt")
        conn = self._take(key)
        phase = "write"
        try:
            if conn.sock is None:
                conn.connect(timeouts.get("connect"))
            if isinstance(interrupt, Interrupt):
                assert conn.sock is not None
                interrupt.attach(conn.sock)
            conn.send(request.method, url.raw_path, request.headers.raw, body, timeouts.get("write"))
            phase = "read"
            reply = conn.receive(request.method, timeouts.get("read"))
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
        self._give_back(key, conn, keep=not reply.will_close and not cut)
        return httpx.Response(
            reply.status,
            headers=reply.headers,
            stream=httpx.ByteStream(reply.body),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reply.reason},
            request=request,
        )

    def _take(self, key: _Key) -> "Connection":
        """An idle connection still open on the server's side, or a new (unconnected) one."""
        while True:
            with self._lock:
                stack = self._idle.get(key)
                conn = stack.pop() if stack else None
            if conn is None:
                return Connection(key[0], key[1])
            if _still_open(conn):
                return conn
            conn.close()

    def _give_back(self, key: _Key, conn: "Connection", *, keep: bool) -> None:
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
        if self._fallback is not None:
            self._fallback.close()


#: What one HTTP reply may hold before it counts as malformed (as :mod:`http.client` limits it).
MAX_LINE = 65536
MAX_HEADERS = 100


@dataclass
class Reply:
    """One HTTP reply as :meth:`Connection.receive` read it (the body whole, as the model calls need it)."""

    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    will_close: bool


class Connection:
    """One HTTP/1.1 connection: a request written in one send, its reply read through a buffered reader."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.sock: socket.socket | None = None
        self._reader: BinaryIO | None = None

    def connect(self, timeout: float | None) -> None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "timed out connecting") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        # A request's headers and body leave at once instead of waiting on an ACK.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self._reader = sock, sock.makefile("rb")

    def send(
        self, method: str, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes, timeout: float | None
    ) -> None:
        assert self.sock is not None
        names = {name.lower() for name, _ in headers}
        lines = [method.encode("ascii") + b" " + target + b" HTTP/1.1"]
        if b"host" not in names:
            lines.append(b"Host: " + f"{self.host}:{self.port}".encode("idna"))
        lines.extend(name + b": " + value for name, value in headers)
        if body and b"content-length" not in names and b"transfer-encoding" not in names:
            lines.append(b"Content-Length: " + str(len(body)).encode("ascii"))
        self.sock.settimeout(timeout)
        self.sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)

    def receive(self, method: str, timeout: float | None) -> Reply:
        """The reply to the request sent (interim 1xx replies skipped)."""
        assert self.sock is not None and self._reader is not None
        self.sock.settimeout(timeout)
        while True:
            version, status, reason = self._status_line()
            headers = self._headers()
            if not 100 <= status < 200 or status == 101:
                break
        fields = {name.strip().lower(): value.strip() for name, value in headers}
        connection = fields.get(b"connection", b"").lower()
        will_close = b"close" in connection or (version == b"HTTP/1.0" and b"keep-alive" not in connection)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif b"chunked" in fields.get(b"transfer-encoding", b"").lower():
            body = self._chunked()
        elif b"content-length" in fields:
            try:
                length = int(fields[b"content-length"])
            except ValueError:
                raise http.client.HTTPException(f"bad Content-Length {fields[b'content-length']!r}") from None
            body = self._reader.read(length) if length > 0 else b""
            if len(body) < length:
                raise http.client.IncompleteRead(body, length - len(body))
        else:  # the body runs to the end of the connection
            body, will_close = self._reader.read(), True
        return Reply(status, reason, headers, body, will_close)

    def _line(self, what: str) -> bytes:
        assert self._reader is not None
        line = self._reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong(what)
        return line

    def _status_line(self) -> tuple[bytes, int, bytes]:
        line = self._line("status line")
        if not line:
            raise http.client.RemoteDisconnected("Remote end closed connection without response")
        version, _, rest = line.rstrip(b"\r\n").partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/") or len(code) != 3 or not code.isdigit():
            raise http.client.BadStatusLine(repr(line))
        return version, int(code), reason.strip()

    def _headers(self) -> list[tuple[bytes, bytes]]:
        headers: list[tuple[bytes, bytes]] = []
        while True:
            line = self._line("header line")
            if line in (b"\r\n", b"\n", b""):
                return headers
            if len(headers) >= MAX_HEADERS:
                raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
            name, colon, value = line.partition(b":")
            if colon:
                headers.append((name.strip(), value.strip()))

    def _chunked(self) -> bytes:
        assert self._reader is not None
        parts: list[bytes] = []
        while True:
            size_line = self._line("chunk size").split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise http.client.IncompleteRead(b"".join(parts)) from None
            if size == 0:
                while self._line("trailer line") not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            chunk = self._reader.read(size)
            if len(chunk) < size or self._reader.read(2) != b"\r\n":
                raise http.client.IncompleteRead(b"".join(parts) + chunk)
            parts.append(chunk)

    def close(self) -> None:
        reader, sock = self._reader, self.sock
        self._reader = self.sock = None
        for part in (reader, sock):
            if part is not None:
                with contextlib.suppress(OSError):
                    part.close()


def _still_open(conn: Connection) -> bool:
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
