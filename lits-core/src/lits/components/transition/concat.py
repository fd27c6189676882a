"""``ConcatTransition``: append a thought; the dataset's extractor decides when it answers."""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from lits.answers import extract_stated_answer
from lits.components.base import Transition
from lits.structures.language_grounded import ThoughtState, ThoughtStep


class ConcatTransition(Transition[ThoughtState, str]):
    TASK_TYPE: ClassVar[str | None] = "language_grounded"
    AGENT_NAME = "concat"

    def __init__(self, extract_answer: Callable[[str], str | None] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.extract_answer = extract_answer or extract_stated_answer

    def init_state(self, **kwargs: object) -> ThoughtState:
        return ThoughtState()

    def _step(
        self, state: ThoughtState, step_or_action: object, query_or_goals: object, **kwargs: object
    ) -> tuple[ThoughtState, dict[str, object]]:
        new_state = state.copy()
        if isinstance(step_or_action, ThoughtStep) and step_or_action.error is not None:
            new_state.append(step_or_action)
            return new_state, {"confidence": 0.0}
        text = step_or_action.action if isinstance(step_or_action, ThoughtStep) else str(step_or_action)
        # A new step, never the policy's object: the tree keeps that one as the node's proposal.
        new_state.append(ThoughtStep(action=text, answer=self.extract_answer(text)))
        return new_state, {"confidence": 1.0}
