"""How long a retry waits: a few of the server's recent replies, doubling while the faults go on; a
``Retry-After`` is never waited past, a backoff never starts above ``base_wait`` (the waits are recorded by
a fake sleep, not timed)."""

from __future__ import annotations

import httpx
import pytest

from lits.lm.http.patience import HEDGE_WARMUP
from lits.lm.http.retry import RetryPolicy, RetryTransport

#: The kind of request ``client.post("/")`` makes (path, size of work), as the patience learns it.
KIND = ("/", 1)


class Server:
    """Replies from a script of statuses (429s carry ``Retry-After``); then 200s."""

    def __init__(self, statuses: list[int], retry_after: str = "1") -> None:
        self.statuses, self.retry_after = statuses, retry_after

    def __call__(self, request: httpx.Request) -> httpx.Response:
        status = self.statuses.pop(0) if self.statuses else 200
        headers = {"Retry-After": self.retry_after} if status == 429 else {}
        return httpx.Response(status, headers=headers, json={})


@pytest.fixture
def slept() -> list[float]:
    return []


def transport(server: Server, slept: list[float], *, reply_time: float | None) -> RetryTransport:
    """A retry transport whose waits go to ``slept``, having seen replies that took ``reply_time`` s."""
    made = RetryTransport(
        httpx.MockTransport(server), policy=RetryPolicy(base_wait=0.1, hedge_share=0.0), sleep=slept.append
    )
    if reply_time is not None:
        for _ in range(HEDGE_WARMUP):
            made.patience.observe(KIND, reply_time)
    return made


def post(made: RetryTransport) -> int:
    with httpx.Client(transport=made, base_url="http://model.test") as client:
        return client.post("/").status_code


def test_a_rare_429_from_a_fast_server_waits_a_few_replies_not_its_whole_retry_after(slept):
    made = transport(Server([429], retry_after="5"), slept, reply_time=0.01)
    assert post(made) == 200
    assert slept == [0.04]  # 4 x its 10 ms replies


def test_a_slow_server_gets_a_few_of_its_replies_before_the_retry(slept):
    made = transport(Server([429], retry_after="5"), slept, reply_time=0.5)
    assert post(made) == 200
    assert slept == [2.0]  # 4 x its 0.5 s replies


def test_a_server_that_keeps_throttling_a_call_is_backed_off_exponentially_up_to_its_retry_after(slept):
    made = transport(Server([429] * 6, retry_after="1"), slept, reply_time=0.01)
    assert post(made) == 200
    assert slept == [0.04, 0.08, 0.16, 0.32, 0.64, 1.0]


def test_before_any_reply_time_is_known_the_retry_after_is_waited_in_full(slept):
    made = transport(Server([429], retry_after="5"), slept, reply_time=None)
    assert post(made) == 200
    assert slept == [5.0]


def test_a_retry_after_shorter_than_the_allowance_is_what_is_waited(slept):
    made = transport(Server([429], retry_after="0.3"), slept, reply_time=0.5)
    assert post(made) == 200
    assert slept == [0.3]


@pytest.fixture
def longest_jitter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Full jitter draws its longest wait, so a backoff's bound is what is recorded."""
    import random

    monkeypatch.setattr(random, "uniform", lambda low, high: high)


def test_a_fault_at_a_fast_server_is_retried_after_a_few_of_its_replies_not_the_first_backoff(slept, longest_jitter):
    made = transport(Server([500, 500, 500]), slept, reply_time=0.001)
    assert post(made) == 200
    assert slept == [0.004, 0.008, 0.016]


def test_a_fault_at_a_slow_server_is_retried_after_at_most_the_first_backoff(slept, longest_jitter):
    made = transport(Server([500, 500]), slept, reply_time=2.0)
    assert post(made) == 200
    assert slept == [0.1, 0.2]
