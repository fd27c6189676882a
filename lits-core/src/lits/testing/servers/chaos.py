"""A loopback chaos proxy: an OpenAI-compatible server that misbehaves on purpose.

Retries are only worth trusting once they have met the faults real servers
produce, so this proxy sits in front of an upstream server (usually
:class:`lits.testing.servers.openai_compat.FakeOpenAIServer`) and turns a share of the
completion requests into one of :data:`FAULT_KINDS`.  Whether a request is
hit, and by what, depends only on the seed, the request body and how often
that body was seen before, so a run is reproducible even with concurrent
requests.  Everything is bounded: a ``hang`` lasts at most ``hang_seconds``
(less when the proxy stops) and upstream calls have a timeout.  Stdlib only.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
import threading
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler
from typing import Iterable, Mapping
from urllib.parse import urlsplit

from lits.testing.servers.loopback import LoopbackServer

#: 429 (with Retry-After), 500, 503, a hang past the client's read timeout, a dropped
#: connection, invalid JSON with 200, 200 with no choices, 200 with empty content
#: and no finish reason, and a body cut off half way.
FAULT_KINDS = ("429", "500", "503", "hang", "drop", "malformed", "no_choices", "empty_content", "truncated")


def evenly(kinds: Iterable[str], rate: float) -> dict[str, float]:
    """Rates for a mix: ``rate`` of all requests fail, shared evenly among ``kinds``."""
    chosen = list(kinds)
    return {kind: rate / len(chosen) for kind in chosen} if chosen else {}


class ChaosProxy(LoopbackServer):
    """``with ChaosProxy(upstream_url, {"503": 0.3}, seed=1) as proxy: ... proxy.base_url``."""

    def __init__(
        self,
        upstream: str,
        rates: Mapping[str, float] | None = None,
        *,
        seed: int = 0,
        retry_after: str = "1",
        hang_seconds: float = 5.0,
        upstream_timeout: float = 30.0,
    ) -> None:
        unknown = set(rates or {}) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(FAULT_KINDS)}")
        if sum((rates or {}).values()) > 1.0 + 1e-9:
            raise ValueError("fault rates add up to more than 1")
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.path_prefix = parts.path.rstrip("/")
        self.rates = dict(rates or {})
        self.seed = seed
        self.retry_after = retry_after
        self.hang_seconds = hang_seconds
        self.upstream_timeout = upstream_timeout
        #: Requests seen and faults injected, by kind.
        self.requests = 0
        self.faults: Counter[str] = Counter()
        self._seen: Counter[bytes] = Counter()
        self._scripted: deque[str] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        super().__init__(self._handler())

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path_prefix}"

    def let_go(self) -> None:
        self._stopping.set()  # ends hangs early

    def fail_next(self, kind: str, times: int = 1) -> None:
        """Give the next ``times`` completion requests fault ``kind``, whatever the rates say."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
        with self._lock:
            self._scripted.extend([kind] * times)

    # -- decisions ---------------------------------------------------------------
    def decide(self, path: str, body: bytes) -> str | None:
        """The fault for this request (None: forward it untouched); deterministic per seed."""
        with self._lock:
            self.requests += 1
            if self._scripted:
                kind = self._scripted.popleft()
                self.faults[kind] += 1
                return kind
            key = path.encode() + b"\0" + body
            occurrence = self._seen[key]
            self._seen[key] += 1
        digest = hashlib.sha256(f"{self.seed}:{occurrence}:".encode() + key).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        for kind in FAULT_KINDS:
            draw -= self.rates.get(kind, 0.0)
            if draw < 0:
                with self._lock:
                    self.faults[kind] += 1
                return kind
        return None

    def forward(
        self, method: str, path: str, body: bytes, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """Send the request upstream; a failure there becomes a 502."""
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=self.upstream_timeout)
        sent = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length", "connection")}
        try:
            conn.request(method, path, body=body or None, headers=sent)
            reply = conn.getresponse()
            data = reply.read()
            kept = {k: v for k, v in reply.getheaders() if k.lower() in ("content-type", "retry-after")}
            return reply.status, kept, data
        except (OSError, http.client.HTTPException) as exc:
            return (
                502,
                {"Content-Type": "application/json"},
                json.dumps({"error": {"message": f"chaos proxy: upstream failed: {type(exc).__name__}"}}).encode(),
            )
        finally:
            conn.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(
                self, status: int, data: bytes, headers: Mapping[str, str] | None = None, length: int | None = None
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data) if length is None else length))
                    for k, v in (headers or {}).items():
                        if k.lower() != "content-type":
                            self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up first
                    self.close_connection = True

            def _drop(self) -> None:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def do_GET(self) -> None:
                status, headers, data = proxy.forward("GET", self.path, b"", dict(self.headers))
                self._send(status, data, headers)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                kind = proxy.decide(self.path, body) if self.path.endswith("completions") else None
                if kind in ("429", "500", "503"):
                    error = json.dumps({"error": {"message": f"chaos: injected {kind}"}}).encode()
                    hint = {"Retry-After": proxy.retry_after} if kind == "429" else None
                    self._send(int(kind), error, hint)
                elif kind == "drop":
                    self._drop()
                elif kind == "hang":
                    proxy._stopping.wait(proxy.hang_seconds)
                    self._drop()
                elif kind == "malformed":
                    self._send(200, b'{"id": "chaos", "choices": [{"index": 0, "mess')
                elif kind == "no_choices":
                    empty = {"id": "chaos", "object": "chat.completion", "choices": []}
                    self._send(200, json.dumps(empty).encode())
                else:
                    status, headers, data = proxy.forward("POST", self.path, body, dict(self.headers))
                    if kind == "empty_content" and status == 200:
                        self._send(200, _emptied(data), headers)
                    elif kind == "truncated" and status == 200:
                        self._send(200, data[: len(data) // 2], headers, length=len(data))
                        self._drop()
                    else:
                        self._send(status, data, headers)

        return Handler


def _emptied(data: bytes) -> bytes:
    """The reply with every choice's text blanked and no finish reason: a generation that never ran."""
    reply = json.loads(data)
    for choice in reply.get("choices") or []:
        if isinstance(choice.get("message"), dict):
            choice["message"]["content"] = ""
        else:
            choice["text"] = ""
        choice["finish_reason"] = None
    return json.dumps(reply).encode()
