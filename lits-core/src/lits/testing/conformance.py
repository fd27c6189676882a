"""The plugin author's conformance kit: ``check_env_domain`` and ``check_dataset``.

A plugin's own test suite calls these (``from lits.testing import ...``).
They go the way a run goes -- registry lookups with the installed plugins
loaded, the factory's components, the scripted model -- but need no model
server and no search, so a broken contract fails in the plugin's CI as one
line naming the dataset, the example and what is wrong, instead of as an
empty or crashing run in a user's hands.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.structures.base import State, Step
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep

if TYPE_CHECKING:
    from lits.components.factory import Components

__all__ = ["ConformanceError", "check_dataset", "check_env_domain", "first_difference"]

#: Text no open-ended domain should accept as an action; ``step()`` must still not raise on it.
PROBE_ACTION = "conformance probe: this is not an action"


class ConformanceError(AssertionError):
    """A plugin breaks the contract; the message is one line (an AssertionError, so pytest shows it plainly)."""


def fail(where: str, what: str) -> NoReturn:
    """Raise a :class:`ConformanceError` whose message is ``where: what`` on one line."""
    raise ConformanceError(" ".join(line.strip() for line in f"{where}: {what}".splitlines() if line.strip()))


def _why(exc: BaseException) -> str:
    message = isinstance(exc, KeyError) and len(exc.args) == 1 and " " in str(exc.args[0])
    text = str(exc.args[0]) if message else str(exc)  # KeyError('jump') reads 'jump'; a message reads as one
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# -- datasets --------------------------------------------------------------------


def _load_examples(where: str, dataset: str, limit: int | None, args: dict[str, object]) -> list[dict[str, Any]]:
    from lits.registry import load_dataset

    try:
        examples = load_dataset(dataset, **args)
    except Exception as exc:  # the loader is plugin code: anything it raises is the finding
        fail(where, f"the dataset does not load: {_why(exc)}")
    if not examples:
        fail(where, "the dataset loader returned no examples (ship a small self-made default set)")
    return [dict(e) for e in examples[: limit if limit is not None else len(examples)]]


def _check_queries(where: str, examples: list[dict[str, Any]]) -> None:
    seen: dict[str, int] = {}
    for index, example in enumerate(examples):
        query = example.get("query")
        if query is None or not str(query).strip():
            fail(f"{where}: example {index}", "its query is empty")
        ident = example.get("id")
        if ident is not None:
            if str(ident) in seen:
                fail(f"{where}: example {index}", f"has the same id {str(ident)!r} as example {seen[str(ident)]}")
            seen[str(ident)] = index


def _examples_and_task_type(
    where: str, dataset: str, limit: int | None, args: dict[str, object]
) -> tuple[list[dict[str, Any]], str]:
    """The dataset's examples (each with a query) and its task type, or a ConformanceError."""
    from lits.registry import infer_task_type

    examples = _load_examples(where, dataset, limit, args)
    _check_queries(where, examples)
    try:
        return examples, infer_task_type(dataset)
    except LookupError as exc:
        fail(where, _why(exc))


def check_dataset(dataset: str, limit: int | None = None, **dataset_args: object) -> int:
    """Check any registered dataset (all task types); returns how many examples were checked.

    Examples load and each has a non-empty query (and a unique ``id`` when it
    has one).  Language-grounded: a registered ``equivalent`` finds each gold
    ``answer`` equal to itself and ``evaluate`` judges it solved.  Tool use:
    the resource loads with the same arguments and gives named tools, and
    ``evaluate`` judges an empty final answer without raising.
    """
    from lits.registry import get_registration

    where = f"check_dataset({dataset!r})"
    examples, task_type = _examples_and_task_type(where, dataset, limit, dataset_args)
    meta = get_registration("dataset", dataset).meta
    if task_type == "language_grounded":
        _check_gold_answers(where, examples, meta)
    elif task_type == "tool_use":
        _check_resource(where, dataset, dataset_args)
        _check_evaluate_empty(where, examples, meta)
    return len(examples)


def _check_gold_answers(where: str, examples: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    equivalent, evaluate = meta.get("equivalent"), meta.get("evaluate")
    for index, example in enumerate(examples):
        gold = example.get("answer")
        if not isinstance(gold, str):
            continue
        at = f"{where}: example {index}"
        if equivalent is not None:
            try:
                same = equivalent(gold, gold)
            except Exception as exc:
                fail(at, f"equivalent() raised on its own answer {gold!r}: {_why(exc)}")
            if not same:
                fail(at, f"equivalent() does not find its answer {gold!r} equal to itself")
        if evaluate is not None:
            verdict = _evaluate(at, evaluate, example, gold)
            if verdict.get("solved") is not True:
                fail(at, f"evaluate() given its own answer {gold!r} does not say solved=True (got {verdict!r})")


def _evaluate(
    at: str, evaluate: Callable[[Mapping[str, object], str], object], example: dict[str, Any], answer: str
) -> Mapping[str, object]:
    try:
        verdict = evaluate(example, answer)
    except Exception as exc:
        fail(at, f"evaluate() raised on the final answer {answer!r}: {_why(exc)}")
    if not isinstance(verdict, Mapping):
        fail(at, f"evaluate() returned a {type(verdict).__name__}, not a dict")
    return verdict


def _check_evaluate_empty(where: str, examples: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    evaluate = meta.get("evaluate")
    if evaluate is None:
        return
    for index, example in enumerate(examples):
        verdict = _evaluate(f"{where}: example {index}", evaluate, example, "")
        if "solved" in verdict and not isinstance(verdict["solved"], bool):
            fail(f"{where}: example {index}", f"evaluate()'s 'solved' is a {type(verdict['solved']).__name__}")


def _check_resource(where: str, dataset: str, args: dict[str, object]) -> None:
    from lits.registry import load_resource

    try:
        resource = load_resource(dataset, **args)
    except Exception as exc:
        fail(where, f"the resource does not load (tool-use datasets need @register_resource): {_why(exc)}")
    if not isinstance(resource, Mapping):
        fail(where, f"the resource loader returned a {type(resource).__name__}, not a dict with 'tools'")
    tools = list(resource.get("tools") or [])
    if not tools:
        fail(where, "the resource gives no tools")
    names = [str(getattr(t, "name", "") or "") for t in tools]
    if "" in names:
        fail(where, f"tool {names.index('')} has no name")
    if len(set(names)) != len(names):
        fail(where, f"two tools share a name: {sorted(n for n in set(names) if names.count(n) > 1)[0]!r}")
    if not isinstance(resource.get("tool_context", ""), str):
        fail(where, "the resource's 'tool_context' is not a str")


# -- env-grounded domains ------------------------------------------------------------


def check_env_domain(
    dataset: str, limit: int | None = None, *, transition: str | None = None, **dataset_args: object
) -> int:
    """Check an env-grounded domain example by example; returns how many examples were checked.

    The transition (registered under ``transition``, default the dataset's
    name) passes :func:`lits.components.checks.problems_of`; for every example
    ``init_state(**example)`` gives an ``EnvState`` whose snapshot is a str;
    ``goal_check`` gives ``(bool, progress in [0, 1])``; every action
    ``generate_actions`` lists is executed by ``step()`` without an error step
    (open-ended domains: ``validate_action`` answers ``(ok, reason)`` and
    ``step()`` survives text that is no action); an ``optimal_plan`` replays to
    the goal; states survive a JSON save/load round trip through the type
    registry; ``step()`` never changes the state it is given; the policy's
    prompts resolve and render; every role's chat prompt for an example starts with one
    head that holds the problem, the same bytes each time (a prefix cache serves it);
    and the components the factory builds propose,
    execute and score a step with the scripted model.
    """
    from lits.registry import get_registration

    where = f"check_env_domain({dataset!r})"
    examples, task_type = _examples_and_task_type(where, dataset, limit, dataset_args)
    if task_type != "env_grounded":
        fail(where, f"it is a {task_type} dataset, not an env_grounded one (use check_dataset)")
    name = transition or get_registration("dataset", dataset).meta.get("transition") or dataset
    cls = _transition_class(where, name)
    components = _components(where, dataset, name)
    _check_prompt_registered(where, dataset, cls, components)
    for index, example in enumerate(examples):
        _DomainCheck(f"{where}: example {index}", index, example, components).run()
    return len(examples)


def _transition_class(where: str, name: str) -> type[EnvGroundedTransition]:
    from lits.components.checks import problems_of
    from lits.registry import get_registration

    try:
        cls = get_registration("transition", name).obj
    except LookupError as exc:
        fail(where, _why(exc))
    problems = problems_of("transition", cls)
    if problems:
        fail(where, f"transition {name!r} {'; '.join(problems)}")
    if not issubclass(cls, EnvGroundedTransition):
        fail(where, f"transition {name!r} does not subclass EnvGroundedTransition")
    return cls  # type: ignore[no-any-return]


def _components(where: str, dataset: str, transition: str) -> Components:
    from lits.components.factory import create_components
    from lits.testing.scripted import ScriptedModel

    try:
        return create_components(dataset, ScriptedModel(chat_native=True), transition=transition, n_actions=2)
    except Exception as exc:
        fail(where, f"the components for a run cannot be built: {_why(exc)}")


def _check_prompt_registered(where: str, dataset: str, cls: type, components: Components) -> None:
    """A transition with ``TASK_TYPE = None`` opts out of generic prompts: its own must exist."""
    from lits.components.policy.env_grounded import EnvGroundedPolicy
    from lits.prompts.registry import PromptRegistry
    from lits.plugin_host.store import STORE, prompt_name

    if not isinstance(components.policy, EnvGroundedPolicy):
        return  # the plugin's own policy: its prompts are its own business
    if (
        getattr(cls, "TASK_TYPE", "env_grounded") is None
        and STORE.find("prompt", prompt_name("policy", "env_grounded", dataset, user=True)) is None
    ):
        fail(
            where,
            f"{cls.__name__} sets TASK_TYPE = None (no generic prompts) but no policy user prompt "
            f"is registered for it: @register_user_prompt('policy', 'env_grounded', {dataset!r})",
        )
    user = PromptRegistry.get_usr("policy", "env_grounded", dataset, "env_grounded")
    if not isinstance(user, dict) or "state" not in user:
        fail(where, f"the env_grounded policy's user prompt for {dataset!r} is not a dict with a 'state' template")


def _check_goal(at: str, what: str, value: object) -> None:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        fail(at, f"goal_check() on {what} returned {value!r}, not (goal_reached, progress)")
    reached, progress = value
    if not isinstance(reached, bool) and type(reached).__name__ != "bool_":
        fail(at, f"goal_check() on {what} gives goal_reached={reached!r}, not a bool")
    if isinstance(progress, bool) or not isinstance(progress, (int, float)):
        fail(at, f"goal_check() on {what} gives progress {progress!r}, not a number in [0, 1]")
    if math.isnan(progress) or not 0.0 <= progress <= 1.0:
        fail(at, f"goal_check() on {what} gives progress {progress!r}, outside [0, 1]")


def first_difference(
    a: object, b: object, path: str = "", *, ignore: Collection[str] = (), strict_types: bool = False
) -> str | None:
    """Where two JSON-like values first differ (``children[0].action: 'x' != 'y'``), or None.

    ``ignore``: dict keys left out wherever they occur (durations, say). ``strict_types``: values that compare
    equal but are written differently (``1``, ``1.0``, ``True``) differ, as they would in the files."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key in ignore:
                continue
            if key not in a or key not in b:
                return f"{path}{key}: only in {'the first' if key in a else 'the second'}"
            found = first_difference(a[key], b[key], f"{path}{key}.", ignore=ignore, strict_types=strict_types)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path.rstrip('.')}[{i}].", ignore=ignore, strict_types=strict_types)
            if found:
                return found
        return None if len(a) == len(b) else f"{path.rstrip('.')}: {len(a)} items != {len(b)}"
    same = a == b and (not strict_types or type(a) is type(b))
    return None if same else f"{path.rstrip('.') or 'value'}: {a!r} != {b!r}"


def check_round_trip(at: str, what: str, state: State) -> None:
    """``state`` survives ``to_dict`` -> JSON -> :func:`lits.type_registry.deserialize` unchanged."""
    from lits.type_registry import deserialize

    try:
        payload = state.to_dict()
        back = deserialize(json.loads(json.dumps(payload)))
    except Exception as exc:
        fail(at, f"{what} does not survive a save/load round trip: {_why(exc)}")
    if type(back) is not type(state) or not back == state:  # not !=: list's __ne__ skips State.__eq__
        diff = first_difference(payload, back.to_dict() if hasattr(back, "to_dict") else back)
        fail(
            at,
            f"{what} comes back from a save/load round trip as a different "
            f"{type(back).__name__}" + (f" ({diff})" if diff else ""),
        )


class _DomainCheck:
    """The checks of one example (kept together so each failure can name the example)."""

    def __init__(self, at: str, index: int, example: dict[str, Any], components: Any) -> None:
        self.at, self.index, self.example = at, index, example
        self.transition, self.policy, self.reward = (components.transition, components.policy, components.reward_model)
        self.query = example["query"]

    def run(self) -> None:
        start = self.start_state()
        snapshot = start.env_state
        _check_goal(self.at, "the start state", self.transition.goal_check(self.query, snapshot))
        check_round_trip(self.at, "the start state", start)
        cls = type(self.transition)
        if cls.has_enumerable_actions():
            actions = self.listed_actions(snapshot)
            for action in actions:
                self.execute(start, action, f"generate_actions() lists {action!r}, but step() rejects it")
        else:
            actions = []
            self.probe(start)
        self.check_prompts(start, actions)
        self.replay_plan(start)
        self.smoke(start)

    def start_state(self) -> EnvState:
        try:
            state = self.transition.init_state(**self.example)
        except Exception as exc:
            fail(self.at, f"init_state(**example) raised {_why(exc)}")
        if not isinstance(state, EnvState):
            fail(self.at, f"init_state(**example) returned a {type(state).__name__}, not an EnvState")
        if not isinstance(state.env_state, str):
            fail(self.at, f"the start snapshot (env_state) is a {type(state.env_state).__name__}, not a str")
        return state

    def listed_actions(self, snapshot: str) -> list[str]:
        try:
            actions = self.transition.generate_actions(snapshot)
        except Exception as exc:
            fail(self.at, f"generate_actions() on the start state raised {_why(exc)}")
        if not isinstance(actions, (list, tuple)) or not all(isinstance(a, str) for a in actions):
            fail(self.at, f"generate_actions() returned {actions!r}, not a list of str")
        if not actions:
            fail(self.at, "generate_actions() lists no action for the start state")
        twice = [a for a in set(actions) if actions.count(a) > 1]
        if twice:
            fail(self.at, f"generate_actions() lists {sorted(twice)[0]!r} more than once")
        return list(actions)

    def probe(self, start: EnvState) -> None:
        try:
            verdict = self.transition.validate_action(start.env_state, PROBE_ACTION)
        except Exception as exc:
            fail(self.at, f"validate_action() raised {_why(exc)} (it should answer (False, reason))")
        if not isinstance(verdict, (tuple, list)) or len(verdict) != 2 or not isinstance(verdict[1], str):
            fail(self.at, f"validate_action() returned {verdict!r}, not (ok, reason)")
        self.execute(start, PROBE_ACTION, None)

    def execute(self, state: EnvState, action: object, rejected: str | None) -> tuple[EnvState, dict[str, object]]:
        """``step()`` on ``action``; with a ``rejected`` message an error step is a failure."""
        before = state.to_dict()
        step = action if isinstance(action, Step) else EnvStep(action=EnvAction(str(action)))
        shown = str(step.get_action()) if step.get_action() is not None else f"(error step: {step.error})"
        try:
            new, aux = self.transition.step(state, step, self.query, self.index)
        except Exception as exc:
            if rejected:
                fail(self.at, f"{rejected}: step() raised {_why(exc)}")
            fail(self.at, f"step() raised {_why(exc)} on {shown!r} (bad input must become an error step)")
        if state.to_dict() != before:
            fail(self.at, f"step() on {shown!r} changed the state it was given (start from state.copy())")
        if not isinstance(new, EnvState) or len(new) != len(state) + 1:
            fail(self.at, f"step() on {shown!r} did not return the state with one EnvStep appended")
        error = new[-1].error or (aux.get("error") if isinstance(aux, Mapping) else None)
        if error and rejected:
            fail(self.at, f"{rejected}: {error}")
        if not error:
            if not isinstance(aux, Mapping) or "goal_reached" not in aux:
                fail(
                    self.at,
                    f"step() on {shown!r} returned no 'goal_reached' "
                    "(return new_state, {'goal_reached': self.goal_check(...)})",
                )
            _check_goal(self.at, f"the state after {shown!r}", aux["goal_reached"])
        if not isinstance(new.env_state, str):
            fail(self.at, f"the snapshot after {shown!r} is a {type(new.env_state).__name__}, not a str")
        _check_goal(self.at, f"the state after {shown!r}", self.transition.goal_check(self.query, new.env_state))
        check_round_trip(self.at, f"the state after {shown!r}", new)
        return new, dict(aux) if isinstance(aux, Mapping) else {}

    def check_prompts(self, start: EnvState, actions: list[str]) -> None:
        from lits.components.env_prompting import EnvPrompt
        from lits.components.reward.env_grounded import EVALUATE_MANY, EnvGroundedPRM

        prompt = getattr(self.policy, "prompt", None)
        if not isinstance(prompt, EnvPrompt):
            return
        fields = ", ".join(prompt.fields(start, self.query, actions))
        try:
            prompt.completion(start, self.query, actions)
            prompt.messages(start, self.query, actions)
            prompt.continuation(actions[0] if actions else PROBE_ACTION)
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            fail(self.at, f"the policy's prompt does not render ({_why(exc)}); its fields are {fields}")
        user = self.reward.usr_prompt_spec if isinstance(self.reward, EnvGroundedPRM) else None
        if isinstance(user, dict):
            values = prompt.fields(start, self.query, actions)
            try:
                if user.get("evaluate"):
                    user["evaluate"].format(action=actions[0] if actions else PROBE_ACTION, **values)
                user.get("evaluate_many", EVALUATE_MANY).format(candidates="1. a\n2. b", **values)
            except (KeyError, IndexError, ValueError, AttributeError) as exc:
                fail(
                    self.at,
                    f"the reward's prompt does not render ({_why(exc)}); its fields are {fields}, "
                    "and action / candidates",
                )
        self.check_prompt_heads(start, actions, prompt)

    def check_prompt_heads(self, start: EnvState, actions: list[str], prompt: Any) -> None:
        """Every role's chat prompt for the instance, at the start and one step on, shares one head with the
        problem in it, the same bytes each time it is rendered (a server's prefix cache then serves it)."""
        from lits.components.reward.env_grounded import EnvGroundedPRM
        from lits.testing.prompt_heads import prompt_head_problem

        states = {"the start state": start}
        if actions:
            states[f"the state after {actions[0]!r}"] = self.execute(start, actions[0], None)[0]

        def render() -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, state in states.items():
                out[f"policy's prompt at {name}"] = prompt.messages(state, self.query, actions)
                if isinstance(self.reward, EnvGroundedPRM):
                    out[f"judge's prompt at {name}"] = self.reward.judge_messages(
                        state, [EnvAction(a) for a in actions[:2] or [PROBE_ACTION]], self.query
                    )
            return out

        wrong = prompt_head_problem(render(), render(), [prompt.fields(start, self.query)["goals"]])
        if wrong:
            fail(self.at, wrong)

    def replay_plan(self, start: EnvState) -> None:
        plan = self.example.get("optimal_plan")
        if not isinstance(plan, (list, tuple)) or not plan or not all(isinstance(a, str) for a in plan):
            return
        state = start
        for number, action in enumerate(plan, start=1):
            state, _ = self.execute(state, action, f"step() rejects action {number} of the optimal_plan, {action!r}")
        if not self.transition.goal_check(self.query, state.env_state)[0]:
            fail(self.at, f"after its optimal_plan ({len(plan)} actions) goal_check() says the goal is not reached")

    def smoke(self, start: EnvState) -> None:
        """The factory's components propose, execute and score steps with the scripted model."""
        try:
            steps = list(self.policy.get_actions(start, n_actions=2, query=self.query, query_idx=self.index))
        except Exception as exc:
            fail(self.at, f"the policy ({type(self.policy).__name__}) raised {_why(exc)} with the scripted model")
        for step in steps:
            _, aux = self.execute(start, step, None)
            action = step.get_action()
            try:
                scores = self.reward.fast_rewards(start, [action], self.query, self.index, steps=[step])
                extra = {k: v for k, v in aux.items() if k != "fast_reward"}
                value, _ = self.reward.reward(start, action, fast_reward=scores[0][0], **extra)
            except Exception as exc:
                fail(
                    self.at,
                    f"the reward model ({type(self.reward).__name__}) raised {_why(exc)} with the scripted model",
                )
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (scores[0][0], value)):
                fail(self.at, f"the reward model gives {scores[0][0]!r} / {value!r}, not finite numbers")
