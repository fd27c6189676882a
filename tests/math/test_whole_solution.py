"""``--chain-arg whole_solution=true``: a chat model writes a chain of thought in one reply, one step per line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.components.policy.concat import ConcatPolicy
from lits.structures.language_grounded import ThoughtState
from lits.testing import ScriptedModel
from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.data import load_gsm8k

PROBLEMS = {e["query"]: e["answer"] for e in load_gsm8k()}
WORKING = ["Step 1: She has 3 apples and buys 4 more, so she has 7 apples.", "", "Step 2: 7 * 2 = 14."]


def solver(prompt: str, body: dict[str, Any]) -> str:
    """Asked for the rest of the solution: two numbered working lines, a blank line, then the answer; asked for
    one step: a step that states no answer (so a step-wise chain would need more calls)."""
    gold = next((answer for question, answer in PROBLEMS.items() if question in prompt), "0")
    last = str(body["messages"][-1]["content"])
    if "to the end" in last or "step by step" in last:
        return "\n".join([*WORKING, f"The answer is {gold}."])
    return "She has 3 apples and buys 4 more, so she has 7 apples."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=solver) as srv:
        yield srv


@pytest.fixture
def chain(server: FakeOpenAIServer, run_lits) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_lits(
            "chain",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--save-dir",
            "run",
            *args,
        )

    return run


def test_the_whole_solution_comes_in_one_call_and_is_solved(chain, server, tmp_path: Path) -> None:
    done = chain("--chain-arg", "whole_solution=true")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    assert record["eval"]["solved"]
    assert len(server.requests) == 1 and server.requests[0]["max_tokens"] == 640


def test_the_replys_lines_become_one_step_without_their_cues(chain, tmp_path: Path) -> None:
    assert chain("--chain-arg", "whole_solution=true").returncode == 0
    state = json.loads((tmp_path / "run" / "checkpoints" / "0.json").read_text())["state"]
    actions = [step["action"] for step in state["steps"]]
    assert len(actions) == 1
    assert actions[0].startswith("She has 3 apples and buys 4 more, so she has 7 apples. 7 * 2 = 14. The answer is")
    assert "Step" not in actions[0]


def test_the_model_is_asked_the_question_alone_in_its_own_chat_frame(chain, server) -> None:
    assert chain("--chain-arg", "whole_solution=true").returncode == 0
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["user"]  # no one-step-per-line system prompt, no worked example
    question = next(q for q in PROBLEMS if messages[0]["content"].startswith(q))
    ask = "Work it out step by step, then give the final number as \\boxed{N}."
    assert messages[0]["content"] == f"{question}\n{ask}"


def test_a_dataset_without_its_own_ask_gets_cores_which_asks_for_the_final_answer() -> None:
    policy = ConcatPolicy(ScriptedModel(chat_native=True), "math500")
    messages = policy.messages(ThoughtState(), "What is 2 + 2?", whole=True)
    assert messages == [
        {
            "role": "user",
            "content": "What is 2 + 2?\nWork it out step by step, then give the final answer as \\boxed{answer}.",
        }
    ]


def test_without_it_the_chain_asks_for_one_step_at_a_time(chain, server) -> None:
    assert chain("--chain-arg", "max_steps=3").returncode == 0
    assert len(server.requests) == 3
    assert all("to the end" not in str(r["messages"][-1]["content"]) for r in server.requests)


def test_a_bad_value_is_one_line(chain) -> None:
    done = chain("--chain-arg", "whole_solution=maybe")
    assert done.returncode != 0 and "whole_solution" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_search_with_it_chooses_among_whole_solutions(server, tmp_path: Path, run_lits) -> None:
    done = run_lits(
        "search",
        "--dataset",
        "gsm8k",
        "--limit",
        "1",
        "--search-framework",
        "tot_bfs",
        "--search-arg",
        "whole_solution=true",
        "--search-arg",
        "n_actions=2",
        "--search-arg",
        "max_depth=3",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--save-dir",
        "run",
    )
    assert done.returncode == 0, done.stderr
    policy_asks = [r for r in server.requests if "step by step" in str(r["messages"][-1]["content"])]
    assert policy_asks and policy_asks[0]["max_tokens"] == 640
    assert json.loads((tmp_path / "run" / "results" / "0.json").read_text())["eval"]["solved"]


def greedy_right_samples_apart(prompt: str, body: dict[str, Any], index: int) -> str:
    """Greedy (temperature 0), the right answer; sampled, a different wrong answer per choice."""
    gold = next((answer for question, answer in PROBLEMS.items() if question in prompt), "0")
    if "step by step" not in str(body["messages"][-1]["content"]):
        return "Yes"  # the judge
    answer = gold if float(body.get("temperature") or 0) == 0 else str(9000 + index)
    return "\n".join([*WORKING, f"The answer is {answer}."])


@pytest.fixture
def whole_search(tmp_path: Path, run_lits) -> Callable[..., tuple[dict[str, Any], list[dict[str, Any]]]]:
    """One GSM8K instance, ToT-BFS over 3 whole solutions at temperature 0.7: its record and the requests."""

    def run(*extra: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with FakeOpenAIServer(responder=greedy_right_samples_apart) as srv:
            done = run_lits(
                "search",
                "--dataset",
                "gsm8k",
                "--limit",
                "1",
                "--search-framework",
                "tot_bfs",
                "--search-arg",
                "whole_solution=true",
                "--search-arg",
                "n_actions=3",
                "--search-arg",
                "temperature=0.7",
                "--search-arg",
                "max_depth=1",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--no-cache",
                "--save-dir",
                "run",
                *extra,
            )
            assert done.returncode == 0, done.stderr
            asks = [r for r in srv.requests if "step by step" in str(r["messages"][-1]["content"])]
        return json.loads((tmp_path / "run" / "results" / "0.json").read_text()), asks

    return run


def test_greedy_first_asks_for_one_greedy_solution_and_samples_the_rest(whole_search) -> None:
    _, asks = whole_search("--search-arg", "greedy_first=true")
    assert [(r["temperature"], r.get("n", 1)) for r in asks] == [(0.0, 1), (0.7, 2)]


def test_a_vote_with_no_majority_goes_to_the_greedy_solution(whole_search) -> None:
    record, _ = whole_search("--search-arg", "greedy_first=true")
    assert record["eval"]["solved"]


def test_without_greedy_first_every_solution_is_sampled(whole_search) -> None:
    record, asks = whole_search()
    assert [(r["temperature"], r.get("n", 1)) for r in asks] == [(0.7, 3)]
    assert not record["eval"]["solved"]
