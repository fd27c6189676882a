"""Run independent work at the same time while code stays synchronous.

Plugin authors write plain methods; agents fan out sibling expansions, their
rewards and dataset instances with :func:`parallel_map`.  The real bound on
in-flight model calls is each backend's :class:`lits.lm.base.CallLimiter`, so
fan-outs can nest without deadlock (every fan-out gets its own threads).
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("lits_parallel", default=True)


def set_parallel(enabled: bool) -> None:
    """Switch fan-out on or off (off runs everything in order, for debugging)."""
    _ENABLED.set(enabled)


def parallel_map(fn: Callable[[T], R], items: Iterable[T], *, max_workers: int | None = None) -> list[R]:
    """``[fn(x) for x in items]`` with the calls running concurrently.

    Results keep the input order; the first exception is re-raised.  Each task
    runs in a copy of the caller's context, so call tags follow the work.
    """
    items = list(items)
    if len(items) <= 1 or not _ENABLED.get():
        return [fn(x) for x in items]
    workers = min(len(items), max_workers or len(items))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lits") as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, x) for x in items]
        return [f.result() for f in futures]
