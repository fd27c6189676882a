"""Prompt lookup order: explicit -> task_name -> TASK_TYPE -> 'default'."""

from __future__ import annotations

import pytest

from lits.components.base import Policy
from lits.prompts.registry import PromptRegistry
from lits.registry import register_system_prompt, register_user_prompt

pytestmark = pytest.mark.usefixtures("isolated_registry")


class GenericPolicy(Policy):
    TASK_TYPE = "language_grounded"
    AGENT_NAME = "probe"

    def _get_actions(self, state, n_actions, temperature, **kwargs):
        return []


class SpecificPolicy(GenericPolicy):
    TASK_TYPE = None


@pytest.fixture
def three_levels(isolated_registry):
    PromptRegistry.register("policy", "probe", "my_task", "task prompt")
    PromptRegistry.register("policy", "probe", "language_grounded", "type prompt")
    PromptRegistry.register("policy", "probe", "default", "default prompt")


@pytest.mark.usefixtures("three_levels")
def test_task_name_prompt_wins_over_task_type_and_default():
    assert GenericPolicy(task_name="my_task").task_prompt_spec == "task prompt"


@pytest.mark.usefixtures("three_levels")
def test_task_type_prompt_is_used_when_the_task_has_none():
    assert GenericPolicy(task_name="other_task").task_prompt_spec == "type prompt"


@pytest.mark.usefixtures("three_levels")
def test_explicit_prompt_wins_over_the_registry():
    assert GenericPolicy(task_name="my_task", task_prompt_spec="explicit").task_prompt_spec == "explicit"


@pytest.mark.usefixtures("three_levels")
def test_task_type_none_skips_the_task_type_step():
    assert SpecificPolicy(task_name="other_task").task_prompt_spec == "default prompt"


def test_default_is_the_last_resort():
    PromptRegistry.register("policy", "probe", "default", "default prompt")
    assert GenericPolicy(task_name="anything").task_prompt_spec == "default prompt"


def test_nothing_registered_gives_none():
    assert GenericPolicy(task_name="anything").task_prompt_spec is None


def test_decorated_functions_provide_the_prompt_values():
    @register_system_prompt("policy", "probe", "deco_task")
    def system():
        return "from a function"

    @register_user_prompt("policy", "probe", "deco_task")
    def user():
        return {"question_format": "Problem: {question}"}

    policy = GenericPolicy(task_name="deco_task")
    assert policy.task_prompt_spec == "from a function"
    assert policy.usr_prompt_spec == {"question_format": "Problem: {question}"}


def test_user_prompt_as_plain_string_is_rejected():
    with pytest.raises(TypeError, match="dict or template"):
        PromptRegistry.register_usr("policy", "probe", "bad", "Q: {question}")
