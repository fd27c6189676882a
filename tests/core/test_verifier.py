"""``lits eval --verifier``: the reward model's report card (AUROC, calibration, position preference).

The end-to-end runs are GSM8K ToT-BFS searches against a loopback server whose policy proposes two
candidates per step (at the first step a guess that leads to wrong answers, then a worked step that leads to
two wordings of the gold answer) and whose judge is either biased (Yes to whatever was proposed first) or
perfect (Yes exactly to the steps on a correct path).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

import lits
from lits.cli.main import main
from lits.export.verifier import auroc, calibration, position_preference
from lits.testing.servers.openai_compat import FakeOpenAIServer


def proposed_first(step: str, gold: str) -> bool:
    """Whether the policy proposes ``step`` first (as sample 0) among its siblings."""
    return step in ("Guess.", "The answer is 999999.", f"The answer is {gold}.")


def on_the_correct_path(step: str, gold: str) -> bool:
    return step == "Work it out step by step." or step.endswith(f"answer is {gold}.")


# -- the statistics on hand-made lists ------------------------------------------------------------------------


def test_a_perfect_ranking_has_auroc_one():
    assert auroc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0


def test_a_reversed_ranking_has_auroc_zero():
    assert auroc([0.9, 0.8, 0.2, 0.1], [False, False, True, True]) == 0.0


def test_tied_scores_count_half():
    assert auroc([0.5, 0.5, 0.5, 0.5], [False, True, False, True]) == 0.5
    # one positive above both negatives, one tied with one of them: (2 + 1.5) / 4
    assert auroc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == 0.875


def test_auroc_of_one_class_is_undefined():
    assert auroc([0.2, 0.7], [True, True]) is None


def test_calibration_puts_each_score_in_its_tenth_and_a_one_in_the_last():
    table = calibration([0.05, 0.15, 0.12, 1.0], [False, True, False, True])
    assert [b["count"] for b in table] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 1]
    assert table[1] == {"lo": 0.1, "hi": 0.2, "count": 2, "mean_score": 0.135, "share_correct": 0.5}
    assert table[2]["mean_score"] is None and table[9]["share_correct"] == 1.0


def test_position_preference_counts_the_first_candidate_topping_its_group_against_one_over_k():
    # first on top; second on top; a three-way tie (the first gets a third); a pair (chance 1/2)
    pref = position_preference([[0.9, 0.1, 0.2], [0.1, 0.9, 0.2], [0.5, 0.5, 0.5], [0.7, 0.3]])
    assert pref["groups"] == 4
    assert pref["first_top"] == round((1 + 0 + 1 / 3 + 1) / 4, 4)
    assert pref["chance"] == round((1 / 3 * 3 + 1 / 2) / 4, 4)
    lo, hi = pref["interval"]
    assert lo < pref["first_top"] < hi


# -- end to end: GSM8K ToT-BFS against a loopback server ------------------------------------------------------


def _golds() -> dict[str, str]:
    from lits_math.data import load_gsm8k

    return {e["query"]: e["answer"] for e in load_gsm8k()}


def solver(judge: Callable[[str, str], bool]) -> Any:
    """A policy with two candidates per step (sample 0 heads wrong, sample 1 to the gold) and the given judge
    (``judge(step, gold)`` says Yes or No)."""
    golds = _golds()

    def reply(prompt: str, body: dict[str, Any], index: int) -> str:
        messages = body.get("messages") or []
        ask = str(messages[-1]["content"]) if messages else prompt
        gold = next((g for question, g in golds.items() if question in ask), "0")
        if "Yes or No" in ask:
            step = re.search(r"Proposed next step: (.*)\n", ask)
            return "Yes" if step and judge(step.group(1).strip(), gold) else "No"
        if "Steps so far" not in ask:
            return "Guess." if index == 0 else "Work it out step by step."
        if "Step 1: Guess." in ask:
            return "The answer is 999999." if index == 0 else "The answer is 999998."
        return f"The answer is {gold}." if index == 0 else f"So the answer is {gold}."

    return reply


def run_tot(save: Path, judge: Callable[[str, str], bool]) -> Path:
    with FakeOpenAIServer(responder=solver(judge)) as server:
        lits.search(
            "gsm8k",
            model="m",
            base_url=server.base_url,
            limit=2,
            search_framework="tot_bfs",
            search_args={"beam_width": 2, "n_actions": 2, "score_last_depth": True},
            save_dir=str(save),
        )
    return save


def verifier_of(save: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    capsys.readouterr()
    assert main(["eval", "--save-dir", str(save), "--verifier"]) == 0
    out = capsys.readouterr().out
    return json.loads((save / "eval_results.json").read_text())["verifier"], out


@pytest.fixture(scope="module")
def biased_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_tot(tmp_path_factory.mktemp("biased") / "run", proposed_first)


@pytest.fixture(scope="module")
def perfect_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_tot(tmp_path_factory.mktemp("perfect") / "run", on_the_correct_path)


def test_a_judge_that_prefers_the_first_candidate_shows_the_bias(biased_run, capsys):
    section, out = verifier_of(biased_run, capsys)
    pref = section["position"]
    assert pref["groups"] >= 4 and pref["first_top"] == 1.0 and pref["chance"] == 0.5
    assert pref["interval"][0] > pref["chance"]  # far above chance
    assert section["auroc"] is not None and section["auroc"] < 0.5  # it ranked the wrong steps first
    assert "first candidate got the top score in 100%" in out


def test_a_perfect_judge_has_auroc_one_overall_and_at_every_depth(perfect_run, capsys):
    section, out = verifier_of(perfect_run, capsys)
    assert section["auroc"] == 1.0 and section["positive"] > 0 and section["nodes"] > section["positive"]
    assert [d["auroc"] for d in section["by_depth"]] == [1.0, 1.0]
    assert section["confident_wrong"] and all(n["score"] == 0.0 for n in section["confident_wrong"])
    assert section["process_vs_outcome"]["agree"] == 1.0
    assert "AUROC 1.000" in out


def test_the_biased_judge_confident_wrong_list_names_its_favourite_wrong_steps(biased_run, capsys):
    section, _ = verifier_of(biased_run, capsys)
    top = section["confident_wrong"][0]
    assert top["score"] == 1.0 and top["step"] in ("Guess.", "The answer is 999999.")


def test_calibration_bins_hold_every_labelled_node(perfect_run, capsys):
    section, _ = verifier_of(perfect_run, capsys)
    table = section["calibration"]
    assert len(table) == 10 and sum(b["count"] for b in table) == section["nodes"]
    assert table[0]["share_correct"] == 0.0 and table[9]["share_correct"] == 1.0


def test_eval_without_the_flag_keeps_the_section(perfect_run, capsys):
    verifier_of(perfect_run, capsys)
    assert main(["eval", "--save-dir", str(perfect_run)]) == 0
    assert "verifier" in json.loads((perfect_run / "eval_results.json").read_text())


def first_listed_judge(prompt: str, body: dict[str, Any], index: int) -> str:
    """BlocksWorld against a judge that says Yes to the first of the siblings it is shown together and No to
    the rest; the policy proposes a different valid action per sample."""
    from lits.testing.scripted import listed_actions

    messages = body.get("messages") or []
    ask = str(messages[-1]["content"]) if messages else prompt
    if "(numbered)" in ask:
        shown = len(re.findall(r"^\d+\. ", ask, re.MULTILINE))
        return "\n".join(f"{k}: {'Yes' if k == 1 else 'No'}" for k in range(1, shown + 1))
    if "Yes or No" in ask:
        return "No"
    listed = listed_actions(ask)
    return listed[index % len(listed)] if listed else "No"


def test_a_judge_that_prefers_the_first_shown_of_siblings_judged_together_shows_the_bias(tmp_path, capsys):
    # The env-grounded judge sees siblings in a shuffled order; the report reads where each was shown.
    with FakeOpenAIServer(responder=first_listed_judge) as server:
        lits.search(
            "blocksworld",
            model="m",
            base_url=server.base_url,
            limit=2,
            search_args={"n_iterations": 4, "n_actions": 3},
            save_dir=str(tmp_path / "bw"),
        )
    pref = verifier_of(tmp_path / "bw", capsys)[0]["position"]
    assert pref["groups"] >= 4 and pref["judged_together"] == pref["groups"]
    assert pref["first_top"] == 1.0 and pref["interval"][0] > pref["chance"] == round(1 / 3, 4)


# -- bad input: one line, non-zero ----------------------------------------------------------------------------


def _one_error(capsys: pytest.CaptureFixture[str], save: Path) -> str:
    capsys.readouterr()
    assert main(["eval", "--save-dir", str(save), "--verifier"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_chain_run_is_one_line(tmp_path, capsys):
    lits.chain("blocksworld", model="scripted", limit=1, save_dir=str(tmp_path / "chain"))
    assert "is a chain run" in _one_error(capsys, tmp_path / "chain")


def test_a_run_without_gold_answers_is_one_line(perfect_run, tmp_path, capsys):
    import shutil

    copy = shutil.copytree(perfect_run, tmp_path / "nogold")
    for path in (copy / "results").glob("*.json"):
        record = json.loads(path.read_text())
        record["example"] = {k: v for k, v in (record.get("example") or {}).items() if k != "answer"}
        path.write_text(json.dumps(record))
    assert "no gold answers" in _one_error(capsys, copy)


def test_an_unfinished_run_is_one_line_naming_resume(perfect_run, tmp_path, capsys):
    import shutil

    copy = shutil.copytree(perfect_run, tmp_path / "unfinished")
    (copy / "results" / "1.json").unlink()
    err = _one_error(capsys, copy)
    assert "1 unfinished instance" in err and "--resume" in err


def test_a_run_whose_search_trees_were_deleted_is_one_line(perfect_run, tmp_path, capsys):
    import shutil

    copy = shutil.copytree(perfect_run, tmp_path / "treeless")
    for journal in (copy / "checkpoints").glob("*.journal.jsonl"):
        journal.unlink()
    assert "kept no search tree" in _one_error(capsys, copy)
