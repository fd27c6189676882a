"""Every reply the server billed is in LiTS's cost figures: hedged copies that lost, replies that were retried.

The loopback server counts what it answered and the usage of every reply it sent (what a hosted API
bills); LiTS's totals must equal them.
"""

from __future__ import annotations

import re
import socket
import threading
from typing import Callable, Iterator

import httpx
import pytest

from lits.lm.http.hedging import HedgeBudget, _Watched, hedged_send
from lits.lm.http.patience import HEDGE_WARMUP
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.runtime.observability import InferenceLog, collecting
from lits.runs.results.evaluation import format_table
from lits.testing import ChaosProxy, FakeOpenAIServer

QuickModel = Callable[..., OpenAICompatibleModel]
PRICES = {"price_in": 3.0, "price_out": 15.0}


@pytest.fixture
def log() -> Iterator[InferenceLog]:
    with collecting(InferenceLog()) as collected:
        yield collected


def billed_cost(server: FakeOpenAIServer) -> float:
    return (
        server.billed_prompt_tokens * PRICES["price_in"] + server.billed_completion_tokens * PRICES["price_out"]
    ) / 1e6


def assert_totals_are_what_the_server_billed(
    log: InferenceLog, model: OpenAICompatibleModel, server: FakeOpenAIServer
) -> None:
    totals = log.summary()
    assert (totals["tokens_in"], totals["tokens_out"]) == (server.billed_prompt_tokens, server.billed_completion_tokens)
    assert totals["cost"] == pytest.approx(billed_cost(server), abs=1e-6)
    assert model.fault_stats()["server_requests"] == server.answered


def test_a_slow_reply_that_a_hedged_copy_beat_is_still_in_every_cost_figure(upstream, quick_model, log):
    model = quick_model(
        upstream.base_url, hedge_share=1.0, read_timeout=30.0, patience_floor=10.0, concurrency=2, **PRICES
    )
    for i in range(HEDGE_WARMUP + 4):
        model.complete(f"warm up {i}")
    upstream.hold_next()  # the next request is slow: its copy answers first and it is cut short
    assert model.complete("question 99").text == "reply to 99"
    upstream.release()
    assert upstream.wait_idle()  # the server answered the slow one too, and billed it
    assert model.fault_stats()["hedges_won"] >= 1
    assert_totals_are_what_the_server_billed(log, model, upstream)
    assert log.summary()["estimated_replies"] >= 1  # its usage was never seen: the copy's stands in


def test_a_rejected_reply_that_was_retried_is_in_every_cost_figure(upstream, quick_model, log):
    with ChaosProxy(upstream.base_url, {}) as chaos:
        model = quick_model(chaos.base_url, **PRICES)
        chaos.fail_next("empty_content")  # the server computed and billed it; the proxy blanked its text
        assert model.complete("question 1").text == "reply to 1"
    assert model.fault_stats()["retries"] == 1
    assert log.summary()["calls"] == 1 and log.summary()["unused_replies"] == 1
    assert_totals_are_what_the_server_billed(log, model, upstream)


class Recorder:
    """The :class:`lits.lm.http.hedging.Leftovers` of one call, as a test sees them."""

    def __init__(self) -> None:
        self.unused_replies: list[bytes] = []
        self.abandoned_copies = 0

    def unused(self, reply: httpx.Response) -> None:
        self.unused_replies.append(reply.content)

    def abandoned(self) -> None:
        self.abandoned_copies += 1


def one_call_budget() -> HedgeBudget:
    budget = HedgeBudget(1.0)
    budget.count_call()
    return budget


def test_a_copy_still_running_when_the_first_answered_is_cut_short_and_counted_as_abandoned():
    copy_on_its_socket = threading.Event()
    ours, theirs = socket.socketpair()
    first = httpx.Request("POST", "http://x/", content=b"{}")

    def send(request: httpx.Request) -> httpx.Response:
        if request is first:
            assert copy_on_its_socket.wait(5.0)
            return httpx.Response(200, content=b"first")
        request.extensions["lits_interrupt"].attach(ours)  # sent: the server works on it
        copy_on_its_socket.set()
        if not ours.recv(1):  # shut down once the first copy answered
            raise httpx.ReadError("cut short")
        return httpx.Response(200, content=b"copy")

    recorder = Recorder()
    response, _ = _Watched(send, first, lambda: 0.0, one_call_budget(), recorder).run()
    theirs.close()
    assert response.content == b"first"
    assert (recorder.unused_replies, recorder.abandoned_copies) == ([], 1)


def test_a_copy_that_cannot_be_cut_short_is_counted_as_abandoned_when_the_call_returns():
    copy_sent, copy_may_end = threading.Event(), threading.Event()
    first = httpx.Request("POST", "http://x/", content=b"{}")

    def send(request: httpx.Request) -> httpx.Response:
        if request is first:
            assert copy_sent.wait(5.0)
            return httpx.Response(200, content=b"first")
        copy_sent.set()
        copy_may_end.wait(5.0)
        return httpx.Response(200, content=b"copy")

    recorder = Recorder()
    response, _ = hedged_send(send, first, lambda: 0.0, one_call_budget(), leftovers=recorder)
    copy_may_end.set()
    assert response.content == b"first"
    assert (recorder.unused_replies, recorder.abandoned_copies) == ([], 1)


def test_the_summary_shows_the_server_requests_and_the_replies_no_call_used():
    summary = {
        "instances": 1,
        "solved": 1,
        "accuracy": 1.0,
        "mean_progress": 1.0,
        "optimal_plans": 1,
        "seconds_per_instance": 1.0,
        "inference": {
            "calls": 10,
            "cache_hits": 0,
            "tokens_in": 120,
            "tokens_out": 30,
            "seconds": 1.0,
            "cost": 0.5,
            "unused_replies": 2,
            "estimated_replies": 1,
        },
        "faults": {"retries": 1, "seconds_lost": 0.1, "failed_calls": 0, "server_requests": 12},
    }
    table = format_table(summary)  # type: ignore[arg-type]
    assert re.search(r"^server requests +12 for 10 calls$", table, re.M)
    assert "120 / 30 (with 2 replies the server billed and no call used, 1 of them estimated)" in table


def test_the_run_page_counts_an_unused_reply_in_tokens_and_cost_but_not_as_a_call():
    from lits.view.calls import totals

    calls = [
        {"kind": "generate", "tokens_in": 3, "tokens_out": 1, "seconds": 0.5, "cost": 0.2},
        {"kind": "unused", "tokens_in": 3, "tokens_out": 1, "seconds": 0.0, "cost": 0.2, "estimated": True},
    ]
    assert totals(calls) == {
        "calls": 1,
        "cache_hits": 0,
        "tokens_in": 6,
        "tokens_out": 2,
        "seconds": 0.5,
        "cost": 0.4,
        "requests": 1,
        "queued_seconds": 0.0,
    }  # the unused reply is no request
