"""Sibling-aware expansion: a node short of distinct children asks again, showing the siblings it has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer


def mode_collapsed(prompt: str, body: dict[str, Any]) -> str:
    """A model that always writes the same step unless shown the steps already proposed."""
    ask = str(body["messages"][-1]["content"]) if body.get("messages") else prompt
    if "Already proposed" in ask:
        shown = ask.split("Already proposed", 1)[1].count("\n- ")
        return f"Try approach {shown + 1}."
    return "Add the numbers."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=mode_collapsed) as srv:
        yield srv


@pytest.fixture
def search(tmp_path: Path, server: FakeOpenAIServer, run_lits) -> Callable[..., dict[str, Any]]:
    """One GSM8K instance under ToT-BFS (3 children per node, depth 1); returns its search stats."""

    def run(*extra: str) -> dict[str, Any]:
        done = run_lits(
            "search",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--search-framework",
            "tot_bfs",
            "--search-arg",
            "n_actions=3",
            "--search-arg",
            "max_depth=1",
            "--search-arg",
            "beam_width=3",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--no-cache",
            "--save-dir",
            "run",
            *extra,
        )
        assert done.returncode == 0, done.stderr
        return json.loads((tmp_path / "run" / "results" / "0.json").read_text())["search_stats"]

    return run


def test_without_it_a_mode_collapsed_model_gives_a_node_one_child(search):
    stats = search()
    assert (stats["proposed"], stats["duplicates"], stats["nodes"]) == (3, 2, 2)


def test_with_it_the_node_gets_every_child_it_asked_for(search):
    stats = search("--search-arg", "sibling_aware=true")
    assert (stats["proposed"], stats["duplicates"], stats["nodes"]) == (6, 3, 4)


def test_the_policy_is_shown_the_siblings_it_already_has(search, server):
    search("--search-arg", "sibling_aware=true")
    asks = [str(body["messages"][-1]["content"]) for body in server.requests if body.get("messages")]
    shown = [a.split("Already proposed", 1)[1] for a in asks if "Already proposed" in a]
    assert len(shown) == 2 and "- Add the numbers." in shown[0] and "- Try approach 2." in shown[1]


def test_each_round_that_asks_again_is_hotter_so_a_greedy_model_can_write_another_step(search, server):
    search("--search-arg", "sibling_aware=true", "--search-arg", "temperature=0")
    asks = [body for body in server.requests if "Already proposed" in str(body["messages"][-1]["content"])]
    assert [body["temperature"] for body in asks] == [0.4, 0.8]
