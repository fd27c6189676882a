"""Repeats in a chain: a step back into a state the chain has been in, or a tool call that repeats an earlier
one with the same result.

A chain has no siblings to fall back on, so a small model that undoes its last move (unstack, then stack the
same block back) or runs the same query again loops until ``max_steps``.  An env step into a visited state is
taken back and the policy asked again without it (when the policy takes ``exclude``); a repeated tool call is
kept, and its observation says so, since the model needs the nudge, not a ban.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lits.structures.base import Step, TrajectoryState
from lits.structures.env_grounded import EnvState
from lits.structures.tool_use import ToolUseStep

#: Times a chain asks again, per step, for a step that does not revisit a state.
STEER_ROUNDS = 2


def repeat_note(earlier: int) -> str:
    """What an observation gains when its call and result repeat step ``earlier`` (1-based)."""
    return (
        f"\n(Note: step {earlier} made this same call and got this same result; running it again will not "
        "change it. Use that result, or try a different call.)"
    )


@dataclass
class RepeatTracker:
    """The states and tool results a chain has seen, and what it did about repeats."""

    seen_states: set[str] = field(default_factory=set)
    seen_calls: dict[tuple[str, str], int] = field(default_factory=dict)
    #: Steps into a visited state that the chain took back and replaced.
    steered_away: int = 0
    #: Repeats the chain kept: no other step was proposed, or a tool call told of its repeat.
    repeats: int = 0

    def start(self, state: TrajectoryState[Step]) -> None:
        """Remember where the chain is (a resumed chain remembers its whole path)."""
        env = state_key(state)
        if env is not None:
            self.seen_states.add(env)
            if isinstance(state, EnvState):
                self.seen_states.add(state.init_state)
                self.seen_states.update(step.next_state for step in state if step.next_state is not None)
        for position, step in enumerate(state, start=1):
            call = call_key(step)
            if call is not None:
                self.seen_calls.setdefault(call, position)

    def revisits(self, state: TrajectoryState[Step]) -> bool:
        """Whether ``state`` is an env state the chain has been in."""
        env = state_key(state)
        return env is not None and env in self.seen_states

    def accept(self, state: TrajectoryState[Step]) -> None:
        """Record the chain's new state; a tool call that repeats an earlier one is told so in its observation."""
        env = state_key(state)
        if env is not None:
            if env in self.seen_states:
                self.repeats += 1
            self.seen_states.add(env)
        if not state:
            return
        step = state[-1]
        call = call_key(step)
        if call is None:
            return
        earlier = self.seen_calls.get(call)
        if earlier is None:
            self.seen_calls[call] = len(state)
            return
        self.repeats += 1
        step.observation = str(step.observation) + repeat_note(earlier)

    def stats(self) -> dict[str, int] | None:
        """The counts, or None when nothing repeated (a record without repeats stays as it was)."""
        if not (self.steered_away or self.repeats):
            return None
        return {"repeats": self.repeats, "steered_away": self.steered_away}


def state_key(state: TrajectoryState[Step]) -> str | None:
    """An env-grounded state's snapshot; None for states that have none."""
    return state.env_state if isinstance(state, EnvState) else None


def call_key(step: Step) -> tuple[str, str] | None:
    """A tool step's call and its result; None for steps without an observed call."""
    if not isinstance(step, ToolUseStep) or step.action is None or step.observation is None or step.error:
        return None
    return str(step.action), str(step.observation)
