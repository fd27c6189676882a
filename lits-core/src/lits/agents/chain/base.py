"""Chain agents: one step at a time, no search — the same policy and transition as tree search."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from lits.io import layout
from lits.agents.chain.repeats import STEER_ROUNDS, RepeatTracker
from lits.agents.config import ChainConfig, CoTConfig
from lits.components import parsing
from lits.components.base import Policy, Transition
from lits.io.durable import atomic_write_text
from lits.runtime.observability import call_context
from lits.structures.base import State, Step, TrajectoryState
from lits.type_registry import deserialize


@dataclass
class ChainResult:
    state: TrajectoryState[Step]
    solved: bool
    steps: int
    stopped: str
    proposals: list[tuple[str, bool]] | None = None
    #: Every sampled chain's final state, when the agent sampled several (self-consistency).
    samples: list[TrajectoryState[Step]] | None = None
    #: Repeats met (:mod:`lits.agents.chain.repeats`); None when there were none.
    stats: dict[str, int] | None = None

    def to_dict(self) -> dict[str, object]:
        return {"solved": self.solved, "steps": self.steps, "stopped": self.stopped, "state": self.state.to_dict()}


class ChainAgent:
    """Ask the policy for one step, let the transition apply it, until terminal or out of budget.

    Answer, error and malformed steps need no special case here: the transition owns them.
    """

    #: The name the inference log tags calls with (the constructor's ``name`` wins).
    chain_name = "chain"
    #: The task types the agent serves; None: every type.
    TASK_TYPES: tuple[str, ...] | None = None

    def __init__(
        self,
        config: ChainConfig | None = None,
        policy: Policy[Any, Any] | None = None,
        transition: Transition[Any, Any] | None = None,
        *,
        checkpoint_dir: Path | None = None,
        name: str = "",
    ) -> None:
        """``name``: what the inference log tags calls with (the name it is registered under)."""
        if policy is None or transition is None:
            raise ValueError(f"{type(self).__name__} needs a policy and a transition")
        self.config = config or ChainConfig.model_validate({})
        self.policy = policy
        self.transition = transition
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.chain_name = name or self.chain_name
        self.proposals: list[tuple[str, bool]] = []

    def run(self, query: object, query_idx: int, example: Mapping[str, object], *, resume: bool = False) -> ChainResult:
        repeats = RepeatTracker()
        with call_context(instance=query_idx, search=self.chain_name):
            state = self._load(query_idx, repeats) if resume else None
            state, solved, stopped = self.walk(query, query_idx, example, state, save=True, repeats=repeats)
        self.proposals.extend(self._take_proposals(query_idx))
        return ChainResult(
            state=state,
            solved=solved,
            steps=len(state),
            stopped=stopped,
            proposals=sorted(self.proposals),
            stats=repeats.stats(),
        )

    def walk(
        self,
        query: object,
        query_idx: int,
        example: Mapping[str, object],
        state: TrajectoryState[Step] | None = None,
        *,
        save: bool = False,
        temperature: float | None = None,
        repeats: RepeatTracker | None = None,
    ) -> tuple[TrajectoryState[Step], bool, str]:
        """One chain from ``state`` (None: the start): ``(final state, solved, why it stopped)``; ``temperature``
        overrides the config's; ``repeats`` counts the repeats met (with ``avoid_repeats``)."""
        deadline = time.monotonic() + self.config.runtime_limit if self.config.runtime_limit else None
        temp = self.config.temperature if temperature is None else temperature
        if state is None:
            state = self.transition.init_state(**example)
        tracker = (repeats or RepeatTracker()) if self.config.avoid_repeats else None
        if tracker is not None:
            tracker.start(state)
        stopped = "max_steps"
        while len(state) < self.config.max_steps:
            if self.transition.is_terminal(state, query_or_goals=query):
                stopped = "solution"
                break
            if deadline is not None and time.monotonic() >= deadline:
                stopped = "time"
                break
            with call_context(phase="chain", depth=len(state)):
                steps = self.policy.get_actions(
                    state,
                    n_actions=1,
                    temperature=temp,
                    query=query,
                    query_idx=query_idx,
                    from_phase="chain",
                    **self.step_options(),
                )
                if not steps:
                    stopped = "no_action"
                    break
                after, _aux = self.transition.step(state, steps[0], query, query_idx, from_phase="chain")
                if tracker is not None:
                    after = self._steer(tracker, state, after, steps[0], query, query_idx, temp)
                    tracker.accept(after)
                state = after
            if save:
                self._save(query_idx, state, tracker)
        solved = bool(self.transition.is_terminal(state, query_or_goals=query))
        return state, solved, "solution" if solved else stopped

    def _steer(
        self,
        tracker: RepeatTracker,
        state: TrajectoryState[Step],
        after: TrajectoryState[Step],
        step: Step,
        query: object,
        query_idx: int,
        temperature: float,
    ) -> TrajectoryState[Step]:
        """``after``, or when it revisits a state, the first other step's state that does not (asked of a policy
        that takes ``exclude``, :data:`STEER_ROUNDS` times at most)."""
        from lits.components.base import accepts_exclude

        if not tracker.revisits(after) or not accepts_exclude(self.policy):
            return after
        excluded = [str(step.get_action())]
        for _ in range(STEER_ROUNDS):
            others = self.policy.get_actions(
                state,
                n_actions=1,
                temperature=temperature,
                query=query,
                query_idx=query_idx,
                from_phase="chain",
                exclude=excluded,
                **self.step_options(),
            )
            if not others:
                break
            candidate: TrajectoryState[Step] = self.transition.step(
                state, others[0], query, query_idx, from_phase="chain"
            )[0]
            if not tracker.revisits(candidate):
                tracker.steered_away += 1
                return candidate
            excluded.append(str(others[0].get_action()))
        return after

    def step_options(self) -> dict[str, object]:
        """Keywords for the policy's every call: ``whole_solution`` when the chain's config asks for it."""
        return {"whole_solution": True} if isinstance(self.config, CoTConfig) and self.config.whole_solution else {}

    def _take_proposals(self, query_idx: int) -> list[tuple[str, bool]]:
        return [(str(a), bool(d)) for a, d in self.policy.take_proposals(query_idx)]

    def _path(self, query_idx: int) -> Path | None:
        return self.checkpoint_dir / layout.chain_checkpoint_name(query_idx) if self.checkpoint_dir else None

    def _save(self, query_idx: int, state: State, repeats: RepeatTracker | None = None) -> None:
        path = self._path(query_idx)
        if path is not None:
            self.proposals.extend(self._take_proposals(query_idx))
            payload: dict[str, object] = {"state": state.to_dict(), "proposals": self.proposals}
            counted = repeats.stats() if repeats is not None else None
            if counted:  # so a resumed chain's counts include the repeats met before
                payload["repeats"] = counted
            parsed = parsing.snapshot(query_idx)  # so a resumed instance's parse counts include these
            if parsed:
                payload[parsing.CHECKPOINT_KEY] = parsed
            atomic_write_text(path, json.dumps(payload))

    def _load(self, query_idx: int, repeats: RepeatTracker | None = None) -> TrajectoryState[Step] | None:
        path = self._path(query_idx)
        if path is None or not path.exists():
            return None
        payload = json.loads(path.read_text(encoding="utf-8"))
        state: TrajectoryState[Step]
        if "__type__" in payload:  # written before proposals were kept with the state
            state = deserialize(payload)
            return state
        self.proposals = [(str(a), bool(d)) for a, d in payload.get("proposals") or []]
        if parsing.CHECKPOINT_KEY in payload:
            parsing.restore(query_idx, payload[parsing.CHECKPOINT_KEY])
        counted = payload.get("repeats")
        if repeats is not None and isinstance(counted, dict):
            repeats.steered_away = int(counted.get("steered_away", 0))
            repeats.repeats = int(counted.get("repeats", 0))
        state = deserialize(payload["state"])
        return state
