"""Hedged requests: a second copy of a call slower than the 95th percentile of recent ones."""

from __future__ import annotations

import re
import threading
import time
from typing import Callable, Iterator

import pytest

from lits.lm.http.hedging import HedgeBudget, hedge_share_from_env
from lits.lm.http.patience import HEDGE_WARMUP, percentile
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing import ChaosProxy, FakeOpenAIServer

QuickModel = Callable[..., OpenAICompatibleModel]
#: Patience far above a loopback reply, so only a hedged copy can answer a hang quickly.
SLOW_PATIENCE = {"read_timeout": 5.0, "patience_floor": 3.0, "hedge_share": 0.1, "concurrency": 2}


@pytest.fixture
def chaos(upstream: FakeOpenAIServer) -> Iterator[ChaosProxy]:
    """A proxy that passes everything through until a test asks it to hang requests."""
    with ChaosProxy(upstream.base_url, {}, seed=7, hang_seconds=4.0) as proxy:
        yield proxy


def warm_up(model: OpenAICompatibleModel) -> None:
    for i in range(HEDGE_WARMUP + 4):
        model.complete(f"warm up {i}")


def test_after_warm_up_a_hung_call_is_answered_by_a_second_copy_long_before_the_read_timeout(chaos, quick_model):
    model = quick_model(chaos.base_url, **SLOW_PATIENCE)
    warm_up(model)
    chaos.fail_next("hang")
    assert model.complete("question 99").text == "reply to 99"
    stats = model.fault_stats()
    # the copy answered (no retry: neither the 3 s learned patience nor the 5 s read timeout ran out)
    assert (stats["hedged_calls"], stats["hedges_won"], stats["retries"]) == (1, 1, 0)


def test_hedged_copies_stay_within_their_share_of_calls(chaos, quick_model):
    model = quick_model(chaos.base_url, hedge_share=0.1, read_timeout=5.0, patience_floor=0.3, concurrency=2)
    warm_up(model)
    chaos.fail_next("hang", times=6)  # copies hang too: a call's attempts and copies take 6 hangs
    answers = [model.complete(f"question {i}").text for i in range(12)]
    assert answers == [f"reply to {i}" for i in range(12)]
    calls = HEDGE_WARMUP + 4 + 12
    assert 0 < model.fault_stats()["hedged_calls"] <= 0.1 * calls + 2


def test_a_hedge_share_of_zero_never_sends_a_copy(chaos, quick_model):
    model = quick_model(chaos.base_url, hedge_share=0.0, read_timeout=5.0, patience_floor=0.3)
    warm_up(model)
    chaos.fail_next("hang")
    assert model.complete("question 99").text == "reply to 99"
    stats = model.fault_stats()
    assert (stats["hedged_calls"], stats["retries"]) == (0, 1)  # the hang cost the patience and a retry
    assert stats["seconds_lost"] >= 0.3


def test_a_copy_takes_only_an_idle_slot_of_the_concurrency_bound(chaos, quick_model):
    model = quick_model(chaos.base_url, **{**SLOW_PATIENCE, "concurrency": 1, "patience_floor": 0.3})
    warm_up(model)
    chaos.fail_next("hang")
    assert model.complete("question 99").text == "reply to 99"
    stats = model.fault_stats()
    assert (stats["hedged_calls"], stats["retries"]) == (0, 1)  # the call's own slot is the only one


def test_a_server_with_fixed_slots_gets_no_copies(one_slot_server, quick_model):
    model = quick_model(one_slot_server.base_url)
    assert model.server_slots() == 1
    assert model._transport.hedges.take() is None  # a copy would compete for the compute it hedges


def test_the_share_counts_calls_so_far_plus_a_small_burst():
    budget = HedgeBudget(0.1, burst=2)
    for _ in range(10):
        budget.count_call()
    granted = [budget.take() is not None for _ in range(5)]
    assert granted == [True, True, True, False, False]  # 0.1 x 10 calls + 2


def test_a_copy_that_loses_is_closed_and_the_winner_is_the_first_to_answer():
    from lits.lm.http.hedging import hedged_send
    import httpx

    closed, answered = threading.Event(), threading.Event()

    class Stream(httpx.SyncByteStream):
        def __init__(self, body: bytes) -> None:
            self.body = body

        def __iter__(self) -> Iterator[bytes]:
            yield self.body

        def close(self) -> None:
            closed.set()

    def send(request: httpx.Request) -> httpx.Response:
        first = request.extensions.get("copy") is None
        request.extensions["copy"] = True
        if first:
            answered.wait(60)  # the first copy hangs until the call has its answer
        response = httpx.Response(200, stream=Stream(b"slow" if first else b"fast"))
        response.read()
        return response

    budget = HedgeBudget(1.0)
    budget.count_call()
    started = time.monotonic()
    response, took = hedged_send(send, httpx.Request("POST", "http://x/", content=b"{}"), lambda: 0.05, budget)
    whole = time.monotonic() - started
    answered.set()
    assert response.content == b"fast" and took < whole  # the winner's own time, not the call's
    assert closed.wait(60)  # the slow copy, when it ended, was closed
    assert budget.snapshot() == {"hedged_calls": 1, "hedges_won": 1}


def test_the_95th_percentile_is_taken_by_nearest_rank():
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0
    assert percentile([2.0], 0.95) == 2.0


@pytest.mark.parametrize("value", ["lots", "1.5", "-0.1"])
def test_a_bad_hedge_share_in_the_environment_is_a_one_line_error(monkeypatch, value):
    monkeypatch.setenv("LITS_HEDGE_SHARE", value)
    with pytest.raises(ValueError, match=r"^\$LITS_HEDGE_SHARE must be a number from 0 to 1") as info:
        hedge_share_from_env()
    assert "\n" not in str(info.value)


def test_the_environment_sets_the_share_of_hedged_calls(monkeypatch, upstream):
    monkeypatch.setenv("LITS_HEDGE_SHARE", "0")
    model = OpenAICompatibleModel("fake", upstream.base_url, api_key="k")
    try:
        assert model.policy.hedge_share == 0.0
    finally:
        model.close()


def test_a_size_of_work_not_yet_seen_borrows_the_delay_of_a_smaller_one_scaled_up():
    from lits.lm.http.patience import Patience

    patience = Patience(floor=1.0, factor=4.0)
    for _ in range(HEDGE_WARMUP):
        patience.observe(("/chat/completions", 16), 0.2)
    assert patience.hedge_delay(("/chat/completions", 16)) == pytest.approx(0.2)
    assert patience.hedge_delay(("/chat/completions", 64)) == pytest.approx(0.8)  # four times the work
    assert patience.hedge_delay(("/chat/completions", 8)) == pytest.approx(0.2)  # never scaled down
    assert patience.hedge_delay(("/completions", 16)) is None  # another endpoint: nothing known


def test_a_call_sent_before_anything_was_learned_is_hedged_once_replies_come_back():
    from lits.lm.http.hedging import hedged_send
    import httpx

    learned: list[float] = []
    first, answered = threading.Event(), threading.Event()

    def send(request: httpx.Request) -> httpx.Response:
        if not first.is_set():
            first.set()
            answered.wait(60)  # the first copy hangs until the call has its answer
        return httpx.Response(200, content=b"ok")

    def later() -> None:
        first.wait(60)  # the call went out with nothing learned
        learned.append(0.05)  # other calls' replies came back meanwhile

    threading.Thread(target=later, daemon=True).start()
    budget = HedgeBudget(1.0)
    budget.count_call()
    response, _ = hedged_send(
        send, httpx.Request("POST", "http://x/", content=b"{}"), lambda: learned[0] if learned else None, budget
    )
    answered.set()
    assert response.content == b"ok"
    assert budget.snapshot() == {"hedged_calls": 1, "hedges_won": 1}


def test_a_copy_that_starts_after_the_first_copy_ended_still_settles_and_frees_its_slot():
    from lits.lm.http.hedging import _Watched
    import httpx

    sent: list[httpx.Request] = []

    def send(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, content=b"copy")

    budget = HedgeBudget(1.0)
    budget.count_call()
    release = budget.take()
    assert release is not None
    freed = threading.Event()
    call = _Watched(send, httpx.Request("POST", "http://x/", content=b"{}"), lambda: 0.0, budget)
    call.copied = True  # the watcher decided to send a copy; the first copy ended (its interrupt removed) since
    call._run_copy(lambda: (release(), freed.set()))
    assert call.copy_ended.is_set() and freed.is_set()
    assert call.copy_outcome is not None and call.copy_outcome[0].content == b"copy"
    assert sent[0].extensions.get("lits_interrupt") is call.copy_interrupt  # never the first copy's


class ScriptedRaces:
    """Which copy of a hedged call ends first, chosen by the call's number instead of left to timing.

    Even-numbered calls: the first copy is answered once the copy is decided on, and the copy starts only
    after the first copy ended (the window where a copy once leaked its slot).  Odd-numbered: the first
    copy is answered once the copy reached the server, so both answers race.  A call granted no copy (no
    slot was idle) is answered after ``patience`` seconds; call 0 waits far longer, so copies are sent.
    """

    def __init__(self, reply: Callable[[str, dict], str], patience: float = 0.2) -> None:
        self.reply, self.patience = reply, patience
        self.go: dict[int, threading.Event] = {}
        self.requests: dict[int, int] = {}
        self._lock = threading.Lock()

    def event(self, call: int) -> threading.Event:
        """Set when call number ``call``'s first copy may be answered."""
        with self._lock:
            return self.go.setdefault(call, threading.Event())

    def __call__(self, prompt: str, body: dict) -> str:
        call = int(prompt.split()[-1])
        with self._lock:
            first = call not in self.requests
            self.requests[call] = self.requests.get(call, 0) + 1
        if first:
            self.event(call).wait(60.0 if call == 0 else self.patience)
        elif call % 2 == 1:
            self.event(call).set()  # the copy reached the server: both copies answer now
        return self.reply(prompt, body)


def test_after_many_hedged_calls_every_concurrency_slot_is_free_again(upstream, quick_model, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from lits.lm.http import hedging

    model = quick_model(upstream.base_url, hedge_share=1.0, read_timeout=90.0, patience_floor=1.0, concurrency=4)
    warm_up(model)  # instant replies: the hedge delay is learned
    races = ScriptedRaces(upstream.responder)
    upstream.responder = races
    run_copy = hedging._Watched._run_copy

    def copy_after_the_scripted_end(call: hedging._Watched, release: Callable[[], None]) -> None:
        number = int(re.findall(rb"question (\d+)", call.request.content)[0])
        if number % 2 == 0:
            races.event(number).set()  # the copy is decided on: the first copy may answer now
            while not call.settled:  # and the copy goes out only once the first copy ended
                time.sleep(0.001)
        run_copy(call, release)

    monkeypatch.setattr(hedging._Watched, "_run_copy", copy_after_the_scripted_end)
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda i: model.complete(f"question {i}").text, range(40)))
    assert answers == [f"reply to {i}" for i in range(40)]
    assert model.fault_stats()["hedged_calls"] > 0
    assert all_slots_come_back(model), "a hedged copy kept its --concurrency slot"


def all_slots_come_back(model: OpenAICompatibleModel, within: float = 60.0) -> bool:
    """Whether every ``--concurrency`` slot is free within ``within`` seconds (copies that lost end late; a
    leaked slot never comes back, so the bound only has to outlast a loaded machine)."""
    deadline = time.monotonic() + within
    while True:
        taken = 0
        while taken < model.limiter.limit and model.limiter.try_take():
            taken += 1
        for _ in range(taken):
            model.limiter.give_back()
        if taken == model.limiter.limit or time.monotonic() > deadline:
            return taken == model.limiter.limit
        time.sleep(0.05)
