"""The coordinator of a Ray run, on the driver's node, and how a worker's model reaches it.

The coordinator holds what must be one for the whole cluster: the slots of
``--concurrency`` (calls in flight against the server, served in
:func:`lits.lm.limits.call_priority` order exactly like
:class:`lits.lm.limits.CallLimiter`; one pool per model when components have
their own, as each model has its own limiter in a local run), the response cache
(the run's SQLite file, on the driver's disk) and a count of how often each
instance started (a count above the driver's submissions is a Ray retry after
a worker died).  In a worker, :class:`SharedLimiter` and :class:`SharedCache`
take the place of the model's own limiter and cache.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import threading
import time
from typing import Any, Sequence

import ray
from lits.lm.base import CallsStopped
from lits.lm.limits import call_priority
from lits.lm.usage import note_wait


@ray.remote(num_cpus=0)
class RunCoordinator:
    """Global call slots, the response cache and instance start counts (an async actor: waiting is cheap)."""

    def __init__(self, limit: int, cache_path: str | None) -> None:
        from lits.lm.cache import ResponseCache

        self.limit = max(1, limit)
        self.free: dict[str, int] = {}  # free slots by pool (a model's spec; "" for the run's one model)
        self.waiting: dict[str, list[tuple[tuple[float, float], int]]] = {}  # heaps of (priority, arrival)
        self.arrivals = 0
        self.cond: asyncio.Condition | None = None
        self.held: dict[tuple[str, str], int] = {}  # slots held, by (pool, worker incarnation "name#pid@node")
        self.current: dict[str, str] = {}  # the live incarnation of each worker name
        self.stopping = False
        self.busy_since = time.perf_counter()
        self.area = 0.0
        self.starts: dict[int, int] = {}
        self.cache = ResponseCache(cache_path) if cache_path else None

    def _condition(self) -> asyncio.Condition:
        if self.cond is None:
            self.cond = asyncio.Condition()
        return self.cond

    def _account(self) -> None:
        now = time.perf_counter()
        self.area += sum(self.limit - free for free in self.free.values()) * (now - self.busy_since)
        self.busy_since = now

    async def acquire(self, priority: tuple[float, float], holder: str, pool: str = "") -> bool:
        """Wait for a slot of ``pool`` (lowest ``priority`` first); False when the run is stopping."""
        cond = self._condition()
        async with cond:
            ticket = (priority, self.arrivals)
            self.arrivals += 1
            waiting = self.waiting.setdefault(pool, [])
            self.free.setdefault(pool, self.limit)
            heapq.heappush(waiting, ticket)
            await cond.wait_for(lambda: self.stopping or (self.free[pool] > 0 and waiting[0] == ticket))
            waiting.remove(ticket)
            heapq.heapify(waiting)
            if self.stopping or self.current.get(holder.split("#")[0], holder) != holder:
                cond.notify_all()  # stopping, or the caller's process was replaced: no slot for it
                return False
            self._account()
            self.free[pool] -= 1
            self.held[pool, holder] = self.held.get((pool, holder), 0) + 1
            cond.notify_all()
            return True

    async def release(self, holder: str, pool: str = "") -> None:
        cond = self._condition()
        async with cond:
            if self.held.get((pool, holder), 0) > 0:
                self._account()
                self.held[pool, holder] -= 1
                self.free[pool] += 1
            cond.notify_all()

    async def joined(self, name: str, incarnation: str) -> None:
        """A worker (re)started: slots held by its earlier incarnations are free again."""
        cond = self._condition()
        async with cond:
            self.current[name] = incarnation
            for pool, holder in [(p, h) for p, h in self.held if h.split("#")[0] == name and h != incarnation]:
                self._account()
                self.free[pool] += self.held.pop((pool, holder))
            cond.notify_all()

    async def stop(self) -> None:
        """The run stops: every waiting and later acquire answers False."""
        cond = self._condition()
        async with cond:
            self.stopping = True
            cond.notify_all()

    def ping(self) -> bool:
        """The driver's watch asks: a coordinator that answers is alive (see :mod:`lits.runs.ray.watch`)."""
        return True

    def started(self, idx: int) -> None:
        self.starts[idx] = self.starts.get(idx, 0) + 1

    def start_counts(self) -> dict[int, int]:
        return dict(self.starts)

    def busy_area(self) -> float:
        self._account()
        return self.area

    def cache_get(self, key: str) -> object:
        return self.cache.get(key) if self.cache is not None else None

    def cache_put(self, key: str, value: object) -> None:
        if self.cache is not None:
            self.cache.put(key, value)

    def cache_put_many(self, entries: list[tuple[str, object]]) -> None:
        for key, value in entries:
            self.cache_put(key, value)

    def cache_dump(self) -> list[tuple[str, object]]:
        """Every entry (to seed a worker's own cache: the per-worker variant the benchmark measures)."""
        if self.cache is None:
            return []
        self.cache.commit()  # the answers still pending too
        with self.cache._lock:
            rows = self.cache._conn.execute("SELECT key, value FROM responses").fetchall()
        return [(key, json.loads(value)) for key, value in rows]

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


class SharedLimiter:
    """A model's limiter in a worker: the slots are the coordinator's, shared by every worker."""

    def __init__(self, coordinator: Any, holder: str, limit: int, pool: str = "") -> None:
        self.coordinator, self.holder, self._limit, self.pool = coordinator, holder, limit, pool

    @property
    def limit(self) -> int:
        return self._limit

    def __enter__(self) -> SharedLimiter:
        asked = time.perf_counter()
        if not ray.get(self.coordinator.acquire.remote(call_priority(), self.holder, self.pool)):
            raise CallsStopped("the run is stopping: no new model calls")
        note_wait(time.perf_counter() - asked)  # a cluster-wide slot: waiting, not model time
        return self

    def __exit__(self, *exc: object) -> None:
        self.coordinator.release.remote(self.holder, self.pool)

    def try_take(self) -> bool:
        """An idle slot at once (a hedged copy's): never here, where every slot is a round trip away."""
        return False

    def give_back(self) -> None:
        self.__exit__()

    def busy_area(self) -> float:
        return 0.0  # the coordinator integrates calls in flight for the whole cluster


class SharedCache:
    """The run's response cache, served by the coordinator from the driver's disk.

    Stores go in batches without waiting (the coordinator then answers fewer
    requests per call); a batch is sent when it is full and whenever an
    instance ends, so a dead worker loses at most one batch.  What this worker
    stored or fetched is kept here too, so asking again costs no round trip.
    """

    BATCH = 16

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator
        self.known: dict[str, object] = {}
        self.pending: list[tuple[str, object]] = []
        self.lock = threading.Lock()

    def get(self, key: str) -> object:
        with self.lock:
            if key in self.known:
                return self.known[key]
        value = ray.get(self.coordinator.cache_get.remote(key))
        if value is not None:
            with self.lock:
                self.known[key] = value
        return value

    def get_many(self, keys: Sequence[str]) -> list[object]:
        return [self.get(key) for key in keys]

    def put(self, key: str, value: object) -> None:
        with self.lock:
            self.known[key] = value
            self.pending.append((key, value))
            full = len(self.pending) >= self.BATCH
        if full:
            self.flush()

    def put_many(self, entries: Sequence[tuple[str, object]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def flush(self) -> None:
        with self.lock:
            batch, self.pending = self.pending, []
        if batch:
            self.coordinator.cache_put_many.remote(batch)

    def close(self) -> None:
        self.flush()
