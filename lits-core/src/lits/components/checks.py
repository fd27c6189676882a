"""What a registered component must provide, checked before a run instead of failing inside it.

Used by ``lits plugins --check``, by strict plugin loading and when a run
builds its components, so a Transition without ``_step`` or an env-grounded
domain without ``init_state`` is one clear line, not an empty run.
"""

from __future__ import annotations

import inspect


def problems_of(kind: str, obj: object) -> list[str]:
    """What is missing from a registered ``obj`` of ``kind``; empty when it looks complete."""
    if kind in ("transition", "policy", "reward_model"):
        return _component_problems(kind, obj)
    if kind in ("search", "chain"):
        return _agent_problems(kind, obj)
    if kind in ("dataset", "resource", "model") and not callable(obj):
        return [f"is a {type(obj).__name__}, not a callable loader"]
    return []


def _component_problems(kind: str, cls: object) -> list[str]:
    from lits.components.base import Policy, RewardModel, Transition

    bases: dict[str, type] = {"transition": Transition, "policy": Policy, "reward_model": RewardModel}
    base = bases[kind]
    if not inspect.isclass(cls):
        return [f"is a {type(cls).__name__}, not a class"]
    if not issubclass(cls, base):
        return [f"does not subclass lits.components.base.{base.__name__}"]
    problems = []
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        problems.append(f"does not implement {', '.join(m + '()' for m in missing)}")
    if kind == "transition":
        problems += _env_transition_problems(cls)
    return problems


def _env_transition_problems(cls: type) -> list[str]:
    from lits.components.base import Transition
    from lits.components.transition.env_grounded import EnvGroundedTransition

    if not issubclass(cls, EnvGroundedTransition):
        return []
    problems = []
    if cls.init_state is Transition.init_state:
        problems.append("does not implement init_state() (every instance would start from an empty state)")
    if cls.goal_check is EnvGroundedTransition.goal_check:
        problems.append("does not implement goal_check()")
    if not (cls.has_enumerable_actions() or cls.has_action_validation()):
        problems.append(
            "implements neither generate_actions() nor validate_action() (the model's text would reach _step unchecked)"
        )
    return problems


def _agent_problems(kind: str, cls: object) -> list[str]:
    if not inspect.isclass(cls):
        return [f"is a {type(cls).__name__}, not a class"]
    method = "search" if kind == "search" else "run"
    if not callable(getattr(cls, method, None)):
        return [f"has no {method}() method"]
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    return [f"does not implement {', '.join(m + '()' for m in missing)}"] if missing else []


def describe_problems(kind: str, name: str, owner: str, problems: list[str]) -> str:
    """One line: ``transition 'x' (from lits-plugin-x) does not implement _step()``."""
    return f"{kind.replace('_', ' ')} {name!r} (from {owner}) {'; '.join(problems)}"
