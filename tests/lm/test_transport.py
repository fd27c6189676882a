"""The lean plain-HTTP transport: kept-alive connections, and socket failures as the httpx errors retries expect."""

from __future__ import annotations

import socket
import threading
from typing import Callable, Iterator

import httpx
import pytest

from lits.lm.http.lean_transport import Interrupt, LeanHTTPTransport

OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok": 1} \n'

#: What the server does with one accepted connection (it reads the requests itself).
Handler = Callable[[socket.socket], None]


class RawServer:
    """A loopback TCP server whose per-connection behaviour a test writes; counts connections."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def read_request(conn: socket.socket) -> bool:
    """Read one request with a Content-Length body; False when the client closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        body += conn.recv(65536)
    return True


def keep_alive(conn: socket.socket) -> None:
    while read_request(conn):
        conn.sendall(OK)


def one_reply_then_close(conn: socket.socket) -> None:
    """Answers as if keeping the connection alive, then closes it (as an idle-timeout would)."""
    if read_request(conn):
        conn.sendall(OK)
    conn.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], RawServer]]:
    servers: list[RawServer] = []

    def start(handle: Handler) -> RawServer:
        servers.append(RawServer(handle))
        return servers[-1]

    yield start
    for server in servers:
        server.sock.close()


def client(base_url: str, read: float = 5.0) -> httpx.Client:
    return httpx.Client(
        base_url=base_url,
        transport=LeanHTTPTransport(httpx.HTTPTransport),
        timeout=httpx.Timeout(connect=2.0, read=read, write=read, pool=None),
    )


def test_sequential_calls_share_one_kept_alive_connection(serve):
    server = serve(keep_alive)
    with client(server.url) as http:
        replies = [http.post("/chat/completions", json={"n": i}).json() for i in range(5)]
    assert replies == [{"ok": 1}] * 5
    assert server.connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error(serve):
    server = serve(one_reply_then_close)
    with client(server.url) as http:
        first = http.post("/x", json={}).status_code
        threading.Event().wait(0.1)  # the server's close reaches the idle connection
        second = http.post("/x", json={}).status_code
    assert (first, second) == (200, 200)
    assert server.connections == 2


def test_a_refused_connection_is_a_connect_error_that_says_refused():
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with client(f"http://127.0.0.1:{port}") as http, pytest.raises(httpx.ConnectError, match="refused"):
        http.post("/x", json={})


def test_a_server_that_never_answers_is_a_read_timeout(serve):
    server = serve(lambda conn: (read_request(conn), threading.Event().wait(5)))
    with client(server.url, read=0.2) as http, pytest.raises(httpx.ReadTimeout):
        http.post("/x", json={})


def test_a_body_cut_short_is_a_remote_protocol_error(serve):
    def cut(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(OK[:-4])
        conn.close()

    server = serve(cut)
    with client(server.url) as http, pytest.raises(httpx.RemoteProtocolError):
        http.post("/x", json={})


def test_https_goes_through_the_fallback_transport():
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"ok": 1})

    transport = LeanHTTPTransport(lambda: httpx.MockTransport(answer))
    with httpx.Client(transport=transport) as http:
        assert http.get("https://models.example/v1/models").json() == {"ok": 1}
    assert seen == ["https://models.example/v1/models"]


def test_plain_http_never_builds_the_fallback_transport(serve):
    built: list[str] = []

    def fallback() -> httpx.BaseTransport:
        built.append("fallback")  # httpx's transport loads the CA bundle: ~45 ms a plain-HTTP run never needs
        return httpx.HTTPTransport()

    server = serve(keep_alive)
    with httpx.Client(base_url=server.url, transport=LeanHTTPTransport(fallback)) as http:
        assert http.post("/x", json={}).status_code == 200
    assert built == []


def test_an_interrupt_cuts_a_waiting_request_short_and_its_connection_is_not_reused(serve):
    answered, waiting, released = threading.Event(), threading.Event(), threading.Event()

    def hang_once(conn: socket.socket) -> None:
        if not answered.is_set():
            answered.set()
            read_request(conn)
            waiting.set()
            released.wait(60)  # never answers this one (longer than the read timeout)
            return
        keep_alive(conn)

    server = serve(hang_once)
    interrupt = Interrupt()
    threading.Thread(target=lambda: waiting.wait(60) and interrupt.fire(), daemon=True).start()
    try:
        with client(server.url) as http:
            request = http.build_request("POST", "/x", json={}, extensions={"lits_interrupt": interrupt})
            # cut short: a read error, not the read timeout's httpx.ReadTimeout after waiting out the hang
            with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
                http.send(request)
            assert http.post("/x", json={}).json() == {"ok": 1}
    finally:
        released.set()
    assert server.connections == 2


def replying(*replies: bytes) -> Handler:
    """Answers each request on the connection with the next reply (closing after the last one)."""

    def handle(conn: socket.socket) -> None:
        for reply in replies:
            if not read_request(conn):
                return
            conn.sendall(reply)
        conn.close()

    return handle


def test_a_chunked_reply_is_joined_and_its_connection_kept(serve):
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        b'4;ext=1\r\n{"ok\r\n5\r\n": 2}\r\n0\r\nTrailer: x\r\n\r\n'
    )
    server = serve(replying(chunked, OK))
    with client(server.url) as http:
        assert http.post("/x", json={}).json() == {"ok": 2}
        assert http.post("/x", json={}).json() == {"ok": 1}
    assert server.connections == 1


def test_interim_replies_are_skipped_and_a_reply_without_length_runs_to_the_close(serve):
    server = serve(replying(b'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nX-A:  spaced  \r\n\r\n{"ok": 3}'))
    with client(server.url) as http:
        response = http.post("/x", json={})
    assert response.json() == {"ok": 3} and response.headers["x-a"] == "spaced"


def test_a_reply_that_says_close_is_not_reused_and_no_content_has_no_body(serve):
    server = serve(replying(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
    with client(server.url) as http:
        assert http.post("/x", json={}).content == b""
        http.post("/x", json={})  # a new connection, served again by the same handler
    assert server.connections == 2


@pytest.mark.parametrize(
    "reply",
    [
        b"garbage\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n",
    ],
    ids=["no-status", "bad-code", "bad-length", "bad-chunk", "too-many-headers"],
)
def test_a_malformed_reply_is_a_remote_protocol_error(serve, reply):
    server = serve(replying(reply))
    with client(server.url) as http, pytest.raises(httpx.RemoteProtocolError):
        http.post("/x", json={})
