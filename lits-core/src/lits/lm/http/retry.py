"""Retries for model servers, as an httpx transport wrapper driven by tenacity.

A call is retried until it succeeds or its time *budget* runs out, not for a
small fixed number of attempts: a run should lose nothing to a server that
misbehaves now and then.  Transient failures are transport errors (refused or
dropped connections, timeouts, truncated bodies), the statuses in
:data:`RETRY_STATUS` and any 5xx, and 2xx bodies that the ``check`` callback
rejects (not JSON, no choices, ...).  Waits are exponential with full jitter
from a few of the server's recent replies (at most ``base_wait``), and a
``Retry-After`` is honoured up to a few recent replies, doubling while the
server goes on throttling the call (:meth:`_Call.throttle_allowance`).
Everything else (400, 401, 403, 404, 422, a
context that is too long) returns at once.

Every attempt's connect/read timeouts are clipped to what is left of the
budget, so a hanging server cannot stretch a call past it.  The read timeout
is also learned (:class:`~lits.lm.http.patience.Patience`): once a few replies of the same size of
work have come back, a first attempt waits a few times the slowest recent one
(at least ``patience_floor``), so a hang costs seconds; a retry after a
timeout waits twice the last patience, so a reply that is merely slow still
arrives.  A refused connection before the server has ever answered is most
likely a wrong URL and gets only ``connect_budget``; once the server has
answered, it is a restart and gets the full budget.  :class:`FaultStats` counts retries and seconds
lost, for the run summary.

The layer wraps any httpx transport (a hedging layer, the wire, a test's
:class:`httpx.MockTransport`); it tells the layers below each attempt's number
(``lits_attempt``) and the call's bill (``lits_leftovers``, see
:mod:`~lits.lm.http.billing`), and learns reply times from the ``lits_took``
a hedging layer reports.
"""

from __future__ import annotations

import email.utils
import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, Hashable

import httpx
import tenacity

from lits.lm.http.billing import CallBill, CallSpend
from lits.lm.http.patience import Patience, request_kind

RETRY_STATUS = frozenset({408, 409, 425, 429})
#: Error-body phrases that mean "this prompt can never fit" even on a 5xx.
PERMANENT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "exceeds the context",
    "context window",
    "too many tokens",
)

#: ``check(request, response)`` -> why a 2xx reply is unusable and worth retrying, or None.
ReplyCheck = Callable[[httpx.Request, httpx.Response], str | None]


class TransientReply(Exception):
    """A response worth another attempt (retryable status or rejected body)."""

    def __init__(self, response: httpx.Response, reason: str) -> None:
        super().__init__(reason)
        self.response = response
        self.reason = reason


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how patiently one call is retried."""

    budget: float = 300.0
    base_wait: float = 0.5
    max_wait: float = 20.0
    max_retry_after: float = 60.0
    connect_budget: float = 10.0
    max_attempts: int | None = None
    adaptive_read_timeout: bool = True
    patience_floor: float = 1.0
    patience_factor: float = 4.0
    #: Share of calls that may get a hedged second copy (0: never hedge).
    hedge_share: float = 0.1
    #: A wait before a retry is a few of the server's recent replies: this many times the recent reply time
    #: of the request's size, doubled with each further fault of the call; a backoff never starts above
    #: ``base_wait``, a ``Retry-After`` is never waited past (see :meth:`_Call.backoff`,
    #: :meth:`_Call.throttle_allowance`).  ``math.inf``: ``base_wait`` and whatever the server says.
    wait_factor: float = 4.0


class FaultStats:
    """Thread-safe counters of what faults cost: retries, seconds lost, calls given up; and the requests the
    server answered (a call's retries and hedged copies each count)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._retries = 0
        self._seconds_lost = 0.0
        self._failed_calls = 0
        self._requests = 0

    def count_requests(self, requests: int) -> None:
        """Requests the server answered for one call (retries and hedged copies included)."""
        with self._lock:
            self._requests += requests

    def add(self, *, retries: int, seconds_lost: float, failed: bool) -> None:
        with self._lock:
            self._retries += retries
            self._seconds_lost += seconds_lost
            self._failed_calls += int(failed)

    def snapshot(self) -> dict[str, float | int]:
        with self._lock:
            return {
                "retries": self._retries,
                "seconds_lost": round(self._seconds_lost, 3),
                "failed_calls": self._failed_calls,
                "server_requests": self._requests,
            }


def retry_after_seconds(response: httpx.Response, cap: float) -> float | None:
    """Seconds from a ``Retry-After`` header (delta or HTTP date), capped."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = parsed.timestamp() - time.time()
    return max(0.0, min(cap, seconds))


def is_permanent_body(response: httpx.Response) -> bool:
    """True when an error body says the request itself can never succeed (context too long)."""
    text = response.text.lower()
    return any(marker in text for marker in PERMANENT_MARKERS)


def attempts_of(obj: object) -> int | None:
    """How many attempts the transport made for a returned response or raised error."""
    if isinstance(obj, httpx.Response):
        value = obj.extensions.get("lits_attempts")
    else:
        value = getattr(obj, "lits_attempts", None)
    return int(value) if value else None


def statuses_of(exc: object) -> dict[int, int]:
    """The HTTP statuses a failed call's earlier attempts got before its last one failed in transport, with
    how many times each (a server that kept answering 503 is not one that never answered)."""
    value = getattr(exc, "lits_statuses", None)
    return dict(value) if isinstance(value, dict) else {}


class _Call:
    """One request's retry state: its deadline, the last outcome and its cost."""

    def __init__(self, transport: "RetryTransport", request: httpx.Request) -> None:
        self.transport = transport
        self.request = request
        self.policy = transport.policy
        self.start = time.monotonic()
        self.timeouts: dict[str, float | None] = dict(request.extensions.get("timeout") or {})
        self.attempt_started = self.start
        self.delays: dict[int, float] = {}
        #: Every reply the server gave this call, used or not (what it billed).
        self.bill = CallBill()
        request.extensions["lits_leftovers"] = self.bill  # where a hedging layer below puts copies that lost
        #: Replies so far that asked the call to wait (a ``Retry-After``): each doubles the next allowance.
        self.throttled = 0
        #: The read timeout each attempt was given (what tests and the fault counters look at).
        self.read_timeouts: list[float | None] = []
        #: Read timeouts so far: each doubles the learned patience of the next attempt (a reply that is
        #: merely slow still arrives; a hang that repeats costs 1x, 2x, 4x ... the patience, not the full
        #: read timeout each time).
        self.timeouts_seen = 0
        #: The retryable statuses the server answered, with how many times each.
        self.statuses: dict[int, int] = {}
        #: What patience is learned over: the endpoint and the size of the work asked for.
        self.kind: Hashable = request_kind(request)
        floor = request.extensions.get("lits_read_floor")
        #: The least read timeout of every attempt (a long reply's own time), if the caller set one.
        self.read_floor = float(floor) if isinstance(floor, (int, float)) else None
        #: The call's budget: the policy's, or more for a long reply from a server working on it alone.
        self.budget = self.policy.budget
        if self.read_floor is not None and math.isfinite(self.read_floor):
            self.budget = max(self.budget, self.read_floor)

    def remaining(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def attempt(self) -> httpx.Response:
        """One try; raises :class:`TransientReply` or a transport error when worth retrying."""
        self.attempt_started = time.monotonic()
        left = max(0.05, self.remaining())
        timeouts = dict(self.timeouts)
        learned = self.transport.patience.read_timeout(self.kind)
        if learned is not None and self.policy.adaptive_read_timeout:
            read = timeouts.get("read")
            patience = learned * (2**self.timeouts_seen)
            timeouts["read"] = patience if read is None else min(patience, read)
        if self.read_floor is not None and timeouts.get("read") is not None:
            timeouts["read"] = max(float(timeouts["read"] or 0.0), self.read_floor)
        self.read_timeouts.append(timeouts.get("read"))
        self.request.extensions["timeout"] = {k: left if v is None else min(v, left) for k, v in timeouts.items()}
        self.request.extensions["lits_attempt"] = len(self.read_timeouts)
        try:
            response = self._send(self.request)
        except httpx.ReadTimeout:
            self.timeouts_seen += 1
            raise
        took = response.extensions.pop("lits_took", None)
        if took is None:
            took = time.monotonic() - self.attempt_started
        self.transport.server_answered = True
        status = response.status_code
        reason: str | None = None
        if status in RETRY_STATUS or (status >= 500 and not is_permanent_body(response)):
            self.statuses[status] = self.statuses.get(status, 0) + 1
            reason = f"HTTP {status}"
        elif 200 <= status < 300 and self.transport.check is not None:
            reason = self.transport.check(self.request, response)
        self.bill.answered(response)  # after the check, which parses the body once for both
        if reason:
            self.bill.rejected(response)
            raise TransientReply(response, reason)
        if 200 <= status < 300:
            self.transport.patience.observe(self.kind, took)
        return response

    def _send(self, request: httpx.Request) -> httpx.Response:
        """One attempt, its body read (a truncated body or a hang mid-body fails here)."""
        response = self.transport.inner.handle_request(request)
        try:
            response.read()
        except BaseException:
            response.close()
            raise
        return response

    def delay(self, state: tenacity.RetryCallState) -> float:
        """The wait before the next attempt (computed once per attempt; jitter is random)."""
        if state.attempt_number not in self.delays:
            exc = state.outcome.exception() if state.outcome else None
            hinted = None
            if isinstance(exc, TransientReply):
                hinted = retry_after_seconds(exc.response, self.policy.max_retry_after)
            if hinted is not None:
                self.throttled += 1
                hinted = min(hinted, self.throttle_allowance())
            self.delays[state.attempt_number] = hinted if hinted is not None else self.backoff(state)
        return self.delays[state.attempt_number]

    def backoff(self, state: tenacity.RetryCallState) -> float:
        """A random wait (full jitter) up to ``first`` x 2^(attempt-1), at most ``max_wait``: ``first`` is
        ``base_wait``, or ``wait_factor`` x the recent reply time when that is shorter.

        A fault on a search's chain of dependent calls should cost about a reply: against a server that
        answers in milliseconds, 0.1 s is dozens of them.  A fault that repeats still doubles the wait.
        """
        first = self.policy.base_wait
        recent = self.transport.patience.reply_time(self.kind)
        if recent is not None:
            first = min(first, self.policy.wait_factor * recent)
        return float(tenacity.wait_random_exponential(multiplier=first, max=self.policy.max_wait)(state))

    def throttle_allowance(self) -> float:
        """The longest a ``Retry-After`` is waited for now: ``wait_factor`` x the recent reply time of this
        kind of request, doubled for each earlier throttled reply of this call.

        A server that answers in milliseconds and throttles one request now and then is over its limit for
        a moment, not for the second its header says; a wait of a second on a chain of dependent calls
        costs hundreds of replies.  A server that goes on throttling the call is backed off exponentially
        up to what it asked, so it is never hammered; nothing learned yet: what it asked.
        """
        recent = self.transport.patience.reply_time(self.kind)
        if recent is None:
            return math.inf
        return self.policy.wait_factor * recent * 2.0 ** (self.throttled - 1)

    def should_stop(self, state: tenacity.RetryCallState) -> bool:
        # A request may cap its own attempts (e.g. probing whether a server supports a feature).
        cap = self.request.extensions.get("lits_max_attempts") or self.policy.max_attempts
        if cap is not None and state.attempt_number >= cap:
            return True
        exc = state.outcome.exception() if state.outcome else None
        budget_left = self.remaining()
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) and not self.transport.server_answered:
            budget_left = min(budget_left, self.policy.connect_budget - (time.monotonic() - self.start))
        return self.delay(state) >= budget_left

    def settle(self, attempts: int, failed: bool) -> None:
        """Add this call's retries and lost seconds to the model's counters."""
        if attempts > 1 or failed:
            end = time.monotonic() if failed else self.attempt_started
            self.transport.stats.add(retries=attempts - 1, seconds_lost=end - self.start, failed=failed)


class RetryTransport(httpx.BaseTransport):
    """Retries each request over ``inner`` with tenacity, by ``policy`` (see the module doc)."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        *,
        policy: RetryPolicy = RetryPolicy(),
        check: ReplyCheck | None = None,
        stats: FaultStats | None = None,
        sleep: Callable[[float], None] = time.sleep,
        patience: Patience | None = None,
    ) -> None:
        self.inner = inner
        #: How a wait between attempts is spent (tests pass a fake that records it).
        self.sleep = sleep
        self.policy = policy
        self.check = check
        self.stats = stats or FaultStats()
        #: Told, when a call ends, of the replies the server billed that the call did not use (the model
        #: puts them in the inference log); only when there were any.
        self.on_unused: Callable[[CallSpend], None] = lambda spend: None
        #: Reply times learned from this layer's calls (shared with a hedging layer below, if any).
        self.patience = patience or Patience(policy.patience_floor, policy.patience_factor)
        #: Set once any HTTP response arrived: later refused connections are restarts, not typos.
        self.server_answered = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        call = _Call(self, request)
        retrying = tenacity.Retrying(
            stop=call.should_stop,
            wait=call.delay,
            retry=tenacity.retry_if_exception_type((httpx.TransportError, TransientReply)),
            reraise=True,
            sleep=self.sleep,
        )
        attempts = 0
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    response = call.attempt()
            call.settle(attempts, failed=False)
            self._bill(call.bill.settle(response))
            response.extensions["lits_attempts"] = attempts
            return response
        except TransientReply as exc:
            call.settle(attempts, failed=True)
            self._bill(call.bill.settle(None))
            exc.response.extensions["lits_attempts"] = attempts
            exc.response.extensions["lits_fault"] = exc.reason
            return exc.response
        except httpx.TransportError as exc:
            call.settle(attempts, failed=True)
            self._bill(call.bill.settle(None))
            setattr(exc, "lits_attempts", attempts)
            setattr(exc, "lits_statuses", dict(call.statuses))
            raise
        finally:
            request.extensions["timeout"] = call.timeouts
            request.extensions.pop("lits_attempt", None)
            request.extensions.pop("lits_leftovers", None)

    def _bill(self, spend: CallSpend) -> None:
        self.stats.count_requests(spend.requests)
        if spend.unused:
            self.on_unused(spend)

    def close(self) -> None:
        self.inner.close()
