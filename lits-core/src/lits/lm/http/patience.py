"""The read timeout and reply times a server has shown, learned per kind of request.

A kind is a request's path and size of work (:func:`request_work`): a
500-token answer never inherits the patience of 8-token ones.  The retry layer
waits :meth:`Patience.read_timeout` for a first attempt and backs off by a few
:meth:`Patience.reply_time`; the hedging layer sends its copy at
:meth:`Patience.hedge_delay`.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from typing import Any, Hashable, Mapping

import httpx

#: Fewest recent replies of a kind before its 95th percentile is trusted.
HEDGE_WARMUP = 8
#: Never hedge sooner than this (seconds): below it a copy costs more than it saves.
HEDGE_FLOOR = 0.05


def request_tokens(body: Mapping[str, Any]) -> int:
    """The tokens a request may generate: all choices, all prompts."""
    prompts = body.get("prompt")
    count = len(prompts) if isinstance(prompts, list) else 1
    return int(body.get("max_tokens") or 1) * int(body.get("n") or 1) * count


def request_work(body: Mapping[str, Any]) -> int:
    """A request's size class for :class:`Patience`: :func:`request_tokens` rounded up to a power of two,
    so a 500-token answer never inherits the patience of 8-token ones."""
    return 1 << max(0, request_tokens(body) - 1).bit_length()


def request_kind(request: httpx.Request) -> Hashable:
    """What patience is learned over: the request's endpoint and the size of work it asks for."""
    return (request.url.path, request.extensions.get("lits_work", 1))


class Patience:
    """A read timeout learned per endpoint and size of work from how long recent replies took.

    None until ``warmup`` replies of that kind were seen; then ``factor`` x the
    slowest of the last ``window`` of them, never below ``floor``.  Thread-safe.
    """

    def __init__(self, floor: float, factor: float, warmup: int = 8, window: int = 64) -> None:
        self.floor, self.factor, self.warmup = floor, factor, warmup
        self._seen: dict[Hashable, deque[float]] = {}
        self._window = window
        self._lock = threading.Lock()
        #: Each kind's 95th percentile, dropped when a reply of that kind is observed (asked once per call).
        self._p95: dict[Hashable, float] = {}

    def observe(self, endpoint: Hashable, seconds: float) -> None:
        with self._lock:
            self._seen.setdefault(endpoint, deque(maxlen=self._window)).append(seconds)
            self._p95.pop(endpoint, None)

    def read_timeout(self, endpoint: Hashable) -> float | None:
        with self._lock:
            seen = self._seen.get(endpoint)
            if seen is None or len(seen) < self.warmup:
                return None
            return max(self.floor, self.factor * max(seen))

    def hedge_delay(self, endpoint: Hashable) -> float | None:
        """When to send a second copy: the 95th percentile of recent replies of that kind
        (:meth:`reply_time`), never sooner than :data:`HEDGE_FLOOR`; None when nothing is known."""
        recent = self.reply_time(endpoint)
        return None if recent is None else max(HEDGE_FLOOR, recent)

    def reply_time(self, endpoint: Hashable) -> float | None:
        """The 95th percentile of recent replies of that kind.

        A kind not yet seen often enough borrows from a kind of the same path
        that was, scaled up by the ratio of work when it asks for more (a
        guess that is too early costs only a copy); None when there is none.
        """
        with self._lock:
            seen = self._seen.get(endpoint)
            if seen is not None and len(seen) >= HEDGE_WARMUP:
                known_p95 = self._p95.get(endpoint)
                if known_p95 is None:
                    known_p95 = self._p95[endpoint] = percentile(list(seen), 0.95)
                return known_p95
            if not (isinstance(endpoint, tuple) and len(endpoint) == 2 and isinstance(endpoint[1], int)):
                return None
            path, work = endpoint
            known = sorted(
                (k[1], list(v))
                for k, v in self._seen.items()
                if isinstance(k, tuple)
                and len(k) == 2
                and k[0] == path
                and isinstance(k[1], int)
                and len(v) >= HEDGE_WARMUP
            )
        if not known:
            return None
        below = [pair for pair in known if pair[0] <= work]
        other_work, replies = below[-1] if below else known[0]
        return percentile(replies, 0.95) * max(1.0, work / other_work)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by the nearest-rank rule."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]
