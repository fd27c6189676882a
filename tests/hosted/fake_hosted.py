"""Loopback servers speaking the hosted APIs' documented wire formats (stdlib only), for tests.

:class:`FakeHostedServer` answers Anthropic's Messages API (``POST /v1/messages``) and Bedrock's
Converse API (``POST /model/{modelId}/converse``) at once.  Tokens are whitespace-separated words.  It
keeps a prompt cache as the vendors describe theirs: a request's prefix up to each cache mark
(``cache_control`` / ``cachePoint``) is stored; the longest stored prefix ending at a block boundary is
read, the rest up to the last mark is written, and ``usage`` reports both apart from the uncached input tokens.  Faults are
queued: an HTTP status (answered in the vendor's error format) or ``"hang"`` (held until
:attr:`release` is set, which the client's read timeout outlasts).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import unquote

from lits.testing.servers.loopback import LoopbackServer

#: ``(prompt_text, body) -> reply text``; prompt_text is the system text and every turn, one per line.
Responder = Callable[[str, dict[str, Any]], str]
BEDROCK_ERRORS = {
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
    400: "ValidationException",
}
ANTHROPIC_ERRORS = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error", 400: "invalid_request_error"}


def words(text: str) -> int:
    return len(text.split())


class FakeHostedServer(LoopbackServer):
    def __init__(self, responder: Responder | None = None, *, cache_min_tokens: int = 0) -> None:
        self.responder: Responder = responder or (lambda prompt, body: "ok")
        self.cache_min_tokens = cache_min_tokens
        self.faults: deque[int | str] = deque()
        #: Set to free every held ("hang") request.
        self.release = threading.Event()
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        #: Every usage object answered (what the client was billed).
        self.usages: list[dict[str, int]] = []
        self._cache: set[str] = set()
        self._lock = threading.Lock()
        super().__init__(self._handler())

    def let_go(self) -> None:
        self.release.set()

    # -- the prompt cache ----------------------------------------------------------------
    def _billed(self, blocks: list[tuple[str, str, bool]]) -> tuple[int, int, int]:
        """``(uncached input, cache write, cache read)`` of a prompt given as ``(role, text, marked)`` blocks.

        As Anthropic documents it: a hit is looked for at every block boundary up to the last mark (the
        longest stored prefix is read), and the prefix at each mark is stored."""
        total = sum(words(text) for _, text, _ in blocks)
        prefixes: list[tuple[str, int, bool]] = []
        digest, tokens = hashlib.sha256(), 0
        for role, text, marked in blocks:
            digest.update(json.dumps([role, text]).encode())
            tokens += words(text)
            prefixes.append((digest.hexdigest(), tokens, marked and tokens >= self.cache_min_tokens))
        marks = [i for i, (_, _, marked) in enumerate(prefixes) if marked]
        if not marks:
            return total, 0, 0
        with self._lock:
            read = max((t for key, t, _ in prefixes[: marks[-1] + 1] if key in self._cache), default=0)
            self._cache.update(prefixes[i][0] for i in marks)
        write = prefixes[marks[-1]][1] - read
        return total - read - write, write, read

    # -- replies -------------------------------------------------------------------------
    def _reply(self, prompt: str, body: dict[str, Any], stops: list[str], max_tokens: int) -> tuple[str, str]:
        text = self.responder(prompt, body)
        for stop in stops:
            if stop in text:
                return text[: text.index(stop)], "stop_sequence"
        kept = text.split(" ")
        if words(text) > max_tokens:
            return " ".join(kept[:max_tokens]), "max_tokens"
        return text, "end_turn"

    def anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        blocks: list[tuple[str, str, bool]] = []
        for block in body.get("system") or []:
            blocks.append(("system", block["text"], "cache_control" in block))
        for message in body["messages"]:
            content = message["content"]
            content = [{"type": "text", "text": content}] if isinstance(content, str) else content
            blocks += [(message["role"], b["text"], "cache_control" in b) for b in content]
        plain, write, read = self._billed(blocks)
        text, stop = self._reply(
            "\n".join(t for _, t, _ in blocks), body, body.get("stop_sequences") or [], body["max_tokens"]
        )
        usage = {
            "input_tokens": plain,
            "output_tokens": words(text),
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }
        self.usages.append(usage)
        return {
            "id": f"msg_{len(self.bodies)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def converse(self, body: dict[str, Any]) -> dict[str, Any]:
        blocks: list[tuple[str, str, bool]] = []

        def add(role: str, content: list[dict[str, Any]]) -> None:
            for item in content:
                if "cachePoint" in item and blocks:
                    blocks[-1] = (blocks[-1][0], blocks[-1][1], True)
                elif "text" in item:
                    blocks.append((role, item["text"], False))

        add("system", body.get("system") or [])
        for message in body["messages"]:
            add(message["role"], message["content"])
        plain, write, read = self._billed(blocks)
        config = body.get("inferenceConfig") or {}
        text, stop = self._reply(
            "\n".join(t for _, t, _ in blocks), body, config.get("stopSequences") or [], config.get("maxTokens") or 4096
        )
        usage = {
            "inputTokens": plain,
            "outputTokens": words(text),
            "totalTokens": plain + read + write + words(text),
            "cacheReadInputTokens": read,
            "cacheWriteInputTokens": write,
        }
        self.usages.append(usage)
        return {
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": stop,
            "usage": usage,
            "metrics": {"latencyMs": 1},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, data: object, headers: dict[str, str] | None = None) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                path = unquote(self.path)
                bedrock = path.startswith("/model/")
                with server._lock:
                    server.bodies.append(body)
                    server.paths.append(path)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fault = server.faults.popleft() if server.faults else None
                if fault == "hang":
                    server.release.wait(60)
                    return
                if isinstance(fault, int):
                    if bedrock:
                        kind = BEDROCK_ERRORS.get(fault, "InternalServerException")
                        self._send(fault, {"message": f"injected {fault}"}, {"x-amzn-ErrorType": kind})
                    else:
                        self._send(
                            fault,
                            {
                                "type": "error",
                                "error": {
                                    "type": ANTHROPIC_ERRORS.get(fault, "api_error"),
                                    "message": f"injected {fault}",
                                },
                            },
                        )
                    return
                if bedrock and path.endswith("/converse"):
                    self._send(200, server.converse(body))
                elif path.endswith("/v1/messages"):
                    self._send(200, server.anthropic(body))
                else:
                    self._send(404, {"message": f"no route {path}"})

        return Handler
