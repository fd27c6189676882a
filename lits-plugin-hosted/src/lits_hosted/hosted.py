"""What the hosted backends share: LiTS's retry transport under the vendor's SDK, errors, cost, capabilities.

The SDKs' own retries are off (``max_retries=0``; botocore ``total_max_attempts=1``): every request goes
through :func:`lits.api.server_transport`, so 429, 5xx, dropped connections and timeouts are retried
by the same budget, patience and counters as a server model's, and nothing stacks.  Hedged copies are
never sent: a hosted API bills each one.
"""

from __future__ import annotations

import json
import os
from abc import abstractmethod
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Unpack

import httpx

from lits.api import (
    DEFAULT_RETRY_BASE_WAIT,
    ENV_RETRY_BASE_WAIT,
    RETRY_STATUS,
    CallOptions,
    CallUsage,
    Completion,
    FaultStats,
    GenerationParams,
    LanguageModel,
    LoglikelihoodUnsupported,
    ModelError,
    Prompt,
    RetryPolicy,
    ServerRefused,
    ServerTransport,
    ServerUnreachable,
    attempts_of,
    check_calls_allowed,
    redact_text,
    safe_url,
    server_transport,
)

from lits_hosted.prices import prices_for

#: A hung request costs at least this long before its retry (a retry bills the prompt again).
HOSTED_PATIENCE_FLOOR = 10.0
#: What no hosted chat API does, as the run records it (``describe()["cannot"]``).
CANNOT = {
    "loglikelihood": "score continuations (no prompt log-probabilities): components rank by generating",
    "reply_lines": "hold decoding to listed lines: replies are free text, parsed as always",
    "n": "return several samples per request: n samples are n requests",
}

#: ``check(request, response)``: why a 2xx body is unusable (retried), or None.
BodyCheck = Callable[[dict[str, Any]], str | None]


class HostedModel(LanguageModel):
    """A hosted chat model reached through its vendor's SDK, our transport underneath."""

    chat_native = True
    cannot = frozenset(CANNOT)
    supports_loglikelihood = False
    cheap_loglikelihood = False
    #: One sample per request (neither API has ``n``): components ask one at a time where it matters.
    batches_samples = False
    #: Where the vendor's endpoint is when ``--base-url`` is not given (for messages).
    default_endpoint = ""
    vendor = ""

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str | None = None,
        concurrency: int = 1,
        price_in: float = 0.0,
        price_out: float = 0.0,
        call_budget: float = 300.0,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        max_attempts: int | None = None,
        retry_base_wait: float | None = None,
        retry_max_wait: float = 20.0,
        patience_floor: float = HOSTED_PATIENCE_FLOOR,
        cache_prompts: bool = True,
        **calls: Unpack[CallOptions],
    ) -> None:
        super().__init__(concurrency=concurrency, **calls)
        if not model_id:
            raise ValueError(f"give the model after the backend: --model {self.vendor}/MODEL_ID")
        if call_budget <= 0:
            raise ValueError("call_budget must be positive (seconds)")
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise ValueError(f"--base-url must start with http:// or https://, got {redact_text(base_url)!r}")
        self._init = dict(
            model_id=model_id,
            base_url=base_url,
            concurrency=concurrency,
            price_in=price_in,
            price_out=price_out,
            call_budget=call_budget,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_attempts=max_attempts,
            retry_base_wait=retry_base_wait,
            retry_max_wait=retry_max_wait,
            patience_floor=patience_floor,
            cache_prompts=cache_prompts,
        )
        self.name = model_id
        self.base_url = base_url
        self.cache_prompts = cache_prompts
        self.prices, self.listed_prices = prices_for(model_id, price_in, price_out)
        self.price_in, self.price_out = self.prices.input, self.prices.output
        if retry_base_wait is None:
            retry_base_wait = float(os.environ.get(ENV_RETRY_BASE_WAIT) or DEFAULT_RETRY_BASE_WAIT)
        self.policy = RetryPolicy(
            budget=call_budget,
            base_wait=retry_base_wait,
            max_wait=retry_max_wait,
            max_attempts=max_attempts,
            patience_floor=patience_floor,
            hedge_share=0.0,
        )
        self.timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=None)
        self._faults = FaultStats()
        self.transport: ServerTransport = server_transport(
            self.policy, self._faults, concurrency=concurrency, check=self._reply_fault, gate=check_calls_allowed
        )
        #: What the SDK's HTTP client sends through: each request sized for the learned patience.
        self.client_transport = SizedTransport(self.transport)

    # -- what the backend is and cannot do ----------------------------------------------
    @property  # type: ignore[override]
    def constrain_replies(self) -> bool:
        """Always False: neither API holds decoding to listed lines (``reply_lines`` are dropped)."""
        return False

    @constrain_replies.setter
    def constrain_replies(self, value: bool) -> None:
        """Ignored (``--free-replies`` or not, replies are free text)."""

    def _loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        raise LoglikelihoodUnsupported(f"{self.vendor}/{self.name} cannot {CANNOT['loglikelihood']}")

    @property
    def display_url(self) -> str:
        return safe_url(self.base_url) if self.base_url else self.default_endpoint

    def identity(self) -> str:
        """The response cache keys on the vendor and model, not on the endpoint serving it."""
        return f"{self.vendor}:{self.name}"

    def describe(self) -> dict[str, object]:
        return {
            **super().describe(),
            "vendor": self.vendor,
            "endpoint": self.display_url,
            "call_budget": self.policy.budget,
            "read_timeout": self.timeout.read,
            "prompt_caching": "system text and the turns up to the last reply" if self.cache_prompts else "off",
            "prices": {
                "input": self.prices.input,
                "output": self.prices.output,
                "cache_write_ratio": self.prices.cache_write_ratio,
                "cache_read_ratio": self.prices.cache_read_ratio,
                "from": "list price" if self.listed_prices else "given",
            },
            "cannot": sorted(CANNOT),
        }

    def notices(self) -> list[str]:
        if self.prices.input or self.prices.output:
            return []
        return [f"no price known for {self.name}: costs show as 0 (give --price-in and --price-out, USD per 1M tokens)"]

    def fault_stats(self) -> dict[str, float | int]:
        return self._faults.snapshot()

    def call_cost(self, tokens_in: int, tokens_out: int, usage: CallUsage | None) -> float:
        """Cache writes at 1.25x and reads at 0.1x the input price (the vendor's ratios)."""
        if usage is None:
            return self.prices.cost(tokens_in, tokens_out)
        return self.prices.cost(tokens_in, tokens_out, usage.tokens_cached or 0, usage.tokens_cache_write or 0)

    # -- generation -----------------------------------------------------------------------
    def _generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
        with sized(params.max_tokens):  # the SDK sends from this thread: the transport reads the size here
            return [self._one(prompt, params) for _ in range(params.n)]

    @abstractmethod
    def _one(self, prompt: Prompt, params: GenerationParams) -> Completion:
        """One request's reply."""

    @staticmethod
    def temperature(params: GenerationParams) -> float:
        """Both APIs take 0..1."""
        return min(1.0, max(0.0, float(params.temperature)))

    # -- the transport's view --------------------------------------------------------------
    @abstractmethod
    def _body_fault(self, data: dict[str, Any]) -> str | None:
        """Why a parsed 2xx body holds no usable reply (retried), or None."""

    def _reply_fault(self, request: httpx.Request | None, response: httpx.Response) -> str | None:
        try:
            data = json.loads(response.content)
        except ValueError:
            return "a body that is not JSON"
        if not isinstance(data, dict):
            return "a JSON body that is not an object"
        response.extensions["lits_json"] = data
        return self._body_fault(data)

    def transport_error(self, exc: httpx.TransportError) -> ModelError:
        """A request that never got an answer in the call budget, as one line."""
        where = f"{self.vendor} endpoint {self.display_url}"
        attempts = attempts_of(exc) or 1
        tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) and not self.transport.server_answered:
            return ServerUnreachable(redact_text(f"cannot reach {where}: {str(exc) or type(exc).__name__} ({tries})"))
        if isinstance(exc, httpx.TimeoutException):
            return ModelError(
                redact_text(f"{where} did not answer in time ({tries} within a {self.policy.budget:g}s budget)")
            )
        return ModelError(redact_text(f"{where} failed: {str(exc) or type(exc).__name__} ({tries})"))

    def status_error(self, status: int, message: str, attempts: int) -> ModelError:
        """An error status after our retries: permanent (4xx but 408/409/425/429) or given up on."""
        after = f" after {attempts} attempts" if attempts > 1 else ""
        text = redact_text(
            " ".join(f"{self.vendor} endpoint {self.display_url} answered {status}{after}: {message}".split())
        )
        permanent = 400 <= status < 500 and status not in RETRY_STATUS
        return ServerRefused(text) if permanent else ModelError(text)

    # -- Ray and multiprocessing: rebuilt from the settings (clients and locks do not pickle) ----------
    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), dict(self._init), self.log_prompts, dict(self.sampling)))

    def close(self) -> None:
        self.transport.close()


#: The tokens the request this thread is sending may generate (set by the backend around its SDK call).
_MAX_TOKENS: ContextVar[int] = ContextVar("lits_hosted_max_tokens", default=1)


@contextmanager
def sized(max_tokens: int) -> Iterator[None]:
    """Requests sent from this thread inside the block ask for up to ``max_tokens`` tokens."""
    token = _MAX_TOKENS.set(max_tokens)
    try:
        yield
    finally:
        _MAX_TOKENS.reset(token)


class SizedTransport(httpx.BaseTransport):
    """Tags each request with its size of work (the ``max_tokens`` its backend asked for, rounded up to a power
    of two), so the retry layer learns a read timeout per size (:class:`lits.lm.http.patience.Patience`) as for a
    server model.  The size comes from the call (:func:`sized`), not from reading the SDK's body back."""

    def __init__(self, inner: ServerTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.extensions["lits_work"] = 1 << max(0, _MAX_TOKENS.get() - 1).bit_length()
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def _rebuild(cls: type[HostedModel], init: dict[str, Any], log_prompts: bool, sampling: dict[str, Any]) -> HostedModel:
    return cls(**init, log_prompts=log_prompts, sampling=sampling)


def error_message(body: bytes) -> str:
    """The message of an error body (``{"error": {"message"}}``, ``{"message"}``), else its text."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return body[:200].decode("utf-8", "replace")
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("Message") or err)[:200]
    return str(data)[:200]
