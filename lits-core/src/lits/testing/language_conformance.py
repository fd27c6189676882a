"""The conformance kit for language-grounded formulations (math and other free-text reasoning).

A plugin that ships a reasoning formulation (a policy, transition and reward
for ``task_type="language_grounded"``, or a search framework bundling them)
calls :func:`check_language_domain` from its own tests: every example starts a
state, the policy proposes steps with the scripted model, the transition
executes them without touching the state it is given, states survive a JSON
round trip, ``is_terminal`` answers a bool and the reward model gives finite
scores; and the prompts the policy and the reward model send for one problem,
at its start and one step on, share one head holding the problem and are the
same bytes each time (a server's prefix cache then serves them).  Each failure
is one line naming the example and the component.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

from lits.lm.base import Prompt

from lits.structures.base import State, Step
from lits.testing.conformance import _examples_and_task_type, _why, check_round_trip, fail

if TYPE_CHECKING:
    from lits.components.factory import Components

_T = TypeVar("_T")


def check_language_domain(
    dataset: str,
    limit: int | None = None,
    *,
    framework: str | None = None,
    policy: str | None = None,
    transition: str | None = None,
    reward: str | None = None,
    depth: int = 2,
    **dataset_args: object,
) -> int:
    """Check a language-grounded dataset with its components; returns how many examples were checked.

    ``framework`` (e.g. ``"rap"``) and ``policy``/``transition``/``reward``
    choose registered components as ``lits search`` would; by default the
    generic ones.  Each example is followed ``depth`` steps down its first
    proposal (or until the transition says the state is terminal).
    """
    where = f"check_language_domain({dataset!r}" + (f", framework={framework!r}" if framework else "") + ")"
    examples, task_type = _examples_and_task_type(where, dataset, limit, dataset_args)
    if task_type != "language_grounded":
        fail(where, f"its task type is {task_type!r}, not 'language_grounded' (use check_env_domain or check_dataset)")
    components = _components(where, dataset, framework, policy, transition, reward)
    for index, example in enumerate(examples):
        _LanguageCheck(f"{where}: example {index}", index, example, components).run(depth)
    return len(examples)


def _components(
    where: str, dataset: str, framework: str | None, policy: str | None, transition: str | None, reward: str | None
) -> Components:
    from lits.components.checks import problems_of
    from lits.components.factory import create_components
    from lits.testing.scripted import ScriptedModel

    try:
        built = create_components(
            dataset,
            ScriptedModel(chat_native=True),
            framework=framework,
            policy=policy,
            transition=transition,
            reward=reward,
            n_actions=2,
        )
    except Exception as exc:
        fail(where, f"the components for a run cannot be built: {_why(exc)}")
    for kind, component in (
        ("policy", built.policy),
        ("transition", built.transition),
        ("reward_model", built.reward_model),
    ):
        problems = problems_of(kind, type(component))
        if problems:
            fail(where, f"{kind.replace('_', ' ')} {type(component).__name__} {'; '.join(problems)}")
    return built


class _LanguageCheck:
    """The checks of one example, kept together so each failure can name the example."""

    def __init__(self, at: str, index: int, example: dict[str, Any], components: Components) -> None:
        self.at, self.index, self.example = at, index, example
        self.policy, self.transition, self.reward = (components.policy, components.transition, components.reward_model)
        self.model = self.policy.base_model
        self.query = example["query"]

    def run(self, depth: int) -> None:
        state = self.start_state()
        for level in range(depth):
            if level < 2:
                self.check_prompt_heads(state, "the start" if level == 0 else "one step on")
            steps = self.propose(state)
            children = [self.execute(state, step) for step in steps]
            self.score(state, steps)
            state = children[0]
            if self.terminal(state):
                return

    def check_prompt_heads(self, state: State, where: str) -> None:
        """The policy's and the reward model's prompts for ``state``, each rendered twice, share one head holding
        the problem (the prompts as the model received them: whatever the components are)."""
        from lits.testing.prompt_heads import prompt_head_problem

        proposed: list[Step] = []

        def render() -> dict[str, Prompt]:
            # The policy's samples may differ from one call to the next: the judge is asked about the first one.
            out: dict[str, Prompt] = {}
            steps = self.sent(lambda: self.propose(state), f"policy's prompt at {where}", out)
            proposed[:] = proposed or steps[:1]
            actions = [step.get_action() for step in proposed]
            self.sent(
                lambda: self.reward.fast_rewards(state, actions, self.query, self.index, steps=proposed),
                f"reward model's prompt at {where}",
                out,
            )
            return out

        wrong = prompt_head_problem(render(), render(), [str(self.query)])
        if wrong:
            fail(self.at, wrong)

    def sent(self, call: Callable[[], _T], name: str, out: dict[str, Prompt]) -> _T:
        """``call()``'s result; its first prompt to the model goes into ``out`` under ``name``."""
        calls = getattr(self.model, "calls", None)
        before = len(calls) if isinstance(calls, list) else 0
        result = call()
        if isinstance(calls, list) and len(calls) > before:
            out[name] = calls[before][0]
        return result

    def start_state(self) -> State:
        try:
            state = self.transition.init_state(**self.example)
        except Exception as exc:
            fail(self.at, f"init_state(**example) raised {_why(exc)}")
        if not isinstance(state, State):
            fail(self.at, f"init_state(**example) returned a {type(state).__name__}, not a lits State")
        check_round_trip(self.at, "the start state", state)
        return state

    def propose(self, state: State) -> list[Step]:
        name = type(self.policy).__name__
        try:
            steps = self.policy.get_actions(state, n_actions=2, query=self.query, query_idx=self.index)
        except Exception as exc:
            fail(self.at, f"the policy ({name}) raised {_why(exc)} with the scripted model")
        if not isinstance(steps, list) or not steps:
            fail(self.at, f"the policy ({name}) proposed no step (got {steps!r})")
        wrong = next((s for s in steps if not isinstance(s, Step)), None)
        if wrong is not None:
            fail(self.at, f"the policy ({name}) proposed a {type(wrong).__name__}, not a lits Step")
        return steps

    def execute(self, state: State, step: Step) -> State:
        shown = repr(step.get_action()) if step.get_action() is not None else f"(error step: {step.error})"
        before = state.to_dict()
        try:
            new, aux = self.transition.step(state, step, self.query, self.index)
        except Exception as exc:
            fail(self.at, f"step() raised {_why(exc)} on {shown}")
        if state.to_dict() != before:
            fail(self.at, f"step() on {shown} changed the state it was given (start from state.copy())")
        if not isinstance(new, type(state)):
            fail(self.at, f"step() on {shown} returned a {type(new).__name__}, not a {type(state).__name__}")
        if not isinstance(aux, Mapping):
            fail(self.at, f"step() on {shown} returned {type(aux).__name__} as aux, not a dict")
        check_round_trip(self.at, f"the state after {shown}", new)
        return new

    def terminal(self, state: State) -> bool:
        try:
            verdict = self.transition.is_terminal(state, self.query)
        except Exception as exc:
            fail(self.at, f"is_terminal() raised {_why(exc)}")
        if not isinstance(verdict, bool):
            fail(self.at, f"is_terminal() returned {verdict!r}, not a bool")
        return verdict

    def score(self, state: State, steps: list[Step]) -> None:
        name = type(self.reward).__name__
        actions = [step.get_action() for step in steps]
        try:
            scores = self.reward.fast_rewards(state, actions, self.query, self.index, steps=steps)
            values = [self.reward.reward(state, a, fast_reward=s[0])[0] for a, s in zip(actions, scores)]
        except Exception as exc:
            fail(self.at, f"the reward model ({name}) raised {_why(exc)} with the scripted model")
        numbers = [s[0] for s in scores] + values
        if len(scores) != len(actions) or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in numbers):
            fail(
                self.at,
                f"the reward model ({name}) gives {numbers!r} for {len(actions)} steps, not one finite number each",
            )
