"""The transport stack's layers each work alone, over any httpx transport (here :class:`httpx.MockTransport`)."""

from __future__ import annotations

import threading

import httpx

from lits.lm.http.hedging import HedgeBudget, HedgedTransport
from lits.lm.http.patience import HEDGE_WARMUP, Patience
from lits.lm.http.retry import FaultStats, RetryPolicy, RetryTransport
from lits.lm.http.stack import server_transport

#: The kind of request ``client.post("/")`` makes (path, size of work).
KIND = ("/", 1)


def learned(reply_time: float) -> Patience:
    """Patience that has seen enough replies of :data:`KIND` taking ``reply_time`` s."""
    patience = Patience(floor=1.0, factor=4.0)
    for _ in range(HEDGE_WARMUP):
        patience.observe(KIND, reply_time)
    return patience


def test_the_hedging_layer_alone_answers_a_hung_request_with_its_copy():
    released = threading.Event()
    first = httpx.Request("POST", "http://model.test/", content=b"{}")

    def server(request: httpx.Request) -> httpx.Response:
        if request is first:
            released.wait(5.0)  # hung until the test has its answer
            return httpx.Response(200, content=b"first")
        return httpx.Response(200, content=b"copy")

    budget = HedgeBudget(1.0)
    hedging = HedgedTransport(httpx.MockTransport(server), budget, learned(0.01))
    response = hedging.handle_request(first)
    released.set()
    assert response.content == b"copy"
    assert budget.snapshot() == {"hedged_calls": 1, "hedges_won": 1}
    assert response.extensions["lits_took"] >= 0.0  # the winning copy's time, for a layer above to learn


def test_a_call_retried_over_the_hedging_layer_counts_once_toward_the_hedge_share():
    statuses = [500, 503, 200]
    budget = HedgeBudget(0.0)
    hedging = HedgedTransport(
        httpx.MockTransport(lambda request: httpx.Response(statuses.pop(0), json={})), budget, Patience(1.0, 4.0)
    )
    retry = RetryTransport(hedging, policy=RetryPolicy(base_wait=0.0), sleep=lambda seconds: None)
    with httpx.Client(transport=retry, base_url="http://model.test") as client:
        assert client.post("/").status_code == 200
    assert retry.stats.snapshot()["retries"] == 2
    assert budget.calls == 1


def test_the_retry_layer_learns_reply_times_from_the_copy_a_layer_below_reports():
    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={}, extensions={"lits_took": 0.25})

    retry = RetryTransport(httpx.MockTransport(server), policy=RetryPolicy(), sleep=lambda seconds: None)
    with httpx.Client(transport=retry, base_url="http://model.test") as client:
        for _ in range(HEDGE_WARMUP):
            client.post("/")
    assert retry.patience.reply_time(KIND) == 0.25


def test_a_hedge_share_of_zero_leaves_the_stack_without_copies_and_retries_still_on():
    stack = server_transport(
        RetryPolicy(hedge_share=0.0),
        FaultStats(),
        concurrency=4,
        check=lambda request, response: None,
        gate=lambda: None,
    )
    try:
        assert not stack.hedges.enabled
        assert stack.retry.inner is stack.hedging and stack.patience is stack.hedging.patience
    finally:
        stack.close()
