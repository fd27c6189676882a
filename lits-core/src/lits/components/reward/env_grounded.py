"""The generic env-grounded reward model.

``fast_reward`` (before execution) is the model's belief in the action: the
probability of the action text after the policy prompt when the backend can
score text, else the probability of "Yes" to a self-evaluation question.
``reward`` (after execution) mixes it with the domain's verifiable goal
progress from ``goal_check`` and adds a bonus when the goal is reached.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from lits.components.base import RewardModel
from lits.components.env_prompting import EnvPrompt
from lits.components.reward.judging import yes_probability
from lits.lm.base import LoglikelihoodUnsupported
from lits.prompts.registry import PromptRegistry
from lits.structures.env_grounded import EnvAction, EnvState


class EnvGroundedPRM(RewardModel[EnvState, EnvAction]):
    TASK_TYPE = "env_grounded"
    AGENT_NAME = "env_grounded"
    #: False once the backend turned out unable to score text.
    use_scoring: bool = True

    def __init__(
        self,
        base_model: Any = None,
        task_name: Optional[str] = None,
        fast_weight: float = 0.5,
        goal_bonus: float = 1.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_model, task_name, **kwargs)
        self.fast_weight = fast_weight
        self.goal_bonus = goal_bonus
        # Score against the policy's prompt so both share one scored prompt.
        self.policy_prompt = EnvPrompt(
            PromptRegistry.get("policy", "env_grounded", task_name, self.TASK_TYPE),
            PromptRegistry.get_usr("policy", "env_grounded", task_name, self.TASK_TYPE),
        )
        self.use_scoring = True

    def _fast_reward(
        self, state: EnvState, action: EnvAction, query: Any, query_idx: Optional[int], from_phase: str = "", **kwargs: Any
    ) -> tuple[float, dict[str, Any]]:
        if self.base_model is None or action is None:
            return 0.0, {}
        if self.use_scoring and getattr(self.base_model, "supports_loglikelihood", False):
            try:
                return self._intuition(state, action, query)
            except LoglikelihoodUnsupported:
                self.use_scoring = False
        return self._self_eval(state, action, query)

    def _fast_rewards(
        self, state: EnvState, actions: list[EnvAction], query: Any, query_idx: Optional[int],
        from_phase: str = "", steps: Sequence[Any] = (),
    ) -> list[tuple[float, dict[str, Any]]]:
        """All siblings scored in one request when the backend scores text (one dependent round, one slot)."""
        if (self.base_model is not None and self.use_scoring and len(actions) > 1
                and getattr(self.base_model, "supports_loglikelihood", False) and None not in actions):
            try:
                prompt = self.policy_prompt.completion(state, query, self._valid(state))
                logprobs = self.base_model.loglikelihood(
                    prompt, [self.policy_prompt.continuation(str(a)) for a in actions])
                return [(math.exp(min(0.0, lp)), {"logprob": lp}) for lp in logprobs]
            except LoglikelihoodUnsupported:
                self.use_scoring = False
        return super()._fast_rewards(state, actions, query, query_idx, from_phase=from_phase, steps=steps)

    def _intuition(self, state: EnvState, action: EnvAction, query: Any) -> tuple[float, dict[str, Any]]:
        assert self.base_model is not None
        prompt = self.policy_prompt.completion(state, query, self._valid(state))
        logprob = self.base_model.loglikelihood(prompt, [self.policy_prompt.continuation(str(action))])[0]
        return math.exp(min(0.0, logprob)), {"logprob": logprob}

    def _valid(self, state: EnvState) -> list[str]:
        generate = getattr(self, "generate_all_actions", None)
        return list(generate(state.env_state)) if generate else []

    def _self_eval(self, state: EnvState, action: EnvAction, query: Any) -> tuple[float, dict[str, Any]]:
        assert self.base_model is not None
        user = self.usr_prompt_spec or {}
        template = user.get("evaluate") if isinstance(user, dict) else None
        if not template:
            return 0.0, {}
        fields = self.policy_prompt.fields(state, query)
        question = template.format(action=str(action), **fields)
        prompt: Any = question
        if getattr(self.base_model, "chat_native", False):
            prompt = [{"role": "system", "content": str(self.task_prompt_spec or "")},
                      {"role": "user", "content": question}]
        reply = self.base_model.generate(prompt, temperature=0.0, max_tokens=3, top_logprobs=5)[0]
        p_yes = yes_probability(reply)
        return p_yes, {"self_eval": p_yes}

    def reward(self, state: EnvState, action: EnvAction, **kwargs: Any) -> tuple[float, dict[str, Any]]:
        if kwargs.get("error"):
            return 0.0, {"error": kwargs["error"]}
        fast = float(kwargs.get("fast_reward", 0.0))
        reached, progress = kwargs.get("goal_reached") or (False, 0.0)
        value = self.fast_weight * fast + (1.0 - self.fast_weight) * float(progress)
        if reached:
            value += self.goal_bonus
        return value, {"fast_reward": fast, "progress": float(progress), "goal_reached": bool(reached)}
