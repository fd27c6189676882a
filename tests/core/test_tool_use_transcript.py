"""A tool-use step has one rendering, ``ToolUseStep.transcript``, that every reader of steps uses."""

from __future__ import annotations

from lits.components.policy.tool_use import ToolUsePolicy
from lits.components.reward.tool_use import OBSERVATION_CHARS, history
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep


def called(observation: str) -> ToolUseStep:
    return ToolUseStep(
        think="look it up", action=ToolUseAction('{"tool": "search", "args": {}}'), observation=observation
    )


def test_a_step_reads_in_the_order_it_happened_thought_action_answer_observation_error() -> None:
    refused = ToolUseStep(think="done", answer="42", observation="refused: seen before", error="refused: seen before")
    assert refused.verb_step() == (
        "Thought: done\nAnswer: 42\nObservation: refused: seen before\nError: refused: seen before"
    )


def test_the_judge_sees_the_policys_transcript_with_long_observations_clipped() -> None:
    long_result = "x" * (OBSERVATION_CHARS + 50)
    state = ToolUseState([called("3 rows")])
    prompt = ToolUsePolicy(task_name="tool_use").completion_prompt(state, "How many?")
    assert called("3 rows").transcript(cue=True, error="observation") in prompt
    assert history(state) == called("3 rows").transcript()
    assert history(ToolUseState([called(long_result)])).endswith("x" * OBSERVATION_CHARS + " ...")


def test_an_error_step_shows_its_error_to_the_policy_as_the_observation() -> None:
    step = ToolUseStep(think="", error="Answer is empty")
    assert step.transcript(cue=True, error="observation") == "Thought:\nObservation: Answer is empty"


def test_the_assistant_turn_is_what_the_model_wrote_without_the_observation() -> None:
    assert called("3 rows").to_messages()[0]["content"] == called("3 rows").transcript(observation=False)
