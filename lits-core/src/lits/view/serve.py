"""``lits view --serve``: the run's page on 127.0.0.1, rebuilt from the run dir on every load.

Rebuilding per request is what makes a refresh show a running search's newest
checkpoints; the server only reads the run.  It listens on the loopback
interface alone (the page holds prompts and states), and Ctrl-C stops it.
"""

from __future__ import annotations

import http.server
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Callable

from lits.view.html import render_report
from lits.view.model import build_report

HOST = "127.0.0.1"


def page_handler(run_root: Path) -> type[http.server.BaseHTTPRequestHandler]:
    """A handler that answers ``/`` with a freshly built page and anything else with 404."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            port = int(self.server.server_address[1])  # type: ignore[index]  # an AF_INET address
            if not loopback_host(self.headers.get("Host"), port):
                # A page on another site that re-points its own name at 127.0.0.1 (DNS rebinding)
                # would otherwise read the run: only loopback names are served.
                self.send_error(421, "only http://127.0.0.1 or http://localhost is served")
                return
            path = self.path.split("?", 1)[0]
            if path == "/favicon.ico":  # browsers ask; the page has no icon
                self.send_response(204)
                self.end_headers()
                return
            if path not in ("/", "/index.html", "/report.html"):
                self.send_error(404, "only / is served")
                return
            try:
                body = render_report(build_report(run_root)).encode("utf-8")
            except Exception as exc:  # noqa: BLE001 - the run vanished or is unreadable: say so in the page
                self.send_error(500, f"cannot read the run: {exc}")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet: one line per load is noise
            return

    return Handler


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def loopback_host(host: str | None, port: int) -> bool:
    """True when a request's Host header names this server by a loopback name (with its port, or none)."""
    if not host:
        return False
    host = host.strip().lower()
    name, port_text = host, ""
    if host.startswith("["):  # [::1] or [::1]:PORT
        end = host.find("]")
        name, rest = host[: end + 1], host[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else rest
    elif ":" in host:
        name, _, port_text = host.partition(":")
    return name in LOOPBACK_NAMES and port_text in ("", str(port))


def make_server(run_root: Path, port: int) -> http.server.ThreadingHTTPServer:
    """Bind to 127.0.0.1:``port`` (0: any free port); OSError when the port is taken."""
    server = http.server.ThreadingHTTPServer((HOST, port), page_handler(run_root))
    server.daemon_threads = True
    return server


def serve(
    run_root: Path,
    port: int,
    *,
    open_browser: bool = True,
    announce: Callable[[str], None] = lambda line: print(line, flush=True),
    ready: threading.Event | None = None,
) -> None:
    """Serve until Ctrl-C (KeyboardInterrupt is handled here: the server closes cleanly)."""
    server = make_server(run_root, port)
    url = f"http://{HOST}:{server.server_address[1]}/"
    announce(f"serving {run_root} at {url} (Ctrl-C stops)")
    if open_browser:
        webbrowser.open(url)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("lits: stopped serving", file=sys.stderr)
    finally:
        server.server_close()
