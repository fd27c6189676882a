"""``ToolUsePRM``: an LLM-as-judge score for tool-use tree search.

The paper's finding applies: self-preference bias makes such judges weak; a
domain with a verifiable signal should register its own reward model.
"""

from __future__ import annotations

from typing import Any, Optional

from lits.components.base import RewardModel
from lits.components.reward.env_grounded import yes_probability
from lits.structures.tool_use import ToolUseState


class ToolUsePRM(RewardModel[ToolUseState, Any]):
    TASK_TYPE = "tool_use"
    AGENT_NAME = "tool_use"

    def _fast_reward(self, state: ToolUseState, action: Any, query: Any, query_idx: Optional[int],
                     from_phase: str = "", **kwargs: Any) -> tuple[float, dict[str, Any]]:
        if self.base_model is None or action is None:
            return 0.0, {}
        history = state.render() or "(nothing yet)"
        question = (f"Question: {query}\nSteps so far:\n{history}\nProposed next step: {action}\n"
                    "Is this a useful next step towards answering the question? Answer Yes or No.\nAnswer:")
        prompt: Any = question
        if getattr(self.base_model, "chat_native", False):
            prompt = [{"role": "system", "content": str(self.task_prompt_spec or "You judge agent steps.")},
                      {"role": "user", "content": question}]
        p_yes = yes_probability(self.base_model.generate(prompt, temperature=0.0, max_tokens=3, top_logprobs=5)[0])
        return p_yes, {"self_eval": p_yes}

    def reward(self, state: ToolUseState, action: Any, **kwargs: Any) -> tuple[float, dict[str, Any]]:
        fast = float(kwargs.get("fast_reward", 0.0))
        confidence = float(kwargs.get("confidence", 1.0))
        return fast * confidence, {"fast_reward": fast, "confidence": confidence}
