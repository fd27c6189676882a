"""``GenerativePRM``: a model judges each proposed reasoning step (process reward).

The score is P(Yes) to "is this step correct and useful?", from token
probabilities where the backend has them (see :mod:`judging`).  The question
is asked after the policy's own prompt for the same steps (its user
template's ``ask``), so both roles' prompts share one head in a server's
prefix cache; a domain's ``evaluate`` template instead is a whole prompt of
its own, under the judge's system prompt.  A domain with a trained PRM
registers its own reward model instead.
"""

from __future__ import annotations

from typing import Any

from lits.components.base import RewardModel
from lits.components.reward.judging import judge_yes, score_else_ask
from lits.components.thought_prompting import ThoughtPrompt
from lits.lm.base import Prompt
from lits.prompts.registry import PromptRegistry
from lits.structures.base import Step, TrajectoryState


class GenerativePRM(RewardModel[TrajectoryState[Step], object]):
    TASK_TYPE = "language_grounded"
    AGENT_NAME = "generative"

    def __init__(self, base_model: Any = None, task_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_model, task_name, **kwargs)
        #: The policy's prompts (core's ``concat`` policy for this task), whose head the judge shares.
        self.policy_prompt = ThoughtPrompt(
            PromptRegistry.get("policy", "concat", task_name, self.TASK_TYPE),
            PromptRegistry.get_usr("policy", "concat", task_name, self.TASK_TYPE),
        )

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
        done = [s.verb_step() for s in state if s.verb_step()]
        if spec.get("evaluate") and not spec.get("ask"):
            steps = "\n".join(done) or "(none)"
            question = str(spec["evaluate"]).format(question=query, steps=steps, step=text)
            p_yes, route = judge_yes(self.base_model, question, system=str(self.task_prompt_spec or ""))
            return p_yes, {"p_yes": round(p_yes, 4), "route": route}
        ask = str(spec.get("ask") or "Proposed next step: {step}\nCorrect? Answer Yes or No.\nAnswer:")
        question = ask.format(step=text)

        def asking(chat: bool) -> Prompt:
            if chat:
                return self.policy_prompt.asking(query, done, question)
            return self.policy_prompt.asking_text(query, done, question)

        verdict = score_else_ask(self.base_model, self.policy_prompt.asking_text(query, done, question), asking=asking)
        return verdict.p_yes, {"p_yes": round(verdict.p_yes, 4), "route": verdict.route}

    def reward(self, state: TrajectoryState[Step], action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        fast = float(kwargs.get("fast_reward", 0.0))
        confidence = float(kwargs.get("confidence", 1.0))
        return fast * confidence, {"fast_reward": fast, "confidence": confidence}
