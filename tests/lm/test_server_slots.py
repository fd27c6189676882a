"""A server's slots bound the requests sent to it; waiting for a slot is not a server fault."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pytest

from lits.lm.base import ModelError
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.lm.server import slots as server_slots
from lits.lm.server.slots import probe_slots
from lits.testing.servers.openai_compat import FakeOpenAIServer


def _ask_at_once(model: OpenAICompatibleModel, count: int) -> list[str]:
    with ThreadPoolExecutor(max_workers=count) as pool:
        return [c.text for c in pool.map(lambda i: model.complete(f"question {i}", max_tokens=4), range(count))]


def test_the_slots_a_llama_cpp_server_reports_at_props_are_read() -> None:
    with FakeOpenAIServer(slots=4) as srv:
        assert probe_slots(srv.base_url, {}) == (4, "the server's /props (total_slots)")


def test_llama_cpp_pythons_server_counts_as_one_slot() -> None:
    with FakeOpenAIServer(owned_by="me") as srv:
        assert probe_slots(srv.base_url, {})[0] == 1


def test_a_server_that_does_not_say_gets_no_bound() -> None:
    with FakeOpenAIServer() as srv:
        assert probe_slots(srv.base_url, {}) == (None, "not reported by the server")


def test_an_unreachable_server_is_probed_without_an_error() -> None:
    assert probe_slots("http://127.0.0.1:9/v1", {})[0] is None


def test_calls_beyond_the_slots_wait_in_the_client_and_are_no_faults(one_slot_server: FakeOpenAIServer) -> None:
    # A read timeout shorter than eight queued requests take: sent at once, the later ones would time out.
    model = OpenAICompatibleModel("m", one_slot_server.base_url, concurrency=8, read_timeout=0.6, retry_base_wait=0.01)
    try:
        replies = _ask_at_once(model, 8)
        stats = model.fault_stats()
    finally:
        model.close()
    assert replies == [f"reply to {i}" for i in range(8)]
    assert one_slot_server.max_in_flight == 1 and len(one_slot_server.requests) == 8
    assert stats["retries"] == 0 and stats["failed_calls"] == 0 and stats["queued_calls"] >= 1


def test_config_records_the_servers_slots_and_where_they_came_from(one_slot_server, tmp_path: Path) -> None:
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "chain",
            "--dataset",
            "blocksworld",
            "--limit",
            "2",
            "--chain-arg",
            "max_steps=1",  # 12 calls, not 126 at 0.15 s each: what is checked is the config the run records
            "--model",
            "m",
            "--base-url",
            one_slot_server.base_url,
            "--save-dir",
            "run",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    info = json.loads((tmp_path / "run" / "config.json").read_text())["model_info"]
    assert (info["server_slots"], info["server_slots_from"]) == (1, "the server's /props (total_slots)")
    assert json.loads((tmp_path / "run" / "eval_results.json").read_text())["faults"]["retries"] == 0


def test_a_server_too_busy_to_answer_at_once_is_asked_again_with_more_patience() -> None:
    # llama-cpp-python's server reading a long prompt answered a GET after ~9 s; given up on at 2 s, the run's
    # calls went ungated into its queue and timed out as 34 false faults.
    with FakeOpenAIServer(owned_by="me", busy_for=4.0) as srv:
        assert probe_slots(srv.base_url, {}) == (1, "llama-cpp-python's server (one request at a time)")


def _short_then_long(srv: FakeOpenAIServer, long_latency: float, **settings: float) -> dict[str, float | int]:
    """A 20-token reply (it shows the server's pace), then one of up to 200 tokens that takes ``long_latency``;
    the model's fault counts."""
    model = OpenAICompatibleModel(
        "m", srv.base_url, read_timeout=1.0, retry_base_wait=0.01, hedge_share=0.0, **settings
    )
    try:
        model.complete("short", max_tokens=20)
        srv.latency = long_latency
        model.complete("long", max_tokens=200)
        return model.fault_stats()
    finally:
        model.close()


def test_a_long_reply_from_a_server_working_on_it_alone_is_given_its_time_not_retried() -> None:
    # A one-slot server writing a 640-token solution at a few tokens/s took ~100 s; timed out at 60 s it was
    # retried (a false fault) while the server, which does not stop, computed it twice.
    words = " ".join(f"w{i}" for i in range(20))
    with FakeOpenAIServer(responder=lambda prompt, body: words, owned_by="me", latency=0.4) as srv:
        # 20 tokens in 0.4 s: a reply of up to 200 tokens at that pace may take 3 x 4 s; it takes 1.6 s
        stats = _short_then_long(srv, 1.6)
    assert stats["retries"] == 0 and len(srv.requests) == 2


def test_a_server_that_says_nothing_keeps_the_plain_read_timeout() -> None:
    words = " ".join(f"w{i}" for i in range(20))
    with FakeOpenAIServer(responder=lambda prompt, body: words, latency=0.4) as srv:
        with pytest.raises(ModelError):
            _short_then_long(srv, 1.6, call_budget=2.5)


def test_before_any_reply_showed_the_pace_a_server_working_on_the_call_alone_gets_the_whole_budget() -> None:
    # Ten whole-solution calls queued at once at a one-slot server: the pace was unknown when each was built,
    # so each timed out at 60 s, and its retries queued behind the abandoned request (5 attempts, then failed).
    with FakeOpenAIServer(responder=lambda prompt, body: "w " * 20, owned_by="me", latency=1.6) as srv:
        model = OpenAICompatibleModel("m", srv.base_url, read_timeout=1.0, retry_base_wait=0.01, hedge_share=0.0)
        try:
            model.complete("first", max_tokens=20)
            stats = model.fault_stats()
        finally:
            model.close()
    assert stats["retries"] == 0 and len(srv.requests) == 1


def test_a_long_reply_at_a_known_pace_may_outlast_the_call_budget() -> None:
    with FakeOpenAIServer(responder=lambda prompt, body: "w " * 20, owned_by="me", latency=0.4) as srv:
        stats = _short_then_long(srv, 2.5, call_budget=2.0)  # within 3 x 200 tokens at the pace, past the budget
    assert stats["retries"] == 0 and stats["failed_calls"] == 0


@pytest.fixture
def busy_one_request_server() -> Iterator[tuple[FakeOpenAIServer, threading.Event]]:
    """llama-cpp-python's server while it works on another client's request: it takes connections and answers
    nothing until the test sets the event."""
    free = threading.Event()
    try:
        with FakeOpenAIServer(owned_by="me", busy=free) as srv:
            yield srv, free
    finally:
        free.set()


@pytest.fixture
def quick_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Probe patience of 0.2 s each: a busy server is waited for over many tries, not three."""
    monkeypatch.setattr(server_slots, "PROBE_TIMEOUTS", (0.2,))


def test_a_server_busy_with_another_request_is_waited_for_while_it_takes_connections(
    busy_one_request_server, quick_probe
) -> None:
    # The probe gave up after three tries (~48 s): the run recorded no slots and sent 16 calls at once into a
    # server that serves one.  Here it is freed only after five tries.
    srv, free = busy_one_request_server
    waits: list[float] = []

    def progress(waited: float) -> None:
        waits.append(waited)
        if len(waits) == 5:
            free.set()

    facts = server_slots.probe_server(srv.base_url, {}, progress=progress)
    assert (facts.slots, facts.dialect) == (1, "gbnf") and len(waits) == 5


def test_a_server_that_never_answers_the_probe_gets_one_call_at_a_time_and_one_line(
    busy_one_request_server, quick_probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, _ = busy_one_request_server
    monkeypatch.setattr(server_slots, "PROBE_LIMIT", 0.5)
    model = OpenAICompatibleModel("m", srv.base_url)
    try:
        with pytest.warns(server_slots.ServerProbeWarning) as said:
            info = model.describe()
    finally:
        model.close()
    assert info["server_slots"] == 1 and str(info["server_slots_from"]).startswith("assumed")
    last = str(said[-1].message)
    assert "did not answer its slot probe" in last and "1 call at a time" in last and "\n" not in last
