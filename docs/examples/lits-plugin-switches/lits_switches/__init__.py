"""A whole LiTS domain in one file: a Transition, its prompts and a dataset.

State text: "switches: 0110" (1 = on).  Goal text: "all switches on".
Actions: "toggle switch N" (N counts from 1).
"""

from __future__ import annotations

import random

from lits.api import (
    EnvGroundedTransition, register_dataset, register_system_prompt, register_transition, register_user_prompt,
)
from lits.structures.env_grounded import EnvState, EnvStep


def _bits(env_state: str) -> str:
    return env_state.split(":", 1)[1].strip()


@register_transition("switches", task_type="env_grounded")
class SwitchesTransition(EnvGroundedTransition):
    @staticmethod
    def goal_check(query_or_goals: str, env_state: str) -> tuple[bool, float]:
        bits = _bits(env_state)
        return "0" not in bits, bits.count("1") / len(bits)

    @staticmethod
    def generate_actions(env_state: str) -> list[str]:
        return [f"toggle switch {i + 1}" for i in range(len(_bits(env_state)))]

    def init_state(self, **kwargs) -> EnvState:
        if "init_state_str" not in kwargs:
            raise ValueError("SwitchesTransition needs 'init_state_str' in the example")
        return EnvState(init_state=kwargs["init_state_str"])

    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        action = step_or_action.action if isinstance(step_or_action, EnvStep) else step_or_action
        bits = list(_bits(state.env_state))
        i = int(str(action).rsplit(" ", 1)[1]) - 1
        bits[i] = "1" if bits[i] == "0" else "0"
        new_state = state.copy()
        new_state.append(EnvStep(action=action, next_state="switches: " + "".join(bits)))
        return new_state, {"goal_reached": self.goal_check(query_or_goals, new_state.env_state)}


@register_system_prompt("policy", "env_grounded", "switches")
def policy_system() -> str:
    return "Each line toggles one light switch. Turn every switch on, touching each switch at most once."


@register_user_prompt("policy", "env_grounded", "switches")
def policy_user() -> dict[str, str]:
    return {"state": "Goal: {goals}\nMoves so far:\n{plan}Now: {env_state}\nNext move:\n"}


@register_dataset("switches", task_type="env_grounded")
def load_switches(n: int = 5, width: int = 4, seed: int = 0, **kwargs) -> list[dict]:
    if kwargs:
        raise ValueError(f"unknown dataset argument(s): {', '.join(kwargs)}")
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        bits = "".join(rng.choice("01") for _ in range(width))
        bits = bits if "0" in bits else "0" + bits[1:]
        examples.append({"id": f"switches-{i}", "query": "all switches on",
                         "init_state_str": f"switches: {bits}", "n_steps": bits.count("0")})
    return examples
