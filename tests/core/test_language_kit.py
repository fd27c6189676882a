"""check_language_domain passes a good reasoning formulation and fails each kind of broken one in one line."""

from __future__ import annotations

from typing import Any

import pytest

from lits.components.base import Transition
from lits.components.policy.concat import ConcatPolicy
from lits.components.reward.generative import GenerativePRM
from lits.components.transition.concat import ConcatTransition
from lits.registry import (
    register_dataset,
    register_policy,
    register_reward_model,
    register_transition,
    register_user_prompt,
)
from lits.structures.language_grounded import ThoughtState, ThoughtStep
from lits.testing import ConformanceError, check_language_domain

pytestmark = pytest.mark.usefixtures("lits_registry")  # plugins loaded, registrations isolated per test

PROBLEMS = [{"query": "What is 2 + 3?", "answer": "5"}, {"query": "What is 4 * 2?", "answer": "8"}]


@pytest.fixture(autouse=True)
def toy_dataset() -> None:
    register_dataset("kit-sums", task_type="language_grounded")(lambda **kwargs: [dict(p) for p in PROBLEMS])


def _fails(**components: Any) -> str:
    with pytest.raises(ConformanceError) as caught:
        check_language_domain("kit-sums", **components)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_generic_components_pass_every_example():
    assert check_language_domain("kit-sums") == 2 and check_language_domain("kit-sums", limit=1) == 1


def test_an_env_grounded_dataset_is_refused():
    with pytest.raises(ConformanceError, match="its task type is 'env_grounded', not 'language_grounded'"):
        check_language_domain("blocksworld", limit=1)


class AppendsInPlace(ConcatTransition):
    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        state.append(ThoughtStep(action=str(step_or_action.action)))
        return state.copy(), {}


def test_a_transition_that_changes_the_state_it_is_given_fails():
    register_transition("kit-in-place", task_type="language_grounded")(AppendsInPlace)
    message = _fails(transition="kit-in-place")
    assert message.startswith("check_language_domain('kit-sums'): example 0:")
    assert "changed the state it was given" in message


class ProposesStrings(ConcatPolicy):
    def _get_actions(self, state, n_actions, temperature, **kwargs):
        return ["add the numbers"]


def test_a_policy_that_proposes_bare_strings_fails():
    register_policy("kit-strings", task_type="language_grounded")(ProposesStrings)
    assert "the policy (ProposesStrings) proposed a str, not a lits Step" in _fails(policy="kit-strings")


class ProposesNothing(ConcatPolicy):
    def _get_actions(self, state, n_actions, temperature, **kwargs):
        return []


def test_a_policy_that_proposes_nothing_fails():
    register_policy("kit-nothing", task_type="language_grounded")(ProposesNothing)
    assert "the policy (ProposesNothing) proposed no step" in _fails(policy="kit-nothing")


class ScoresNaN(GenerativePRM):
    def _fast_reward(self, state, action, query, query_idx, from_phase="", **kwargs):
        return float("nan"), {}


def test_a_reward_that_is_not_a_finite_number_fails():
    register_reward_model("kit-nan", task_type="language_grounded")(ScoresNaN)
    assert "the reward model (ScoresNaN) gives [nan" in _fails(reward="kit-nan")


class TerminalAsText(ConcatTransition):
    def is_terminal(self, state, query_or_goals=None, **kwargs):
        return "no"


def test_is_terminal_must_answer_a_bool():
    register_transition("kit-text-terminal", task_type="language_grounded")(TerminalAsText)
    assert "is_terminal() returned 'no', not a bool" in _fails(transition="kit-text-terminal")


class ForgetsStep(Transition[ThoughtState, str]):
    """Written from scratch, without the one method a transition must have."""

    TASK_TYPE = "language_grounded"


def test_a_transition_missing_step_fails_before_any_example():
    register_transition("kit-no-step", task_type="language_grounded")(ForgetsStep)
    message = _fails(transition="kit-no-step")
    assert message.startswith("check_language_domain('kit-sums'): the components for a run cannot be built")
    assert "_step" in message


def test_a_judge_with_a_prompt_of_its_own_fails_on_the_shared_head():
    # The judge's own system prompt first: a server's prefix cache re-reads the policy's whole head after it.
    register_user_prompt("reward", "generative", "kit-sums")(
        lambda: {"evaluate": "Problem: {question}\nSteps:\n{steps}\nNext: {step}\nCorrect? Answer:"}
    )
    message = _fails()
    assert message.startswith("check_language_domain('kit-sums'): example 0: the policy's prompt at the start and")
    assert "before the problem ('What is 2 + 3?') is given" in message


class StampedPolicy(ConcatPolicy):
    """A policy that numbers its requests in the prompt, as one with a timestamp or request id would."""

    sent = 0

    def _get_actions(self, state, n_actions, temperature, **kwargs):
        StampedPolicy.sent += 1
        self.task_prompt_spec = f"Request {StampedPolicy.sent}. Solve the problem."
        return super()._get_actions(state, n_actions, temperature, **kwargs)


def test_a_prompt_that_changes_each_time_it_is_rendered_fails():
    register_policy("kit-stamped", task_type="language_grounded")(StampedPolicy)
    message = _fails(policy="kit-stamped")
    assert "the policy's prompt at the start differs when rendered twice" in message
