"""Tool use in core: BaseTool, execute_tool_action and every ToolUseTransition case (seed 004)."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest
from pydantic import BaseModel

from lits.components.transition.tool_use import ToolUseTransition
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep
from lits.tools import BaseTool, CalculatorTool, SearchTool, Tool, execute_tool_action
from lits.type_registry import deserialize

CALC = '{"tool": "calculator", "args": {"expression": "2+2"}}'


@pytest.fixture
def transition() -> ToolUseTransition:
    tools = [CalculatorTool(), SearchTool()]
    return ToolUseTransition(tools=tools, observation_on_error="Tool execution failed.")


def test_init_state_is_an_empty_trajectory(transition):
    state = transition.init_state()
    assert isinstance(state, ToolUseState) and len(state) == 0


def test_case_1_action_step_is_executed_and_observed(transition):
    step = ToolUseStep(think="I need to calculate 2+2", action=ToolUseAction(CALC))
    new_state, aux = transition.step(transition.init_state(), step)
    assert step.observation == "4" and aux == {"confidence": 1.0} and new_state[-1] is step


def test_case_2_answer_step_is_appended_without_execution(transition):
    step = ToolUseStep(think="The calculation is complete", answer="The answer is 4")
    new_state, aux = transition.step(transition.init_state(), step)
    assert new_state[-1].observation is None and aux == {"confidence": 1.0}
    assert transition.is_terminal(new_state, query_or_goals="What is 2+2?")


def test_case_3_error_step_is_appended_with_zero_confidence(transition):
    step = ToolUseStep(error="Failed to parse action from assistant message")
    new_state, aux = transition.step(transition.init_state(), step)
    assert new_state[-1] is step and aux == {"confidence": 0.0}


def test_case_4_malformed_step_gets_an_error_observation(transition):
    step = ToolUseStep(think="Some reasoning...")
    new_state, aux = transition.step(transition.init_state(), step)
    assert step.observation.startswith("Assistant output did not provide") and aux == {"confidence": 0.0}


def test_is_terminal_only_after_an_answer(transition):
    state = ToolUseState([ToolUseStep(action=ToolUseAction(CALC), observation="Result: 4")])
    assert not transition.is_terminal(state, query_or_goals="What is 2+2?")
    state.append(ToolUseStep(answer="The answer is 4"))
    assert transition.is_terminal(state, query_or_goals="What is 2+2?")
    assert state.get_final_answer() == "The answer is 4"


def test_transition_never_mutates_the_input_state(transition):
    state = transition.init_state()
    transition.step(state, ToolUseStep(action=ToolUseAction(CALC)))
    assert len(state) == 0


def test_arguments_are_validated_against_the_schema_before_running():
    observation = execute_tool_action('{"tool": "calculator", "args": {"expr": "1"}}', [CalculatorTool()])
    assert observation.startswith("Invalid arguments for calculator: expression: Field required")


@pytest.mark.parametrize(
    "action, expected",
    [
        ("not json", "Invalid tool call: tool call is not JSON"),
        ('{"args": {}}', "Invalid tool call: tool call has no 'tool' name"),
        ('{"tool": "weather", "args": {}}', "Unknown tool 'weather'; available tools: calculator"),
    ],
)
def test_bad_tool_calls_become_observations(action, expected):
    assert execute_tool_action(action, [CalculatorTool()]).startswith(expected)


def test_a_failing_tool_becomes_an_observation_not_an_exception():
    observation = execute_tool_action(
        '{"tool": "calculator", "args": {"expression": "__import__(1)"}}', [CalculatorTool()]
    )
    assert observation.startswith("Tool calculator failed: ValueError: only numbers")


class SleepyInput(BaseModel):
    seconds: float


class SleepyTool(BaseTool):
    """Sleeps ``seconds`` unless :attr:`woken` is set first (the test wakes it once it has its answer)."""

    name = "sleepy"
    description = "sleeps"
    args_schema = SleepyInput
    woken = threading.Event()
    awake = threading.Event()

    def _run(self, seconds: float) -> str:
        self.woken.wait(seconds)
        self.awake.set()
        return "awake"


def test_a_tool_that_hangs_times_out_with_an_observation():
    tool = SleepyTool()
    tool.woken, tool.awake = threading.Event(), threading.Event()
    observation = execute_tool_action('{"tool": "sleepy", "args": {"seconds": 60}}', [tool], timeout=0.2)
    assert observation == "Tool sleepy timed out after 0.2 s"
    assert not tool.awake.is_set()  # the observation came while the tool still slept
    tool.woken.set()


class QuittingTool(BaseTool):
    name = "quits"
    description = "calls sys.exit"
    args_schema = SleepyInput

    def _run(self, seconds: float) -> str:
        raise SystemExit(3)


def test_a_tools_sys_exit_reaches_the_caller_instead_of_ending_its_thread_silently():
    """The instance fails, named (the runner's account of a plugin's sys.exit()), instead of a None observation."""
    with pytest.raises(SystemExit):
        execute_tool_action('{"tool": "quits", "args": {"seconds": 0}}', [QuittingTool()])


def test_tool_time_budget_applies_inside_the_transition():
    transition = ToolUseTransition(tools=[SleepyTool(timeout=0.1)])
    step = ToolUseStep(action=ToolUseAction('{"tool": "sleepy", "args": {"seconds": 3}}'))
    transition.step(transition.init_state(), step)
    assert "timed out" in step.observation


def test_seed_style_tool_with_its_own_run_and_a_client():
    class SQLExecutor(Tool):
        name = "execute_sql"
        description = "Execute SQL query against the database"

        def run(self, query: str) -> str:
            return str(self.client.execute(query).fetchall())

    db = sqlite3.connect(":memory:", check_same_thread=False)  # tools run in a worker thread
    tools = [SQLExecutor(client=db)]
    assert execute_tool_action('{"tool": "execute_sql", "args": {"query": "select 1 + 1"}}', tools) == "[(2,)]"


def test_search_tool_finds_documents_by_words():
    tool = SearchTool(documents=["the cat sat", "dogs bark"])
    assert execute_tool_action('{"tool": "search", "args": {"query": "cat"}}', [tool]) == "the cat sat"


def test_tool_use_state_round_trips_with_exact_types():
    state = ToolUseState(
        [
            ToolUseStep(think="t", action=ToolUseAction(CALC), observation="4"),
            ToolUseStep(answer="4", assistant_message="Answer: 4"),
        ]
    )
    back = deserialize(json.loads(json.dumps(state.to_dict())))
    assert type(back) is ToolUseState and back == state and type(back[0].action) is ToolUseAction


def test_steps_turn_into_chat_messages():
    step = ToolUseStep(think="add", action=ToolUseAction(CALC), observation="4")
    assert step.to_messages() == [
        {"role": "assistant", "content": f"Thought: add\nAction: {CALC}"},
        {"role": "user", "content": "Observation: 4"},
    ]
    assert "Observation: 4" in step.verb_step()
