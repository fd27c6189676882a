"""On Ray, each component calls its own model and server, as in a local run, within that model's bound."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lits.testing.servers.openai_compat import FakeOpenAIServer

from tests.ray.conftest import first_listed_action, outputs

pytestmark = pytest.mark.usefixtures("local_ray")


@pytest.fixture
def policy_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action, latency=0.01) as srv:
        yield srv


@pytest.fixture
def eval_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action, latency=0.01) as srv:
        yield srv


def test_per_component_models_on_ray_equal_in_process(
    lits_here: Callable[..., int], tmp_path: Path, policy_server: FakeOpenAIServer, eval_server: FakeOpenAIServer
) -> None:
    args = [
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2,4",
        "--limit",
        "2",
        "--concurrency",
        "2",
        "--search-arg",
        "n_iterations=2",
        "--policy-model",
        "A",
        "--policy-base-url",
        policy_server.base_url,
        "--eval-model",
        "B",
        "--eval-base-url",
        eval_server.base_url,
    ]
    assert lits_here("search", *args, "--save-dir", "here") == 0
    calls_here = (len(policy_server.requests), len(eval_server.requests))
    policy_server.max_in_flight = eval_server.max_in_flight = 0
    assert lits_here("search", *args, "--save-dir", "ray", "--executor", "ray", "--no-cache") == 0
    assert {b["model"] for b in policy_server.requests} == {"A"}
    assert {b["model"] for b in eval_server.requests} == {"B"}
    assert len(eval_server.requests) > calls_here[1]  # the workers called the eval server too
    assert policy_server.max_in_flight <= 2 and eval_server.max_in_flight <= 2  # each model's own bound
    here, ray = tmp_path / "here", tmp_path / "ray"
    assert outputs(ray) == outputs(here)
