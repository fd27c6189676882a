"""Run independent work at the same time while code stays synchronous.

Plugin authors write plain methods; agents fan out sibling expansions, their
rewards and dataset instances with :func:`parallel_map`.  The real bound on
in-flight model calls is each backend's :class:`lits.lm.base.CallLimiter`, so
fan-outs can nest without deadlock (every fan-out gets its own threads).

A logical clock counts *dependent rounds* of model calls: each paid call
ticks the clock of the task making it, and after a fan-out the parent's clock
is the latest of its children's.  ``rounds × latency`` is the critical-path
bound on wall time that benchmarks compare against.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Optional, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("lits_parallel", default=True)
_CLOCK: contextvars.ContextVar[Optional[list[int]]] = contextvars.ContextVar("lits_rounds", default=None)


def set_parallel(enabled: bool) -> None:
    """Switch fan-out on or off (off runs everything in order, for debugging)."""
    _ENABLED.set(enabled)


def start_round_clock() -> list[int]:
    """Give the current task a fresh round counter (read it with ``cell[0]``)."""
    cell = [0]
    _CLOCK.set(cell)
    return cell


def tick_round() -> None:
    """Count one dependent model call on the current task's clock."""
    cell = _CLOCK.get()
    if cell is not None:
        cell[0] += 1


def parallel_map(fn: Callable[[T], R], items: Iterable[T], *, max_workers: int | None = None) -> list[R]:
    """``[fn(x) for x in items]`` with the calls running concurrently.

    Results keep the input order; the first exception is re-raised.  Each task
    runs in a copy of the caller's context, so call tags follow the work.
    """
    items = list(items)
    if len(items) <= 1 or not _ENABLED.get():
        return [fn(x) for x in items]
    parent = _CLOCK.get()
    cells = [[parent[0]] if parent is not None else None for _ in items]

    def run(i: int) -> R:
        if cells[i] is not None:
            _CLOCK.set(cells[i])
        return fn(items[i])

    workers = min(len(items), max_workers or len(items))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lits") as pool:
        futures = [pool.submit(contextvars.copy_context().run, run, i) for i in range(len(items))]
        results = [f.result() for f in futures]
    if parent is not None:
        parent[0] = max([parent[0], *(c[0] for c in cells if c is not None)])
    return results
