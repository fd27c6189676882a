"""The call limiter: a bound on calls in flight that serves the oldest instance first."""

from __future__ import annotations

import threading
import time

from lits.lm.limits import CallLimiter
from lits.observability import call_context


def _queue_behind_a_held_slot(limiter: CallLimiter, instances: list) -> list:
    served: list = []
    threads = []
    with limiter:  # hold the only slot while the others queue up
        for instance in instances:
            def wait(tag=instance) -> None:
                with call_context(**({"instance": tag} if tag is not None else {})):
                    with limiter:
                        served.append(tag)
            thread = threading.Thread(target=wait)
            thread.start()
            threads.append(thread)
            time.sleep(0.05)  # arrival order is the list order
    for thread in threads:
        thread.join(5)
    return served


def test_queued_calls_are_served_oldest_instance_first():
    assert _queue_behind_a_held_slot(CallLimiter(1), [5, 2, 9, 2]) == [2, 2, 5, 9]


def test_calls_outside_any_instance_wait_behind_instances_in_arrival_order():
    assert _queue_behind_a_held_slot(CallLimiter(1), [None, 3, None]) == [3, None, None]


def test_no_more_calls_than_the_limit_are_in_flight():
    limiter, lock = CallLimiter(3), threading.Lock()
    state = {"now": 0, "peak": 0}

    def call() -> None:
        with limiter:
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            time.sleep(0.01)
            with lock:
                state["now"] -= 1

    threads = [threading.Thread(target=call) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert state["peak"] == 3


def test_busy_area_measures_calls_in_flight_over_time():
    limiter = CallLimiter(2)

    def call() -> None:
        with limiter:
            time.sleep(0.2)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert 0.35 < limiter.busy_area() < 0.6
