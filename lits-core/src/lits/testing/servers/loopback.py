"""What every loopback test server shares: a threaded HTTP server on 127.0.0.1 at a free port, serving from
``with`` until the block ends, when requests it holds (a hang it plays) are let go first."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    """Start with ``with``; subclasses build their handler class and call ``super().__init__(handler)``."""

    #: What a client's base URL ends in after the port ("/v1" for an OpenAI-compatible server).
    url_path = ""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.url_path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.let_go()
        self._httpd.shutdown()
        self._httpd.server_close()

    def let_go(self) -> None:
        """Answer or drop every request held to play a slow or hung server, so stopping does not wait on it."""
