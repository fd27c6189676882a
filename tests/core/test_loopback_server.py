"""The loopback test servers' one base: a free port on 127.0.0.1, served from ``with``, held requests let go
before it stops."""

from __future__ import annotations

import threading
import urllib.request
from http.server import BaseHTTPRequestHandler

from lits.testing.servers.loopback import LoopbackServer
from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits.testing.servers.pooling import FakePoolingServer


class HoldingServer(LoopbackServer):
    """Answers each GET only once let go (a hung server), with the text "late"."""

    url_path = "/api"

    def __init__(self) -> None:
        self.held = threading.Event()
        self.free = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                server.held.set()
                server.free.wait()
                self.send_response(200)
                self.send_header("Content-Length", "4")
                self.end_headers()
                self.wfile.write(b"late")

        super().__init__(Handler)

    def let_go(self) -> None:
        self.free.set()


def test_leaving_the_block_lets_go_of_a_held_request_before_the_server_stops():
    replies: list[bytes] = []
    with HoldingServer() as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/api"
        client = threading.Thread(target=lambda: replies.append(urllib.request.urlopen(server.base_url).read()))
        client.start()
        assert server.held.wait(30)
    client.join(30)
    assert replies == [b"late"]


def test_the_openai_compatible_and_pooling_servers_share_the_base_and_its_v1_path():
    with FakeOpenAIServer() as chat, FakePoolingServer() as pooling:
        for server in (chat, pooling):
            assert isinstance(server, LoopbackServer)
            assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
