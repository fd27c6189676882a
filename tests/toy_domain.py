"""A tiny deterministic env-grounded domain for agent and CLI tests.

Position on a line starting at the initial number; the goal text is the
target position.  Actions: "move left", "move right", "wait".
"""

from __future__ import annotations

from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.structures.env_grounded import EnvState, EnvStep

ACTIONS = ["move left", "move right", "wait"]


class LineWorld(EnvGroundedTransition):
    @staticmethod
    def goal_check(query_or_goals, env_state):
        target, pos = int(query_or_goals), int(env_state)
        return pos == target, max(0.0, 1.0 - abs(target - pos) / 5)

    @staticmethod
    def generate_actions(env_state):
        return list(ACTIONS)

    def init_state(self, **kwargs):
        return EnvState(init_state=kwargs["init_state_str"])

    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        action = str(step_or_action.action)
        delta = {"move left": -1, "move right": 1, "wait": 0}[action]
        new_state = state.copy()
        new_state.append(EnvStep(action=step_or_action.action, next_state=str(int(state.env_state) + delta)))
        return new_state, {"goal_reached": self.goal_check(query_or_goals, new_state.env_state)}


def prefer(*ranked: str):
    """A scorer for ScriptedModel that ranks continuations in the given order."""

    def scorer(prompt: str, continuation: str) -> float:
        text = continuation.strip()
        return -float(ranked.index(text)) if text in ranked else -99.0

    return scorer
