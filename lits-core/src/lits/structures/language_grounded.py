"""Language-grounded structures: a chain of thought, one reasoning step at a time."""

from __future__ import annotations

import dataclasses

from lits.structures.base import Step, TrajectoryState
from lits.type_registry import register_type


@register_type
@dataclasses.dataclass
class ThoughtStep(Step):
    """One reasoning fragment; ``answer`` is set when the fragment states the final answer."""

    action: str = ""
    answer: str | None = None

    def verb_step(self) -> str:
        return self.action


@register_type
class ThoughtState(TrajectoryState[ThoughtStep]):
    """The steps of a chain of thought; concatenated they form the solution."""

    def get_final_answer(self) -> object:
        """The answer stated by the latest step, if it states one."""
        return self[-1].get_answer() if self else None

    def render(self) -> str:
        return "\n".join(step.action for step in self if step.action)
