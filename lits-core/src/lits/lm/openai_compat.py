"""A backend for any OpenAI-compatible server: vLLM, llama.cpp, Ollama, OpenAI.

Sync httpx (thread-safe; agents call it from worker threads) with the retry
transport of :mod:`lits.lm.http.retry`: every call is retried within a time budget,
and :func:`reply_fault` rejects 200 replies that carry no usable answer so
they are retried too.  Servers that ignore ``n`` (llama.cpp's) get more
requests until ``n`` completions are in hand.  Credentials never appear in a
message: the key is redacted and a base URL with ``user:pass@`` is refused
(the URL is written to ``config.json``, so it must not hold a secret).
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from typing import Any, Callable, Literal, Mapping, Unpack

import httpx

from lits.io import fastjson
from lits.runtime.concurrency import tick_round
from lits.lm.base import (
    CallOptions,
    Completion,
    GenerationParams,
    check_calls_allowed,
    LanguageModel,
    LoglikelihoodUnsupported,
    ModelError,
    Prompt,
    ServerUnreachable,
    TokenLogprob,
)
from lits.lm.http.billing import CallSpend
from lits.lm.http.hedging import ENV_HEDGE, HEDGE_MODES, hedge_mode_from_env, hedge_share_from_env, hedges_to
from lits.lm.http.patience import request_tokens, request_work
from lits.lm.http.retry import RETRY_STATUS, FaultStats, RetryPolicy, attempts_of, is_permanent_body, statuses_of
from lits.lm.http.stack import server_transport
from lits.lm.pooling import POOLING_ENDPOINT, pooled_prompt, pooling_fault, server_root
from lits.lm.server.forced_scoring import forced_body, forced_logprob
from lits.lm.server.constraints import (
    DIALECT_NAMES,
    ConstraintDialect,
    dialect_setting,
    refusal_hint,
    samples_allowed,
    request_fields,
)
from lits.lm.server.slots import GenerationPace, SlotGate, probe_server
from lits.lm.usage import measuring, note_request, reported_usage
from lits.runtime.observability import UNUSED_REPLY, context_tag
from lits.io.secrets import has_userinfo, is_masked, query_secrets, redact_text, safe_url

#: The first retry waits up to this many seconds (full jitter), each later one twice as long up to
#: ``retry_max_wait``: a dropped connection or a 500 is usually gone at once, and a fault on a
#: search's critical path should cost about a reply, not seconds.  Throttling (429/503) waits what
#: the server's Retry-After says.  ``LITS_RETRY_BASE_WAIT`` overrides it (tests shorten it further).
DEFAULT_RETRY_BASE_WAIT = 0.1
ENV_RETRY_BASE_WAIT = "LITS_RETRY_BASE_WAIT"
MASKED_QUERY_SECRET = (
    "--base-url holds a masked part (***): a key in the URL's query string is never saved "
    "with the run, so give --base-url (or the component's base URL) again (a run records no "
    "query string, userinfo or key-looking path segment)"
)
CREDENTIALS_IN_URL = (
    "--base-url must not carry credentials (user:password@host); put the key in $OPENAI_API_KEY or $LITS_API_KEY"
)


class ServerRefused(ModelError):
    """The server answered with a permanent error status (4xx, or a context that is too long)."""


class OpenAICompatibleModel(LanguageModel):
    """A model behind ``/chat/completions`` or ``/completions``.

    ``call_budget`` bounds one call, retries included; ``connect_timeout`` and
    ``read_timeout`` bound one attempt.  With ``adaptive_read_timeout`` a first
    attempt waits only a few times the slowest recent reply (at least
    ``patience_floor``), so a hung request costs seconds, not a minute.
    ``timeout`` is the older name of ``read_timeout``.  ``max_attempts``
    optionally caps attempts too (None: only the budget limits them).
    ``hedge_share`` of the calls may get a second copy when slower than the
    95th percentile of recent replies (default ``$LITS_HEDGE_SHARE`` or 0.1;
    0: never), unless the server reports fixed slots; ``hedge`` says where
    (default ``$LITS_HEDGE`` or ``auto``: only a server on this machine, as a
    hosted API bills each copy; ``on``: any; ``off``); see :mod:`lits.lm.http.hedging`.
    ``constraints`` says how the server constrains decoding (``gbnf``, ``structured_outputs``,
    ``guided``, ``none``); ``auto`` (None): as the server says of itself (:mod:`lits.lm.server.constraints`).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        api: Literal["chat", "completion"] = "chat",
        call_budget: float = 300.0,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        timeout: float | None = None,
        max_attempts: int | None = None,
        retry_base_wait: float | None = None,
        retry_max_wait: float = 20.0,
        connect_budget: float = 10.0,
        adaptive_read_timeout: bool = True,
        patience_floor: float = 1.0,
        hedge_share: float | None = None,
        hedge: str | None = None,
        concurrency: int = 1,
        price_in: float = 0.0,
        price_out: float = 0.0,
        constraints: str | None = None,
        **calls: Unpack[CallOptions],
    ) -> None:
        super().__init__(concurrency=concurrency, **calls)
        if api not in ("chat", "completion"):
            raise ValueError(f"api must be 'chat' or 'completion', not {api!r}")
        #: Whether ``constraints`` was given, and the dialect it names (else the server's says).
        self._configured_dialect = dialect_setting(constraints, "the model's")
        #: Query parameters of the base URL (an ``?api-key=`` gateways ask for) go with every request.
        self.base_url, self._query = _split_base_url(base_url)
        if call_budget <= 0:
            raise ValueError("call_budget must be positive (seconds)")
        self.name = model
        self.api = api
        self.chat_native = api == "chat"
        self.supports_loglikelihood = api == "completion"
        #: Whether the server scores a list of prompts in one request (None: not tried yet).
        self.batch_prompts: bool | None = None
        #: The most samples one request may ask for, once the server refused more (upstream llama-server takes as
        #: many as it has slots); None: as many as a call wants.
        self.samples_per_request: int | None = None
        self.price_in, self.price_out = price_in, price_out
        key = api_key or os.environ.get("OPENAI_API_KEY") or os.environ.get("LITS_API_KEY")
        self._secrets = (key, *query_secrets(base_url))
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        read = timeout if timeout is not None else read_timeout
        if retry_base_wait is None:
            retry_base_wait = float(os.environ.get(ENV_RETRY_BASE_WAIT) or DEFAULT_RETRY_BASE_WAIT)
        if hedge_share is None:
            hedge_share = hedge_share_from_env()
        self.hedge = hedge_mode_from_env() if hedge is None else hedge
        if self.hedge not in HEDGE_MODES:
            raise ValueError(f"hedge must be one of {', '.join(HEDGE_MODES)}, not {hedge!r}")
        if not hedges_to(httpx.URL(self.base_url).host, self.hedge):
            hedge_share = 0.0
        self.policy = RetryPolicy(
            budget=call_budget,
            base_wait=retry_base_wait,
            max_wait=retry_max_wait,
            connect_budget=connect_budget,
            max_attempts=max_attempts,
            adaptive_read_timeout=adaptive_read_timeout,
            patience_floor=patience_floor,
            hedge_share=hedge_share,
        )
        self._faults = FaultStats()
        #: Calls beyond the server's own slots wait here, not in its queue (see :mod:`lits.lm.server.slots`).
        self.slots = SlotGate()
        #: How fast that server generates, so a long reply behind the gate is given its time.
        self.pace = GenerationPace()
        self._headers = headers
        transport = server_transport(
            self.policy, self._faults, concurrency=concurrency, check=reply_fault, gate=check_calls_allowed
        )
        self._transport = transport
        transport.hedges.allowed = lambda: self.slots.slots is None
        transport.hedges.spare_slot = self._spare_slot
        transport.on_unused = self._record_unused
        self._templates: dict[str, httpx.Request] = {}
        self.client = httpx.Client(
            base_url=self.base_url,
            params=self._query,
            headers=headers,
            timeout=httpx.Timeout(connect=connect_timeout, read=read, write=read, pool=None),
            transport=transport,
        )

    def _record_unused(self, spend: CallSpend) -> None:
        """Replies the server billed that the call did not use (hedged copies that lost, rejected replies):
        their tokens and price go in the inference log, as the call's context tags them."""
        for reply in spend.unused:
            self._record_raw(UNUSED_REPLY, reply.tokens_in, reply.tokens_out, 0.0, estimated=reply.estimated)

    def notices(self) -> list[str]:
        """Hedged copies to a server that is not on this machine: each is a request it bills."""
        share = self.policy.hedge_share
        if share <= 0 or hedges_to(httpx.URL(self.base_url).host, "auto"):
            return []
        return [
            f"hedged copies are on for {self.display_url} ({ENV_HEDGE}={self.hedge}): up to {share:.0%} of "
            f"calls may be sent twice when slow, and the server bills each copy (counted in the cost; "
            f"{ENV_HEDGE}=auto or off sends none)"
        ]

    def _spare_slot(self) -> Callable[[], None] | None:
        """An idle ``--concurrency`` slot for a hedged copy (its release), or None."""
        return self.limiter.give_back if self.limiter.try_take() else None

    @functools.cached_property
    def display_url(self) -> str:
        """The base URL as it may be shown: scheme, host, port and path (worked out once: every reply names it)."""
        shown = str(httpx.URL(self.base_url, params=self._query)) if self._query else self.base_url
        return redact_text(safe_url(shown), self._secrets)

    def fault_stats(self) -> dict[str, float | int]:
        """Retries, seconds lost to faults and calls given up so far, and calls that waited for a server
        slot (not faults) (thread-safe copy)."""
        return {**self._faults.snapshot(), **self.slots.stats(), **self._transport.hedges.snapshot()}

    @property
    def batches_samples(self) -> bool:  # type: ignore[override]
        """False for servers with fixed slots (llama.cpp): each sample is a slot's turn, asked for or not."""
        return self.server_slots() is None

    def server_slots(self) -> int | None:
        """Requests the server works on at once, where it says (asked once; None: unknown)."""
        self.slots.learn(lambda: probe_server(self.base_url, self._headers, self._query))
        return self.slots.slots

    @property
    def constraint_dialect(self) -> ConstraintDialect:
        """How replies are held: as configured, else as the server says (asked once)."""
        configured, dialect = self._configured_dialect
        if configured:
            return dialect
        self.server_slots()
        return self.slots.dialect

    def identity(self) -> str:
        """What the response cache keys on: the model and endpoint, not the address serving it.

        So ``--resume --base-url`` (the same model moved to another server or port)
        never pays twice; two different models under one name need two caches.
        """
        return f"openai:{self.name}:{self.api}"

    def describe(self) -> dict[str, object]:
        timeout = self.client.timeout
        slots = self.server_slots()
        return {
            **super().describe(),
            "base_url": self.display_url,
            "api": self.api,
            "call_budget": self.policy.budget,
            "connect_timeout": timeout.connect,
            "read_timeout": timeout.read,
            "server_slots": slots,
            "server_slots_from": self.slots.source,
            "constrained_replies": self._constraints_named(),
        }

    def _constraints_named(self) -> str:
        if not self.constrain_replies:
            return "off (--free-replies)"
        return DIALECT_NAMES[self.constraint_dialect] + (" (configured)" if self._configured_dialect[0] else "")

    # -- generation ----------------------------------------------------------
    def _generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
        outs: list[Completion] = []
        while len(outs) < params.n:
            want = min(params.n - len(outs), self.samples_per_request or params.n)
            body = self._body(prompt, params, want)
            try:
                data = self._post("/chat/completions" if self.api == "chat" else "/completions", body)
            except ServerRefused as exc:
                allowed = samples_allowed(str(exc))
                if allowed is not None and allowed < want:
                    self.samples_per_request = allowed  # the rest come in later requests, as from a server ignoring n
                    continue
                hint = refusal_hint(body, str(exc))
                if hint is None:
                    raise
                raise ServerRefused(f"{hint}; {exc}") from None
            outs.extend(self._parse(data, want))
        return outs

    def _body(self, prompt: Prompt, params: GenerationParams, n: int) -> dict[str, object]:
        body: dict[str, object] = {
            "model": self.name,
            "n": n,
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = params.seed
        if params.reply_lines:
            body.update(request_fields(params.reply_lines, self.constraint_dialect))
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
            if params.top_logprobs:
                body.update(logprobs=True, top_logprobs=params.top_logprobs)
        else:
            if not isinstance(prompt, str):
                raise ValueError("a chat conversation cannot be sent to a completions endpoint; use --api chat")
            body["prompt"] = prompt
            if params.top_logprobs:
                body["logprobs"] = params.top_logprobs
        return body

    def _parse(self, data: dict[str, Any], limit: int) -> list[Completion]:
        choices = list(data.get("choices") or [])[:limit]
        if not choices:
            raise ModelError(f"model server {self.display_url} returned no choices")
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        share, extra = divmod(completion_tokens, len(choices))
        outs = []
        for i, choice in enumerate(choices):
            if "message" in choice:
                text = (choice["message"] or {}).get("content") or ""
            else:
                text = choice.get("text") or ""
            outs.append(
                Completion(
                    text,
                    tokens_in=prompt_tokens if i == 0 else 0,
                    tokens_out=share + (1 if i < extra else 0),
                    logprobs=_parse_logprobs(choice.get("logprobs")),
                    finish_reason=choice.get("finish_reason"),
                )
            )
        return outs

    # -- scoring -----------------------------------------------------------
    def _loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        if not self.supports_loglikelihood:
            raise LoglikelihoodUnsupported(
                f"{self.display_url} ({self.api} API) cannot score text; use --api completion"
            )
        self.server_slots()
        if not self.slots.echo:  # upstream llama-server: scores only what it generates
            return self._forced_loglikelihood(prompt, continuations)
        if len(continuations) > 1 and self.batch_prompts is not False:
            batched = self._loglikelihood_batch(prompt, continuations)
            if batched is not None:
                return batched
        scores, tokens = [], 0
        for continuation in continuations:
            body = {
                "model": self.name,
                "prompt": prompt + continuation,
                "max_tokens": 1,
                "temperature": 0.0,
                "echo": True,
                "logprobs": 1,
            }
            try:
                data = self._post("/completions", body)
            except ServerRefused as exc:
                self.supports_loglikelihood = False
                raise LoglikelihoodUnsupported(f"{self.display_url} refused prompt scoring: {exc}") from exc
            choice = (data.get("choices") or [{}])[0]
            score = _continuation_logprob(choice.get("logprobs"), len(prompt), len(prompt + continuation))
            if score is None:
                self.supports_loglikelihood = False
                raise LoglikelihoodUnsupported(f"{self.display_url} returned no prompt log-probabilities (echo)")
            scores.append(score)
            tokens += int((data.get("usage") or {}).get("prompt_tokens") or 0)
        return scores, tokens

    def _forced_loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        """Each continuation generated under a grammar admitting only it (:mod:`lits.lm.server.forced_scoring`)."""
        scores, tokens = [], 0
        for continuation in continuations:
            if not continuation:
                scores.append(0.0)
                continue
            try:
                data = self._post("/completions", forced_body(self.name, prompt, continuation))
            except ServerRefused as exc:
                self.supports_loglikelihood = False
                raise LoglikelihoodUnsupported(
                    f"{self.display_url} takes no echo and refused scoring by a grammar with logprobs: {exc}"
                ) from exc
            score = forced_logprob(data, continuation)
            if score is None:
                self.supports_loglikelihood = False
                raise LoglikelihoodUnsupported(
                    f"{self.display_url} takes no echo and returned no log-probabilities "
                    "for a continuation generated under a grammar (logprobs)"
                )
            scores.append(score)
            tokens += int((data.get("usage") or {}).get("prompt_tokens") or 0)
        return scores, tokens

    def _loglikelihood_batch(self, prompt: str, continuations: list[str]) -> tuple[list[float], int] | None:
        """Every continuation scored in one request (a list of prompts, as vLLM and OpenAI accept).

        None when the server does not answer one choice per prompt: the caller
        then sends one request per continuation, and later calls do so at once.
        """
        texts = [prompt + c for c in continuations]
        body = {"model": self.name, "prompt": texts, "max_tokens": 1, "temperature": 0.0, "echo": True, "logprobs": 1}
        probing = self.batch_prompts is None
        try:  # the first try is a probe: one attempt, and any failure means "not supported"
            data = self._post("/completions", body, attempts=1 if probing else None)
        except ServerRefused:
            self.batch_prompts = False
            return None
        except ModelError:
            if not probing:
                raise
            self.batch_prompts = False
            return None
        choices = sorted(data.get("choices") or [], key=lambda c: int(c.get("index", 0)))
        scores = [_continuation_logprob(c.get("logprobs"), len(prompt), len(text)) for c, text in zip(choices, texts)]
        if len(choices) != len(texts) or any(s is None for s in scores):
            self.batch_prompts = False
            return None
        self.batch_prompts = True
        return [float(s) for s in scores if s is not None], int((data.get("usage") or {}).get("prompt_tokens") or 0)

    # -- pooling (classifier reward models) --------------------------------------
    def pool(self, body: Mapping[str, object], endpoint: str = POOLING_ENDPOINT) -> dict[str, Any]:
        """One Pooling API request (:mod:`lits.lm.pooling`) to ``endpoint`` at the server's root, as every call
        is made: retried within the call budget, limited by ``concurrency``, cached, in the inference log."""
        check_calls_allowed()
        key = self._key("pooling", dict(body), endpoint, 0) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if isinstance(hit, dict):
                self._record_raw("pooling", 0, 0, 0.0, cached=True, prompt=pooled_prompt(body), reply=hit.get("data"))
                return hit
        tick_round()
        start = time.perf_counter()
        with measuring() as usage, self.limiter:
            check_calls_allowed()
            data = self._post(server_root(self.base_url) + endpoint, body, reply="pooling")
        tokens_in = int((data.get("usage") or {}).get("prompt_tokens") or 0)
        self._record_raw(
            "pooling",
            tokens_in,
            0,
            time.perf_counter() - start,
            prompt=pooled_prompt(body),
            reply=data.get("data") if self.log_prompts else None,
            usage=usage,
        )
        if self.cache is not None:
            self.cache.put(key, data)
        return data

    # -- HTTP ------------------------------------------------------------------
    def _request(self, path: str, body: Mapping[str, object], extensions: dict[str, object]) -> httpx.Request:
        """What ``client.post(path, json=body)`` sends, without its per-call URL merging, cookies and hooks.

        The URL, headers and timeouts come from one request the client built for ``path``; the body is
        encoded as httpx encodes JSON.  (The client's own plumbing was a quarter of a call's CPU.)
        """
        template = self._templates.get(path)
        if template is None:
            template = self._templates[path] = self.client.build_request("POST", path)
        content = fastjson.request_body(body)
        headers = template.headers.copy()
        headers["Content-Type"] = "application/json"
        headers["Content-Length"] = str(len(content))
        timeout = template.extensions["timeout"]
        return httpx.Request(
            "POST",
            template.url,
            headers=headers,
            content=content,
            extensions={**extensions, "timeout": dict(timeout), "lits_body": body},
        )

    def _post(
        self,
        path: str,
        body: Mapping[str, object],
        *,
        attempts: int | None = None,
        reply: Literal["choices", "pooling"] = "choices",
    ) -> dict[str, Any]:
        """``reply``: what a usable 200 holds, completion choices or Pooling API data (:func:`reply_fault`)."""
        try:
            extensions: dict[str, object] = {"lits_work": request_work(body), "lits_reply": reply}
            if attempts:
                extensions["lits_max_attempts"] = attempts
            gated = self.server_slots() is not None
            with self.slots.slot((context_tag("instance"), context_tag("component"))) as pinned:
                if pinned is not None and reply == "choices":  # the slot that holds this role's last prompt
                    body = {**body, "id_slot": pinned, "cache_prompt": True}
                if gated:  # asked once the slot is ours: calls queued at the start learn the pace meanwhile
                    # Until a reply showed the pace, the budget bounds the wait: a retry would only queue
                    # behind the abandoned request, which the server goes on computing.
                    allowance = self.pace.allowance(request_tokens(body))
                    extensions["lits_read_floor"] = math.inf if allowance is None else allowance
                sent = time.monotonic()
                response = self._transport.handle_request(self._request(path, body, extensions))
                took = time.monotonic() - sent
        except httpx.TransportError as exc:
            never = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) and not self._transport.server_answered
            kind = ServerUnreachable if never else ModelError
            raise kind(self._redact(self._transport_message(exc))) from None
        attempts = attempts_of(response) or 1
        after = f" after {attempts} attempts" if attempts > 1 else ""
        where = f"model server {self.display_url}"
        if response.status_code >= 400:
            status = response.status_code
            permanent = (status < 500 and status not in RETRY_STATUS) or is_permanent_body(response)
            kind = ServerRefused if permanent else ModelError
            raise kind(self._redact(f"{where} answered {status}{after}: {_error_text(response)}"))
        fault = response.extensions.get("lits_fault")
        if fault:
            raise ModelError(self._redact(f"{where} returned {fault}{after}{_snippet(response)}"))
        data = response.extensions.get("lits_json")
        if not isinstance(data, dict):  # a status the reply check does not see (1xx/3xx)
            try:
                data = response.json()
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise ModelError(self._redact(f"{where} returned a body that is not a JSON object{_snippet(response)}"))
        if reply == "choices" and not data.get("choices") and is_permanent_body(response):  # an error in a 200
            raise ServerRefused(self._redact(f"{where} answered: {_error_text(response)}"))
        if gated and attempts == 1 and reply == "choices":  # a pooling reply generates nothing to pace
            self.pace.observe(took, int((data.get("usage") or {}).get("completion_tokens") or 0))
        cached, server_seconds = reported_usage(data)
        note_request(requests=attempts, tokens_cached=cached, server_seconds=server_seconds)
        return data

    def _transport_message(self, exc: httpx.TransportError) -> str:
        where = f"model server {self.display_url}"
        attempts = attempts_of(exc) or 1
        tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
        answered = statuses_of(exc)
        if answered:  # it kept answering, with an error: say so, not that it was silent
            said = ", ".join(
                f"{status} ({count} {'time' if count == 1 else 'times'})" for status, count in sorted(answered.items())
            )
            last = (
                "timed out" if isinstance(exc, httpx.TimeoutException) else f"failed: {str(exc) or type(exc).__name__}"
            )
            return (
                f"{where} answered {said} in {tries} within a {self.policy.budget:g}s budget, and the last "
                f"attempt {last}; the server is up but refusing work: see its log"
            )
        if isinstance(exc, httpx.TimeoutException):
            timeout = self.client.timeout
            return (
                f"{where} did not answer in time ({tries} within a {self.policy.budget:g}s budget; "
                f"connect timeout {timeout.connect}s, read timeout {timeout.read}s)"
            )
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectError) and "refused" in detail.lower():
            detail = "connection refused"
        return f"cannot reach {where}: {detail} ({tries})"

    def _redact(self, text: str) -> str:
        return redact_text(" ".join(text.split()), self._secrets)

    def close(self) -> None:
        self.client.close()


def _split_base_url(base_url: str) -> tuple[str, dict[str, str]]:
    """The base URL without its query string, and that query's parameters; a URL that is not http(s), or
    that carries a credential a run directory would keep, is refused with a one-line ValueError."""
    if has_userinfo(base_url) or ("@" in base_url.split("/")[0]):
        raise ValueError(CREDENTIALS_IN_URL)
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"--base-url must start with http:// or https://, got {redact_text(base_url)!r}")
    if is_masked(base_url):
        raise ValueError(MASKED_QUERY_SECRET)
    url = httpx.URL(base_url)
    return str(url.copy_with(query=None)).rstrip("/"), dict(url.params)


def reply_fault(request: httpx.Request | None, response: httpx.Response) -> str | None:
    """Why a 2xx reply holds no usable answer (worth another attempt), or None when it is fine.

    Not JSON, not an object, no choices, or a choice without content where
    content was asked for (content null, or empty with no finish reason: the
    generation never completed).  An empty reply that *finished* (a stop
    sequence at once) is a real answer.  The parsed body is kept on the
    response so it is decoded once.
    """
    try:
        data = fastjson.loads(response.content)
    except ValueError:
        return "a body that is not JSON"
    if not isinstance(data, dict):
        return "a JSON body that is not an object"
    response.extensions["lits_json"] = data
    if request is not None and request.extensions.get("lits_reply") == "pooling":
        return pooling_fault(data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return None if is_permanent_body(response) else "no choices"
    if not all(isinstance(c, dict) for c in choices):
        return "choices that are not objects"
    sent = _request_json(request)
    if sent.get("echo") or sent.get("max_tokens") == 0:
        return None  # scoring requests ask for no content
    for choice in choices:
        if "message" in choice:
            message = choice.get("message")
            if not isinstance(message, dict):
                return "a choice without a message"
            if message.get("tool_calls") or message.get("refusal"):
                continue
            text = message.get("content")
        else:
            text = choice.get("text")
        if text is None or (text == "" and not choice.get("finish_reason")):
            return "empty content (no finish reason)"
    return None


def _request_json(request: httpx.Request | None) -> dict[str, object]:
    if request is None:
        return {}
    body = request.extensions.get("lits_body")  # as :meth:`OpenAICompatibleModel._request` encoded it
    if isinstance(body, dict):
        return body
    try:
        sent = json.loads(request.content or b"{}")
    except (ValueError, httpx.RequestNotRead):
        return {}
    return sent if isinstance(sent, dict) else {}


def _snippet(response: httpx.Response) -> str:
    try:
        response.json()
        return ""
    except ValueError:
        return f": {response.text[:120]!r}"


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
        err = data.get("error", data) if isinstance(data, dict) else data
        text = err.get("message", str(err)) if isinstance(err, dict) else str(err)
    except ValueError:
        text = response.text
    text = " ".join(str(text).split())
    return (text[:200] + "...") if len(text) > 200 else (text or response.reason_phrase)


def _parse_logprobs(raw: Any) -> list[TokenLogprob] | None:
    if not raw:
        return None
    if isinstance(raw, dict) and "content" in raw:  # chat shape
        return [
            TokenLogprob(
                t.get("token", ""),
                float(t.get("logprob", 0.0)),
                {x["token"]: float(x["logprob"]) for x in t.get("top_logprobs") or []},
            )
            for t in raw.get("content") or []
        ]
    tokens = raw.get("tokens") or []
    lps = raw.get("token_logprobs") or []
    tops = raw.get("top_logprobs") or [None] * len(tokens)
    return [
        TokenLogprob(tok, float(lp or 0.0), {k: float(v) for k, v in (top or {}).items()})
        for tok, lp, top in zip(tokens, lps, tops)
    ]


def _continuation_logprob(raw: object, start: int, end: int) -> float | None:
    """Sum of the echoed token log-probs between character offsets ``start`` and ``end``."""
    if not isinstance(raw, dict) or not raw.get("token_logprobs"):
        return None
    tokens = raw.get("tokens") or []
    lps = raw["token_logprobs"]
    offsets = raw.get("text_offset")
    if not offsets:
        offsets, pos = [], 0
        for tok in tokens:
            offsets.append(pos)
            pos += len(tok)
    total, counted = 0.0, 0
    for off, lp in zip(offsets, lps):
        if start <= off < end and lp is not None:
            total += float(lp)
            counted += 1
    return total if counted else None
