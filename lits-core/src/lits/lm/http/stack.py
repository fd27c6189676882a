"""The transport stack of one model server: retry over hedging over the run's stop gate over the wire."""

from __future__ import annotations

import socket
from typing import Callable

import httpx

from lits.lm.http.billing import CallSpend
from lits.lm.http.hedging import HedgeBudget, HedgedTransport
from lits.lm.http.lean_transport import LeanHTTPTransport
from lits.lm.http.patience import Patience
from lits.lm.http.retry import FaultStats, ReplyCheck, RetryPolicy, RetryTransport


class GatedTransport(httpx.BaseTransport):
    """Runs ``gate`` before each attempt (it raises once the run is stopping, so a call in retries ends)."""

    def __init__(self, inner: httpx.BaseTransport, gate: Callable[[], None]) -> None:
        self.inner, self.gate = inner, gate

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.gate()
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class ServerTransport(httpx.BaseTransport):
    """The stack's top, with handles on the layers a model reads or tunes (the retry layer's counters, the
    hedge budget, the learned reply times)."""

    def __init__(self, retry: RetryTransport, hedging: HedgedTransport) -> None:
        self.retry, self.hedging = retry, hedging
        self.hedges: HedgeBudget = hedging.budget
        self.patience: Patience = retry.patience

    @property
    def server_answered(self) -> bool:
        """Whether any HTTP response arrived yet (later refused connections are restarts, not typos)."""
        return self.retry.server_answered

    @property
    def on_unused(self) -> Callable[[CallSpend], None]:
        return self.retry.on_unused

    @on_unused.setter
    def on_unused(self, hear: Callable[[CallSpend], None]) -> None:
        self.retry.on_unused = hear

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.retry.handle_request(request)

    def close(self) -> None:
        self.retry.close()


def wire_transport(concurrency: int) -> httpx.BaseTransport:
    """The lean HTTP/1.1 transport for ``http://``, httpx's pooled one (made when first needed) for the rest."""
    # On the inner transport (httpx ignores Client(limits=...) beside a transport); roomy, since the limiter,
    # not the pool, bounds calls in flight and may be raised later.
    limits = httpx.Limits(max_connections=max(100, concurrency * 2), max_keepalive_connections=max(20, concurrency))
    # TCP_NODELAY: a request's headers and body leave at once instead of waiting on an ACK.
    return LeanHTTPTransport(
        lambda: httpx.HTTPTransport(limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    )


def server_transport(
    policy: RetryPolicy, stats: FaultStats, *, concurrency: int, check: ReplyCheck, gate: Callable[[], None]
) -> ServerTransport:
    """Retries (tenacity) over hedged copies (``policy.hedge_share`` of the calls; 0: none) over ``gate`` over
    the wire (:func:`wire_transport`); retry and hedging learn from one :class:`Patience`."""
    patience = Patience(policy.patience_floor, policy.patience_factor)
    hedging = HedgedTransport(
        GatedTransport(wire_transport(concurrency), gate),
        HedgeBudget(policy.hedge_share),
        patience,
        interruptible=lambda request: request.url.scheme == "http",
    )
    retry = RetryTransport(hedging, policy=policy, check=check, stats=stats, patience=patience)
    return ServerTransport(retry, hedging)
