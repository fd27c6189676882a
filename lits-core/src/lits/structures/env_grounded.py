"""Env-grounded structures: semantic-agnostic containers around a text snapshot."""

from __future__ import annotations

import dataclasses

from lits.structures.base import Step, StringAction, TrajectoryState
from lits.type_registry import register_type


@register_type
class EnvAction(StringAction):
    """A domain command; ``str(action)`` is the command text."""


@register_type
@dataclasses.dataclass
class EnvStep(Step):
    action: EnvAction | None = None
    next_state: str | None = None

    def verb_step(self) -> str:
        return "" if self.action is None else str(self.action)


@register_type
@dataclasses.dataclass(eq=False)
class EnvState(TrajectoryState[EnvStep]):
    """Trajectory of :class:`EnvStep` plus the initial snapshot.

    ``env_state`` is the current snapshot (a domain-defined string).
    """

    init_state: str = ""

    @property
    def env_state(self) -> str:
        for step in reversed(self):
            if step.next_state is not None:
                return step.next_state
        return self.init_state

    @property
    def last_action(self) -> EnvAction | None:
        return self[-1].action if self else None

    def render(self) -> str:
        return "\n".join(str(s.action) for s in self if s.action is not None)
