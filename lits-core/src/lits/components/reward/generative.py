"""``GenerativePRM``: a model judges each proposed reasoning step (process reward).

The score is P(Yes) to "is this step correct and useful?", from token
probabilities where the backend has them (see :mod:`judging`).  A domain with
a trained PRM registers its own reward model instead.
"""

from __future__ import annotations

from typing import Any

from lits.components.base import RewardModel
from lits.components.reward.judging import judge_yes
from lits.structures.base import Step, TrajectoryState


class GenerativePRM(RewardModel[TrajectoryState[Step], object]):
    TASK_TYPE = "language_grounded"
    AGENT_NAME = "generative"

    def _fast_reward(
        self,
        state: TrajectoryState[Step],
        action: object,
        query: object,
        query_idx: int | None,
        from_phase: str = "",
        **kwargs: Any,
    ) -> tuple[float, dict[str, object]]:
        step = kwargs.get("step")
        text = step.verb_step() if step is not None else str(action or "")
        if self.base_model is None or not text:
            return 0.0, {}
        spec = self.usr_prompt_spec if isinstance(self.usr_prompt_spec, dict) else {}
        template = (
            spec.get("evaluate") or "Problem: {question}\nSteps so far:\n{steps}\nNext step: {step}\nCorrect? Answer:"
        )
        steps = "\n".join(s.verb_step() for s in state) if state else "(none)"
        question = template.format(question=query, steps=steps, step=text)
        p_yes, route = judge_yes(self.base_model, question, system=str(self.task_prompt_spec or ""))
        return p_yes, {"p_yes": round(p_yes, 4), "route": route}

    def reward(self, state: TrajectoryState[Step], action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        fast = float(kwargs.get("fast_reward", 0.0))
        confidence = float(kwargs.get("confidence", 1.0))
        return fast * confidence, {"fast_reward": fast, "confidence": confidence}
