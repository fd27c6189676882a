"""On a server whose requests may name their slot (llama-server), each role of an instance keeps its own slot."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from typing import Callable, Iterator

import pytest

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.runtime.observability import call_context
from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.commands import blocksworld_search


@pytest.fixture
def two_slots() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(slots=2) as srv:
        yield srv


def _ask_in_turn(server: FakeOpenAIServer, roles: list[str], instance: int = 0) -> None:
    model = OpenAICompatibleModel("m", server.base_url)
    try:
        for i, role in enumerate(roles):
            with call_context(instance=instance, component=role):
                model.complete(f"the {role}'s question {i}", max_tokens=4)
    finally:
        model.close()


def test_each_role_keeps_its_own_slot_with_the_prompt_cache_on(two_slots):
    _ask_in_turn(two_slots, ["policy", "reward", "policy", "reward", "policy"])
    slots = [(body["id_slot"], body["cache_prompt"]) for body in two_slots.requests]
    assert slots[0::2] == [(slots[0][0], True)] * 3 and slots[1::2] == [(1 - slots[0][0], True)] * 2


def test_a_one_slot_server_and_a_server_without_slots_are_not_told_a_slot():
    for server in (FakeOpenAIServer(owned_by="me"), FakeOpenAIServer()):
        with server:
            _ask_in_turn(server, ["policy", "reward"])
        assert all("id_slot" not in body and "cache_prompt" not in body for body in server.requests)


def test_a_search_sends_its_policy_and_its_judge_to_two_slots(
    run_lits: Callable[..., subprocess.CompletedProcess[str]], two_slots: FakeOpenAIServer
) -> None:
    done = run_lits(
        *blocksworld_search(iterations=3), "--concurrency", "1", "--model", "m", "--base-url", two_slots.base_url
    )
    assert done.returncode == 0, done.stderr
    by_role: dict[str, set[int]] = defaultdict(set)
    for body in two_slots.requests:
        by_role["judge" if body.get("logprobs") else "policy"].add(int(body["id_slot"]))  # type: ignore[call-overload]
    assert len(by_role["policy"]) == len(by_role["judge"]) == 1 and by_role["policy"] != by_role["judge"]
