"""The base a domain expert subclasses to add an env-grounded domain."""

from __future__ import annotations

from typing import Any, ClassVar

from lits.components.base import Transition
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
from lits.lm.base import LanguageModel


class EnvGroundedTransition(Transition[EnvState, EnvAction]):
    """Implement ``goal_check``, ``init_state`` and ``_step``; then either
    ``generate_actions`` (enumerable action space) or ``validate_action``
    (open-ended).  :meth:`step` handles error and malformed steps and invalid
    actions before your ``_step`` sees them.
    """

    TASK_TYPE: ClassVar[str | None] = "env_grounded"
    AGENT_NAME = "env_grounded"
    #: A step budget a domain may keep (the seeds pass ``max_steps=10``); agents use their own limits.
    max_steps: int | None = None

    def __init__(self, base_model: LanguageModel | None = None, task_name: str | None = None, **kwargs: object) -> None:
        super().__init__(base_model, task_name, **kwargs)

    # -- the domain's part -------------------------------------------------
    @staticmethod
    def goal_check(query_or_goals: str, env_state: str) -> tuple[bool, float]:
        """``(goal_reached, progress in [0, 1])`` for the snapshot ``env_state``."""
        raise NotImplementedError

    @staticmethod
    def generate_actions(env_state: str) -> list[str]:
        """All valid actions (enumerable domains only)."""
        raise NotImplementedError

    @staticmethod
    def validate_action(env_state: str, action: str) -> tuple[bool, str]:
        """``(ok, reason)`` for an LLM-proposed action (open-ended domains)."""
        raise NotImplementedError

    @staticmethod
    def eval_metrics(query_or_goals: str, env_state: str) -> dict[str, float]:
        """Extra per-instance metrics for evaluation (averaged over a run); none by default."""
        return {}

    @staticmethod
    def action_correct(query_or_goals: str, action: str) -> bool | None:
        """Whether a proposed action is right, when the evaluation goals can tell (else None).

        Used only at evaluation, to report the duplicate rate among incorrect proposals.
        """
        return None

    # -- capabilities ------------------------------------------------------
    @classmethod
    def has_enumerable_actions(cls) -> bool:
        """True when the domain lists its valid actions (the policy then samples among them)."""
        return _overrides(cls, "generate_actions")

    @classmethod
    def has_action_validation(cls) -> bool:
        """True when the domain validates proposed actions (open-ended action spaces)."""
        return _overrides(cls, "validate_action")

    # -- framework part ------------------------------------------------------
    def step(
        self,
        state: EnvState,
        step_or_action: object,
        query_or_goals: object = None,
        query_idx: int | None = None,
        from_phase: str = "",
        **kwargs: object,
    ) -> tuple[EnvState, dict[str, object]]:
        from lits.memory.notes import checked

        step_or_action = checked(state, step_or_action)  # an augmentor's refusal comes back as an error step
        step = step_or_action if isinstance(step_or_action, EnvStep) else None
        if step is not None and step.error is not None:
            return self._append_unchanged(state, step, query_or_goals)
        action = step.action if step is not None else step_or_action
        if action is None or not str(action).strip():
            bad = EnvStep(action=None, error="policy output contained no action")
            return self._append_unchanged(state, bad, query_or_goals)
        action = action if isinstance(action, EnvAction) else EnvAction(str(action).strip())
        reason = self._invalid_reason(state.env_state, str(action))
        if reason is not None:
            bad = EnvStep(action=action, error=f"invalid action: {reason}")
            return self._append_unchanged(state, bad, query_or_goals)
        step_arg = step if step is not None and step.action is action else EnvStep(action=action)
        return self._run_step(state, step_arg, query_or_goals, from_phase, **kwargs)

    def is_terminal(self, state: EnvState, query_or_goals: Any = None, **kwargs: Any) -> bool:
        return bool(self.goal_check(query_or_goals, state.env_state)[0])

    def _invalid_reason(self, env_state: str, action: str) -> str | None:
        if self.has_enumerable_actions():
            valid = legal_actions(type(self), env_state)
            if action not in valid:
                return f"{action!r} is not one of the valid actions ({len(valid)} available)"
            return None
        if self.has_action_validation():
            ok, reason = self.validate_action(env_state, action)
            return None if ok else (reason or "rejected by the domain")
        return None

    def _append_unchanged(
        self, state: EnvState, step: EnvStep, query_or_goals: Any
    ) -> tuple[EnvState, dict[str, object]]:
        new_state = state.copy()
        step.next_state = state.env_state
        new_state.append(step)
        reached = self.goal_check(query_or_goals, state.env_state) if query_or_goals is not None else (False, 0.0)
        return new_state, {"goal_reached": reached, "error": step.error}


def _overrides(cls: type, name: str) -> bool:
    impl = getattr(cls, name)
    return getattr(impl, "__func__", impl) is not getattr(
        EnvGroundedTransition.__dict__[name], "__func__", EnvGroundedTransition.__dict__[name]
    )


def legal_actions(transition: type, env_state: str) -> list[str]:
    """``transition.generate_actions(env_state)``, checked: a domain that returns a str (whose characters
    would be taken for actions) or anything but a list of strings is named in one line."""
    actions = transition.generate_actions(env_state)  # type: ignore[attr-defined]
    if isinstance(actions, (list, tuple)) and all(isinstance(a, str) for a in actions):
        return list(actions)
    from lits.errors import PluginContractError
    from lits.plugin_host.store import owner_of

    what = f"a {type(actions).__name__}" if not isinstance(actions, (list, tuple)) else "a list holding non-strings"
    raise PluginContractError(
        owner_of(transition),
        f"{transition.__module__}.{transition.__qualname__}"
        f".generate_actions returned {what}, not a list of action strings",
    )
