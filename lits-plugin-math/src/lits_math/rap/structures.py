"""RAP's reasoning structure: a chain of sub-questions, each with its voted answer."""

from __future__ import annotations

import dataclasses

from lits.structures.base import Step, TrajectoryState
from lits.api import register_state, register_type


@register_type
@dataclasses.dataclass
class SubQAStep(Step):
    """One sub-question (the action) and the answer the transition settled on.

    ``confidence`` is the share of sampled answers that agreed with
    ``sub_answer``; ``answer`` is set only when the step answers the original
    problem, which is what ends a chain.
    """

    sub_question: str = ""
    sub_answer: str = ""
    confidence: float = 0.0
    answer: str | None = None

    def get_action(self) -> str:
        return self.sub_question

    def get_answer(self) -> str | None:
        return self.answer

    def verb_step(self) -> str:
        if self.error is not None and not self.sub_question:
            return ""
        return f"Q: {self.sub_question}\nA: {self.sub_answer}"


@register_state
class SubQAState(TrajectoryState[SubQAStep]):
    """The sub-questions asked so far, in order."""

    def get_final_answer(self) -> str | None:
        """The answer to the original problem, once the latest step gives one."""
        return self[-1].get_answer() if self else None

    def render(self) -> str:
        return "\n".join(text for text in (step.verb_step() for step in self) if text)
