"""What one logical model call cost beyond its token counts, as the server accounts for it.

A call (one ``generate`` or ``loglikelihood``) may take several server
requests (samples on a one-slot server, retries), part of its prompt may be
served from the server's prefix cache, the server may say how long it worked,
and the call may wait for a slot before any of that starts.  The backend notes
each of these while the call runs (:func:`note_request`, :func:`note_wait`)
into the :class:`CallUsage` that :func:`measuring` opened for the call; the
base class then puts it on the call's :class:`~lits.runtime.observability.InferenceRecord`.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Mapping

_USAGE: contextvars.ContextVar["CallUsage" | None] = contextvars.ContextVar("lits_call_usage", default=None)


@dataclass
class CallUsage:
    #: Server requests the call took (0: the backend noted none; the record then counts one).
    requests: int = 0
    #: Prompt tokens the server served from its cache (None: it did not say).
    tokens_cached: int | None = None
    #: Prompt tokens the server wrote to its cache, billed above the input price (hosted APIs' prompt
    #: caching; None: it did not say).
    tokens_cache_write: int | None = None
    #: Seconds the server says it worked (prompt + generation; None: it did not say).
    server_seconds: float | None = None
    #: Seconds spent waiting for a slot (``--concurrency`` or the server's own), not model time.
    queued_seconds: float = 0.0


class measuring:  # lower case: used like a function, as :class:`lits.runtime.observability.call_context`
    """Collect the usage the backend notes inside (one per logical call)."""

    __slots__ = ("usage", "_token")

    def __init__(self) -> None:
        self.usage = CallUsage()

    def __enter__(self) -> CallUsage:
        self._token = _USAGE.set(self.usage)
        return self.usage

    def __exit__(self, *exc: object) -> None:
        _USAGE.reset(self._token)


def note_request(
    *,
    requests: int = 1,
    tokens_cached: int | None = None,
    server_seconds: float | None = None,
    tokens_cache_write: int | None = None,
) -> None:
    """A request the current call made (``requests``: with its retries), and what its server reported."""
    usage = _USAGE.get()
    if usage is None:
        return
    usage.requests += requests
    if tokens_cached is not None:
        usage.tokens_cached = (usage.tokens_cached or 0) + tokens_cached
    if tokens_cache_write is not None:
        usage.tokens_cache_write = (usage.tokens_cache_write or 0) + tokens_cache_write
    if server_seconds is not None:
        usage.server_seconds = (usage.server_seconds or 0.0) + server_seconds


def note_wait(seconds: float) -> None:
    """The current call waited ``seconds`` for a slot."""
    usage = _USAGE.get()
    if usage is not None and seconds > 0:
        usage.queued_seconds += seconds


def reported_usage(data: Mapping[str, Any]) -> tuple[int | None, float | None]:
    """``(prompt tokens served from cache, server seconds)`` of a reply body, each None when not reported.

    OpenAI, vLLM and current llama.cpp ``llama-server`` say ``usage.prompt_tokens_details.cached_tokens``;
    llama.cpp's ``timings`` say ``cache_n`` (older ``llama-server``) and ``prompt_ms`` + ``predicted_ms``.
    llama-cpp-python's server reports neither.
    """
    usage = data.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(usage, Mapping) else None
    cached = _number(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    timings = data.get("timings")
    seconds = None
    if isinstance(timings, Mapping):
        if cached is None:
            cached = _number(timings.get("cache_n"))
        prompt_ms, predicted_ms = _number(timings.get("prompt_ms")), _number(timings.get("predicted_ms"))
        if prompt_ms is not None or predicted_ms is not None:
            seconds = ((prompt_ms or 0.0) + (predicted_ms or 0.0)) / 1000.0
    return (None if cached is None else int(cached)), seconds


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None
