"""Upstream llama.cpp's C++ ``llama-server`` (two slots) as LiTS meets it: chat, constrained replies, its prompt
cache, its slots, and log-likelihood ranking without ``echo`` (which it refuses)."""

from __future__ import annotations

from typing import Any, Iterator

import httpx
import pytest

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.runtime.observability import InferenceLog, collecting

pytestmark = pytest.mark.realmodel

#: A shared head of about 100 tokens, most of each prompt it starts.
HEAD = (
    "You are planning moves in a world of stacked blocks. The hand can hold one block at a time. A block can be "
    "picked up only when it is clear and on the table; it can be unstacked only when it is clear. "
    "Initial state: the red block is on the table, the blue block is on the red block, the yellow block is on "
    "the table, the orange block is on the yellow block, and the hand is empty. Goal: the red block is on the "
    "orange block. "
)


@pytest.fixture
def log() -> Iterator[InferenceLog]:
    with collecting(InferenceLog()) as collected:
        yield collected


@pytest.fixture
def replies(upstream_model: OpenAICompatibleModel, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every reply body the server sent, as it sent it (read beside LiTS, not through it)."""
    seen: list[dict[str, Any]] = []
    transport = upstream_model._transport
    handle = transport.handle_request

    def keep(request: httpx.Request) -> httpx.Response:
        response = handle(request)
        seen.append(response.extensions["lits_json"])
        return response

    monkeypatch.setattr(transport, "handle_request", keep)
    return seen


def root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def test_upstream_llama_server_answers_a_chat_request_with_counted_tokens(
    upstream_model: OpenAICompatibleModel,
) -> None:
    reply = upstream_model.chat(
        [{"role": "user", "content": "What is 2 + 3? Reply with the number only."}], max_tokens=8
    )
    assert "5" in reply.text and reply.tokens_in > 0 and reply.tokens_out > 0


def test_more_samples_than_it_takes_as_n_come_one_request_each(upstream_model: OpenAICompatibleModel) -> None:
    """It answers 400 to ``n`` above its slots (two here): a sampled call still gets every sample."""
    samples = upstream_model.generate("Name a colour.", n=3, temperature=0.8, max_tokens=4)
    assert len(samples) == 3 and all(sample.text for sample in samples)
    assert upstream_model.samples_per_request == 2  # its slots, as its refusal said


def test_its_slots_and_grammar_dialect_are_learnt_from_its_props(upstream_model: OpenAICompatibleModel) -> None:
    assert upstream_model.server_slots() == 2
    assert upstream_model.constraint_dialect == "gbnf"
    assert upstream_model.describe()["constrained_replies"] == "grammar (llama.cpp)"


def test_a_constrained_reply_is_one_of_the_offered_lines(upstream_model: OpenAICompatibleModel) -> None:
    offered = [["unstack the blue block from the red block", "pick up the yellow block"], ["1: Yes", "1: No"]]
    (reply,) = upstream_model.generate(
        HEAD + "Write the next action, then whether it helps.", max_tokens=40, reply_lines=offered
    )
    action, verdict = reply.text.split("\n")
    assert action in offered[0] and verdict in offered[1]


def test_prompt_tokens_served_from_its_cache_are_recorded_as_it_reports_them(
    upstream_model: OpenAICompatibleModel, replies: list[dict[str, Any]], log: InferenceLog
) -> None:
    for tail in ("What is the first action?", "What is the second action?"):
        upstream_model.generate(HEAD + tail, max_tokens=4)
    first, second = log.records
    reported = [r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in replies]
    assert [r["timings"]["cache_n"] for r in replies] == reported  # the server's two counts agree
    assert [first.tokens_cached, second.tokens_cached] == reported
    assert second.tokens_cached is not None and second.tokens_cached > second.tokens_in // 2  # the head: not re-read
    assert log.summary()["tokens_cached"] == sum(reported)


def test_a_request_pinned_to_a_slot_is_served_by_that_slot_from_its_cache(upstream_server: str) -> None:
    def complete(tail: str) -> dict[str, Any]:
        body = {"prompt": HEAD + tail, "n_predict": 2, "id_slot": 1, "cache_prompt": True, "temperature": 0.0}
        return dict(httpx.post(f"{root(upstream_server)}/completion", json=body, timeout=120.0).json())

    complete("First question:")
    again = complete("Second question:")
    assert again["id_slot"] == 1 and again["timings"]["cache_n"] > again["timings"]["prompt_n"]


def test_echo_gives_no_prompt_log_probabilities_so_scoring_cannot_read_them(upstream_server: str) -> None:
    body = {"model": "m", "prompt": "The capital of France is Paris", "max_tokens": 1, "echo": True, "logprobs": 1}
    reply = httpx.post(f"{upstream_server}/completions", json=body, timeout=120.0)
    # Refused outright, or (this version) ignored: the reply holds the generated token's log-probability only.
    if reply.status_code < 400:
        (choice,) = reply.json()["choices"]
        assert not choice["text"].startswith("The capital")
        assert len(choice["logprobs"]["content"]) == reply.json()["usage"]["completion_tokens"]


def test_log_likelihood_without_echo_ranks_the_likely_continuation_first(
    upstream_scorer: OpenAICompatibleModel,
) -> None:
    right, wrong = upstream_scorer.loglikelihood("The capital of France is", [" Paris", " a bicycle pump"])
    assert right > wrong and right <= 0.0


def test_a_one_token_continuation_scores_the_log_probability_the_server_gives_that_token(
    upstream_scorer: OpenAICompatibleModel,
) -> None:
    prompt = "The capital of France is"
    (score,) = upstream_scorer.loglikelihood(prompt, [" Paris"])
    (reply,) = upstream_scorer.generate(prompt, max_tokens=1, top_logprobs=5)
    assert reply.logprobs is not None
    # Equal up to the server's arithmetic: the prompt read in one batch once, from its cache the other time.
    assert reply.logprobs[0].top[" Paris"] == pytest.approx(score, abs=0.05)
