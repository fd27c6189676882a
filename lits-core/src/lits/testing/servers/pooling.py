"""A loopback vLLM Pooling API server (``POST /pooling``) for classifier-PRM tests (stdlib only).

It checks every request against the documented request schema (:mod:`lits.lm.pooling` says which
documents) and answers a malformed one 400 naming the problem, as vLLM's request validation does;
otherwise it answers one row ``[1 - p, p]`` per step separator, ``p`` from ``scorer(steps)``.  It keeps
every request, and the reason of each it refused, and can fail or garble the next replies.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Mapping

from lits.testing.servers.loopback import LoopbackServer

#: ``steps -> P(correct) per step``: the text before each separator (chat form: in the last message).
StepScorer = Callable[[list[str]], list[float]]

#: The pooling tasks a request may name (vLLM's PoolingTask); ``encode`` and ``reward`` were removed.
POOLING_TASKS = frozenset({"embed", "classify", "token_embed", "token_classify", "plugin"})
_COMMON = frozenset(
    {
        "model",
        "user",
        "truncate_prompt_tokens",
        "padding",
        "truncation_side",
        "request_id",
        "priority",
        "mm_processor_kwargs",
        "cache_salt",
        "task",
        "dimensions",
        "use_activation",
        "encoding_format",
        "embed_dtype",
        "endianness",
        "add_special_tokens",
    }
)
#: The fields of each request form (the completion-like ``input`` one and the chat-like ``messages`` one).
TEXT_FIELDS = _COMMON | {"input"}
CHAT_FIELDS = _COMMON | {
    "messages",
    "add_generation_prompt",
    "continue_final_message",
    "chat_template",
    "chat_template_kwargs",
    "media_io_kwargs",
}


def request_problem(body: object) -> str | None:
    """Why ``body`` is not a valid Pooling API request, or None when it is one."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    if ("input" in body) == ("messages" in body):
        return "give exactly one of input or messages"
    fields = TEXT_FIELDS if "input" in body else CHAT_FIELDS
    unknown = sorted(set(body) - fields)
    if unknown:
        return f"unknown fields {', '.join(unknown)}"
    if body.get("model") is not None and not isinstance(body["model"], str):
        return "model must be a string"
    task = body.get("task")
    if task is not None and task not in POOLING_TASKS:
        return f"task {task!r} is not one of {', '.join(sorted(POOLING_TASKS))}"
    if "input" in body:
        value = body["input"]
        texts = isinstance(value, str) or (
            isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
        )
        tokens = (
            isinstance(value, list)
            and bool(value)
            and (
                all(isinstance(v, int) for v in value)
                or all(isinstance(v, list) and all(isinstance(t, int) for t in v) for v in value)
            )
        )
        if not (texts or tokens):
            return "input must be a string, a list of strings, or token ids"
        return None
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for message in messages:
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            return "each message needs a string role and content"
    if body.get("add_generation_prompt") and body.get("continue_final_message"):
        return "add_generation_prompt and continue_final_message cannot both be true"
    return None


class FakePoolingServer(LoopbackServer):
    """A classifier PRM behind ``/pooling`` at the server's root (its ``base_url`` ends in ``/v1``, as a
    vLLM server's is given)."""

    url_path = "/v1"

    def __init__(self, scorer: StepScorer | None = None, *, separator: str = "<extra_0>") -> None:
        self.scorer = scorer or (lambda steps: [0.5] * len(steps))
        self.separator = separator
        self.requests: list[object] = []
        #: ``(body, reason)`` of each request answered 400.
        self.refused: list[tuple[object, str]] = []
        self._faults: deque[int] = deque()  # a status, or 0 for a 200 whose body is garbled
        self._lock = threading.Lock()
        super().__init__(self._handler())

    def fail_next(self, status: int, times: int = 1) -> None:
        """Answer the next ``times`` valid requests with ``status``."""
        with self._lock:
            self._faults.extend([status] * times)

    def garble_next(self, times: int = 1) -> None:
        """Answer the next ``times`` valid requests 200 with a body that holds no pooling data."""
        self.fail_next(0, times)

    def _steps(self, text: str) -> list[str]:
        return text.split(self.separator)[:-1]

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The reply to a valid request: one item per input, each one ``[1 - p, p]`` row per separator."""
        if "messages" in body:
            texts = [str(body["messages"][-1]["content"])]
        else:
            given = body["input"]
            texts = [given] if isinstance(given, str) else [v for v in given if isinstance(v, str)]
        items, words = [], 0
        for i, text in enumerate(texts):
            steps = self._steps(text)
            rows = [[1.0 - p, p] for p in self.scorer(steps)]
            items.append({"index": i, "object": "pooling", "data": rows})
            words += len(text.split())
        return {
            "id": "pool-fake",
            "object": "list",
            "created": int(time.time()),
            "model": body.get("model") or "fake",
            "data": items,
            "usage": {"prompt_tokens": words, "total_tokens": words, "completion_tokens": 0},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: Mapping[str, object] | bytes) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.partition("?")[0].rstrip("/") == "/v1/models":
                    self._send(
                        200, {"object": "list", "data": [{"id": "fake-prm", "object": "model", "owned_by": "vllm"}]}
                    )
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.partition("?")[0] != "/pooling":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body: object = json.loads(raw or b"null")
                except ValueError:
                    body = None
                problem = request_problem(body)
                with server._lock:
                    server.requests.append(body)
                    if problem:
                        server.refused.append((body, problem))
                    fault = server._faults.popleft() if server._faults and not problem else None
                if problem:
                    self._send(400, {"error": {"message": problem, "type": "BadRequestError", "code": 400}})
                elif fault == 0:
                    self._send(200, b'{"object": "list", "data": []}')
                elif fault is not None:
                    self._send(fault, {"error": {"message": f"injected failure {fault}"}})
                else:
                    assert isinstance(body, dict)
                    self._send(200, server.answer(body))

        return Handler
