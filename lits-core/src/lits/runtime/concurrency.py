"""Run independent work at the same time while code stays synchronous.

Plugin authors write plain methods; agents fan out sibling expansions, their
rewards and tree-parallel rollouts with :func:`parallel_map`.  The real bound
on in-flight model calls is each backend's :class:`lits.lm.base.CallLimiter`.

Fan-outs reuse long-lived worker threads (no pool per expansion) and the
caller runs its own tasks that no worker has picked up yet, so nested
fan-outs never deadlock.  When only one call can be in flight (``--concurrency
1``, see :func:`fan_out_width`) everything runs inline.

A logical clock counts *dependent rounds* of model calls: each paid call
ticks the clock of the task making it, and after a fan-out the parent's clock
is the latest of its children's.  ``rounds × latency`` is the critical-path
bound on wall time that benchmarks compare against.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_WIDTH: contextvars.ContextVar[int | None] = contextvars.ContextVar("lits_width", default=None)
_CLOCK: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("lits_rounds", default=None)
#: Upper bound on idle-or-busy worker threads; past it callers run their own tasks.
MAX_WORKERS = 256


@contextlib.contextmanager
def fan_out_width(width: int) -> Iterator[None]:
    """Within this block, fan-outs run inline when ``width`` is 1 (one call in flight at most)."""
    token = _WIDTH.set(max(1, width))
    try:
        yield
    finally:
        _WIDTH.reset(token)


def start_round_clock() -> list[int]:
    """Give the current task a fresh round counter (read it with ``cell[0]``)."""
    cell = [0]
    _CLOCK.set(cell)
    return cell


def rounds_so_far() -> int:
    """The dependent model calls the current task's chain has made (0 without a clock)."""
    cell = _CLOCK.get()
    return cell[0] if cell is not None else 0


def tick_round() -> None:
    """Count one dependent model call on the current task's clock."""
    cell = _CLOCK.get()
    if cell is not None:
        cell[0] += 1


class _Task:
    """One item of a fan-out; run exactly once, by a worker or by its caller."""

    __slots__ = ("fn", "context", "started", "done", "result", "error")

    def __init__(self, fn: Callable[[], Any], context: contextvars.Context) -> None:
        self.fn = fn
        self.context = context
        self.started = False
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def claim(self) -> bool:
        with _POOL.lock:
            if self.started:
                return False
            self.started = True
            return True

    def run(self) -> None:
        try:
            self.result = self.context.run(self.fn)
        except BaseException as exc:  # re-raised in the caller
            self.error = exc
        finally:
            self.done.set()


class _WorkerPool:
    """Daemon threads that live for the process and take tasks from one queue."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tasks: "queue.SimpleQueue[_Task]" = queue.SimpleQueue()
        self.threads = 0
        self.idle = 0

    def submit(self, tasks: list[_Task]) -> None:
        with self.lock:
            missing = min(len(tasks) - self.idle, MAX_WORKERS - self.threads)
            self.threads += max(0, missing)
        for task in tasks:
            self.tasks.put(task)
        for _ in range(max(0, missing)):
            threading.Thread(target=self._work, name="lits-worker", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self.lock:
                self.idle += 1
            task = self.tasks.get()
            with self.lock:
                self.idle -= 1
            if task.claim():
                task.run()


_POOL = _WorkerPool()


def parallel_map(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(x) for x in items]`` with the calls running concurrently.

    Results keep the input order; the first exception (in input order) is
    re-raised.  Each task runs in a copy of the caller's context, so call tags
    and the round clock follow the work.
    """
    items = list(items)
    width = _WIDTH.get()
    if len(items) <= 1 or width == 1:
        return [fn(x) for x in items]
    parent = _CLOCK.get()
    cells: list[list[int] | None] = [[parent[0]] if parent is not None else None for _ in items]

    def bind(i: int) -> Callable[[], R]:
        def call() -> R:
            cell = cells[i]
            if cell is not None:
                _CLOCK.set(cell)
            return fn(items[i])

        return call

    tasks = [_Task(bind(i), contextvars.copy_context()) for i in range(len(items))]
    _POOL.submit(tasks[1:])
    for task in tasks:  # the caller works too: no thread waits on a task nobody runs
        if task.claim():
            task.run()
    for task in tasks:
        task.done.wait()
    if parent is not None:
        parent[0] = max([parent[0], *(c[0] for c in cells if c is not None)])
    for task in tasks:
        if task.error is not None:
            raise task.error
    return [task.result for task in tasks]
