"""The conformance kit (lits.testing) passes good plugins and fails each kind of broken one in one line."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lits.agents import BaseTreeSearch
from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.registry import (
    register_dataset,
    register_resource,
    register_search,
    register_transition,
    register_user_prompt,
)
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
from lits.testing import ConformanceError, check_dataset, check_env_domain, check_search
from lits.testing.conformance import first_difference
from lits.type_registry import register_type
from tests.toy_domain import LineWorld

pytestmark = pytest.mark.usefixtures("lits_registry")  # the kit's own pytest plugin: plugins loaded, isolated


def _dataset(name: str, examples: list[dict[str, Any]], task_type: str = "env_grounded", **meta: Any) -> None:
    register_dataset(name, task_type=task_type, **meta)(lambda **kwargs: [dict(e) for e in examples])


def _domain(name: str, cls: type, examples: list[dict[str, Any]] | None = None) -> None:
    register_transition(name, task_type="env_grounded")(cls)
    _dataset(name, examples or [{"query": "2", "init_state_str": "0"}, {"query": "3", "init_state_str": "1"}])


def _fails(check: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ConformanceError) as caught:
        check(*args, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, AssertionError)
    return message


# -- domains that conform ---------------------------------------------------------------


def test_a_good_domain_passes_every_example():
    _domain("kit-line", LineWorld)
    assert check_env_domain("kit-line") == 2 and check_env_domain("kit-line", limit=1) == 1


# -- one broken domain per failure kind ----------------------------------------------------


class ListsAJump(LineWorld):
    """generate_actions lists "jump", which _step does not know."""

    @staticmethod
    def generate_actions(env_state):
        return ["move left", "move right", "jump"]


class ErrorsOnWait(LineWorld):
    """_step turns a listed action into an error step."""

    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        if str(step_or_action.action) == "wait":
            new_state = state.copy()
            new_state.append(EnvStep(action=step_or_action.action, next_state=state.env_state, error="cannot wait"))
            return new_state, {"goal_reached": (False, 0.0), "error": "cannot wait"}
        return super()._step(state, step_or_action, query_or_goals, **kwargs)


@pytest.mark.parametrize("cls, why", [(ListsAJump, "step() raised KeyError: 'jump'"), (ErrorsOnWait, "cannot wait")])
def test_a_listed_action_that_step_rejects_fails(cls, why):
    _domain("kit-rejects", cls)
    message = _fails(check_env_domain, "kit-rejects")
    assert message.startswith("check_env_domain('kit-rejects'): example 0:")
    assert "generate_actions() lists" in message and "but step() rejects it" in message and why in message


class InitRaises(LineWorld):
    def init_state(self, **kwargs):
        return EnvState(init_state=kwargs["start"])  # the examples call it init_state_str


def test_an_init_state_that_raises_fails():
    _domain("kit-init", InitRaises)
    message = _fails(check_env_domain, "kit-init")
    assert message == "check_env_domain('kit-init'): example 0: init_state(**example) raised KeyError: 'start'"


class UnregisteredState(EnvState):
    """Not in the type registry: a saved checkpoint could not be loaded."""


@register_type
@dataclasses.dataclass(eq=False)
class KitLossyState(EnvState):
    budget: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.pop("budget")  # forgotten when saved
        return out


class UnregisteredStates(LineWorld):
    def init_state(self, **kwargs):
        return UnregisteredState(init_state=kwargs["init_state_str"])


class LossyStates(LineWorld):
    def init_state(self, **kwargs):
        return KitLossyState(init_state=kwargs["init_state_str"], budget=5)


@pytest.mark.parametrize(
    "cls, why",
    [
        (
            UnregisteredStates,
            "does not survive a save/load round trip: KeyError: unknown serialized type 'UnregisteredState'",
        ),
        (LossyStates, "comes back from a save/load round trip as a different KitLossyState"),
    ],
)
def test_a_state_that_does_not_round_trip_fails(cls, why):
    _domain("kit-state", cls)
    message = _fails(check_env_domain, "kit-state")
    assert message.startswith("check_env_domain('kit-state'): example 0: the start state ") and why in message


class ProgressAsDistance(LineWorld):
    @staticmethod
    def goal_check(query_or_goals, env_state):
        return int(env_state) == int(query_or_goals), float(abs(int(query_or_goals) - int(env_state)))


class ProgressOfTheNextState(LineWorld):
    @staticmethod
    def goal_check(query_or_goals, env_state):
        return int(env_state) == int(query_or_goals), 1.5 if int(env_state) < 0 else 0.5


@pytest.mark.parametrize(
    "cls, what",
    [
        (ProgressAsDistance, "example 0: goal_check() on the start state gives progress 2.0, outside [0, 1]"),
        (
            ProgressOfTheNextState,
            "example 0: goal_check() on the state after 'move left' gives progress 1.5, outside [0, 1]",
        ),
    ],
)
def test_goal_progress_outside_zero_to_one_fails(cls, what):
    _domain("kit-progress", cls)
    assert _fails(check_env_domain, "kit-progress") == f"check_env_domain('kit-progress'): {what}"


class TaskSpecificPrompts(LineWorld):
    TASK_TYPE = None  # opts out of core's generic prompts


def test_a_missing_prompt_fails():
    _domain("kit-prompt", TaskSpecificPrompts)
    message = _fails(check_env_domain, "kit-prompt")
    assert "TaskSpecificPrompts sets TASK_TYPE = None" in message
    assert "@register_user_prompt('policy', 'env_grounded', 'kit-prompt')" in message


def test_a_prompt_with_an_unknown_field_fails():
    _domain("kit-field", LineWorld)
    register_user_prompt("policy", "env_grounded", "kit-field")(lambda: {"state": "Board: {board}\nNext:\n"})
    message = _fails(check_env_domain, "kit-field")
    assert message.startswith(
        "check_env_domain('kit-field'): example 0: the policy's prompt does not render "
        "(KeyError: 'board'); its fields are env_state, init_state, goals, plan, actions"
    )


def test_a_prompt_that_gives_the_problem_after_the_state_fails():
    # The state changes by node: every prompt after it is re-read by a server whose prefix cache held the rest.
    _domain("kit-late-goal", LineWorld)
    register_user_prompt("policy", "env_grounded", "kit-late-goal")(
        lambda: {"state": "Now: {env_state}\nGoal: {goals}\nMoves so far:\n{plan}Next move:\n"}
    )
    message = _fails(check_env_domain, "kit-late-goal")
    assert message.startswith("check_env_domain('kit-late-goal'): example 0: the policy's prompt at the start state")
    assert "before the problem ('2') is given" in message and "what changes by node last" in message


class Stamped(str):
    """A template that puts a counter first, as a prompt with a timestamp or request id would."""

    rendered = 0

    def format(self, *args: Any, **kwargs: Any) -> str:
        Stamped.rendered += 1
        return f"request {Stamped.rendered}\n{super().format(*args, **kwargs)}"


def test_a_prompt_that_changes_each_time_it_is_rendered_fails():
    _domain("kit-stamped", LineWorld)
    register_user_prompt("policy", "env_grounded", "kit-stamped")(
        lambda: {"state": Stamped("Goal: {goals}\nNow: {env_state}\nNext move:\n")}
    )
    message = _fails(check_env_domain, "kit-stamped")
    assert "the policy's prompt at the start state differs when rendered twice" in message
    assert "nothing volatile" in message


class BadPlanLine(LineWorld):
    pass


def test_an_optimal_plan_that_does_not_reach_the_goal_fails():
    _domain("kit-plan", BadPlanLine, [{"query": "2", "init_state_str": "0", "optimal_plan": ["move right"]}])
    message = _fails(check_env_domain, "kit-plan")
    assert message.endswith("example 0: after its optimal_plan (1 actions) goal_check() says the goal is not reached")


class MutatesItsInput(LineWorld):
    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        state.append(EnvStep(action=EnvAction("noted")))  # changes the parent node's state
        return super()._step(state, step_or_action, query_or_goals, **kwargs)


def test_a_step_that_changes_the_state_it_is_given_fails():
    _domain("kit-mutates", MutatesItsInput)
    assert "changed the state it was given" in _fails(check_env_domain, "kit-mutates")


class OpenEnded(EnvGroundedTransition):
    """Words separated by spaces; any word is fine, but the probe crashes _step."""

    @staticmethod
    def goal_check(query_or_goals, env_state):
        return len(env_state.split()) >= 3, min(1.0, len(env_state.split()) / 3)

    @staticmethod
    def validate_action(env_state, action):
        return True, ""

    def init_state(self, **kwargs):
        return EnvState(init_state=kwargs["init_state_str"])

    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        word = str(step_or_action.action)
        if ":" in word:
            raise ValueError("no colons")
        new_state = state.copy()
        new_state.append(EnvStep(action=step_or_action.action, next_state=f"{state.env_state} {word}".strip()))
        return new_state, {"goal_reached": self.goal_check(query_or_goals, new_state.env_state)}


def test_an_open_ended_domain_whose_step_raises_on_text_it_accepts_fails():
    _domain("kit-open", OpenEnded, [{"query": "three words", "init_state_str": ""}])
    message = _fails(check_env_domain, "kit-open")
    assert "step() raised ValueError: no colons on 'conformance probe" in message


def test_a_non_env_dataset_is_pointed_to_check_dataset():
    _dataset("kit-qa", [{"query": "1+1?", "answer": "2"}], task_type="language_grounded")
    assert "is a language_grounded dataset, not an env_grounded one (use check_dataset)" in _fails(
        check_env_domain, "kit-qa"
    )


# -- datasets -----------------------------------------------------------------------------


def test_a_good_language_grounded_dataset_passes():
    _dataset(
        "kit-qa",
        [{"query": "1+1?", "answer": "2"}],
        task_type="language_grounded",
        equivalent=lambda a, b: a.strip() == b.strip(),
        evaluate=lambda example, answer: {"solved": answer.strip() == example["answer"]},
    )
    assert check_dataset("kit-qa") == 1


@pytest.mark.parametrize(
    "examples, meta, what",
    [
        ([], {}, "the dataset loader returned no examples"),
        (
            [{"question": "?"}, {"text": "no query"}],
            {},
            "the dataset does not load: ValueError: dataset 'kit-bad': example 1 has no 'query' key",
        ),
        ([{"query": "  "}], {}, "example 0: its query is empty"),
        ([{"id": "a", "query": "q"}, {"id": "a", "query": "r"}], {}, "example 1: has the same id 'a' as example 0"),
        (
            [{"query": "q", "answer": "2"}],
            {"equivalent": lambda a, b: False},
            "example 0: equivalent() does not find its answer '2' equal to itself",
        ),
        (
            [{"query": "q", "answer": "2"}],
            {"evaluate": lambda e, a: {"solved": False}},
            "example 0: evaluate() given its own answer '2' does not say solved=True",
        ),
    ],
)
def test_a_broken_dataset_fails(examples, meta, what):
    _dataset("kit-bad", examples, task_type="language_grounded", **meta)
    message = _fails(check_dataset, "kit-bad")
    assert message.startswith("check_dataset('kit-bad'): ") and what in message


def test_a_tool_use_dataset_without_a_resource_fails():
    _dataset("kit-tools", [{"query": "q"}], task_type="tool_use")
    assert "the resource does not load" in _fails(check_dataset, "kit-tools")


def test_a_tool_use_dataset_with_nameless_tools_fails():
    _dataset("kit-tools", [{"query": "q"}], task_type="tool_use")
    register_resource("kit-tools")(lambda **kwargs: {"tools": [object()], "tool_context": ""})
    assert _fails(check_dataset, "kit-tools") == "check_dataset('kit-tools'): tool 0 has no name"


# -- searches -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mcts", "bfs"])
def test_the_built_in_searches_pass(name):
    result = check_search(name)
    assert result.stopped in ("budget", "exhausted") and len(list(result.root.iter_tree())) > 3


def _frontier(search: BaseTreeSearch) -> list[Any]:
    return [
        n
        for n in search.root.iter_tree()
        if n.state is not None and not n.children and not n.is_terminal and n.depth < search.config.max_depth
    ]


class Forgetful(BaseTreeSearch):
    """Alternates between the deepest and the shallowest leaf by a counter a resume resets."""

    def search(self, query, query_idx):
        self.materialize(self.root)
        local = 0
        while self.iteration < 8 and _frontier(self):
            deepest = local % 2 == 0
            node = max(_frontier(self), key=lambda n: ((n.depth if deepest else -n.depth), -n.id))
            self.materialize_all(self.expand(node))
            local += 1
            self.iteration += 1
            self.save_checkpoint(self.iteration)


class NeverCheckpoints(Forgetful):
    def save_checkpoint(self, iteration, *, force=False):
        if force:  # only the base class's final one
            super().save_checkpoint(iteration, force=force)


class OddStopReason(Forgetful):
    def stop_reason(self):
        return "tired"


class Clocked(BaseTreeSearch):
    """Picks by a process-wide counter: two runs choose differently."""

    picks = [0]

    def search(self, query, query_idx):
        self.materialize(self.root)
        while self.iteration < 5 and _frontier(self):
            Clocked.picks[0] += 1
            frontier = _frontier(self)
            self.materialize_all(self.expand(frontier[Clocked.picks[0] % len(frontier)]))
            self.iteration += 1
            self.save_checkpoint(self.iteration)


@pytest.mark.parametrize(
    "cls, what",
    [
        (
            Forgetful,
            "resumed after a kill at policy call 2 of 8, the result is not an uninterrupted run's: "
            "the tree differs at root.",
        ),
        (
            NeverCheckpoints,
            "killed after 4 of 8 policy calls, it had journaled nothing: call "
            "self.save_checkpoint(self.iteration) after each iteration",
        ),
        (OddStopReason, "stop reason 'tired' is not one of solution, budget, time, exhausted"),
        (Clocked, "two uninterrupted runs differ: the tree differs at root."),
    ],
)
def test_a_broken_search_fails(cls, what):
    register_search("kit-search")(cls)
    message = _fails(check_search, "kit-search")
    assert message.startswith(f"check_search('kit-search'): {what}"), message


def test_a_search_that_swallows_a_kill_fails():
    class Swallows(Forgetful):
        def expand(self, node, phase="expand"):
            try:
                return super().expand(node, phase)
            except Exception:
                return []

    register_search("kit-search")(Swallows)
    assert "the search went on (let exceptions from components propagate)" in _fails(check_search, "kit-search")


def test_unknown_search_settings_are_one_line():
    message = _fails(check_search, "mcts", {"n_iteration": 3})
    assert message.startswith("check_search('mcts'): its config class MCTSConfig rejects")


# -- first_difference: where two saved values differ ----------------------------------------------------------


def test_ignored_keys_are_left_out_at_every_depth():
    before = {"seconds": 1.5, "inference": {"calls": 4, "seconds": 0.25}}
    after = {"seconds": 9.0, "inference": {"calls": 4}}
    assert first_difference(before, after, ignore={"seconds"}) is None
    assert first_difference(before, after) == "seconds: 1.5 != 9.0"


def test_strict_types_tell_an_integer_from_the_same_float_and_from_true():
    assert first_difference({"n": 1}, {"n": 1.0}) is None
    assert first_difference({"n": 1}, {"n": 1.0}, strict_types=True) == "n: 1 != 1.0"
    assert first_difference([1], [True], strict_types=True) == "[0]: 1 != True"
