"""The registry: decorators, lookups, duplicates, task types."""

from __future__ import annotations

import pytest

from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.registry import (
    ComponentRegistry,
    DuplicateNameError,
    infer_task_type,
    load_dataset,
    owner_scope,
    register_dataset,
    register_policy,
    register_reward_model,
    register_search,
    register_transition,
)

pytestmark = pytest.mark.usefixtures("isolated_registry")


class _Toy(EnvGroundedTransition):
    @staticmethod
    def goal_check(query_or_goals, env_state):
        return False, 0.0

    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        raise NotImplementedError


def test_missing_transition_raises_key_error_listing_registered_names():
    register_transition("listed_one", task_type="env_grounded")(_Toy)
    with pytest.raises(KeyError, match="registered: .*listed_one"):
        ComponentRegistry.get_transition("absent")


def test_missing_policy_and_reward_model_raise_key_error():
    with pytest.raises(KeyError):
        ComponentRegistry.get_policy("absent")
    with pytest.raises(KeyError):
        ComponentRegistry.get_reward_model("absent")


def test_decorators_return_the_class_unchanged():
    assert register_policy("p_same")(_Toy) is _Toy
    assert register_reward_model("r_same")(_Toy) is _Toy
    assert ComponentRegistry.get_policy("p_same") is _Toy


def test_two_owners_registering_one_name_raise_an_error_naming_both():
    with owner_scope("dist-a"):
        register_transition("shared_name")(_Toy)
    with owner_scope("dist-b"), pytest.raises(DuplicateNameError, match="'dist-a' and 'dist-b'"):
        register_transition("shared_name")(_Toy)


def test_a_conflicting_name_stays_ambiguous_instead_of_silently_picking_one():
    with owner_scope("dist-a"):
        register_transition("contested")(_Toy)
    with owner_scope("dist-b"), pytest.raises(DuplicateNameError):
        register_transition("contested")(_Toy)
    with pytest.raises(DuplicateNameError, match="dist-a"):
        ComponentRegistry.get_transition("contested")


def test_duplicate_name_error_is_not_a_key_error_so_factories_do_not_fall_back():
    assert not issubclass(DuplicateNameError, KeyError)


def test_the_same_owner_may_register_a_name_again():
    with owner_scope("notebook"):
        register_transition("rerun")(_Toy)
        register_transition("rerun")(EnvGroundedTransition)
    assert ComponentRegistry.get_transition("rerun") is EnvGroundedTransition


def test_dataset_loader_receives_keyword_arguments():
    @register_dataset("kw_data", task_type="env_grounded")
    def load(n=1, **kwargs):
        return [{"query": str(i)} for i in range(n)]

    assert [e["query"] for e in load_dataset("kw_data", n=3)] == ["0", "1", "2"]


def test_task_type_is_inferred_from_the_dataset_registration():
    register_dataset("typed", task_type="language_grounded")(lambda **kw: [])
    assert infer_task_type("typed") == "language_grounded"


def test_task_type_falls_back_to_the_transition_class():
    register_transition("only_transition")(_Toy)
    assert infer_task_type("only_transition") == "env_grounded"


def test_unknown_task_type_is_rejected_at_registration():
    with pytest.raises(ValueError, match="task_type must be one of"):
        register_dataset("bad_type", task_type="envgrounded")(lambda **kw: [])


def test_register_search_keeps_the_config_class():
    class Config:
        pass

    @register_search("my_search", config_class=Config)
    class MySearch:
        pass

    from lits.registry import get_registration

    reg = get_registration("search", "my_search")
    assert reg.obj is MySearch and reg.meta["config_class"] is Config


def test_plugin_registrations_outlive_an_isolated_registry_entered_before_any_plugin_loaded():
    import subprocess
    import sys

    script = (
        "from lits.registry import isolated_registry, load_dataset\n"
        "with isolated_registry():\n"
        "    load_dataset('gsm8k')\n"  # plugins first needed inside
        "print(len(load_dataset('blocksworld')) > 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
