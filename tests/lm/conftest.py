"""A loopback OpenAI-compatible server and backends pointed at it."""

from __future__ import annotations

from typing import Iterator

import pytest

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing.server import FakeOpenAIServer


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
