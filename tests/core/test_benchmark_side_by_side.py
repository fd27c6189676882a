"""The side-by-side speed benchmark's pairing and its stub for the original LiTS (no original needed, no timing)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import original_lits  # noqa: E402  (the benchmarks folder is not a package)
import short_runs  # noqa: E402

POLICY_PROMPT = """[STATEMENT]
As initial conditions I have that, the red block is clear, the hand is empty, ...
My goal is to have that the red block is on top of the blue block.

Choose an action from the following options (ONLY output the action):

\tpick up the red block
\tpick up the blue block
\tunstack the green block from on top of the yellow block"""


def test_runs_alternate_ours_then_the_original():
    order: list[str] = []

    def run(side: str) -> Any:
        return lambda: order.append(side) or {"side": side}

    pairs = short_runs.interleaved(3, run("ours"), run("original"))
    assert order == ["ours", "original"] * 3
    assert all(mine["side"] == "ours" and theirs["side"] == "original" for mine, theirs in pairs)


def test_a_ratio_compares_the_two_runs_of_one_pair_per_iteration():
    pairs = [
        ({"search_cpu_s": 1.0, "iterations": 50}, {"search_cpu_s": 20.0, "iterations": 50}),
        ({"search_cpu_s": 3.0, "iterations": 50}, {"search_cpu_s": 30.0, "iterations": 40}),
    ]
    assert short_runs.pair_ratios(pairs, "search_cpu_s") == [pytest.approx(0.05), pytest.approx(0.08)]


def test_the_stub_proposes_each_listed_action_once_before_repeating_one():
    replies = original_lits.Replies()
    asked = [replies(POLICY_PROMPT, "policy_env_0_expand") for _ in range(4)]
    assert sorted(asked[:3]) == sorted(original_lits.listed_options(POLICY_PROMPT))
    assert asked[3] == asked[0]


def test_the_stub_judges_every_action_good():
    assert original_lits.Replies()("[ACTION]\npick up the red block\n[REASONING]", "prm_env_0_expand") == "good"


def test_the_stub_tells_the_world_model_what_the_action_changes():
    prompt = (
        "[ACTION] Pick up the brown block.\n[CHANGE] ...\n[SCENARIO 3]\n[STATE 0] I have that, ...\n"
        "    [ACTION] Unstack the red block from on top of the blue block.\n    [CHANGE]"
    )
    assert original_lits.Replies()(prompt, "dynamics_0_expand") == (
        "The hand was empty and is now holding the red block, the red block was on top of the blue block and is "
        "now in the hand, the red block is no longer clear, and the blue block is now clear."
    )


def test_the_stub_refuses_a_role_it_has_no_answer_for():
    with pytest.raises(ValueError, match="no answer for role 'bn_eval"):
        original_lits.Replies()("anything", "bn_eval_0")


def test_instructions_per_iteration_are_the_two_runs_difference_over_the_iterations_between_them(monkeypatch):
    counted = {"10": (1_000_000, {"iterations": 48, "calls": 300}), "1": (100_000, {"iterations": 3, "calls": 40})}
    monkeypatch.setattr(short_runs.subprocess, "run", lambda *a, **k: None)  # the uncounted run
    monkeypatch.setattr(short_runs, "instructions", lambda command: counted[command[command.index("--iterations") + 1]])
    command = ["python", "original_lits.py", "--iterations", "10", "--work-dir", "."]
    assert short_runs.instructions_per_iteration(command, 10, "the original") == pytest.approx(900_000 / 45)


def test_the_instruction_ratio_is_ours_over_the_originals(monkeypatch, capsys):
    per_iteration = {"ours": 2_000.0, "the original": 40_000.0}
    monkeypatch.setattr(short_runs.shutil, "which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr(short_runs, "instructions_per_iteration", lambda command, n, who: per_iteration[who])
    short_runs.print_instructions(["ours"], 10, ["theirs"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "ours / the original, instructions per iteration beyond the first: 0.0500"
