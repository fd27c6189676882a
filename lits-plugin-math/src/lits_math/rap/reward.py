"""RAP's reward: how useful a sub-question looks, and how sure its answer turned out."""

from __future__ import annotations

import math
from typing import Any

from lits.api import RewardModel, judge_yes, register_reward_model

from lits_math.rap.prompts import REWARD_USER, SubQAPrompt
from lits_math.rap.structures import SubQAState


@register_reward_model("rap", task_type="language_grounded")
class RapPRM(RewardModel[SubQAState, str]):
    """Usefulness before execution, usefulness combined with confidence after.

    ``fast_reward`` is the model's P(Yes) that the proposed sub-question helps
    (text scoring when the backend can, else top log-probabilities, else the
    reply); ``reward`` is ``usefulness ** alpha * confidence ** (1 - alpha)``,
    a weighted geometric mean in [0, 1], as RAP combines its two rewards.
    """

    TASK_TYPE = "language_grounded"
    AGENT_NAME = "rap"

    def __init__(self, base_model: Any = None, task_name: str | None = None, alpha: float = 0.5, **kwargs: Any) -> None:
        super().__init__(base_model, task_name, **kwargs)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.alpha = alpha
        self.prompt = SubQAPrompt(self.task_prompt_spec, self.usr_prompt_spec, REWARD_USER)

    def _fast_reward(
        self,
        state: SubQAState,
        action: Any,
        query: Any,
        query_idx: int | None,
        from_phase: str = "",
        **kwargs: Any,
    ) -> tuple[float, dict[str, Any]]:
        sub_question = str(getattr(action, "sub_question", action) or "").strip()
        if not sub_question:
            return 0.0, {"usefulness": 0.0, "route": "no sub-question"}
        if self.base_model is None:
            raise ValueError("RapPRM needs a base_model")
        body = self.prompt.text("evaluate", self.prompt.fields(state, query, sub_question))
        full = f"{self.prompt.system}\n\n{body}" if self.prompt.system else body
        # A chat model gets the instructions as its system message; text scoring needs them inline.
        chat_only = self.base_model.chat_native and not self.base_model.supports_loglikelihood
        p_yes, route = judge_yes(self.base_model, body if chat_only else full, system=self.prompt.system or None)
        p_yes = _unit(p_yes)
        return p_yes, {"usefulness": p_yes, "route": route}

    def reward(self, state: SubQAState, action: Any, **kwargs: Any) -> tuple[float, dict[str, Any]]:
        if kwargs.get("error"):
            return 0.0, {"error": str(kwargs["error"])}
        usefulness = _unit(kwargs["fast_reward"]) if kwargs.get("fast_reward") is not None else None
        confidence = _unit(kwargs["confidence"]) if kwargs.get("confidence") is not None else None
        if usefulness is None or confidence is None:  # one signal (or none): use it alone
            value = next((v for v in (usefulness, confidence) if v is not None), 0.0)
        else:
            value = usefulness**self.alpha * confidence ** (1.0 - self.alpha)
        return _unit(value), {"usefulness": usefulness, "confidence": confidence, "alpha": self.alpha}


def _unit(value: Any) -> float:
    """``value`` as a float clipped to [0, 1]; unusable values count as 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    if math.isnan(number):
        return 0.0
    return min(1.0, max(0.0, number))
