"""Chains that loop: a step back into a visited state is replaced, a repeated tool call is told so."""

from __future__ import annotations

from lits.agents import ChainConfig, EnvChain, ReActChat
from lits.components.policy.tool_use import ToolUsePolicy
from lits.components.transition.tool_use import ToolUseTransition
from lits.testing import ScriptedModel
from lits.tools import CalculatorTool
from tests.agents.conftest import EXAMPLE, Parts
from tests.toy_domain import prefer

CALL = '{"tool": "calculator", "args": {"expression": "6*7"}}'


def _waiting_parts() -> Parts:
    """A model that would rather wait in place (a step back into the state it is in) than move right."""
    return Parts(ScriptedModel(scorer=prefer("wait", "move right", "move left")))


def test_a_step_back_into_a_visited_state_is_replaced_by_the_policys_next_choice(isolated_registry):
    p = _waiting_parts()
    result = EnvChain(ChainConfig(max_steps=4), p.policy, p.transition).run("2", 0, EXAMPLE)
    assert result.solved and [str(s.action) for s in result.state] == ["move right", "move right"]
    assert result.stats == {"repeats": 0, "steered_away": 2}


def test_with_avoid_repeats_off_the_chain_loops_as_the_policy_says(isolated_registry):
    p = _waiting_parts()
    result = EnvChain(ChainConfig(max_steps=4, avoid_repeats=False), p.policy, p.transition).run("2", 0, EXAMPLE)
    assert not result.solved and result.stopped == "max_steps" and result.stats is None


def test_a_chain_without_repeats_records_no_repeat_counts(parts):
    result = EnvChain(ChainConfig(max_steps=4), parts.policy, parts.transition).run("2", 0, EXAMPLE)
    assert result.solved and result.stats is None


def test_a_tool_call_that_repeats_an_earlier_one_with_the_same_result_is_told_so():
    model = ScriptedModel([f"Thought: multiply\nAction: {CALL}"] * 2 + ["Thought: done\nAnswer: 42"])
    tools = [CalculatorTool()]
    chain = ReActChat(
        ChainConfig(max_steps=5), ToolUsePolicy(base_model=model, tools=tools), ToolUseTransition(tools=tools)
    )
    result = chain.run("What is 6 times 7?", 0, {"query": "What is 6 times 7?"})
    first, second = result.state[0], result.state[1]
    assert first.observation == "42" and second.observation.startswith("42\n(Note: step 1 made this same call")
    assert result.stats == {"repeats": 1, "steered_away": 0}
    assert "step 1 made this same call" in model.calls[2][0]  # the model is told before its next step


def test_a_resumed_chain_remembers_the_states_and_counts_of_its_path_so_far(isolated_registry, tmp_path):
    p = _waiting_parts()
    EnvChain(ChainConfig(max_steps=1), p.policy, p.transition, checkpoint_dir=tmp_path).run("2", 0, EXAMPLE)
    longer = EnvChain(ChainConfig(max_steps=4), p.policy, p.transition, checkpoint_dir=tmp_path)
    resumed = longer.run("2", 0, EXAMPLE, resume=True)
    whole = EnvChain(ChainConfig(max_steps=4), p.policy, p.transition).run("2", 0, EXAMPLE)
    assert [str(s.action) for s in resumed.state] == [str(s.action) for s in whole.state]
    assert resumed.stats == whole.stats == {"repeats": 0, "steered_away": 2}
