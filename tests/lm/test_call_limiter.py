"""The call limiter: a bound on calls in flight that serves the chain furthest behind first, then the oldest
instance."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from lits.runtime.concurrency import start_round_clock
from lits.lm import limits
from lits.lm.limits import CallLimiter
from lits.runtime.observability import call_context


def _until_queued(limiter: CallLimiter, count: int, within: float = 60.0) -> None:
    """Wait until ``count`` calls queue for a slot (an observation, not a guess at thread start-up time)."""
    deadline = time.monotonic() + within
    while len(limiter._waiting) < count:
        assert time.monotonic() < deadline, f"fewer than {count} calls queued"
        time.sleep(0.001)


def _queue_behind_a_held_slot(limiter: CallLimiter, instances: list, rounds: tuple = ()) -> list:
    """The order in which calls from ``instances`` (arriving in list order, their chains having made
    ``rounds`` dependent calls each, 0 by default) get the slot once it is free."""
    served: list = []
    threads = []
    with limiter:  # hold the only slot while the others queue up
        for k, instance in enumerate(instances):

            def wait(tag=instance, made=rounds[k] if rounds else 0) -> None:
                start_round_clock()[0] = made
                with call_context(**({"instance": tag} if tag is not None else {})):
                    with limiter:
                        served.append(tag)

            thread = threading.Thread(target=wait)
            thread.start()
            threads.append(thread)
            _until_queued(limiter, k + 1)  # arrival order is the list order
    for thread in threads:
        thread.join(5)
    return served


def test_queued_calls_of_chains_equally_far_along_are_served_oldest_instance_first():
    assert _queue_behind_a_held_slot(CallLimiter(1), [5, 2, 9, 2]) == [2, 2, 5, 9]


def test_queued_calls_are_served_the_chain_with_fewest_calls_made_first():
    assert _queue_behind_a_held_slot(CallLimiter(1), [1, 7, 3, 4], rounds=(5, 0, 2, 2)) == [7, 3, 4, 1]


def test_a_slot_freed_while_calls_wait_goes_to_them_not_to_a_newcomer():
    limiter = CallLimiter(1)
    handed = threading.Event()

    def wait() -> None:
        with limiter:
            handed.wait(5)

    with limiter:
        waiter = threading.Thread(target=wait)
        waiter.start()
        _until_queued(limiter, 1)
    assert not limiter.try_take()  # a hedged copy finds no idle slot: the waiter holds it
    handed.set()
    waiter.join(5)
    assert limiter.try_take()


def test_calls_outside_any_instance_wait_behind_instances_in_arrival_order():
    assert _queue_behind_a_held_slot(CallLimiter(1), [None, 3, None]) == [3, None, None]


def test_no_more_calls_than_the_limit_are_in_flight():
    limiter, lock = CallLimiter(3), threading.Lock()
    state = {"now": 0, "peak": 0}

    together = threading.Barrier(3, timeout=30)  # three calls are in flight at once, whatever the machine

    def call() -> None:
        with limiter:
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            together.wait()
            with lock:
                state["now"] -= 1

    threads = [threading.Thread(target=call) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert state["peak"] == 3


def test_busy_area_measures_calls_in_flight_over_time(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(limits, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    limiter = CallLimiter(2)
    limiter.__enter__()
    limiter.__enter__()
    clock[0] += 0.2  # two calls in flight for 0.2 s
    limiter.__exit__()
    clock[0] += 0.1  # then one for 0.1 s
    limiter.__exit__()
    clock[0] += 5.0  # then none
    assert limiter.busy_area() == pytest.approx(0.5)
