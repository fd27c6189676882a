"""A compute budget for a whole run (`lits chain --chain sc --budget calls=N`): settled votes stop early and
their unspent budget goes to the instances still in doubt; the run never spends more than it was given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lits
from lits.errors import UserError
from lits.lm.base import GenerationParams, stop_new_calls
from lits.registry import register_model
from lits.testing.scripted import ScriptedModel
from lits_math.data import load_gsm8k

EXAMPLES = list(load_gsm8k())[:4]
#: Instances 0 and 1 always answer right (their votes settle); 2 and 3 split by the chain's seed (never settle).
SPLIT = {str(e["query"]) for e in EXAMPLES[2:]}


def answer_by_seed(prompt: str, params: GenerationParams, index: int) -> str:
    for example in EXAMPLES:
        if str(example["query"]) in prompt:
            wrong = str(example["query"]) in SPLIT and (params.seed or 0) % 2 == 1
            return f"The answer is {'1' if wrong else example['answer']}."
    return "The answer is 0."


@register_model("budget-scripted")
def budget_scripted(spec: Any, **options: Any) -> ScriptedModel:
    return ScriptedModel(lambda *call: answer_by_seed(*call), chat_native=True)  # looked up per call: patchable


def run_sc(save_dir: Path, budget: str, **fields: Any) -> dict[str, Any]:
    lits.chain(
        "gsm8k",
        chain="sc",
        chain_args={"k": 8},
        model="budget-scripted",
        limit=4,
        budget=budget,
        save_dir=save_dir,
        **{"no_cache": True, **fields},
    )
    return dict(json.loads((save_dir / "eval_results.json").read_text()))


def chains_so_far(save_dir: Path) -> dict[int, int]:
    done = (json.loads(p.read_text()) for p in (save_dir / "results").glob("*.json"))
    return {int(r["idx"]): int(r["search_stats"]["chains"]) for r in done}


def chains(save_dir: Path) -> dict[int, int]:
    return {
        idx: int(json.loads((save_dir / "results" / f"{idx}.json").read_text())["search_stats"]["chains"])
        for idx in range(4)
    }


def test_settled_votes_stop_early_and_their_budget_goes_to_the_others(tmp_path):
    summary = run_sc(tmp_path / "run", "calls=24")
    # an even split would give each instance 6 chains; the settled ones stop at 5 (5 > 0 + 8 - 5)
    assert chains(tmp_path / "run") == {0: 5, 1: 5, 2: 7, 3: 7}
    assert summary["budget"]["settled_early"] == 2 and summary["budget"]["cut_by_budget"] == 2
    assert summary["budget"]["spent"] == 24 == summary["inference"]["calls"]


def test_the_summary_says_how_the_budget_was_spent(tmp_path):
    run_sc(tmp_path / "run", "calls=24")
    lines = (tmp_path / "run" / "eval.log").read_text().splitlines()
    assert any(line.startswith("budget spent") and line.endswith("24 of 24 calls") for line in lines)
    assert any(
        line.startswith("chains drawn") and "(5 chains: 2, 7 chains: 2); 2 settled early, 2 cut by the budget" in line
        for line in lines
    )


@pytest.mark.parametrize("budget", ["tokens=700", "tokens=1500", "calls=9", "calls=30"])
def test_a_run_never_spends_more_than_its_budget(tmp_path, budget):
    summary = run_sc(tmp_path / "run", budget)
    unit, total = budget.split("=")
    spent = (
        summary["inference"]["calls"]
        if unit == "calls"
        else summary["inference"]["tokens_in"] + summary["inference"]["tokens_out"]
    )
    assert spent == summary["budget"]["spent"] <= float(total)


def test_the_same_seed_spends_the_budget_alike_at_any_concurrency(tmp_path):
    run_sc(tmp_path / "one", "tokens=1500", concurrency=1)
    run_sc(tmp_path / "four", "tokens=1500", concurrency=4)
    assert chains(tmp_path / "one") == chains(tmp_path / "four")
    reports = [json.loads((tmp_path / d / "budget.json").read_text()) for d in ("one", "four")]
    assert reports[0] == reports[1]


def test_a_resumed_run_continues_with_the_budget_it_had_left(tmp_path, monkeypatch):
    whole = run_sc(tmp_path / "whole", "calls=24", no_cache=False)
    paid, answer = {"calls": 0}, answer_by_seed

    def stopping_after_ten(prompt: str, params: GenerationParams, index: int) -> str:
        paid["calls"] += 1
        if paid["calls"] == 10:  # as a Ctrl-C would: the calls not yet started do not start
            stop_new_calls(True)
        return answer(prompt, params, index)

    monkeypatch.setattr(sys.modules[__name__], "answer_by_seed", stopping_after_ten)
    cut = tmp_path / "cut"
    run_sc(cut, "calls=24", no_cache=False)
    assert sum(chains_so_far(cut).values()) < 24  # the run stopped part-way
    monkeypatch.undo()
    lits.resume(cut)
    resumed = json.loads((cut / "eval_results.json").read_text())
    assert chains(cut) == chains(tmp_path / "whole")
    assert resumed["budget"]["spent"] == whole["budget"]["spent"] == 24


@pytest.mark.parametrize("bad", ["tokens", "tokens=-5", "tokens=nan", "dollars=3", "calls=many"])
def test_a_bad_budget_is_one_line_naming_the_units(tmp_path, bad):
    with pytest.raises(UserError) as caught:
        run_sc(tmp_path / "run", bad)
    assert "\n" not in str(caught.value) and "tokens=20000" in str(caught.value)


def test_a_bad_budget_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "chain",
            "--dataset",
            "gsm8k",
            "--chain",
            "sc",
            "--model",
            "scripted",
            "--limit",
            "1",
            "--save-dir",
            "run",
            "--budget",
            "tokens",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("lits: error: --budget must be UNIT=AMOUNT")


def test_a_budget_for_a_chain_without_samples_is_refused_before_any_call(tmp_path):
    with pytest.raises(UserError, match="use it with --chain sc"):
        lits.chain("gsm8k", chain="cot", model="budget-scripted", limit=1, budget="calls=5", save_dir=tmp_path / "r")
    assert not (tmp_path / "r" / "inference.jsonl").exists()


@pytest.mark.parametrize("early_stop, ran, settled_early", [(False, {"4": 4}, 0), (True, {"1": 4}, 4)])
def test_a_language_grounded_search_settles_only_when_it_stops_by_itself(tmp_path, early_stop, ran, settled_early):
    # every rollout reaches an answer at once; without early_stop the search goes on (its answer is a vote
    # over the terminal nodes it finds), so the budget does not stop it either
    lits.search(
        "gsm8k",
        search_framework="rest",
        search_args={"n_iterations": 4, "early_stop": early_stop},
        model="budget-scripted",
        limit=4,
        budget="calls=1000",
        no_cache=True,
        save_dir=tmp_path / "run",
    )
    budget = json.loads((tmp_path / "run" / "eval_results.json").read_text())["budget"]
    assert (budget["iterations_per_instance"], budget["settled_early"]) == (ran, settled_early)
