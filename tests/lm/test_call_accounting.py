"""Each model call is accounted for as servers account for it: requests, prompt tokens served from the server's
cache, server seconds, and the wait for a slot kept apart from model time."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Iterator

import pytest

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.lm.usage import reported_usage
from lits.runtime.observability import InferenceLog, InferenceRecord, collecting
from lits.testing.prefix_cache import PagedPrefixCache
from lits.testing.scripted import ScriptedModel
from lits.testing.servers.openai_compat import FakeOpenAIServer

from .conftest import QUICK

#: A prompt of 40 words: two full blocks of 16 and a rest.
HEAD = " ".join(f"w{i}" for i in range(40))


@pytest.fixture
def log() -> Iterator[InferenceLog]:
    with collecting(InferenceLog()) as collected:
        yield collected


@pytest.fixture
def vllm_like() -> Iterator[FakeOpenAIServer]:
    """A server with a paged prefix cache of 16-word blocks, reporting hits as vLLM does."""
    with FakeOpenAIServer(responder=lambda prompt, body: "ok", prefix_cache=PagedPrefixCache(block_size=16)) as srv:
        yield srv


def test_a_prompt_served_from_the_servers_cache_is_recorded_as_cached_tokens(vllm_like, log):
    model = OpenAICompatibleModel("m", vllm_like.base_url, api="completion", **QUICK)
    model.complete(HEAD + " first")
    model.complete(HEAD + " second")
    first, second = log.records
    assert (first.tokens_in, first.tokens_cached) == (41, 0)
    assert (second.tokens_in, second.tokens_cached) == (41, 32)  # the two full blocks of the shared head
    assert log.summary()["tokens_cached"] == vllm_like.usage_reported["cached_tokens"] == 32


def test_four_samples_from_a_server_that_ignores_n_are_one_call_of_four_requests(log):
    with FakeOpenAIServer(responder=lambda prompt, body, i: f"sample {i}", ignore_n=True) as srv:
        model = OpenAICompatibleModel("m", srv.base_url, **QUICK)
        assert len(model.generate("pick one", n=4, temperature=1.0)) == 4
    (record,) = log.records
    assert record.requests == 4 and log.summary()["requests"] == 4 and log.summary()["calls"] == 1


def test_a_retried_request_counts_as_two_requests(log):
    with FakeOpenAIServer(responder=lambda prompt, body: "ok") as srv:
        srv.fail_next(500)
        OpenAICompatibleModel("m", srv.base_url, **QUICK).complete("hello")
    (record,) = log.records
    assert record.requests == 2


def test_a_call_that_queues_for_a_slot_records_the_wait_apart_from_model_time(log):
    holding, release = threading.Event(), threading.Event()

    def reply(prompt: str, params: object, index: int) -> str:
        if prompt == "first":
            holding.set()
            release.wait()
        return "ok"

    model = ScriptedModel(reply, concurrency=1)
    model.log_prompts = True
    first = threading.Thread(target=model.complete, args=("first",))
    first.start()
    holding.wait()
    second = threading.Thread(target=model.complete, args=("second",))
    second.start()
    while not model.limiter._waiting:  # type: ignore[attr-defined]  # the second call is queued
        threading.Event().wait(0.001)
    release.set()
    first.join()
    second.join()
    by_prompt = {r.prompt: r for r in log.records}
    assert by_prompt["first"].queued_seconds == 0.0 and by_prompt["second"].queued_seconds > 0
    assert log.summary()["queued_seconds"] == round(by_prompt["second"].queued_seconds, 3)


def test_llama_cpp_timings_give_the_cached_tokens_and_server_seconds():
    body = {
        "usage": {"prompt_tokens": 300, "completion_tokens": 5},
        "timings": {"cache_n": 256, "prompt_n": 44, "prompt_ms": 120.0, "predicted_ms": 80.0},
    }
    assert reported_usage(body) == (256, pytest.approx(0.2))


def test_openai_usage_details_win_over_timings():
    body = {
        "usage": {"prompt_tokens": 300, "prompt_tokens_details": {"cached_tokens": 288}},
        "timings": {"cache_n": 256},
    }
    assert reported_usage(body) == (288, None)


def test_a_server_that_reports_no_cache_leaves_the_cached_tokens_unknown(log):
    """llama-cpp-python's server reports only prompt and completion tokens: unknown is not zero."""
    assert reported_usage({"usage": {"prompt_tokens": 3, "completion_tokens": 1}}) == (None, None)
    with FakeOpenAIServer(responder=lambda prompt, body: "ok") as srv:
        OpenAICompatibleModel("m", srv.base_url, **QUICK).complete("hello there")
    (record,) = log.records
    assert record.tokens_cached is None and "tokens_cached" not in log.summary()


def test_the_log_line_holds_the_new_fields_only_when_known(tmp_path: Path):
    log = InferenceLog(tmp_path / "inference.jsonl")
    log.add(InferenceRecord("m", "generate", tokens_in=5, tokens_out=1, seconds=0.5))
    log.add(
        InferenceRecord(
            "m",
            "generate",
            tokens_in=5,
            tokens_out=1,
            seconds=0.5,
            requests=3,
            tokens_cached=0,
            server_seconds=0.25,
            queued_seconds=1.5,
        )
    )
    log.close()
    plain, full = (json.loads(line) for line in (tmp_path / "inference.jsonl").read_text().splitlines())
    assert not {"requests", "tokens_cached", "server_seconds", "queued_seconds"} & set(plain)
    assert (full["requests"], full["tokens_cached"], full["server_seconds"], full["queued_seconds"]) == (
        3,
        0,
        0.25,
        1.5,
    )
    again = InferenceLog.read(tmp_path / "inference.jsonl").summary()
    assert (again["requests"], again["tokens_cached"], again["queued_seconds"]) == (4, 0, 1.5)


def test_an_old_log_line_reads_as_one_request_with_an_unreported_cache(tmp_path: Path):
    path = tmp_path / "inference.jsonl"
    path.write_text(
        json.dumps(
            {
                "model": "m",
                "kind": "generate",
                "tokens_in": 7,
                "tokens_out": 2,
                "seconds": 0.3,
                "cost": 0.0,
                "cached": False,
                "time": 1.0,
                "context": {},
            }
        )
        + "\n"
    )
    totals = InferenceLog.read(path).summary()
    assert totals["requests"] == 1 and totals["queued_seconds"] == 0 and "tokens_cached" not in totals


def test_the_scripted_model_reports_its_emulated_prefix_cache(log):
    model = ScriptedModel(["a", "b"], prefix_cache=PagedPrefixCache(block_size=16))
    model.complete(HEAD + " one")
    model.complete(HEAD + " two")
    assert [r.tokens_cached for r in log.records] == [0, 32]
