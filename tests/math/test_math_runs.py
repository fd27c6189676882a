"""The four MATH methods end to end through the CLI against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.data import load_gsm8k, load_math500

PROBLEMS = {e["query"]: e["answer"] for e in load_math500() + load_gsm8k()}


def obedient_solver(prompt: str, body: dict[str, Any]) -> str:
    """A chat model that follows each component's instructions and knows the answers.

    It answers the last turn: worked examples come as earlier turns."""
    messages = body.get("messages")
    if messages:
        prompt = str(messages[-1].get("content"))
    gold = next((answer for question, answer in PROBLEMS.items() if question in prompt), "0")
    if "Yes or No" in prompt:
        return "Yes"
    if "Write only Q" in prompt:  # RAP: propose a sub-question
        return "Final question: the problem itself"
    if "Write only A" in prompt:  # RAP: answer a sub-question
        return f"Putting it together, the answer is {gold}."
    if "Write only step 1" in prompt:
        return "Work out what the problem asks for."
    return f"The answer is $\\boxed{{{gold}}}$."


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=obedient_solver) as srv:
        yield srv


@pytest.fixture
def lits(run_lits) -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_lits


def _server(server: FakeOpenAIServer) -> list[str]:
    return ["--model", "m", "--base-url", server.base_url]


METHODS = {
    "cot": ["chain"],
    "rest": ["search", "--search-framework", "rest", "--search-arg", "n_iterations=3"],
    "tot_bfs": ["search", "--search-framework", "tot_bfs", "--search-arg", "beam_width=2"],
    "rap": ["search", "--search-framework", "rap", "--search-arg", "n_iterations=3"],
}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_solves_what_an_obedient_model_answers(lits, server, tmp_path, method):
    result = lits(*METHODS[method], "--dataset", "math500", "--limit", "3", *_server(server), "--save-dir", method)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / method / "eval_results.json").read_text())
    assert summary["instances"] == 3 and summary["accuracy"] == 1.0


def test_a_framework_brings_its_own_search_unless_one_is_given(lits, server, tmp_path):
    assert (
        lits(
            *METHODS["tot_bfs"], "--dataset", "gsm8k", "--limit", "1", *_server(server), "--save-dir", "tot"
        ).returncode
        == 0
    )
    assert (
        lits(
            "search",
            "--search-framework",
            "tot_bfs",
            "--search",
            "mcts",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            *_server(server),
            "--save-dir",
            "tot-mcts",
        ).returncode
        == 0
    )
    searches = [json.loads((tmp_path / d / "config.json").read_text())["search"] for d in ("tot", "tot-mcts")]
    assert searches == ["bfs", "mcts"]


def test_search_keeps_the_majority_vote_and_eval_rescores_from_it(lits, server, tmp_path):
    assert (
        lits(*METHODS["rest"], "--dataset", "gsm8k", "--limit", "2", *_server(server), "--save-dir", "rest").returncode
        == 0
    )
    record = json.loads((tmp_path / "rest" / "results" / "0.json").read_text())
    assert record["answer_selection"]["answer"] == record["eval"]["answer"] and record["eval"]["solved"]
    again = lits("eval", "--save-dir", "rest", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["accuracy"] == 1.0


def test_compare_puts_every_method_in_one_table(lits, server, tmp_path):
    for method in ("cot", "rap"):
        assert (
            lits(
                *METHODS[method], "--dataset", "gsm8k", "--limit", "1", *_server(server), "--save-dir", method
            ).returncode
            == 0
        )
    table = lits("compare", "cot", "rap", "--markdown")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("| method | dataset | model | n | accuracy | tokens in | tokens out | calls |")
    assert lines[2].startswith("| cot (chain) | gsm8k | m | 1 | 100.0% |") and lines[3].startswith("| rap (mcts) |")


def test_compare_of_a_directory_that_is_no_run_is_a_one_line_error(lits, tmp_path):
    (tmp_path / "empty").mkdir()
    result = lits("compare", "empty")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "is not a finished run" in result.stderr


def test_a_framework_for_another_task_type_is_a_one_line_error(lits, server):
    result = lits("search", "--search-framework", "rest", "--dataset", "blocksworld", "--limit", "1", *_server(server))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "'rest' is for language_grounded datasets, not env_grounded ones" in result.stderr


def test_an_unknown_framework_lists_the_registered_ones(lits, server):
    result = lits("search", "--search-framework", "nope", "--dataset", "math500", *_server(server))
    assert result.returncode == 2 and "registered: rap, rest, tot_bfs" in result.stderr


def _counting(asked: list[str]) -> Callable[[str, dict[str, Any]], str]:
    """The obedient solver, noting in ``asked`` whether each request was the judge's or the policy's."""

    def solver(prompt: str, body: dict[str, Any]) -> str:
        reply = obedient_solver(prompt, body)
        asked.append("judge" if reply == "Yes" else "policy")
        return reply

    return solver


def test_tot_bfs_at_depth_one_pays_no_judge_call_since_the_vote_reads_no_score(lits, tmp_path):
    asked: list[str] = []
    with FakeOpenAIServer(responder=_counting(asked)) as srv:
        result = lits(
            *METHODS["tot_bfs"],
            "--search-arg",
            "max_depth=1",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            *_server(srv),
            "--save-dir",
            "tot",
        )
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "tot" / "results" / "0.json").read_text())
    assert asked and "judge" not in asked
    stats = record["search_stats"]
    assert stats["scores_skipped"] == stats["nodes"] - 1 >= 1  # every child of the root, unscored
    summary = json.loads((tmp_path / "tot" / "eval_results.json").read_text())
    assert summary["diversity"]["reward_calls_skipped"] == stats["scores_skipped"]
    assert "reward calls skipped" in result.stdout


def test_tot_bfs_scores_its_last_depth_when_asked(lits, tmp_path):
    asked: list[str] = []
    with FakeOpenAIServer(responder=_counting(asked)) as srv:
        result = lits(
            *METHODS["tot_bfs"],
            "--search-arg",
            "max_depth=1",
            "--search-arg",
            "score_last_depth=true",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            *_server(srv),
            "--save-dir",
            "tot",
        )
    assert result.returncode == 0, result.stderr
    assert "judge" in asked


def test_a_chain_whose_model_never_states_an_answer_counts_the_instances_without_one(tmp_path):
    # "solved 0" alone hid that no instance ended with an answer to judge.
    import lits as lits_api

    with FakeOpenAIServer(responder=lambda prompt, body: "Let me think about the apples.") as srv:
        result = lits_api.chain("gsm8k", model="m", base_url=srv.base_url, limit=2, save_dir=tmp_path / "r")
    assert (result.solved, result.summary["no_answer"]) == (0, 2)
    assert "; 2 ended without an answer" in (tmp_path / "r" / "eval.log").read_text()
