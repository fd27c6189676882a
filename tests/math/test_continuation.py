"""Chain-in-Tree continuation: a node gets one child unless the branching-necessity evaluator says it needs more."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer

Behaviour = dict[str, Any]


def responder(behaviour: Behaviour) -> Callable[[str, dict[str, Any], int], str]:
    """A chat model whose sampled steps agree or differ (by sampling stream), and whose BN answers are set."""

    def respond(prompt: str, body: dict[str, Any], index: int) -> str:
        ask = str(body["messages"][-1]["content"]) if body.get("messages") else prompt
        if "Is the next step obvious" in ask:
            return str(behaviour.get("direct", "Yes"))
        if "Candidate next steps" in ask:
            return str(behaviour.get("same", "No"))
        if "Write only step" in ask:
            sample = int(body.get("seed") or 0) + index
            return str(behaviour.get("steps", lambda j: f"Try approach {j}.")(sample))
        return "Yes"

    return respond


@pytest.fixture
def behaviour() -> Behaviour:
    return {}


@pytest.fixture
def server(behaviour: Behaviour) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=responder(behaviour)) as srv:
        yield srv


@pytest.fixture
def search(server: FakeOpenAIServer, run_lits) -> Callable[..., subprocess.CompletedProcess[str]]:
    """One GSM8K instance under ToT-BFS (3 children per node, depth 2, beam 1)."""

    def run(*extra: str, save: str = "run") -> subprocess.CompletedProcess[str]:
        return run_lits(
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
            "max_depth=2",
            "--search-arg",
            "beam_width=1",
            "--search-arg",
            "early_stop=false",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--no-cache",
            "--save-dir",
            save,
            *extra,
        )

    return run


@pytest.fixture
def result(tmp_path: Path, search: Callable[..., subprocess.CompletedProcess[str]]) -> Callable[..., dict[str, Any]]:
    """Run, check it finished, and return the instance's result record with its best path."""

    def run(*extra: str) -> dict[str, Any]:
        shutil.rmtree(tmp_path / "run", ignore_errors=True)  # a test may run several times
        done = search(*extra)
        assert done.returncode == 0, done.stderr
        record = dict(json.loads((tmp_path / "run" / "results" / "0.json").read_text()))
        record["best_path"] = json.loads((tmp_path / "run" / "paths" / "0.json").read_text())
        return record

    return run


def continuation(method: str, *more: str) -> list[str]:
    return ["--search-arg", "add_continuation=true", "--search-arg", f"bn_method={method}", *more]


def root_verdict(record: dict[str, Any]) -> dict[str, Any]:
    return dict(record["best_path"][0]["branching"])


def test_without_it_every_node_gets_n_actions_children(result):
    stats = result()["search_stats"]
    assert stats["nodes"] == 1 + 3 + 3 and "bn_decisions" not in stats


def test_direct_continues_with_one_child_when_the_bn_model_calls_the_step_obvious(result):
    record = result(*continuation("direct"))
    assert record["search_stats"]["nodes"] == 3  # a chain: root, one step, the last step
    assert root_verdict(record) == {
        "method": "direct",
        "branch": False,
        "score": 0.0,
        "why": "the BN model called the next step obvious",
    }


def test_continuation_saves_model_calls(result, server):
    scored = ["--search-arg", "score_last_depth=true"]  # the judge's calls at every depth, as a search pays them
    result(*scored)
    without = len(server.requests)
    server.requests.clear()
    result(*scored, *continuation("direct"))
    assert len(server.requests) < without


def test_direct_branches_when_the_bn_model_sees_options(result, behaviour):
    behaviour["direct"] = "No"
    record = result(*continuation("direct"))
    assert record["search_stats"]["nodes"] == 7 and root_verdict(record)["branch"] is True


def test_bn_calls_are_counted_apart(result):
    stats = result(*continuation("direct"))["search_stats"]
    assert (stats["bn_decisions"], stats["bn_calls"], stats["bn_continued"], stats["bn_branched"]) == (2, 2, 2, 0)


def test_sc_exact_branches_when_sampled_steps_differ(result):
    record = result(*continuation("sc_exact"))
    assert root_verdict(record)["branch"] is True and record["search_stats"]["bn_samples"] == 6


def test_sc_exact_continues_when_sampled_steps_agree(result, behaviour):
    behaviour["steps"] = lambda j: "Add the numbers."
    record = result(*continuation("sc_exact"))
    assert root_verdict(record)["branch"] is False and record["search_stats"]["nodes"] == 3


def test_sc_exact_counts_final_steps_with_one_answer_in_other_words_as_agreeing(result, behaviour):
    wordings = ["Adding gives 12. The answer is 12.", "12 in all. The answer is 12.00", "So: 12. The answer is 12"]
    behaviour["steps"] = lambda j: wordings[j % 3]
    verdict = root_verdict(result(*continuation("sc_exact")))
    assert verdict["branch"] is False and verdict["why"].startswith("1 distinct of 3")


def test_sc_exact_branches_when_final_steps_give_different_answers(result, behaviour):
    behaviour["steps"] = lambda j: f"Adding gives {12 + j % 2}. The answer is {12 + j % 2}."
    assert root_verdict(result(*continuation("sc_exact")))["branch"] is True


def test_sc_asks_the_bn_model_whether_differently_worded_steps_mean_the_same(result, behaviour):
    behaviour["steps"] = lambda j: "Add the numbers." if j % 2 else "add the  numbers"  # same words
    behaviour["same"] = "No"
    stats = result(*continuation("sc"))["search_stats"]
    assert stats["bn_calls"] == 0 and stats["bn_continued"] == 2  # texts equal up to case and spacing
    behaviour["steps"] = lambda j: "Add the numbers." if j % 2 else "Sum them up."
    behaviour["same"] = "Yes"
    stats = result(*continuation("sc"))["search_stats"]
    assert stats["bn_calls"] == 2 and stats["bn_continued"] == 2


def test_entropy_continues_on_a_majority_where_sc_exact_branches(result, behaviour):
    behaviour["steps"] = lambda j: "Sum them up." if j == 2 else "Add the numbers."  # a 2-1 split of 3
    assert root_verdict(result(*continuation("entropy")))["branch"] is False
    assert root_verdict(result(*continuation("sc_exact")))["branch"] is True


def test_bn_threshold_moves_the_line(result, behaviour):
    behaviour["steps"] = lambda j: "Sum them up." if j == 2 else "Add the numbers."
    verdict = root_verdict(result(*continuation("sc_exact", "--search-arg", "bn_threshold=0.5")))
    assert verdict["branch"] is False and verdict["score"] == pytest.approx(1 / 3, abs=1e-3)


def test_a_bad_bn_method_is_one_line(search):
    done = search(*continuation("vote"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "bn_method" in done.stderr and "Traceback" not in done.stderr


def test_bn_model_calls_go_to_the_bn_model(tmp_path, search, server):
    with FakeOpenAIServer(responder=lambda prompt, body: "Yes") as judge:
        done = search(*continuation("direct"), "--bn-model", "judge", "--bn-base-url", judge.base_url)
        assert done.returncode == 0, done.stderr
        assert len(judge.requests) == 2 and all(body["model"] == "judge" for body in judge.requests)
    asked = [str(b["messages"][-1]["content"]) for b in server.requests if b.get("messages")]
    assert not any("Is the next step obvious" in a for a in asked)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["models"]["bn"]["model"] == "judge"


def test_the_viewer_shows_each_verdict(tmp_path, result):
    from lits.runs.results.artifacts import RunDir
    from lits.runs.results.tree import instance_tree

    result(*continuation("direct"))
    run = tmp_path / "run"
    tree = instance_tree(run, 0, "search", RunDir(run).read_config(), None)
    assert tree is not None
    verdicts = [n["detail"].get("branching") for n in tree["nodes"]]
    assert verdicts[0] == {
        "method": "direct",
        "branch": False,
        "score": 0.0,
        "why": "the BN model called the next step obvious",
    }
    assert verdicts[-1] is None  # the last step was never expanded


def test_samples_drawn_inside_an_attempts_stream_stay_on_it():
    """Streams nest, so an evaluator's samples in attempt k (stream k * 10000) are not attempt 0's again."""
    from lits.lm.base import sampling_stream
    from lits.testing.scripted import ScriptedModel

    model = ScriptedModel(["step"])
    with sampling_stream(10_000), sampling_stream(2):
        model.generate("next?", temperature=0.8)
    assert model.calls[0][1].seed == 10_002


def test_the_dry_run_bound_counts_the_evaluators_calls(search):
    bounds = {}
    for name, extra in (("without", []), ("direct", continuation("direct")), ("sc", continuation("sc"))):
        done = search(*extra, "--dry-run", save=name)
        assert done.returncode == 0, done.stderr
        bounds[name] = int(done.stdout.split("model calls   at most ")[1].split()[0])
    assert bounds["without"] < bounds["direct"] < bounds["sc"]
