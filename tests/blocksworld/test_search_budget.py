"""A compute budget for a whole search run (`lits search --budget calls=N`, MCTS and BFS on BlocksWorld): an
instance that reached its goal stops, and what it did not spend goes to the instances still searching."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import lits
from lits.errors import UserError
from lits.lm.base import GenerationParams, stop_new_calls
from lits.registry import register_model
from lits.testing.scripted import ScriptedModel, obedient_reply

#: The scripted model's 10-iteration MCTS over the first 4 cases: instance 0 solves at iteration 6 (48 calls),
#: the others at iteration 1 or 2 (4 to 14 calls); 78 calls in all.
MCTS = {"n_iterations": 10, "seed": 1}


def reply(text: str, params: GenerationParams, index: int) -> str:
    return obedient_reply(text, params, index)


@register_model("budget-obedient")
def budget_obedient(spec: Any, **options: Any) -> ScriptedModel:
    """The scripted model's replies, looked up per call (a test patches :func:`reply`)."""
    return ScriptedModel(lambda *call: reply(*call), chat_native=True)


def search(save_dir: Path, budget: str | None = None, *, limit: int = 4, **fields: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"model": "scripted", "no_cache": True, "search": "mcts", "search_args": MCTS, **fields}
    if budget is not None:
        options["budget"] = budget
    lits.search("blocksworld", limit=limit, save_dir=save_dir, **options)
    return dict(json.loads((save_dir / "eval_results.json").read_text()))


def records(save_dir: Path) -> dict[int, dict[str, Any]]:
    return {int(p.stem): json.loads(p.read_text()) for p in (save_dir / "results").glob("*.json")}


def calls_of(save_dir: Path, idx: int) -> int:
    lines = (save_dir / "inference.jsonl").read_text().splitlines()
    return sum(1 for line in lines if json.loads(line).get("context", {}).get("instance") == idx)


@pytest.fixture(scope="module")
def unbudgeted(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("free") / "run"
    search(root)
    return root


def test_solved_instances_stop_and_their_budget_goes_to_the_instance_still_searching(tmp_path, unbudgeted):
    summary = search(tmp_path / "run", "calls=100")
    # an even split would give each instance 25 calls; instance 0 needed 48, which the solved ones left it
    assert calls_of(tmp_path / "run", 0) == calls_of(unbudgeted, 0) > 100 / 4
    assert summary["accuracy"] == 1.0 and summary["budget"]["settled_early"] == 4
    assert summary["budget"]["spent"] == summary["inference"]["calls"] == 78


def test_each_instance_searches_as_it_would_without_a_budget(tmp_path, unbudgeted):
    search(tmp_path / "run", "calls=100")
    kept = ("iterations", "stopped", "eval", "final_state")
    assert {i: {k: r[k] for k in kept} for i, r in records(tmp_path / "run").items()} == {
        i: {k: r[k] for k in kept} for i, r in records(unbudgeted).items()
    }


@pytest.mark.parametrize("budget", ["calls=30", "calls=60", "calls=78", "tokens=15000", "tokens=30000"])
def test_a_search_run_never_spends_more_than_its_budget(tmp_path, budget):
    summary = search(tmp_path / "run", budget)
    unit, total = budget.split("=")
    inference = summary["inference"]
    spent = inference["calls"] if unit == "calls" else inference["tokens_in"] + inference["tokens_out"]
    assert spent == summary["budget"]["spent"] <= float(total)


def test_a_budget_too_small_for_every_instance_cuts_the_unsolved_ones(tmp_path):
    summary = search(tmp_path / "run", "calls=60")
    budget = summary["budget"]
    assert budget["cut_by_budget"] >= 1 and records(tmp_path / "run")[0]["stopped"] == "budget"
    assert budget["settled_early"] + budget["cut_by_budget"] == 4


def test_the_summary_says_how_the_search_budget_was_spent(tmp_path):
    search(tmp_path / "run", "calls=100")
    lines = (tmp_path / "run" / "eval.log").read_text().splitlines()
    assert any(line.startswith("budget spent") and line.endswith("78 of 100 calls") for line in lines)
    assert any(
        line.startswith("iterations run")
        and "(1 iterations: 2, 2 iterations: 1, 6 iterations: 1); 4 settled early" in line
        for line in lines
    )


def test_the_same_seed_spends_a_search_budget_alike_at_any_concurrency(tmp_path):
    search(tmp_path / "one", "calls=60", concurrency=1)
    search(tmp_path / "four", "calls=60", concurrency=4)
    assert records(tmp_path / "one") == records(tmp_path / "four")
    reports = [json.loads((tmp_path / d / "budget.json").read_text()) for d in ("one", "four")]
    assert reports[0] == reports[1]


def test_a_resumed_search_run_continues_with_the_budget_it_had_left(tmp_path, monkeypatch):
    model = {"model": "budget-obedient", "no_cache": False}
    whole = search(tmp_path / "whole", "calls=100", **model)
    paid = {"calls": 0}

    def stopping_after_thirty(text: str, params: GenerationParams, index: int) -> str:
        paid["calls"] += 1
        if paid["calls"] == 30:  # as a Ctrl-C would: the calls not yet started do not start
            stop_new_calls(True)
        return obedient_reply(text, params, index)

    monkeypatch.setattr(sys.modules[__name__], "reply", stopping_after_thirty)
    cut = tmp_path / "cut"
    search(cut, "calls=100", **model)
    assert len(records(cut)) < 4 or any(r["stopped"] == "budget" for r in records(cut).values())  # part-way
    monkeypatch.undo()
    lits.resume(cut)
    resumed = json.loads((cut / "eval_results.json").read_text())
    kept = ("iterations", "stopped", "eval")
    assert {i: {k: r[k] for k in kept} for i, r in records(cut).items()} == {
        i: {k: r[k] for k in kept} for i, r in records(tmp_path / "whole").items()
    }
    assert resumed["budget"]["spent"] == whole["budget"]["spent"] == 78


def test_bfs_is_granted_depths_and_searches_as_it_would_without_a_budget(tmp_path):
    bfs = {"search": "bfs", "search_args": {"max_depth": 4, "beam_width": 2}}
    search(tmp_path / "free", **bfs)
    summary = search(tmp_path / "run", "calls=1000", **bfs)
    kept = ("iterations", "stopped", "eval")
    assert {i: {k: r[k] for k in kept} for i, r in records(tmp_path / "run").items()} == {
        i: {k: r[k] for k in kept} for i, r in records(tmp_path / "free").items()
    }
    assert summary["budget"]["spent"] == summary["inference"]["calls"]


def test_a_search_stopped_by_the_clock_cannot_take_a_budget(tmp_path):
    with pytest.raises(UserError, match="runtime_limit stops a search by the clock"):
        search(tmp_path / "run", "calls=10", search_args={**MCTS, "runtime_limit": 60})
    assert not (tmp_path / "run" / "inference.jsonl").exists()


def test_a_chain_without_samples_cannot_take_a_budget_on_blocksworld(tmp_path):
    with pytest.raises(UserError, match="--budget spreads .* use it with --chain sc, or with lits search"):
        lits.chain("blocksworld", chain="env_chain", model="scripted", limit=1, budget="calls=5", save_dir=tmp_path)
