"""``ToolUsePRM``: an LLM-as-judge score for tool-use tree search.

The whole proposed step is judged, answers included (an answer step has no
action, yet it is the step that matters most).  ``judge_yes`` prefers the
log-likelihood of " Yes" against " No", the one judging route a base model
supports.  The paper's finding applies: self-preference bias makes such judges
weak; a domain with a verifiable signal should register its own reward model.
"""

from __future__ import annotations

from typing import Any

from lits.components.base import RewardModel
from lits.components.reward.judging import judge_yes
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep

SYSTEM = "You judge the steps of an agent that answers questions with tools."
#: Long tool results would crowd a small model's context: the judge sees their start.
OBSERVATION_CHARS = 300
HISTORY_CHARS = 2000


def history(state: ToolUseState) -> str:
    """The steps so far, observations clipped, oldest dropped first beyond ``HISTORY_CHARS``."""
    text = "\n".join(step.transcript(clip=OBSERVATION_CHARS, error=None) for step in state) or "(nothing yet)"
    return text if len(text) <= HISTORY_CHARS else "... " + text[-HISTORY_CHARS:]


def judge_question(state: ToolUseState, proposal: str, query: object, is_answer: bool) -> str:
    ask = (
        "Is this the correct final answer to the question?"
        if is_answer
        else "Is this a useful next step towards answering the question?"
    )
    return (
        f"Question: {query}\nSteps so far:\n{history(state)}\nProposed next step:\n{proposal}\n"
        f"{ask} Answer Yes or No.\nAnswer:"
    )


class ToolUsePRM(RewardModel[ToolUseState, ToolUseAction | None]):
    TASK_TYPE = "tool_use"
    AGENT_NAME = "tool_use"

    def _fast_reward(
        self,
        state: ToolUseState,
        action: ToolUseAction | None,
        query: object,
        query_idx: int | None,
        from_phase: str = "",
        **kwargs: Any,
    ) -> tuple[float, dict[str, object]]:
        step = kwargs.get("step")
        if not isinstance(step, ToolUseStep):
            step = ToolUseStep(action=action) if action is not None else None
        if self.base_model is None or step is None:
            return 0.0, {}
        if step.action is None and step.answer is None:  # error or malformed: the transition gives confidence 0
            return 0.0, {"skipped": "no action or answer"}
        proposal = step.transcript(observation=False, error=None)  # the transition may already have filled it in
        system = str(self.task_prompt_spec) if self.task_prompt_spec else SYSTEM
        p_yes, route = judge_yes(
            self.base_model, judge_question(state, proposal, query, step.answer is not None), system=system
        )
        return p_yes, {"self_eval": p_yes, "route": route}

    def reward(
        self, state: ToolUseState, action: ToolUseAction | None, **kwargs: Any
    ) -> tuple[float, dict[str, object]]:
        fast = float(kwargs.get("fast_reward", 0.0))
        confidence = float(kwargs.get("confidence", 1.0))
        return fast * confidence, {"fast_reward": fast, "confidence": confidence}
