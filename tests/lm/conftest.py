"""A loopback OpenAI-compatible server and backends pointed at it."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing.servers.openai_compat import FakeOpenAIServer


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=lambda prompt, body: "Yes it is") as srv:
        yield srv


@pytest.fixture
def chat_model(server: FakeOpenAIServer) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("fake", server.base_url, api_key="k", retry_base_wait=0.01)


@pytest.fixture
def completion_model(server: FakeOpenAIServer) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("fake", server.base_url, api_key="k", api="completion", retry_base_wait=0.01)


QUICK: dict[str, Any] = {
    "api_key": "test-key-123456",
    "retry_base_wait": 0.01,
    "retry_max_wait": 0.05,
    "connect_timeout": 1.0,
    "read_timeout": 0.4,
    "call_budget": 30.0,
    "hedge_share": 0.0,
}
"""Backoff and timeouts small enough for tests; the budget still bounds every call.  No hedged copies:
these tests count a retry per fault (``test_hedging.py`` turns copies on)."""


def numbered_reply(prompt: str, body: dict) -> str:
    """A different, deterministic reply per prompt, so a mixed-up reply would show."""
    return f"reply to {prompt.split()[-1]}"


@pytest.fixture
def upstream() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=numbered_reply) as srv:
        yield srv


@pytest.fixture
def one_slot_server() -> Iterator[FakeOpenAIServer]:
    """Like llama.cpp's server with one slot: one request at a time, the rest queued, /props says so."""
    with FakeOpenAIServer(responder=numbered_reply, latency=0.15, slots=1) as srv:
        yield srv


@pytest.fixture
def quick_model() -> Iterator[Callable[..., OpenAICompatibleModel]]:
    """``quick_model(base_url, **overrides)``: a backend with test-sized retry settings, closed afterwards."""
    made: list[OpenAICompatibleModel] = []

    def make(base_url: str, **overrides: Any) -> OpenAICompatibleModel:
        model = OpenAICompatibleModel("fake", base_url, **{**QUICK, **overrides})
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()
