"""``ToolUseTransition``: domain-agnostic; all domain logic lives in the tools."""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from lits.components.base import Transition
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep
from lits.tools.base import BaseTool, ToolUnavailable, execute_tool_action

MALFORMED = "Assistant output did not provide an action or an answer. Reply with a tool call or a final answer."


class ToolUseTransition(Transition[ToolUseState, ToolUseAction]):
    """Materializes tool observations for ToolUsePolicy-driven search and chains."""

    TASK_TYPE: ClassVar[str | None] = "tool_use"
    AGENT_NAME = "tool_use"

    def __init__(
        self,
        tools: Sequence[BaseTool] = (),
        observation_on_error: str = "Tool execution failed.",
        tool_timeout: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.tools = list(tools)
        self.observation_on_error = observation_on_error
        self.tool_timeout = tool_timeout

    def init_state(self, **kwargs: object) -> ToolUseState:
        return ToolUseState()

    def _step(
        self, state: ToolUseState, step_or_action: object, query_or_goals: object, **kwargs: object
    ) -> tuple[ToolUseState, dict[str, object]]:
        step = (
            step_or_action
            if isinstance(step_or_action, ToolUseStep)
            else ToolUseStep(action=ToolUseAction(str(step_or_action)))
        )
        new_state = state.copy()
        if step.answer is not None:  # case 1: final answer, nothing to execute
            new_state.append(step)
            return new_state, {"confidence": 1.0}
        if step.error is not None:  # case 2: the policy could not produce a step
            new_state.append(step)
            return new_state, {"confidence": 0.0}
        if step.action is None:  # case 3: malformed output
            step.observation = MALFORMED
            new_state.append(step)
            return new_state, {"confidence": 0.0}
        try:  # case 4: execute the tool call
            step.observation = execute_tool_action(step.action, self.tools, self.tool_timeout)
        except ToolUnavailable:  # the tool's backend is gone for good: the instance fails, in one line
            raise
        except Exception as exc:  # execute_tool_action contains tool errors; this guards the rest
            step.observation = f"{self.observation_on_error} {type(exc).__name__}: {exc}"
        new_state.append(step)
        return new_state, {"confidence": 1.0}

    def is_terminal(self, state: ToolUseState, query_or_goals: object = None, **kwargs: object) -> bool:
        if not state:
            return False
        return bool(state[-1].get_answer())
