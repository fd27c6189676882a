"""Base classes of the three components.

Subclasses implement only the domain logic (``_get_actions``, ``_step``,
``_fast_reward``); the bases handle prompt lookup, call tagging for the
inference log, and the seeds' contracts on answer / error / malformed steps.
"""

from __future__ import annotations

import difflib
import inspect
import typing
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, Sequence, TypeVar, Unpack

from lits.lm.base import Completion, LanguageModel, Prompt, SamplingArgs
from lits.runtime.observability import call_context
from lits.prompts.registry import PromptRegistry
from lits.structures.base import Step

StateT = TypeVar("StateT")
ActionT = TypeVar("ActionT")
StepT = TypeVar("StepT", bound=Step)


class Component(ABC):
    """Shared plumbing: model, task name, prompts, extra settings.

    ``TASK_TYPE`` is the interface category ('env_grounded', 'tool_use',
    'language_grounded') or None for task-specific components, which then get
    no TASK_TYPE prompt fallback.  Extra keyword arguments set what the class
    declares (a class attribute or method, e.g. ``max_steps=10`` or
    ``goal_check=fn`` as in the seeds' examples); an undeclared one, such as a
    misspelled ``temprature=0.5``, is a ``TypeError`` naming the closest setting.
    """

    TASK_TYPE: ClassVar[str | None] = None
    #: Prompt registry component key: 'policy', 'transition' or 'reward'.
    COMPONENT: ClassVar[str] = ""
    #: Prompt registry agent key; defaults to the lower-case class name.
    AGENT_NAME: ClassVar[str | None] = None

    def __init__(
        self,
        base_model: LanguageModel | None = None,
        task_name: str | None = None,
        task_prompt_spec: Any = None,
        usr_prompt_spec: Any = None,
        **kwargs: object,
    ) -> None:
        self.base_model = base_model
        self.task_name = task_name
        agent = self._get_agent_name()
        self.task_prompt_spec = (
            task_prompt_spec
            if task_prompt_spec is not None
            else PromptRegistry.get(self.COMPONENT, agent, task_name, self.TASK_TYPE)
        )
        self.usr_prompt_spec = (
            usr_prompt_spec
            if usr_prompt_spec is not None
            else PromptRegistry.get_usr(self.COMPONENT, agent, task_name, self.TASK_TYPE)
        )
        for key, value in kwargs.items():
            if key.startswith("_") or not hasattr(type(self), key):
                raise TypeError(unknown_setting_message(type(self), key))
            setattr(self, key, value)

    def _get_agent_name(self) -> str:
        return self.AGENT_NAME or type(self).__name__.lower()

    def _call_model(self, prompt: Prompt, **params: Unpack[SamplingArgs]) -> Completion:
        """One model call, tagged with this component for the inference log."""
        if self.base_model is None:
            raise ValueError(f"{type(self).__name__} needs a base_model to call")
        with call_context(component=self.COMPONENT):
            return self.base_model.generate(prompt, **params)[0]


class Policy(Component, Generic[StateT, StepT]):
    """Proposes candidate steps; never executes them."""

    COMPONENT = "policy"

    def __init__(
        self,
        base_model: LanguageModel | None = None,
        task_name: str | None = None,
        n_actions: int = 3,
        temperature: float = 0.8,
        **kwargs: object,
    ) -> None:
        super().__init__(base_model, task_name, **kwargs)
        self.n_actions = n_actions
        self.temperature = temperature

    def get_actions(
        self,
        state: StateT,
        n_actions: int | None = None,
        temperature: float | None = None,
        query: object = None,
        query_idx: int | None = None,
        from_phase: str = "",
        **kwargs: object,
    ) -> list[StepT]:
        """Return up to ``n_actions`` candidate Steps for ``state``.

        A ``ValueError`` from the model's output (unparseable text) becomes
        error steps, so search can continue; other errors propagate.  Notes from
        earlier attempts (``--memory-arg``) reach every policy here, after the query.
        """
        from lits.memory.notes import with_notes

        query = with_notes(query)
        n = self.n_actions if n_actions is None else n_actions
        temp = self.temperature if temperature is None else temperature
        with call_context(component="policy", **_phase(from_phase)):
            try:
                return list(
                    self._get_actions(
                        state,
                        n_actions=n,
                        temperature=temp,
                        query=query,
                        query_idx=query_idx,
                        **kwargs,
                    )
                )
            except ValueError as exc:
                return self._create_error_steps(n, f"policy output unusable: {exc}")

    def take_proposals(self, instance: object) -> list[tuple[str, bool]]:
        """The proposals ``(action, duplicate)`` sampled for ``instance``, removed from memory (evaluation
        judges them); none unless the policy counts them."""
        return []

    def proposal_stats(self) -> dict[str, float] | None:
        """How diverse the proposals were over the process (for the run's stats); None: not counted."""
        return None

    @abstractmethod
    def _get_actions(self, state: StateT, n_actions: int, temperature: float, **kwargs: Any) -> list[StepT]:
        """Up to ``n_actions`` candidate Steps (``query`` and ``query_idx`` arrive as keywords)."""

    def _create_error_steps(self, n_actions: int, error_msg: str) -> list[StepT]:
        """Steps that carry ``error``; the transition appends them unchanged."""
        return [Step(error=error_msg)]  # type: ignore[list-item]


def accepts_exclude(policy: Policy[Any, Any]) -> bool:
    """Whether the policy can be told which actions its siblings already have (``exclude=``)."""
    params = inspect.signature(policy._get_actions).parameters
    return "exclude" in params


class Transition(Component, Generic[StateT, ActionT]):
    """Executes a step (or bare action) and returns the new state."""

    COMPONENT = "transition"

    def init_state(self, **kwargs: Any) -> StateT:
        """Initial state from a dataset example's fields.

        The default is an empty state of the class this transition works on,
        read from ``Transition[MyState, ...]`` or from ``_step``'s ``state``
        annotation, so a formulation that starts empty need not write one.
        """
        state_cls = _state_class_of(type(self))
        if state_cls is None:
            raise NotImplementedError(
                f"{type(self).__name__} does not implement init_state() and its state class is unknown "
                "(annotate _step's state parameter or subclass Transition[MyState, ...])"
            )
        return state_cls()  # type: ignore[no-any-return]

    def step(
        self,
        state: StateT,
        step_or_action: object,
        query_or_goals: object = None,
        query_idx: int | None = None,
        from_phase: str = "",
        **kwargs: object,
    ) -> tuple[StateT, dict[str, object]]:
        """Apply ``step_or_action``; returns ``(new_state, aux)``.  A step an augmentor refuses (``check_step``,
        e.g. SQL that does not compile) arrives as an error step, appended without being executed."""
        from lits.memory.notes import checked

        return self._run_step(state, checked(state, step_or_action), query_or_goals, from_phase, **kwargs)

    def _run_step(
        self, state: StateT, step_or_action: object, query_or_goals: object, from_phase: str, **kwargs: object
    ) -> tuple[StateT, dict[str, object]]:
        """``_step`` under the transition's call context (for a subclass that has checked the step already)."""
        with call_context(component="transition", **_phase(from_phase)):
            return self._step(state, step_or_action, query_or_goals, **kwargs)

    @abstractmethod
    def _step(
        self, state: StateT, step_or_action: Any, query_or_goals: Any, **kwargs: Any
    ) -> tuple[StateT, dict[str, object]]:
        """The new state (a copy: never change ``state``) and an aux dict (e.g. ``goal_reached``)."""

    def is_terminal(self, state: StateT, query_or_goals: Any = None, **kwargs: Any) -> bool:
        """True when ``state`` ends the trajectory (default: last step has an answer)."""
        if not state:
            return False
        last = state[-1]  # type: ignore[index]
        return bool(getattr(last, "get_answer", lambda: None)())


class LlmTransition(Transition[StateT, ActionT]):
    """A transition that calls the model (``self._call_model``)."""


class RewardModel(Component, Generic[StateT, ActionT]):
    """Scores actions: ``fast_reward`` before execution, ``reward`` after."""

    COMPONENT = "reward"

    def fast_reward(
        self,
        state: StateT,
        action: ActionT,
        query: object = None,
        query_idx: int | None = None,
        from_phase: str = "",
        **kwargs: object,
    ) -> tuple[float, dict[str, object]]:
        """Score an action before it is executed, in [0, 1] (calls :meth:`_fast_reward`)."""
        with call_context(component="reward", **_phase(from_phase)):
            return self._fast_reward(state, action, query, query_idx, from_phase=from_phase, **kwargs)

    def fast_rewards(
        self,
        state: StateT,
        actions: Sequence[ActionT],
        query: object = None,
        query_idx: int | None = None,
        from_phase: str = "",
        steps: Sequence[Step | None] | None = None,
    ) -> list[tuple[float, dict[str, object]]]:
        """Fast rewards of sibling actions, in order.

        The default scores each action concurrently (one dependent round, one
        call each); a reward model that can judge all siblings in one request
        overrides :meth:`_fast_rewards`.
        """
        with call_context(component="reward", **_phase(from_phase)):
            return self._fast_rewards(
                state,
                list(actions),
                query,
                query_idx,
                from_phase=from_phase,
                steps=list(steps) if steps is not None else [None] * len(actions),
            )

    def _fast_rewards(
        self,
        state: StateT,
        actions: list[ActionT],
        query: Any,
        query_idx: int | None,
        from_phase: str = "",
        steps: Sequence[Step | None] = (),
    ) -> list[tuple[float, dict[str, object]]]:
        """Override to judge all siblings in one request; default: :meth:`fast_reward` each, concurrently."""
        from lits.runtime.concurrency import parallel_map

        return parallel_map(
            lambda i: self.fast_reward(state, actions[i], query, query_idx, from_phase=from_phase, step=steps[i]),
            range(len(actions)),
        )

    def _fast_reward(
        self, state: StateT, action: ActionT, query: Any, query_idx: int | None, from_phase: str = "", **kwargs: Any
    ) -> tuple[float, dict[str, object]]:
        """``(score in [0, 1], details)`` for one action; default 0 (no opinion)."""
        return 0.0, {}

    def reward(self, state: StateT, action: ActionT, **kwargs: Any) -> tuple[float, dict[str, object]]:
        """Reward after execution; default: the fast reward (passed as ``fast_reward``)."""
        return float(kwargs.get("fast_reward", 0.0)), {}


def settings_of(cls: type) -> list[str]:
    """Keyword arguments ``cls(...)`` accepts: constructor parameters and public class attributes."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            names.update(p for p in inspect.signature(init).parameters if p not in ("self", "kwargs", "args"))
        names.update(
            k
            for k, v in vars(klass).items()
            if not k.startswith("_")
            and k.islower()
            and (isinstance(v, staticmethod) or not (callable(v) or isinstance(v, (classmethod, property))))
        )
    return sorted(names)


def unknown_setting_message(cls: type, key: str) -> str:
    known = settings_of(cls)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{cls.__name__}() got an unknown setting {key!r}{hint} (declare it as a class attribute to add one)"


def _state_class_of(cls: type) -> type | None:
    """The State subclass a Transition subclass declares, if it declares one."""
    from lits.structures.base import State

    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            args = typing.get_args(base)
            if args and isinstance(args[0], type) and issubclass(args[0], State):
                return args[0]
    try:
        hint = typing.get_type_hints(cls._step).get("state")  # type: ignore[attr-defined]
    except Exception:  # unresolvable annotations: no inference
        return None
    return hint if isinstance(hint, type) and issubclass(hint, State) else None


def _phase(from_phase: str) -> dict[str, str]:
    """Tag the search phase only when the caller names one (keep the outer tag otherwise)."""
    return {"phase": from_phase} if from_phase else {}
