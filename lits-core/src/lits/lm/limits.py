"""How many calls to one server are in flight at once (``--concurrency``), and who goes next."""

from __future__ import annotations

import heapq
import threading
import time
from typing import Protocol

from lits.observability import context_tag


class CallLimiter:
    """Bounds how many calls to one server are in flight (``--concurrency``).

    When calls queue for a slot, the oldest instance goes first (the lowest
    ``instance`` tag of the call context; calls made outside a run come after
    every instance), then first come first served.  Finishing instances that
    started earlier frees their share of slots sooner, so instances do not all
    crawl along together and the last one waits less per dependent round.
    """

    def __init__(self, limit: int = 1) -> None:
        self._cond = threading.Condition()
        self._limit = max(1, limit)
        self._free = self._limit
        self._waiting: list[tuple[float, int]] = []  # a heap of (priority, arrival)
        self._arrivals = 0
        self._in_flight = 0
        self._busy_since = 0.0
        self._busy_area = 0.0  # integral of calls in flight over time, for the summary

    @property
    def limit(self) -> int:
        return self._limit

    def __enter__(self) -> "CallLimiter":
        instance = context_tag("instance")
        priority = float(instance) if isinstance(instance, int) else float("inf")
        with self._cond:
            ticket = (priority, self._arrivals)
            self._arrivals += 1
            if self._free > 0 and not self._waiting:
                self._take()
                return self
            heapq.heappush(self._waiting, ticket)
            while not (self._free > 0 and self._waiting[0] == ticket):
                self._cond.wait()
            heapq.heappop(self._waiting)
            self._take()
            if self._free > 0 and self._waiting:
                self._cond.notify_all()
        return self

    def try_take(self) -> bool:
        """Take a slot only if one is idle and no call waits for it (a hedged copy's); :meth:`give_back`
        returns it."""
        with self._cond:
            if self._free > 0 and not self._waiting:
                self._take()
                return True
            return False

    def give_back(self) -> None:
        self.__exit__()

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._account()
            self._in_flight -= 1
            self._free += 1
            if self._waiting:
                self._cond.notify_all()

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
        with self._cond:
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
