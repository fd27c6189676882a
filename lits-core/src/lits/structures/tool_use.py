"""Tool-use structures: ReAct-style think / action / observation / answer steps."""

from __future__ import annotations

import dataclasses
from typing import Literal

from lits.structures.base import Step, StringAction, TrajectoryState
from lits.type_registry import register_type


@register_type
class ToolUseAction(StringAction):
    """A tool call as JSON text: ``{"tool": NAME, "args": {...}}``."""


@register_type
@dataclasses.dataclass
class ToolUseStep(Step):
    think: str = ""
    action: ToolUseAction | None = None
    observation: str | None = None
    answer: str | None = None
    assistant_message: str | None = None

    def transcript(
        self,
        *,
        cue: bool = False,
        observation: bool = True,
        clip: int | None = None,
        error: Literal["line", "observation", None] = "line",
    ) -> str:
        """The step as ReAct transcript lines: Thought, Action, Answer, Observation, Error.

        The one rendering of a step (the policy's transcript, the judge's history, the assistant turn,
        :meth:`verb_step`).  ``cue``: always write the "Thought:" line (a base model continues the pattern);
        ``observation=False``: what the model wrote only; ``clip``: observations cut to that many characters;
        ``error``: on its own line, as the observation when there is none, or not shown.
        """
        lines = []
        if cue:
            lines.append(f"Thought: {self.think}".rstrip())
        elif self.think:
            lines.append(f"Thought: {self.think}")
        if self.action is not None:
            lines.append(f"Action: {self.action}")
        if self.answer is not None:
            lines.append(f"Answer: {self.answer}")
        seen = self.observation if observation else None
        if seen is not None:
            lines.append(f"Observation: {seen if clip is None or len(seen) <= clip else seen[:clip] + ' ...'}")
        elif error == "observation" and self.error is not None:
            lines.append(f"Observation: {self.error}")
        if error == "line" and self.error is not None:
            lines.append(f"Error: {self.error}")
        return "\n".join(lines)

    def verb_step(self) -> str:
        return self.transcript()

    def to_messages(self) -> list[dict[str, str]]:
        """The assistant turn (raw text when kept) and the observation as the next user turn."""
        content = self.assistant_message or self.transcript(observation=False, error=None)
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
