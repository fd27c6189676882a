"""The plugin author's contract: mistakes are one clear line (and a non-zero exit), never silent."""

from __future__ import annotations

import pytest

from lits.components.checks import problems_of
from lits.components.policy.env_grounded import EnvGroundedPolicy
from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.registry import load_dataset, register_dataset
from lits.structures.env_grounded import EnvState
from tests.core.conftest import plugins_json

NO_STEP_PLUGIN = """
from lits.registry import register_transition, register_dataset
from lits.components.transition.env_grounded import EnvGroundedTransition

@register_transition("halfdone", task_type="env_grounded")
class HalfDone(EnvGroundedTransition):
    @staticmethod
    def goal_check(goals, env_state):
        return env_state == goals, 0.0

    @staticmethod
    def generate_actions(env_state):
        return ["go"]

    def init_state(self, **kwargs):
        from lits.structures.env_grounded import EnvState
        return EnvState(init_state="start")

@register_dataset("halfdone", task_type="env_grounded")
def load(**kwargs):
    return [{"query": "done"}]
"""

NO_INIT_STATE_PLUGIN = """
from lits.registry import register_transition, register_dataset
from lits.components.transition.env_grounded import EnvGroundedTransition

@register_transition("noinit", task_type="env_grounded")
class NoInit(EnvGroundedTransition):
    @staticmethod
    def goal_check(goals, env_state):
        return env_state == goals, 0.0

    @staticmethod
    def generate_actions(env_state):
        return ["go"]

    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        return state, {}

@register_dataset("noinit", task_type="env_grounded")
def load(**kwargs):
    return [{"query": "done"}]
"""

BROKEN_DATASET_PLUGIN = """
import not_installed_library
from lits.registry import register_dataset

@register_dataset("needs_lib")
def load(**kwargs):
    return []
"""

OWNER_PLUGIN = """
from lits.registry import register_dataset

@register_dataset("owned_here", task_type="env_grounded")
def load(**kwargs):
    return [{"query": "q"}]
"""

IMPORTER_PLUGIN = """
import owner_mod  # another plugin's module, imported before its own entry point loads it
from lits.registry import register_dataset

@register_dataset("importer_own", task_type="env_grounded")
def load(**kwargs):
    return [{"query": "q"}]
"""

MODEL_PLUGIN = """
from lits.plugin_host.hookspecs import hookimpl
from lits.testing import ScriptedModel


def echo_model(spec, **options):
    return ScriptedModel(name="echo-backend", chat_native=True, concurrency=options.get("concurrency") or 1)


@hookimpl
def register_models(register):
    register("echo", echo_model, description="answers like the scripted model")
"""


# -- components --------------------------------------------------------------


def test_a_misspelled_component_setting_is_an_error_naming_the_closest(isolated_registry):
    with pytest.raises(TypeError, match="unknown setting 'temprature'.*did you mean 'temperature'"):
        EnvGroundedPolicy(None, "blocksworld", temprature=0.5)


def test_settings_the_class_declares_are_accepted_as_in_the_seeds():
    from lits_blocksworld import BlocksWorldTransition

    def goal_check(goals, env_state):
        return True, 1.0

    transition = BlocksWorldTransition(base_model=None, task_name="blocksworld", goal_check=goal_check, max_steps=10)
    assert transition.max_steps == 10 and transition.goal_check is goal_check


def test_a_transition_without_step_is_reported():
    class NoStep(EnvGroundedTransition):
        generate_actions = staticmethod(lambda env_state: ["go"])
        goal_check = staticmethod(lambda goals, env_state: (False, 0.0))

        def init_state(self, **kwargs):
            return EnvState()

    assert problems_of("transition", NoStep) == ["does not implement _step()"]


def test_an_env_domain_without_init_state_goal_check_or_action_functions_is_reported():
    class Bare(EnvGroundedTransition):
        def _step(self, state, step_or_action, query_or_goals, **kwargs):
            return state, {}

    problems = " | ".join(problems_of("transition", Bare))
    assert "init_state()" in problems and "goal_check()" in problems
    assert "neither generate_actions() nor validate_action()" in problems


# -- datasets ----------------------------------------------------------------


def test_the_original_lits_query_keys_are_accepted(isolated_registry):
    register_dataset("old_style", task_type="env_grounded")(lambda **kw: [{"query_or_goals": "g"}, {"question": "q"}])
    assert [e["query"] for e in load_dataset("old_style")] == ["g", "q"]


def test_an_example_without_a_query_is_one_line_naming_dataset_index_and_key(isolated_registry):
    register_dataset("keyless", task_type="env_grounded")(lambda **kw: [{"query": "a"}, {"goal": "b"}])
    with pytest.raises(ValueError, match=r"dataset 'keyless': example 1 has no 'query' key .*its keys: goal"):
        load_dataset("keyless")


# -- through the CLI, with really installed distributions --------------------


def _one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("lits: error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_a_run_with_a_transition_missing_step_fails_at_start_in_one_line(install_plugin, run_lits):
    install_plugin("lits-plugin-halfdone", "halfdone_mod", NO_STEP_PLUGIN)
    result = run_lits("chain", "--dataset", "halfdone", "--model", "scripted", "--save-dir", "run")
    assert result.returncode == 2
    assert "transition 'halfdone'" in _one_error_line(result) and "_step()" in result.stderr


def test_a_run_with_a_domain_missing_init_state_fails_instead_of_running_empty(install_plugin, run_lits):
    install_plugin("lits-plugin-noinit", "noinit_mod", NO_INIT_STATE_PLUGIN)
    result = run_lits("search", "--dataset", "noinit", "--model", "scripted", "--save-dir", "run")
    assert result.returncode == 2 and "init_state()" in _one_error_line(result)


def test_plugins_check_names_each_incomplete_registration(install_plugin, run_lits):
    install_plugin("lits-plugin-halfdone", "halfdone_mod", NO_STEP_PLUGIN)
    result = run_lits("plugins", "--check")
    assert result.returncode == 1
    assert "PROBLEM transition 'halfdone' (from lits-plugin-halfdone) does not implement _step()" in result.stdout


def test_a_missing_name_says_which_plugin_failed_to_load(install_plugin, run_lits):
    install_plugin("lits-plugin-needslib", "needslib_mod", BROKEN_DATASET_PLUGIN)
    result = run_lits("chain", "--dataset", "needs_lib", "--model", "scripted", "--save-dir", "run")
    assert result.returncode == 2
    line = _one_error_line(result)
    assert "no dataset named 'needs_lib'" in line and "plugin 'lits-plugin-needslib'" in line
    assert "No module named 'not_installed_library'" in line


def test_every_command_warns_once_per_broken_plugin(install_plugin, run_lits):
    install_plugin("lits-plugin-needslib", "needslib_mod", BROKEN_DATASET_PLUGIN)
    result = run_lits("chain", "--dataset", "blocksworld", "--limit", "1", "--model", "scripted", "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("lits: warning: plugin")]
    assert len(warnings) == 1 and "'lits-plugin-needslib'" in warnings[0]


def test_registrations_are_credited_to_the_plugin_that_ships_them(install_plugin, run_lits):
    install_plugin("lits-plugin-owner", "owner_mod", OWNER_PLUGIN)
    install_plugin("lits-plugin-aimporter", "aimporter_mod", IMPORTER_PLUGIN)  # loads first (sorted by name)
    infos = plugins_json(run_lits("plugins", "--json"))
    assert infos["lits-plugin-aimporter"]["registered"] == {"dataset": ["importer_own"]}
    assert infos["lits-plugin-owner"]["registered"] == {"dataset": ["owned_here"]}


def test_selecting_the_importer_does_not_bring_in_the_other_plugins_names(install_plugin, run_python):
    install_plugin("lits-plugin-owner", "owner_mod", OWNER_PLUGIN)
    install_plugin("lits-plugin-aimporter", "aimporter_mod", IMPORTER_PLUGIN)
    result = run_python(
        """
        from lits.registry import list_names
        print(" ".join(list_names("dataset")))
    """,
        env={"LITS_PLUGINS": "lits-plugin-aimporter"},
    )
    assert "importer_own" in result.stdout.split() and "owned_here" not in result.stdout.split(), result.stderr


def test_an_unknown_search_name_suggests_the_closest(run_lits):
    result = run_lits("search", "--dataset", "blocksworld", "--search", "mtcs", "--model", "scripted")
    assert "(did you mean 'mcts'?)" in _one_error_line(result)


def test_an_unknown_search_setting_suggests_the_closest(run_lits):
    result = run_lits("search", "--dataset", "blocksworld", "--model", "scripted", "--search-arg", "n_iteration=3")
    assert result.returncode == 2
    assert "no --search-arg setting named 'n_iteration' (did you mean 'n_iterations'?)" in _one_error_line(result)


def test_an_unknown_plugin_selection_is_a_warning_with_the_closest(run_lits):
    result = run_lits(
        "chain", "--dataset", "nope", "--model", "scripted", env={"LITS_PLUGINS": "lits-plugin-blockworld"}
    )
    assert "(did you mean 'lits-plugin-blocksworld'?)" in result.stderr


def test_a_model_backend_from_a_plugin_is_usable_as_model(install_plugin, run_lits, site_dir):
    install_plugin("lits-plugin-echo", "echo_mod", MODEL_PLUGIN)
    info = plugins_json(run_lits("plugins", "--json"))["lits-plugin-echo"]
    assert info["registered"] == {"model": ["echo"]}
    result = run_lits("chain", "--dataset", "blocksworld", "--limit", "1", "--model", "echo", "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    assert "echo-backend" in (site_dir.parent / "run" / "inference.jsonl").read_text()


def test_show_prints_an_algorithms_settings_with_types_and_defaults(run_lits):
    result = run_lits("plugins", "--show", "mcts")
    assert result.returncode == 0
    assert "n_iterations: int = 10" in result.stdout and "parallel_iterations: int = 1" in result.stdout
