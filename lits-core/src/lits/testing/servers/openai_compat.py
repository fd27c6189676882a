"""A loopback OpenAI-compatible server for tests and benchmarks (stdlib only).

Deterministic answers from a ``responder(prompt_text, body)``, a fixed
latency per request (requests overlap, like a batching server), optional
llama.cpp-style ignoring of ``n``, injected failures and held (slow) replies,
and counters of what it saw, answered and billed.  Tokens are
whitespace-separated words.  Given a vLLM version it speaks that vLLM's
constraint fields (:mod:`lits.testing.servers.vllm_rules`); given a
:class:`~lits.testing.prefix_cache.PagedPrefixCache` it reports the prompt
tokens served from it as vLLM does (``usage.prompt_tokens_details.cached_tokens``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import subprocess
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Iterator, Mapping

from lits.testing.prefix_cache import PagedPrefixCache
from lits.testing.servers.loopback import LoopbackServer
from lits.testing.servers.vllm_rules import VLLMRules

#: ``(prompt_text, body) -> text``, or ``(prompt_text, body, choice_index) -> text``.
Responder = Callable[..., str]
TokenScorer = Callable[[str, str], float]


def _prompt_text(body: dict[str, Any]) -> str:
    if "messages" in body:
        return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in body["messages"])
    return str(body.get("prompt", ""))


def _tokens(text: str) -> list[tuple[int, str]]:
    """Whitespace tokens with their character offsets (a token keeps its leading space)."""
    out, offset = [], 0
    for i, word in enumerate(text.split(" ")):
        tok = word if i == 0 else " " + word
        if tok.strip():
            out.append((offset, tok))
        offset += len(tok)
    return out


class FakeOpenAIServer(LoopbackServer):
    url_path = "/v1"

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: float = 0.0,
        ignore_n: bool = False,
        token_scorer: TokenScorer | None = None,
        echo_supported: bool = True,
        batch_prompts: bool = True,
        slots: int | None = None,
        owned_by: str | None = None,
        busy_for: float = 0.0,
        vllm: str | None = None,
        refuse_unknown: bool = False,
        prefix_cache: PagedPrefixCache | None = None,
        busy: threading.Event | None = None,
        max_n: int | None = None,
    ) -> None:
        """``slots``: serve that many requests at once, queueing the rest, and say so at ``/props`` as
        llama.cpp's server does (None: all at once, no ``/props``).  ``owned_by``: the ``/v1/models`` field
        (llama-cpp-python's server says "me" and serves one request at a time).  ``busy_for``: the first GET
        is answered that many seconds late (a server busy reading a long prompt).  ``vllm``: a vLLM version,
        said at ``/version``, whose constraint fields hold the replies; ``refuse_unknown``: answer 400 naming a
        constraint field that version does not know (vLLM itself ignores it).  ``prefix_cache``: serve prompts
        through it and report its hits as ``cached_tokens``; ``usage_reported`` adds up the usage replies said.
        ``busy``: every request waits until this event is set (a server taking connections while it works on
        another client's request; the test sets it to free the server, so nothing depends on machine speed).
        ``max_n``: answer 400 to a larger ``n``, in upstream llama-server's words (it takes as many as it has slots)."""
        self.responder = responder or (lambda prompt, body: "ok")
        self.latency = latency
        self.ignore_n = ignore_n
        self.max_n = max_n
        self.token_scorer = token_scorer or (lambda prefix, token: -1.0)
        self.echo_supported = echo_supported
        self.batch_prompts = batch_prompts
        self.slots = slots
        self.vllm = VLLMRules(vllm, refuse_unknown=refuse_unknown) if vllm else None
        self.owned_by = owned_by or ("vllm" if vllm else None)
        self._busy_for = busy_for
        self._serving = threading.BoundedSemaphore(slots or (1 if self.owned_by == "me" else 1 << 16))
        self.busy = busy
        self._wants_index = len(inspect.signature(self.responder).parameters) >= 3
        self.requests: list[dict[str, object]] = []
        self.headers: list[dict[str, str]] = []
        #: The query string of each completion request (what a gateway reads an ``api-key`` from).
        self.queries: list[str] = []
        self.max_in_flight = 0
        self.prefix_cache = prefix_cache
        #: ``prompt_tokens``, ``completion_tokens`` and ``cached_tokens`` over every successful reply.
        self.usage_reported = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
        self._in_flight = 0
        self._failures: deque[tuple[int, str | None, str | None]] = deque()
        #: Requests answered (any status), and the usage of the replies: what a hosted API bills, counted
        #: when the reply is sent, whether or not the client still waits for it.
        self.answered = 0
        self.billed_prompt_tokens = 0
        self.billed_completion_tokens = 0
        self._holds = 0
        self._released = threading.Event()
        self._idle = threading.Condition()
        self._lock = threading.Lock()
        super().__init__(self._handler())

    def fail_next(
        self, status: int, times: int = 1, retry_after: str | None = None, message: str | None = None
    ) -> None:
        """Answer the next ``times`` requests with ``status`` (and a Retry-After header).

        ``message`` replaces the error text, e.g. to echo a key the way some servers do.
        """
        with self._lock:
            self._failures.extend([(status, retry_after, message)] * times)

    def hold_next(self, times: int = 1) -> None:
        """Answer the next ``times`` completion requests only once :meth:`release` is called (a slow reply)."""
        with self._lock:
            self._holds += times

    def release(self) -> None:
        """Let every held request be answered (now and from now on)."""
        self._released.set()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no request is being worked on; False if one still is after ``timeout`` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def let_go(self) -> None:
        self._released.set()

    # -- answers ---------------------------------------------------------------
    def _respond(self, prompt: str, body: Mapping[str, object], index: int) -> str:
        """The responder's text; one taking a third argument gets the choice's index (to vary samples).
        A vLLM holds it to the request's constraint."""
        if self._wants_index:
            text = self.responder(prompt, body, index)  # type: ignore[call-arg]
        else:
            text = self.responder(prompt, body)
        return self.vllm.hold(body, text, index) if self.vllm else text

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        chat = path.endswith("/chat/completions")
        if not chat and isinstance(body.get("prompt"), list) and self.batch_prompts:
            # A list of prompts: one choice per prompt, numbered in order (as vLLM answers).
            parts = [self._answer(path, {**body, "prompt": p, "n": 1}) for p in body["prompt"]]
            choices = [{**part["choices"][0], "index": i} for i, part in enumerate(parts)]
            summed: dict[str, Any] = {
                k: sum(part["usage"][k] for part in parts) for k in parts[0]["usage"] if k != "prompt_tokens_details"
            }
            if self.prefix_cache is not None:
                summed["prompt_tokens_details"] = {
                    "cached_tokens": sum(part["usage"]["prompt_tokens_details"]["cached_tokens"] for part in parts)
                }
            return {**parts[0], "choices": choices, "usage": summed}
        prompt = _prompt_text(body)
        n = 1 if self.ignore_n else int(body.get("n") or 1)
        choices, completion_tokens = [], 0
        for i in range(n):
            # echo requests score the prompt; no generated text is needed
            text = "" if (not chat and body.get("echo")) else self._respond(prompt, body, i)
            stops = body.get("stop") or []
            for stop in [stops] if isinstance(stops, str) else stops:
                if stop and stop in text:
                    text = text[: text.index(stop)]
            completion_tokens += len(_tokens(text))
            choice: dict[str, Any] = {"index": i, "finish_reason": "stop"}
            if chat:
                choice["message"] = {"role": "assistant", "content": text}
                if body.get("logprobs"):
                    choice["logprobs"] = {
                        "content": [
                            {"token": tok, "logprob": -0.1, "top_logprobs": [{"token": tok, "logprob": -0.1}]}
                            for _, tok in _tokens(text)
                        ]
                    }
            else:
                full = prompt + text if body.get("echo") else text
                choice["text"] = full
                if body.get("logprobs") is not None and (body.get("echo") is not True or self.echo_supported):
                    toks = _tokens(full)
                    choice["logprobs"] = {
                        "tokens": [t for _, t in toks],
                        "token_logprobs": [
                            None if (body.get("echo") and off == 0) else self.token_scorer(full[:off], t)
                            for off, t in toks
                        ],
                        "text_offset": [off for off, _ in toks],
                        "top_logprobs": [{t: -0.1} for _, t in toks],
                    }
            choices.append(choice)
        words = prompt.split()
        usage: dict[str, Any] = {
            "prompt_tokens": len(words),
            "completion_tokens": completion_tokens,
            "total_tokens": len(words) + completion_tokens,
        }
        if self.prefix_cache is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.prefix_cache.serve(words)}
        return {
            "id": "fake",
            "object": "chat.completion" if chat else "text_completion",
            "model": body.get("model", "fake"),
            "choices": choices,
            "usage": usage,
        }

    def _tally(self, usage: Mapping[str, Any]) -> None:
        details = usage.get("prompt_tokens_details") or {}
        with self._lock:
            self.usage_reported["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
            self.usage_reported["completion_tokens"] += int(usage.get("completion_tokens") or 0)
            self.usage_reported["cached_tokens"] += int(details.get("cached_tokens") or 0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep connections alive, as real servers do
            disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: Mapping[str, object], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client stopped waiting (a hedged copy cut short)
                    self.close_connection = True

            def do_GET(self) -> None:
                if server.busy is not None:
                    server.busy.wait()
                with server._lock:
                    busy, server._busy_for = server._busy_for, 0.0
                if busy:
                    time.sleep(busy)
                route = self.path.partition("?")[0].rstrip("/")
                if route.endswith("/models"):
                    owner = {"owned_by": server.owned_by} if server.owned_by else {}
                    model = {"id": "fake", "object": "model", **owner}
                    self._send(200, {"object": "list", "data": [model]})
                elif route == "/props" and server.slots:
                    self._send(200, {"total_slots": server.slots})
                elif route == "/version" and server.vllm:
                    self._send(200, {"version": server.vllm.version})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                if server.busy is not None:
                    server.busy.wait()
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                route, _, query = self.path.partition("?")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    server.queries.append(query)
                    failure = server._failures.popleft() if server._failures else None
                    held = server._holds > 0
                    server._holds -= held
                server._serving.acquire()  # a server with few slots queues the rest, as llama.cpp does
                with server._idle:
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                try:
                    if held:
                        server._released.wait()
                    if server.latency:
                        time.sleep(server.latency)
                    if failure is not None:
                        status, retry_after, message = failure
                        self._send(
                            status,
                            {"error": {"message": message or f"injected failure {status}"}},
                            {"Retry-After": retry_after} if retry_after else None,
                        )
                    elif route.endswith(("/chat/completions", "/completions")):
                        refused = server.vllm.check(body) if server.vllm else None
                        if server.max_n is not None and int(body.get("n") or 1) > server.max_n:
                            refused = (
                                f"Field 'n': Value must be between 1 <= value <= {server.max_n}, but got {body['n']}"
                            )
                        if refused:
                            self._send(400, {"error": {"message": refused, "type": "BadRequestError", "code": 400}})
                        elif body.get("echo") and not server.echo_supported:
                            self._send(400, {"error": {"message": "echo is not supported"}})
                        else:
                            answer = server._answer(route, body)
                            with server._lock:
                                server.billed_prompt_tokens += answer["usage"]["prompt_tokens"]
                                server.billed_completion_tokens += answer["usage"]["completion_tokens"]
                            server._tally(answer["usage"])
                            self._send(200, answer)
                    else:
                        self._send(404, {"error": {"message": f"no route {self.path}"}})
                finally:
                    with server._lock:
                        server.answered += 1
                    server._serving.release()
                    with server._idle:
                        server._in_flight -= 1
                        server._idle.notify_all()

        return Handler


_SERVE_OBEDIENT = """
import sys
from lits.lm.base import GenerationParams
from lits.testing.scripted import obedient_reply
from lits.testing.servers.openai_compat import FakeOpenAIServer
with FakeOpenAIServer(responder=lambda p, b, i: obedient_reply(p, GenerationParams(), i),
                      latency=float(sys.argv[1])) as srv:
    print(srv.base_url, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def obedient_server_process(latency: float) -> Iterator[str]:
    """A loopback server in its own process (as a real one runs, off the caller's GIL); yields its URL.

    Its "model" samples the index-th listed legal action and says Yes to each
    (numbered) question, like :func:`lits.testing.scripted.obedient_reply`.
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE_OBEDIENT, str(latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
