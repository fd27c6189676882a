"""Tool-use structures: ReAct-style think / action / observation / answer steps."""

from __future__ import annotations

import dataclasses
from typing import Optional

from lits.structures.base import Step, StringAction, TrajectoryState
from lits.type_registry import register_type


@register_type
class ToolUseAction(StringAction):
    """A tool call as JSON text: ``{"tool": NAME, "args": {...}}``."""


@register_type
@dataclasses.dataclass
class ToolUseStep(Step):
    think: str = ""
    action: Optional[ToolUseAction] = None
    observation: Optional[str] = None
    answer: Optional[str] = None
    assistant_message: Optional[str] = None

    def verb_step(self) -> str:
        parts = []
        if self.think:
            parts.append(f"Thought: {self.think}")
        if self.action is not None:
            parts.append(f"Action: {self.action}")
        if self.observation is not None:
            parts.append(f"Observation: {self.observation}")
        if self.answer is not None:
            parts.append(f"Answer: {self.answer}")
        if self.error is not None:
            parts.append(f"Error: {self.error}")
        return "\n".join(parts)

    def to_messages(self) -> list[dict[str, str]]:
        """The assistant turn (raw text when kept) and the observation as the next user turn."""
        content = self.assistant_message or "\n".join(
            p for p in (f"Thought: {self.think}" if self.think else "",
                        f"Action: {self.action}" if self.action is not None else "",
                        f"Answer: {self.answer}" if self.answer is not None else "") if p)
        messages = [{"role": "assistant", "content": content}] if content else []
        if self.observation is not None:
            messages.append({"role": "user", "content": f"Observation: {self.observation}"})
        return messages


@register_type
class ToolUseState(TrajectoryState[ToolUseStep]):
    """State container for tool-use traces; each entry is a :class:`ToolUseStep`."""

    def get_final_answer(self) -> object:
        """The answer of the latest step, if it has one."""
        return self[-1].get_answer() if self else None

    def to_messages(self) -> list[dict[str, str]]:
        return [m for step in self for m in step.to_messages()]
