"""BlocksWorld semantics on all 590 real RAP cases."""

from __future__ import annotations

import re

import pytest

from lits_blocksworld import world
from lits_blocksworld.data import load_blocksworld


def test_the_split_has_590_cases_with_their_step_counts(rap_cases):
    assert len(rap_cases) == 590
    assert all(len(c["optimal_plan"]) == c["n_steps"] for c in rap_cases)


def test_every_optimal_plan_reaches_the_goal(rap_cases):
    for case in rap_cases:
        state = case["init_state_str"]
        assert not world.goal_check(case["query"], state)[0], case["id"]
        for action in case["optimal_plan"]:
            assert action in world.generate_actions(state), (case["id"], action)
            state = world.apply_action(state, action)
        assert world.goal_check(case["query"], state) == (True, 1.0), case["id"]


def _legal(facts: set[str], action: str) -> bool:
    """An independent precondition check written from the PDDL operators."""
    if m := re.fullmatch(r"pick up the (\w+) block", action):
        x = m.group(1)
        return {"the hand is empty", f"the {x} block is clear", f"the {x} block is on the table"} <= facts
    if m := re.fullmatch(r"unstack the (\w+) block from on top of the (\w+) block", action):
        x, y = m.groups()
        return {"the hand is empty", f"the {x} block is clear", f"the {x} block is on top of the {y} block"} <= facts
    if m := re.fullmatch(r"put down the (\w+) block", action):
        return f"the hand is holding the {m.group(1)} block" in facts
    if m := re.fullmatch(r"stack the (\w+) block on top of the (\w+) block", action):
        x, y = m.groups()
        return x != y and {f"the hand is holding the {x} block", f"the {y} block is clear"} <= facts
    return False


def test_every_generated_action_along_the_optimal_paths_is_legal(rap_cases):
    checked = 0
    for case in rap_cases:
        state = case["init_state_str"]
        for action in case["optimal_plan"]:
            facts = set(world.split_facts(state))
            for candidate in world.generate_actions(state):
                assert _legal(facts, candidate), (case["id"], state, candidate)
                world.apply_action(state, candidate)
                checked += 1
            state = world.apply_action(state, action)
    assert checked > 5000


def test_generated_actions_are_exactly_the_legal_ones(rap_cases):
    blocks = ["red", "blue", "orange", "yellow"]
    templates = [
        "pick up the {x} block",
        "put down the {x} block",
        "stack the {x} block on top of the {y} block",
        "unstack the {x} block from on top of the {y} block",
    ]
    for case in rap_cases[:60]:
        state = case["init_state_str"]
        for action in case["optimal_plan"]:
            facts = set(world.split_facts(state))
            every = {t.format(x=x, y=y) for t in templates for x in blocks for y in blocks if x != y}
            assert set(world.generate_actions(state)) == {a for a in every if _legal(facts, a)}
            state = world.apply_action(state, action)


def test_loader_reads_the_real_split_by_step_count(bw_root):
    cases = load_blocksworld(path=str(bw_root), steps="2,4")
    assert {c["n_steps"] for c in cases} == {2, 4}
    assert cases[0]["pddl"].startswith("instances/blocksworld/")


@pytest.mark.parametrize("steps", ["3", "x"])
def test_loader_rejects_a_step_count_the_split_does_not_have(bw_root, steps):
    with pytest.raises((FileNotFoundError, ValueError)):
        load_blocksworld(path=str(bw_root), steps=steps)
