"""ToolUsePolicy parsing, ReActChat, and a tool-use dataset end to end through the CLI."""

from __future__ import annotations

import json

import pytest

from lits.agents import ReActChat
from lits.components.policy.tool_use import ToolUsePolicy, after_cue, parse_reply
from lits.components.reward.tool_use import ToolUsePRM
from lits.components.transition.tool_use import ToolUseTransition
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep
from lits.testing import ScriptedModel
from lits.tools import CalculatorTool
from tests.core.conftest import plugins_json

CALL = '{"tool": "calculator", "args": {"expression": "6*7"}}'


def test_a_reply_with_an_action_becomes_an_action_step():
    step = parse_reply(f"Thought: multiply\nAction: {CALL}\nObservation: made up")
    assert step.think == "multiply" and str(step.action) == CALL and step.answer is None


def test_a_reply_with_an_answer_becomes_an_answer_step():
    step = parse_reply("Thought: done\nAnswer: 42")
    assert step.answer == "42" and step.action is None and step.assistant_message.endswith("42")


def test_an_unreadable_action_becomes_an_error_step():
    assert "not a complete JSON object" in parse_reply('Action: {"tool": "calculator"').error


def test_a_reply_with_neither_is_left_for_the_transition_to_call_malformed():
    step = parse_reply("I am not sure what to do")
    assert step.action is None and step.answer is None and step.error is None


def test_an_answer_is_only_its_first_line():
    step = parse_reply("Thought: it is the first\nAnswer: 1. 4.3\nAnswer: 2. 2.6\nAnswer: 3. 4.5")
    assert step.answer == "1. 4.3"


def test_an_empty_answer_becomes_an_error_step():
    step = parse_reply("Thought: done\nAnswer:   \n")
    assert step.answer is None and step.error == "Answer is empty"


def test_a_base_model_gets_a_text_prompt_ending_with_the_thought_cue_and_its_reply_parses_into_an_action():
    model = ScriptedModel([f" multiply the numbers\nAction: {CALL}\n"])  # continues after the cue
    steps = ToolUsePolicy(base_model=model, tools=[CalculatorTool()]).get_actions(
        ToolUseState(), n_actions=1, query="What is 6 times 7?"
    )
    prompt, params = model.calls[0]
    assert prompt.endswith("Question: What is 6 times 7?\nThought:")
    assert str(steps[0].action) == CALL and steps[0].think == "multiply the numbers"
    assert {"Observation:", "\nQuestion:"} <= set(params.stop)


@pytest.mark.parametrize("continuation", [f"\nAction: {CALL}", f" Thought: \nAction: {CALL}"])
def test_a_base_model_continuation_that_skips_or_repeats_the_cue_has_an_empty_thought(continuation):
    step = parse_reply(after_cue(continuation))
    assert step.think == "" and str(step.action) == CALL


def test_the_text_prompt_shows_the_trajectory_so_far_as_thought_action_observation_lines():
    model = ScriptedModel(["Thought: done\nAnswer: 42"])
    state = ToolUseState([ToolUseStep(think="multiply", action=ToolUseAction(CALL), observation="42")])
    ToolUsePolicy(base_model=model, tools=[CalculatorTool()]).get_actions(state, n_actions=1, query="q")
    assert model.calls[0][0].endswith(f"Question: q\nThought: multiply\nAction: {CALL}\nObservation: 42\nThought:")


def test_a_chat_model_keeps_the_message_form():
    model = ScriptedModel(["Thought: done\nAnswer: 42"])
    model.chat_native = True
    policy = ToolUsePolicy(base_model=model, tools=[CalculatorTool()])
    steps = policy.get_actions(ToolUseState(), n_actions=1, query="q")
    prompt = model.calls[0][0]
    assert prompt.startswith("system: ") and "\nuser: Question: q" in prompt and not prompt.endswith("Thought:")
    assert steps[0].answer == "42"


def _yes_leaning_judge() -> ScriptedModel:
    return ScriptedModel(scorer=lambda prompt, continuation: -0.2 if continuation == " Yes" else -1.8)


def test_the_prm_judges_an_answer_step_although_it_has_no_action():
    judge = _yes_leaning_judge()
    score, details = ToolUsePRM(base_model=judge).fast_reward(
        ToolUseState(), None, "What is 6 times 7?", 0, step=ToolUseStep(think="done", answer="42")
    )
    assert 0.5 < score < 1 and details["route"] == "loglikelihood"
    assert "Answer: 42" in judge.calls[0][0] and "correct final answer" in judge.calls[0][0]


def test_the_prm_judges_the_whole_proposed_step_not_just_its_action():
    judge = _yes_leaning_judge()
    step = ToolUseStep(think="multiply first", action=ToolUseAction(CALL))
    ToolUsePRM(base_model=judge).fast_reward(ToolUseState(), step.action, "q", 0, step=step)
    assert f"Proposed next step:\nThought: multiply first\nAction: {CALL}\n" in judge.calls[0][0]


def test_the_prm_does_not_ask_about_a_step_that_can_only_fail():
    judge = _yes_leaning_judge()
    score, _ = ToolUsePRM(base_model=judge).fast_reward(ToolUseState(), None, "q", 0, step=ToolUseStep(error="bad"))
    assert score == 0.0 and judge.calls == []


def test_the_prm_reward_scales_the_judge_by_the_transition_confidence():
    reward, _ = ToolUsePRM().reward(ToolUseState(), None, fast_reward=0.8, confidence=0.5)
    assert reward == pytest.approx(0.4)


def _two_step_model() -> ScriptedModel:
    def reply(prompt: str, params, index: int) -> str:
        return "Thought: done\nAnswer: 42" if "Observation: 42" in prompt else f"Thought: multiply\nAction: {CALL}"

    return ScriptedModel(reply)


def test_react_chat_calls_the_tool_then_answers():
    tools = [CalculatorTool()]
    agent = ReActChat(
        policy=ToolUsePolicy(base_model=_two_step_model(), tools=tools), transition=ToolUseTransition(tools=tools)
    )
    result = agent.run("What is 6 times 7?", 0, {"query": "What is 6 times 7?"})
    assert result.solved and result.state.get_final_answer() == "42"
    assert result.state[0].observation == "42"


def test_policy_prompt_lists_the_tools_and_the_context():
    policy = ToolUsePolicy(base_model=ScriptedModel(), tools=[CalculatorTool()], tool_context="Use integers.")
    system = policy.messages(ToolUseTransition().init_state(), "q")[0]["content"]
    assert '"name": "calculator"' in system and "Use integers." in system and "Action:" in system


TOY_PLUGIN = """
from lits.registry import register_dataset, register_resource
from lits.tools import CalculatorTool

@register_dataset("toy_calc", task_type="tool_use")
def load(**kwargs):
    return [{"query": "What is 6 times 7?", "answer": "42"}, {"query": "What is 6 times 7, again?", "answer": "41"}]

@register_resource("toy_calc")
def resource(**kwargs):
    return {"tools": [CalculatorTool()], "tool_context": "Arithmetic only."}
"""


@pytest.fixture
def toy_calc(install_plugin) -> None:
    install_plugin("lits-plugin-toycalc", "toy_calc", TOY_PLUGIN)


@pytest.mark.usefixtures("toy_calc")
@pytest.mark.parametrize(
    "command", [["chain"], ["search", "--search-arg", "n_iterations=2", "--search-arg", "n_actions=1"]]
)
def test_a_tool_use_dataset_runs_by_name_with_no_component_flags(run_lits, site_dir, command):
    from lits.testing.servers.openai_compat import FakeOpenAIServer

    def reply(prompt: str, body: dict) -> str:
        if "Answer Yes or No" in prompt:
            return "Yes"
        if "Observation: 42" in prompt:
            return "Thought: done\nAnswer: 42"
        return f"Thought: multiply\nAction: {CALL}"

    with FakeOpenAIServer(responder=reply) as srv:
        result = run_lits(
            *command, "--dataset", "toy_calc", "--model", "m", "--base-url", srv.base_url, "--save-dir", "run"
        )
    assert result.returncode == 0, result.stderr
    summary = json.loads((site_dir.parent / "run" / "eval_results.json").read_text())
    assert summary["instances"] == 2 and summary["solved"] == 1  # the second gold answer is 41
    record = json.loads((site_dir.parent / "run" / "results" / "0.json").read_text())
    assert record["eval"]["answer"] == "42"
    assert plugins_json(run_lits("plugins", "--json"))["lits-plugin-toycalc"]["registered"]["resource"] == ["toy_calc"]
    again = run_lits("eval", "--save-dir", "run", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["solved"] == 1
