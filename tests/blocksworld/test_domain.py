"""The BlocksWorld world, transition, generated data and registrations."""

from __future__ import annotations

import pytest

from lits.prompts.registry import PromptRegistry
from lits.registry import ComponentRegistry, infer_task_type, load_dataset
from lits.structures.env_grounded import EnvAction, EnvStep
from lits_blocksworld import BlocksWorldTransition, world
from lits_blocksworld.data import generate_instances, load_blocksworld, optimal_plan
from lits_blocksworld.pddl import parse_plan, parse_problem

START = (
    "the red block is clear, the yellow block is clear, the hand is empty, the red block is on top "
    "of the blue block, the blue block is on the table and the yellow block is on the table"
)
GOAL = "the blue block is on top of the yellow block"


def test_state_text_round_trips_through_the_world_model():
    assert world.render(world.parse_state(START)) == START


def test_unreadable_fact_is_named():
    with pytest.raises(ValueError, match="the sky is blue"):
        world.parse_state("the hand is empty and the sky is blue")


def test_illegal_action_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="not clear"):
        world.apply_action(START, "unstack the blue block from on top of the red block")


def test_goal_progress_is_the_fraction_of_goal_facts_met():
    goals = "the red block is on top of the blue block and the blue block is on top of the yellow block"
    assert world.goal_check(goals, START) == (False, 0.5)


def test_pddl_problem_becomes_rap_text():
    text = (
        "(define (problem p) (:objects a b) (:init (handempty) (ontable a) (on b a) (clear b)) (:goal (and (on a b))))"
    )
    init, goals = parse_problem(text)
    assert init == (
        "the blue block is clear, the hand is empty, the blue block is on top of the red block "
        "and the red block is on the table"
    )
    assert goals == "the red block is on top of the blue block"


def test_pddl_plan_becomes_action_texts():
    assert parse_plan("(unstack b c)\n(stack b d)\n") == [
        "unstack the blue block from on top of the orange block",
        "stack the blue block on top of the yellow block",
    ]


def test_generated_instances_are_deterministic_for_a_seed():
    assert generate_instances([2, 4], 3, seed=7) == generate_instances([2, 4], 3, seed=7)
    assert generate_instances([2], 3, seed=7) != generate_instances([2], 3, seed=8)


def test_generated_plans_are_optimal_and_reach_the_goal():
    for case in generate_instances([2, 4, 6], 3, seed=1):
        assert len(optimal_plan(case["init_state_str"], case["query"])) == case["n_steps"]
        state = case["init_state_str"]
        for action in case["optimal_plan"]:
            state = world.apply_action(state, action)
        assert world.goal_check(case["query"], state)[0]


def test_default_dataset_needs_no_files():
    cases = load_blocksworld()
    assert {c["n_steps"] for c in cases} == {2, 4} and all("init_state_str" in c for c in cases)


def test_unknown_dataset_argument_is_rejected_by_name():
    with pytest.raises(ValueError, match="colour"):
        load_blocksworld(colour="red")


def test_missing_data_folder_is_named():
    with pytest.raises(FileNotFoundError, match="/no/such/folder"):
        load_blocksworld(path="/no/such/folder")


def test_init_state_needs_the_initial_state_text():
    with pytest.raises(ValueError, match="init_state_str"):
        BlocksWorldTransition().init_state(query=GOAL)


def test_step_applies_the_action_and_reports_goal_progress():
    t = BlocksWorldTransition()
    state = t.init_state(init_state_str=START)
    new_state, aux = t.step(
        state, EnvStep(action=EnvAction("unstack the red block from on top of the blue block")), GOAL
    )
    assert new_state.env_state.startswith("the blue block is clear")
    assert aux["goal_reached"] == (False, 0.0) and len(state) == 0


def test_invalid_action_gives_an_error_step_and_keeps_the_state():
    t = BlocksWorldTransition()
    state = t.init_state(init_state_str=START)
    new_state, aux = t.step(state, EnvStep(action=EnvAction("pick up the blue block")), GOAL)
    assert new_state[-1].error.startswith("invalid action") and new_state.env_state == START


def test_the_plugin_registers_its_transition_dataset_and_prompts():
    assert ComponentRegistry.get_transition("blocksworld") is BlocksWorldTransition
    assert infer_task_type("blocksworld") == "env_grounded"
    assert load_dataset("blocksworld", steps=2, n=1)[0]["n_steps"] == 2
    assert "### Plan" in PromptRegistry.get("policy", "env_grounded", "blocksworld", None)


def test_blocksworld_prompts_do_not_fall_back_to_generic_ones():
    assert BlocksWorldTransition.TASK_TYPE is None


def test_a_chat_model_sees_the_worked_example_as_earlier_turns_not_in_the_system_prompt():
    from lits.components.env_prompting import EnvPrompt
    from lits.structures.env_grounded import EnvState

    prompt = EnvPrompt(
        PromptRegistry.get("policy", "env_grounded", "blocksworld", "env_grounded"),
        PromptRegistry.get_usr("policy", "env_grounded", "blocksworld", "env_grounded"),
    )
    start = "the orange block is clear, the hand is empty and the orange block is on the table"
    messages = prompt.messages(
        EnvState(init_state=start), "the orange block is on the table", ["pick up the orange block"]
    )
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "### Plan" not in messages[0]["content"]
    for example in messages[1:-1:2]:  # every example answer is one of the actions its turn lists
        answer = messages[messages.index(example) + 1]["content"]
        assert answer in example["content"].split("Legal actions:\n", 1)[1]
    assert messages[-1]["content"].endswith("exactly as listed.") and "orange" in messages[-1]["content"]


def test_the_judge_asks_after_the_policys_own_prompt_so_both_share_one_cached_head():
    # A one-slot server re-reads what follows the prefix the previous request shared: the judge's prompt must
    # repeat the policy's (rules, examples, problem, plan so far) byte for byte and ask its question last.
    from lits.components.env_prompting import EnvPrompt
    from lits.components.reward.env_grounded import EnvGroundedPRM
    from lits.structures.env_grounded import EnvState
    from lits.testing.prompt_heads import flat

    prompt = EnvPrompt(
        PromptRegistry.get("policy", "env_grounded", "blocksworld", "env_grounded"),
        PromptRegistry.get_usr("policy", "env_grounded", "blocksworld", "env_grounded"),
    )
    judge = EnvGroundedPRM(None, "blocksworld", generate_all_actions=world.generate_actions)
    state = EnvState(init_state=START)
    actions = world.generate_actions(START)
    policy = flat(prompt.messages(state, GOAL, actions))
    judged = flat(judge.judge_messages(state, [EnvAction(a) for a in actions[:2]], GOAL))
    question = policy.index("\n\nNow: ", policy.rindex("### Problem"))
    assert judged.startswith(policy[:question]) and GOAL in policy[:question]
