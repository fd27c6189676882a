"""On a server that works on one request at a time, a run's instances go one after another: the server's
context then holds the instance's own prompt when its next request comes, not another instance's."""

from __future__ import annotations

import re
import subprocess
from typing import Callable, Iterator

import pytest

from lits.lm.base import GenerationParams
from lits.testing.prefix_cache import PagedPrefixCache
from lits.testing.scripted import obedient_reply
from lits.testing import FakeOpenAIServer

Run = Callable[..., subprocess.CompletedProcess[str]]


def _server(slots: int | None) -> FakeOpenAIServer:
    return FakeOpenAIServer(
        responder=lambda prompt, body, i: obedient_reply(prompt, GenerationParams(), i),
        slots=slots,
        prefix_cache=PagedPrefixCache(block_size=16),
    )


@pytest.fixture
def one_slot() -> Iterator[FakeOpenAIServer]:
    with _server(1) as srv:
        yield srv


def _search(run_lits: Run, server: FakeOpenAIServer, save: str) -> subprocess.CompletedProcess[str]:
    done = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2",
        "--limit",
        "3",
        "--search-arg",
        "n_iterations=3",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--save-dir",
        save,
    )
    assert done.returncode == 0, done.stderr
    return done


def _problem(body: dict) -> str:
    """The instance a request is about: its problem, the last one in the prompt (after the worked examples)."""
    asked = body["messages"][-1]["content"]
    return re.findall(r"^Start: .*\nGoal: .*$", asked, re.MULTILINE)[-1]


def test_a_one_slot_servers_requests_come_instance_after_instance(run_lits: Run, one_slot: FakeOpenAIServer):
    done = _search(run_lits, one_slot, "run")
    problems = [_problem(body) for body in one_slot.requests]
    switches = sum(1 for a, b in zip(problems, problems[1:]) if a != b)
    assert len(set(problems)) == 3 and switches == 2  # each instance's requests in one run of requests
    assert "instances run one after another" in done.stderr
