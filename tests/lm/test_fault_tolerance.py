"""A misbehaving model server costs retries and seconds, never a completion."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

import httpx
import pytest

from lits.lm.base import ModelError
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.lm.http.retry import RetryPolicy, RetryTransport
from lits.testing import FAULT_KINDS, ChaosProxy, FakeOpenAIServer, evenly

PROMPTS = [f"question number {i}" for i in range(12)]
QuickModel = Callable[..., OpenAICompatibleModel]


@pytest.fixture
def fault_free(upstream: FakeOpenAIServer, quick_model: QuickModel) -> dict[str, list[str]]:
    """What each API answers to PROMPTS with no proxy in between."""
    return {
        api: [quick_model(upstream.base_url, api=api).complete(p).text for p in PROMPTS]
        for api in ("chat", "completion")
    }


@pytest.fixture
def chaos(upstream: FakeOpenAIServer, request: pytest.FixtureRequest) -> Iterator[ChaosProxy]:
    """A chaos proxy in front of ``upstream``; the test parametrizes its rates (``indirect``)."""
    with ChaosProxy(upstream.base_url, request.param, seed=7, retry_after="0", hang_seconds=3.0) as proxy:
        yield proxy


@pytest.mark.parametrize("api", ["chat", "completion"])
@pytest.mark.parametrize("chaos", [{kind: 0.4} for kind in FAULT_KINDS], indirect=True, ids=list(FAULT_KINDS))
def test_each_fault_kind_alone_loses_no_completion(chaos, api, quick_model, fault_free):
    # Only a hang needs a short read timeout; elsewhere a slow reply on a loaded machine must not time out.
    model = quick_model(chaos.base_url, api=api, read_timeout=0.4 if "hang" in chaos.rates else 30.0)
    assert [model.complete(p).text for p in PROMPTS] == fault_free[api]
    injected = sum(chaos.faults.values())
    assert injected > 0
    # Every request beyond one per prompt was a counted retry, and every fault cost one.
    assert model.fault_stats()["retries"] == chaos.requests - len(PROMPTS) >= injected


@pytest.mark.parametrize("chaos", [evenly(FAULT_KINDS, 0.5)], indirect=True, ids=["every-kind-at-50%"])
def test_a_mix_of_every_fault_kind_under_concurrency_loses_no_completion(chaos, quick_model, fault_free):
    model = quick_model(chaos.base_url, concurrency=4)
    with ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(lambda p: model.complete(p).text, PROMPTS))
    assert texts == fault_free["chat"]
    assert len(chaos.faults) >= 5  # most kinds really occurred


@pytest.mark.parametrize("chaos", [{"hang": 0.5}], indirect=True, ids=["hang"])
def test_fault_stats_count_the_seconds_a_hang_cost(chaos, quick_model):
    model = quick_model(chaos.base_url, read_timeout=0.3)
    for p in PROMPTS:
        model.complete(p)
    stats = model.fault_stats()
    assert stats["retries"] == chaos.faults["hang"] > 0
    assert chaos.faults["hang"] * 0.3 <= stats["seconds_lost"] < chaos.faults["hang"] * 0.3 + 2
    assert stats["failed_calls"] == 0


@pytest.mark.parametrize("chaos", [{}], indirect=True, ids=["scripted"])
def test_after_warm_up_a_hang_costs_a_few_normal_replies_not_the_read_timeout(chaos, quick_model):
    model = quick_model(chaos.base_url, read_timeout=5.0, patience_floor=0.3)
    for p in PROMPTS[:8]:
        model.complete(p)
    chaos.fail_next("hang")
    assert model.complete("question 99").text == "reply to 99"
    stats = model.fault_stats()
    assert stats["retries"] == 1
    assert stats["seconds_lost"] < 5.0  # the learned patience cut the hang, not the 5 s read timeout


@pytest.mark.parametrize("chaos", [{}], indirect=True, ids=["scripted"])
def test_a_hang_that_repeats_costs_doubling_patience_not_the_full_read_timeout_each_time(chaos, quick_model):
    model = quick_model(chaos.base_url, read_timeout=5.0, patience_floor=0.3)
    for p in PROMPTS[:8]:
        model.complete(p)
    chaos.fail_next("hang", times=3)
    assert model.complete("question 99").text == "reply to 99"
    stats = model.fault_stats()
    assert stats["retries"] == 3
    assert stats["seconds_lost"] < 5.0  # 0.3 + 0.6 + 1.2 s, where each retry used to wait the full 5 s


def test_a_reply_slower_than_the_learned_read_timeout_still_arrives(upstream, quick_model):
    model = quick_model(upstream.base_url, read_timeout=5.0, patience_floor=0.3)
    for p in PROMPTS[:8]:
        model.complete(p)
    upstream.latency = 0.8  # slower than anything seen so far, but within the read timeout
    assert model.complete("question 99").text == "reply to 99"
    assert model.fault_stats()["retries"] == 2  # attempts given 0.3 s, then 0.6 s, then 1.2 s: it arrives


def test_a_request_for_far_more_tokens_does_not_inherit_the_patience_of_short_ones(upstream, quick_model):
    model = quick_model(upstream.base_url, read_timeout=5.0, patience_floor=0.3)
    for p in PROMPTS[:8]:
        model.complete(p, max_tokens=8)
    upstream.latency = 0.8  # a long answer takes longer than any short one did
    assert model.complete("question 99", max_tokens=512).text == "reply to 99"
    assert model.fault_stats()["retries"] == 0


def test_an_empty_reply_that_finished_is_an_answer_not_a_fault(quick_model):
    with FakeOpenAIServer(responder=lambda prompt, body: "\nmore") as srv:
        assert quick_model(srv.base_url).complete("x", stop=["\n"]).text == ""
        assert len(srv.requests) == 1


def test_a_fault_free_run_reports_no_fault_cost(upstream, quick_model):
    model = quick_model(upstream.base_url)
    model.complete("x")
    assert model.fault_stats() == {
        "retries": 0,
        "seconds_lost": 0.0,
        "failed_calls": 0,
        "server_requests": 1,
        "queued_calls": 0,
        "queued_seconds": 0.0,
        "hedged_calls": 0,
        "hedges_won": 0,
    }


@pytest.mark.parametrize("chaos", [{"hang": 1.0}], indirect=True, ids=["always-hang"])
def test_a_server_that_always_hangs_fails_within_the_call_budget(chaos, quick_model):
    # No wall-clock bound here (a loaded machine missed "< 3 s"): the message says the budget ended the call.
    model = quick_model(chaos.base_url, read_timeout=0.3, call_budget=1.5)
    with pytest.raises(ModelError, match=r"did not answer in time \(\d+ attempts? within a 1.5s budget") as info:
        model.complete("x")
    assert "\n" not in str(info.value)
    assert model.fault_stats()["failed_calls"] == 1


def test_a_server_that_answered_503_before_the_budget_ran_out_is_said_to_have_answered_503(quick_model):
    # 453 attempts each answered 503 inside a 0.5 s budget; the last one, given what was left, timed out and
    # the error said the server "did not answer in time".
    hanging = threading.Event()
    with FakeOpenAIServer(responder=lambda prompt, body: "late" if hanging.wait() else "") as srv:
        srv.fail_next(503, times=3)
        model = quick_model(srv.base_url, read_timeout=0.3, call_budget=2.0)
        try:
            with pytest.raises(ModelError) as info:
                model.complete("x")
        finally:
            hanging.set()
    message = str(info.value)
    assert "answered 503" in message and "did not answer in time" not in message
    assert "\n" not in message


def record_waits(model: OpenAICompatibleModel) -> list[float]:
    """The waits between a call's attempts, in order (each still slept, so budgets run as they would)."""
    waits: list[float] = []
    sleep = model._transport.retry.sleep

    def recorded(seconds: float) -> None:
        waits.append(seconds)
        sleep(seconds)

    model._transport.retry.sleep = recorded
    return waits


def test_an_all_401_server_fails_at_once_in_one_line(upstream, quick_model):
    upstream.fail_next(401, times=100)
    model = quick_model(upstream.base_url, retry_base_wait=0.5)
    waits = record_waits(model)
    with pytest.raises(ModelError) as info:
        model.complete("x")
    assert waits == []  # no backoff before giving up
    assert str(info.value) == f"model server {upstream.base_url} answered 401: injected failure 401"
    assert len(upstream.requests) == 1


def test_an_all_500_server_fails_within_the_call_budget_in_one_line(upstream):
    upstream.fail_next(500, times=10_000)
    model = OpenAICompatibleModel("fake", upstream.base_url, call_budget=2.0)  # default backoff
    waits = record_waits(model)
    with pytest.raises(ModelError, match=r"answered 500 after \d+ attempts: injected failure 500") as info:
        model.complete("x")
    assert waits and sum(waits) <= 2.0  # every wait fitted in the call budget
    assert "\n" not in str(info.value) and len(upstream.requests) > 1


def test_a_429_waits_as_long_as_retry_after_says(upstream, quick_model):
    upstream.fail_next(429, retry_after="1")
    model = quick_model(upstream.base_url)
    waits = record_waits(model)
    assert model.complete("question 1").text == "reply to 1"
    assert waits == [1.0]


def test_a_refused_connection_before_any_answer_fails_within_the_connect_budget(quick_model):
    model = quick_model("http://127.0.0.1:9/v1", connect_budget=0.5)
    waits = record_waits(model)
    with pytest.raises(ModelError, match="cannot reach model server .*: connection refused"):
        model.complete("x")
    assert waits and sum(waits) <= 0.5  # retried, and every wait fitted in the connect budget


# -- the transport on its own (httpx.MockTransport) ------------------------------


def _client(handler: Callable[[httpx.Request], httpx.Response], **policy: Any) -> tuple[httpx.Client, RetryTransport]:
    transport = RetryTransport(
        httpx.MockTransport(handler), policy=RetryPolicy(base_wait=0.01, max_wait=0.02, **policy)
    )
    return httpx.Client(transport=transport, base_url="http://model.test"), transport


def test_a_refused_connection_after_the_server_answered_is_a_restart_and_is_retried():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if 2 <= len(calls) <= 4:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"ok": True})

    client, transport = _client(handler, connect_budget=0.0)
    assert client.get("/").status_code == 200  # the server answered once
    assert client.get("/").status_code == 200  # then restarted: 3 refusals, retried anyway
    assert transport.stats.snapshot()["retries"] == 3


def test_a_context_too_long_error_is_not_retried_even_as_a_500():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(500, json={"error": {"message": "This model's maximum context length is 2048"}})

    client, _ = _client(handler)
    assert client.get("/").status_code == 500
    assert len(calls) == 1


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retried(status):
    statuses = [status, 200]

    client, transport = _client(lambda request: httpx.Response(statuses.pop(0), json={}))
    assert client.get("/").status_code == 200
    assert transport.stats.snapshot()["retries"] == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_permanent_statuses_are_returned_at_once(status):
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(status, json={})

    client, transport = _client(handler)
    assert client.get("/").status_code == status
    assert len(calls) == 1 and transport.stats.snapshot()["retries"] == 0
