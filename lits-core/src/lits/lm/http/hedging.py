"""Hedged requests: a second copy of a call that is slower than nearly all recent ones.

A hang is only known for one once the read timeout passes; a copy sent when
the first has taken longer than the 95th percentile of recent replies of the
same size usually answers long before that.  Whichever copy answers first is
used and the other is abandoned (cut short, or closed when it ends).  Copies are the same
request, so a server that honours the request's seed gives the same answer
either way; which copy wins changes timing, never results.  :class:`HedgeBudget`
bounds the extra load to a share of all calls, and a copy takes only an idle
slot of the run's ``--concurrency``, so the bound on requests in flight holds.
Copies go only to a server on this machine (loopback) unless ``$LITS_HEDGE``
says ``on``: a hosted API bills each copy (:func:`hedge_mode_from_env`).

The server bills every copy it answered, so a copy that loses is handed to the
call's :class:`Leftovers` before :func:`hedged_send` returns: its reply when it
came (its usage counts), or as abandoned when the call stopped waiting for it
(counted with the usage of the reply the call used: the same request).

:class:`HedgedTransport` is the layer: it hedges the requests it is handed
over any inner transport, and tells the layer above which copy's time to learn
from (``lits_took``).  Over a transport that honours
:class:`~lits.lm.http.lean_transport.Interrupt` (:func:`interruptible`), a
call's first copy goes out from the caller's own thread.
"""

from __future__ import annotations

import heapq
import ipaddress
import itertools
import os
import queue
import threading
import time
from typing import Callable, Protocol

import httpx

from lits.lm.http.lean_transport import Interrupt
from lits.lm.http.patience import Patience, request_kind

#: Share of calls that may get a second copy unless ``LITS_HEDGE_SHARE`` says otherwise (0 turns hedging off).
DEFAULT_HEDGE_SHARE = 0.1
ENV_HEDGE_SHARE = "LITS_HEDGE_SHARE"
#: How often a call asks again when to hedge while nothing is learned yet, or its delay is far (seconds).
COLD_POLL = 0.1


#: Where copies may go: ``auto`` (only to a loopback server, the default), ``on`` (any server), ``off``.
ENV_HEDGE = "LITS_HEDGE"
HEDGE_MODES = ("auto", "on", "off")


def hedge_mode_from_env() -> str:
    """``$LITS_HEDGE`` or ``auto``; a bad value is a one-line error."""
    mode = os.environ.get(ENV_HEDGE, "").strip().lower() or "auto"
    if mode not in HEDGE_MODES:
        raise ValueError(
            f"${ENV_HEDGE} must be auto (copies only to a server on this machine), on or off, "
            f"got {os.environ.get(ENV_HEDGE)!r}"
        )
    return mode


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (``localhost``, 127.0.0.0/8, ``::1``): a copy there bills no one."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def hedges_to(host: str, mode: str) -> bool:
    """Whether hedged copies may go to ``host`` under ``mode`` (see :data:`ENV_HEDGE`)."""
    return mode == "on" or (mode == "auto" and is_loopback(host))


def hedge_share_from_env() -> float:
    """``$LITS_HEDGE_SHARE`` or the default; a bad value is a one-line error."""
    text = os.environ.get(ENV_HEDGE_SHARE, "").strip()
    if not text:
        return DEFAULT_HEDGE_SHARE
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"${ENV_HEDGE_SHARE} must be a number from 0 to 1 (0: no hedged requests), got {text!r}")
    return share


class HedgeBudget:
    """Allows a second copy for at most ``share`` of the calls made so far (plus ``burst``); thread-safe."""

    def __init__(self, share: float, burst: int = 2) -> None:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"hedge share must be between 0 and 1, got {share}")
        self.share, self.burst = share, burst
        #: Whether copies may go to this server; the model says no for a server with fixed slots (a
        #: llama.cpp server), where a copy competes for the compute of the call it hedges.
        self.allowed: Callable[[], bool] = lambda: True
        #: An idle slot of the run's ``--concurrency`` for a copy (its release), or None when every slot is
        #: busy or wanted: copies use only idle capacity and never exceed the bound.  Set by the model.
        self.spare_slot: Callable[[], Callable[[], None] | None] = lambda: _nothing
        self.calls = 0
        self.hedged = 0
        self.won = 0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether a call may be hedged at all (else it is sent inline, with no thread)."""
        return self.share > 0 and self.allowed()

    def count_call(self) -> None:
        with self._lock:
            self.calls += 1

    def take(self) -> Callable[[], None] | None:
        """A copy's idle slot (its release; counted) when the copy stays within the share, else None."""
        with self._lock:
            if self.hedged >= self.share * self.calls + self.burst or not self.allowed():
                return None
            release = self.spare_slot()
            if release is None:
                return None
            self.hedged += 1
            return release

    def count_win(self) -> None:
        with self._lock:
            self.won += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"hedged_calls": self.hedged, "hedges_won": self.won}


def _nothing() -> None:
    return None


class Leftovers(Protocol):
    """Where a hedged call's copies that lost go, so that what the server billed for them is counted."""

    def unused(self, reply: httpx.Response) -> None:
        """A reply the server gave that the call does not use (its body was read)."""

    def abandoned(self) -> None:
        """A copy the call stopped waiting for (cut short, or closed when it ends): its usage is never seen."""


class _NoLeftovers:
    def unused(self, reply: httpx.Response) -> None:
        return None

    def abandoned(self) -> None:
        return None


#: What one copy ended with: its response or the error it raised, and how long it took.
Outcome = tuple[httpx.Response | BaseException, float]


def copy_request(request: httpx.Request) -> httpx.Request:
    """An independent copy of a request whose body was already read (a JSON call's)."""
    return httpx.Request(
        request.method,
        request.url,
        headers=request.headers,
        content=request.content,
        extensions=dict(request.extensions),
    )


class _CopyThreads:
    """Long-lived threads that run the copies of hedged calls: a call hands its copy over instead of
    starting a thread of its own (a thread start per call was a tenth of a wide run's CPU)."""

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[Callable[[], None]]" = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # this idle thread is spoken for
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._serve, daemon=True, name="lits-hedge").start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


_COPIES = _CopyThreads()


class _Race:
    """Copies of one request in flight; the first to end wins, later ones are closed."""

    def __init__(self, send: Callable[[httpx.Request], httpx.Response], leftovers: Leftovers) -> None:
        self.send, self.leftovers = send, leftovers
        self.results: queue.Queue[tuple[int, Outcome]] = queue.Queue()
        self.settled = False
        self.pending = 0
        #: Copies whose outcome was queued (the rest are still running).
        self.ended = 0
        self._lock = threading.Lock()

    def start(self, request: httpx.Request, release: Callable[[], None] = _nothing) -> None:
        with self._lock:
            self.pending += 1
            index = self.pending
        _COPIES.run(lambda: self._run(index, request, release))

    def _run(self, index: int, request: httpx.Request, release: Callable[[], None]) -> None:
        started = time.monotonic()
        outcome: httpx.Response | BaseException
        try:
            outcome = self.send(request)
        except BaseException as exc:  # handed to the caller's thread, which raises it
            outcome = exc
        finally:
            release()  # the copy's slot, as soon as its request ends
        with self._lock:
            late = self.settled
            if not late:  # queued under the lock: :meth:`settle` counts the copies still running exactly
                self.ended += 1
                self.results.put((index, (outcome, time.monotonic() - started)))
        if late and isinstance(outcome, httpx.Response):
            outcome.close()  # counted as abandoned when the call settled

    def next(self, timeout: float | None = None) -> tuple[int, Outcome] | None:
        try:
            return self.results.get(timeout=timeout)
        except queue.Empty:
            return None

    def settle(self) -> None:
        """No later copy is wanted: a reply that came is unused, a copy still running abandoned (and closed
        when it ends)."""
        with self._lock:
            self.settled = True
            running = self.pending - self.ended
        while True:  # a copy that ended between the winner and now
            left = self.next(timeout=0)
            if left is None:
                break
            if isinstance(left[1][0], httpx.Response):
                self.leftovers.unused(left[1][0])
                left[1][0].close()
        for _ in range(running):
            self.leftovers.abandoned()


def hedged_send(
    send: Callable[[httpx.Request], httpx.Response],
    request: httpx.Request,
    delay: Callable[[], float | None],
    budget: HedgeBudget,
    *,
    interruptible: bool = False,
    leftovers: Leftovers | None = None,
) -> tuple[httpx.Response, float]:
    """Send ``request``; once it has waited ``delay()`` seconds send one copy (if the budget allows).

    ``delay`` is asked again while the call waits (None: nothing learned yet),
    so a call sent before any reply came back is still hedged once others
    have.  Returns the first response and how long its copy took; raises the
    first copy's error only when no copy answered.  ``interruptible``: the
    transport honours :class:`~lits.lm.http.lean_transport.Interrupt`, so the first copy
    is sent from the caller's own thread and a watcher sends the second.
    ``leftovers`` hears of every copy that lost, before this returns.
    """
    leftovers = leftovers or _NoLeftovers()
    if interruptible:
        return _Watched(send, request, delay, budget, leftovers).run()
    race = _Race(send, leftovers)
    started = time.monotonic()
    race.start(request)
    ended: tuple[int, Outcome] | None = None
    while ended is None:
        due = delay()
        waited = time.monotonic() - started
        if due is not None and waited >= due:
            break
        ended = race.next(timeout=COLD_POLL if due is None else min(COLD_POLL, due - waited))
    copies = 1
    release = budget.take() if ended is None else None
    if release is not None:
        race.start(copy_request(request), release)
        copies = 2
    try:
        if ended is None:
            ended = race.next()
        assert ended is not None
        index, (outcome, took) = ended
        if isinstance(outcome, BaseException) and copies == 2 and index == 1:
            # The first copy failed after the second was sent: that one is newer, wait for it.  (When the
            # second fails first, its error goes to the retry loop: the first has hung past the 95th
            # percentile already, and a fresh attempt is likelier to answer than it.)
            other = race.next()
            assert other is not None
            if isinstance(other[1][0], httpx.Response):
                index, (outcome, took) = other
        if isinstance(outcome, BaseException):
            raise outcome
        if index == 2:
            budget.count_win()
        return outcome, took
    finally:
        race.settle()


class _Watched:
    """A hedged call sent from its caller's thread; :data:`_WATCH` sends its copy if it runs late.

    No thread hand-off on the common path (the reply comes before the delay):
    the watcher only looks at the call when its delay is due.  A copy that
    ends first fires the call's :class:`Interrupt`, which cuts the first
    copy's wait short; a first copy that answers first cuts the copy short
    with the copy's own.
    """

    def __init__(
        self,
        send: Callable[[httpx.Request], httpx.Response],
        request: httpx.Request,
        delay: Callable[[], float | None],
        budget: HedgeBudget,
        leftovers: Leftovers = _NoLeftovers(),
    ) -> None:
        self.send, self.request, self.delay, self.budget = send, request, delay, budget
        self.leftovers = leftovers
        self.interrupt = Interrupt()
        self.copy_interrupt = Interrupt()
        self.started = time.monotonic()
        self.settled = False
        self.copied = False
        self.copy_ended = threading.Event()
        self.copy_outcome: Outcome | None = None
        self._lock = threading.Lock()

    def run(self) -> tuple[httpx.Response, float]:
        self.request.extensions["lits_interrupt"] = self.interrupt
        try:
            return self._run()
        finally:  # a retry reuses the request: a fired interrupt left on it would cut the next send short
            self.request.extensions.pop("lits_interrupt", None)

    def _run(self) -> tuple[httpx.Response, float]:
        _WATCH.watch(self)
        try:
            first: httpx.Response | BaseException = self.send(self.request)
        except BaseException as exc:  # handed on below, once the copy's is known
            first = exc
        took = time.monotonic() - self.started
        with self._lock:
            self.settled = True
            copied, copy_outcome = self.copied, self.copy_outcome
        if not copied:
            if isinstance(first, BaseException):
                raise first
            return first, took
        if copy_outcome is not None and (isinstance(first, BaseException) or self.interrupt.fired):
            if isinstance(first, httpx.Response):
                self.leftovers.unused(first)
                first.close()
            elif self.interrupt.cut:
                self.leftovers.abandoned()  # cut short by the copy's answer
            outcome, copy_took = copy_outcome
            if isinstance(outcome, BaseException):
                raise outcome  # the copy failed first: a fresh attempt is likelier to answer than the first
            self.budget.count_win()
            return outcome, copy_took
        if isinstance(first, httpx.Response):
            if copy_outcome is None:  # still running: cut short (it frees its slot), closed when it ends
                self.copy_interrupt.fire()
                if self.copy_interrupt.cut:  # else it is never sent
                    self.leftovers.abandoned()
            elif isinstance(copy_outcome[0], httpx.Response):  # it ended just now, before its interrupt fired
                self.leftovers.unused(copy_outcome[0])
                copy_outcome[0].close()
            return first, took
        # The first copy failed on its own after the second was sent: that one is newer, wait for it.
        self.copy_ended.wait()
        with self._lock:
            copy_outcome = self.copy_outcome
        if copy_outcome is not None and isinstance(copy_outcome[0], httpx.Response):
            self.budget.count_win()
            return copy_outcome[0], copy_outcome[1]
        raise first

    def send_copy(self) -> None:
        """Called by the watcher when the delay is due: one copy in an idle slot, if the budget allows."""
        release = self.budget.take()
        if release is None:
            return
        with self._lock:
            if self.settled:
                release()
                return
            self.copied = True
        _COPIES.run(lambda: self._run_copy(release))

    def _run_copy(self, release: Callable[[], None]) -> None:
        started = time.monotonic()
        outcome: httpx.Response | BaseException
        try:
            copy = copy_request(self.request)
            # Its own interrupt, fired only when the first copy answered first.  (The first copy may have
            # ended and taken its interrupt off the request already, between the watcher's decision and now.)
            copy.extensions["lits_interrupt"] = self.copy_interrupt
            outcome = self.send(copy)
        except BaseException as exc:  # handed to the caller's thread
            outcome = exc
        finally:
            release()
        with self._lock:
            late = self.settled
            if not late:
                self.copy_outcome = (outcome, time.monotonic() - started)
        if late:
            if isinstance(outcome, httpx.Response):
                outcome.close()
        else:
            self.interrupt.fire()  # the first copy stops waiting: this outcome is the call's
        self.copy_ended.set()


class _Watch:
    """One thread that looks at each hedged call when its delay is due (a heap of due times)."""

    #: Calls due within this many seconds of each other are looked at in one wake-up.
    SLACK = 0.005

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Watched]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, call: _Watched) -> None:
        self._push(call, self._due(call, call.started))

    @staticmethod
    def _due(call: _Watched, now: float) -> float | None:
        """When to look at ``call`` next; None when its copy is due now."""
        delay = call.delay()
        if delay is None:
            return now + COLD_POLL
        due = call.started + delay
        return due if due > now else None

    def _push(self, call: _Watched, when: float | None) -> None:
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() if when is None else when, next(self._order), call))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, daemon=True, name="lits-hedge-watch")
                self._thread.start()
            elif self._heap[0][2] is call:
                self._cond.notify()

    def _serve(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic() + self.SLACK:
                    self._cond.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, _, call = heapq.heappop(self._heap)
            if call.settled:
                continue
            when = self._due(call, time.monotonic())
            if when is None:
                call.send_copy()
            else:
                self._push(call, when)


_WATCH = _Watch()


class HedgedTransport(httpx.BaseTransport):
    """Hedges the requests sent through it over ``inner``: a copy once a request has waited longer than
    ``patience`` says nearly all recent replies of its kind took, within ``budget``.

    Each copy's body is read here (a copy has answered when its body is whole).  The request may carry
    ``lits_leftovers`` (the call's :class:`Leftovers`) and ``lits_attempt`` (a retry layer's attempt
    number: only a call's first attempt counts as a call for the share); the response carries
    ``lits_took``, the time of the copy that answered.
    """

    def __init__(
        self,
        inner: httpx.BaseTransport,
        budget: HedgeBudget,
        patience: Patience,
        interruptible: Callable[[httpx.Request], bool] = lambda request: False,
    ) -> None:
        self.inner, self.budget, self.patience = inner, budget, patience
        #: Whether ``inner`` honours a request's ``lits_interrupt`` (then the first copy is sent inline).
        self.interruptible = interruptible

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.extensions.get("lits_attempt", 1) == 1:
            self.budget.count_call()
        if not self.budget.enabled:
            return self._send(request)
        kind = request_kind(request)
        response, took = hedged_send(
            self._send,
            request,
            lambda: self.patience.hedge_delay(kind),
            self.budget,
            interruptible=self.interruptible(request),
            leftovers=request.extensions.get("lits_leftovers"),
        )
        response.extensions["lits_took"] = took
        return response

    def _send(self, request: httpx.Request) -> httpx.Response:
        """One copy of the request, its body read (a truncated body or a hang mid-body fails here)."""
        response = self.inner.handle_request(request)
        try:
            response.read()
        except BaseException:
            response.close()
            raise
        return response

    def close(self) -> None:
        self.inner.close()
