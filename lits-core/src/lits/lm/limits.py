"""How many calls to one server are in flight at once (``--concurrency``), and who goes next."""

from __future__ import annotations

import heapq
import math
import threading
import time
from typing import Protocol

from lits.runtime.concurrency import rounds_so_far
from lits.lm.usage import note_wait
from lits.runtime.observability import context_tag


def call_priority() -> tuple[float, float]:
    """Where a call waiting for a slot stands: lower goes first.

    First the dependent calls its chain has made so far (the round clock of
    :mod:`lits.runtime.concurrency`), then its instance (the oldest first).  A search
    lasts as long as its longest chain of dependent calls; when calls queue,
    serving the chain that is furthest behind first keeps any one chain (one
    instance, or one rollout of a tree-parallel search) from becoming the
    straggler the run waits for.  Calls made outside a run come after every
    instance's.
    """
    instance = context_tag("instance")
    if not isinstance(instance, int):
        return (math.inf, math.inf)
    return (float(rounds_so_far()), float(instance))


class CallLimiter:
    """Bounds how many calls to one server are in flight (``--concurrency``).

    Calls that queue for a slot are served in :func:`call_priority` order, then
    first come first served.  A finished call hands its slot straight to the
    next in that order: only that caller wakes, however many wait.
    """

    def __init__(self, limit: int = 1) -> None:
        self._lock = threading.Lock()
        self._limit = max(1, limit)
        self._free = self._limit
        #: A heap of (priority, arrival, a lock its waiter blocks on until handed a slot).
        self._waiting: list[tuple[tuple[float, float], int, threading.Lock]] = []
        self._arrivals = 0
        self._in_flight = 0
        self._busy_since = 0.0
        self._busy_area = 0.0  # integral of calls in flight over time, for the summary

    @property
    def limit(self) -> int:
        return self._limit

    def __enter__(self) -> "CallLimiter":
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._take()
                return self
            handed = threading.Lock()
            handed.acquire()
            heapq.heappush(self._waiting, (call_priority(), self._arrivals, handed))
            self._arrivals += 1
        waiting = time.perf_counter()
        handed.acquire()  # released by the call that hands this one its slot
        note_wait(time.perf_counter() - waiting)  # kept out of the call's model time
        return self

    def try_take(self) -> bool:
        """Take a slot only if one is idle and no call waits for it (a hedged copy's); :meth:`give_back`
        returns it."""
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._take()
                return True
            return False

    def give_back(self) -> None:
        self.__exit__()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._account()
            if self._waiting:  # the slot passes on: as many in flight as before
                heapq.heappop(self._waiting)[2].release()
                return
            self._in_flight -= 1
            self._free += 1

    def _take(self) -> None:
        self._account()
        self._free -= 1
        self._in_flight += 1

    def _account(self) -> None:
        now = time.perf_counter()
        self._busy_area += self._in_flight * (now - self._busy_since)
        self._busy_since = now

    def busy_area(self) -> float:
        """Seconds × calls in flight so far; divide by wall time for the average calls in flight."""
        with self._lock:
            self._account()
            return self._busy_area


class Limiter(Protocol):
    """What a backend needs of its concurrency bound: :class:`CallLimiter`, or a cluster-wide one (Ray)."""

    @property
    def limit(self) -> int: ...

    def __enter__(self) -> object: ...

    def __exit__(self, *exc: object) -> None: ...

    def try_take(self) -> bool: ...

    def give_back(self) -> None: ...

    def busy_area(self) -> float: ...
