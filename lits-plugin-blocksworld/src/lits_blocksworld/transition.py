"""The BlocksWorld transition: deterministic and symbolic, no model calls."""

from __future__ import annotations

from typing import Any, ClassVar

from lits.api import EnvGroundedTransition, register_transition
from lits.structures.env_grounded import EnvState, EnvStep
from lits_blocksworld import world


@register_transition("blocksworld", task_type="env_grounded")
class BlocksWorldTransition(EnvGroundedTransition):
    # Task-specific: prompts must be registered under 'blocksworld' (no generic fallback).
    TASK_TYPE: ClassVar[str | None] = None

    @staticmethod
    def goal_check(query_or_goals: str, env_state: str) -> tuple[bool, float]:
        return world.goal_check(query_or_goals or "", env_state)

    @staticmethod
    def generate_actions(env_state: str) -> list[str]:
        return world.generate_actions(env_state)

    def init_state(self, **kwargs: Any) -> EnvState:
        init = kwargs.get("init_state_str")
        if init is None:
            raise ValueError("BlocksWorldTransition needs 'init_state_str' in the example")
        return EnvState(init_state=init)

    def _step(self, state: EnvState, step_or_action: Any, query_or_goals: str, **kwargs: Any) -> tuple[EnvState, dict]:
        action = step_or_action.action if isinstance(step_or_action, EnvStep) else step_or_action
        new_env_state = world.apply_action(state.env_state, str(action))
        new_state = state.copy()
        new_state.append(EnvStep(action=action, next_state=new_env_state))
        return new_state, {"goal_reached": self.goal_check(query_or_goals, new_env_state)}
