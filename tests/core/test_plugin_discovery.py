"""Entry-point discovery of really installed throw-away plugin distributions."""

from __future__ import annotations

from tests.core.conftest import EVERY_HOOK_PLUGIN, plugins_json

DECORATOR_PLUGIN = """
from lits.registry import register_transition, register_dataset
from lits.components.transition.env_grounded import EnvGroundedTransition

@register_transition("toy_deco", task_type="env_grounded")
class ToyTransition(EnvGroundedTransition):
    @staticmethod
    def goal_check(goals, env_state):
        return env_state == goals, 0.0

    def _step(self, state, step_or_action, query_or_goals, **kwargs):
        raise NotImplementedError

@register_dataset("toy_deco", task_type="env_grounded")
def load(**kwargs):
    return [{"query": "done", "init_state_str": "start"}]
"""

HOOKIMPL_PLUGIN = """
from lits.plugin_host.hookspecs import hookimpl

class Greedy:
    pass

@hookimpl
def register_searches(register):
    register("toy_greedy", Greedy, config_class=None)

@hookimpl
def register_prompts(register):
    register("policy", "env_grounded", "toy_hook", "system text")
"""

BROKEN_PLUGIN = """
raise ImportError("this plugin needs a library that is not installed")
"""

EXITING_PLUGIN = """
import sys
sys.exit("this plugin quits the interpreter")
"""

EXITING_HOOK_PLUGIN = """
import sys
from lits.plugin_host.hookspecs import hookimpl

@hookimpl
def register_searches(register):
    sys.exit(3)
"""

MISSPELLED_HOOK_PLUGIN = """
from lits.plugin_host.hookspecs import hookimpl

@hookimpl
def register_transitons(register):
    pass
"""


def test_decorator_style_plugin_is_discovered_and_lists_its_registrations(install_plugin, run_lits):
    install_plugin("lits-plugin-toydeco", "toy_deco", DECORATOR_PLUGIN)
    result = run_lits("plugins", "--json")
    info = plugins_json(result)["lits-plugin-toydeco"]
    assert info["error"] is None
    assert info["version"] == "0.0.1"
    assert info["registered"] == {"dataset": ["toy_deco"], "transition": ["toy_deco"]}


def test_hookimpl_style_plugin_is_discovered_and_lists_its_registrations(install_plugin, run_lits):
    install_plugin("lits-plugin-toyhook", "toy_hook", HOOKIMPL_PLUGIN)
    info = plugins_json(run_lits("plugins", "--json"))["lits-plugin-toyhook"]
    assert info["error"] is None
    assert info["registered"]["search"] == ["toy_greedy"]
    assert info["registered"]["prompt"] == ["policy/env_grounded/toy_hook/system"]


def test_every_hook_registers_its_kind(install_plugin, run_lits, run_python):
    install_plugin("lits-plugin-every", "every_hook", EVERY_HOOK_PLUGIN)
    info = plugins_json(run_lits("plugins", "--json"))["lits-plugin-every"]
    assert info["error"] is None
    assert info["registered"] == {
        "chain": ["every_c"],
        "dataset": ["every_d"],
        "policy": ["every_p"],
        "prompt": ["policy/every/every_d/user"],
        "resource": ["every_d"],
        "reward_model": ["every_r"],
        "search": ["every_s"],
        "search_framework": ["every_f"],
        "transition": ["every_t"],
        "model": ["every_m"],
        "command": ["every-cmd"],
        "augmentor": ["every_a"],
    }
    hello = run_lits("every-cmd", "--who", "lits")
    assert (hello.returncode, hello.stdout) == (0, "hello lits\n"), hello.stderr
    result = run_python("""
        from lits.registry import get_search_framework, infer_task_type, load_resource
        from lits.prompts.registry import PromptRegistry
        print(infer_task_type("every_d"), load_resource("every_d")["tool_context"],
              PromptRegistry.get_usr("policy", "every", "every_d")["state"], get_search_framework("every_f").search)
    """)
    assert result.stdout.split() == ["tool_use", "none", "x", "every_s"], result.stderr


def test_registered_components_are_usable_through_the_registry(install_plugin, run_python):
    install_plugin("lits-plugin-toydeco", "toy_deco", DECORATOR_PLUGIN)
    result = run_python("""
        from lits.registry import ComponentRegistry, load_dataset, infer_task_type
        print(ComponentRegistry.get_transition("toy_deco").__name__, infer_task_type("toy_deco"),
              load_dataset("toy_deco")[0]["query"])
    """)
    assert result.stdout.split() == ["ToyTransition", "env_grounded", "done"], result.stderr


def test_broken_plugin_is_reported_and_the_others_still_load(install_plugin, run_lits):
    install_plugin("lits-plugin-broken", "toy_broken", BROKEN_PLUGIN)
    install_plugin("lits-plugin-toydeco", "toy_deco", DECORATOR_PLUGIN)
    result = run_lits("plugins", "--json")
    infos = plugins_json(result)
    assert "ImportError: this plugin needs a library" in infos["lits-plugin-broken"]["error"]
    assert infos["lits-plugin-toydeco"]["error"] is None
    assert result.returncode == 1


def test_broken_plugin_is_named_in_the_human_listing_without_a_traceback(install_plugin, run_lits):
    install_plugin("lits-plugin-broken", "toy_broken", BROKEN_PLUGIN)
    result = run_lits("plugins")
    assert "lits-plugin-broken 0.0.1" in result.stdout
    assert "ERROR ImportError" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_plugin_calling_sys_exit_at_import_is_named_and_lits_plugins_still_works(install_plugin, run_lits):
    install_plugin("lits-plugin-quitter", "toy_quitter", EXITING_PLUGIN)
    install_plugin("lits-plugin-toydeco", "toy_deco", DECORATOR_PLUGIN)
    result = run_lits("plugins")
    assert "lits-plugin-quitter 0.0.1 (toy_quitter) ERROR SystemExit: the plugin called sys.exit(" in result.stdout
    assert "lits-plugin-toydeco 0.0.1" in result.stdout and "transition: toy_deco" in result.stdout
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr


def test_plugin_calling_sys_exit_in_a_hook_leaves_a_search_working(install_plugin, run_lits):
    install_plugin("lits-plugin-quitter", "toy_quitter", EXITING_HOOK_PLUGIN)
    infos = plugins_json(run_lits("plugins", "--json"))
    assert infos["lits-plugin-quitter"]["error"] == "SystemExit: the plugin called sys.exit(3) while loading"
    assert infos["lits-plugin-quitter"]["registered"] == {}
    result = run_lits("chain", "--dataset", "blocksworld", "--limit", "1", "--model", "scripted", "--save-dir", "run")
    assert result.returncode == 0, result.stderr


def test_strict_mode_turns_a_broken_plugin_into_an_error(install_plugin, run_lits):
    install_plugin("lits-plugin-broken", "toy_broken", BROKEN_PLUGIN)
    result = run_lits("plugins", env={"LITS_STRICT_PLUGINS": "1"})
    assert result.returncode == 2
    assert "plugin 'lits-plugin-broken' (lits-plugin-broken) failed to load" in result.stderr
    assert "Traceback" not in result.stderr


def test_two_plugins_claiming_one_name_give_an_error_naming_both(install_plugin, run_python):
    install_plugin("lits-plugin-dup-a", "dup_a", DECORATOR_PLUGIN)
    install_plugin("lits-plugin-dup-b", "dup_b", DECORATOR_PLUGIN)
    result = run_python("""
        from lits.registry import ComponentRegistry
        try:
            ComponentRegistry.get_transition("toy_deco")
        except LookupError as exc:
            print(exc)
    """)
    assert "'lits-plugin-dup-a' and 'lits-plugin-dup-b'" in result.stdout, result.stderr


def test_duplicate_name_is_reported_against_the_second_plugin(install_plugin, run_lits):
    install_plugin("lits-plugin-dup-a", "dup_a", DECORATOR_PLUGIN)
    install_plugin("lits-plugin-dup-b", "dup_b", DECORATOR_PLUGIN)
    infos = plugins_json(run_lits("plugins", "--json"))
    assert infos["lits-plugin-dup-a"]["error"] is None
    assert "registered by both" in infos["lits-plugin-dup-b"]["error"]


def test_same_entry_point_name_in_two_distributions_loads_both(install_plugin, run_lits):
    install_plugin(
        "lits-plugin-one",
        "one_mod",
        HOOKIMPL_PLUGIN.replace("toy_greedy", "g1").replace("toy_hook", "h1"),
        entry_name="plugin",
    )
    install_plugin(
        "lits-plugin-two",
        "two_mod",
        HOOKIMPL_PLUGIN.replace("toy_greedy", "g2").replace("toy_hook", "h2"),
        entry_name="plugin",
    )
    infos = plugins_json(run_lits("plugins", "--json"))
    assert infos["lits-plugin-one"]["registered"]["search"] == ["g1"]
    assert infos["lits-plugin-two"]["registered"]["search"] == ["g2"]


def test_environment_variable_limits_which_plugins_load(install_plugin, run_lits):
    install_plugin("lits-plugin-toydeco", "toy_deco", DECORATOR_PLUGIN)
    install_plugin("lits-plugin-toyhook", "toy_hook", HOOKIMPL_PLUGIN)
    infos = plugins_json(run_lits("plugins", "--json", env={"LITS_PLUGINS": "lits-plugin-toyhook"}))
    assert "lits-plugin-toyhook" in infos
    assert "lits-plugin-toydeco" not in infos
    assert "lits-core" in infos  # core's built-ins always load


def test_misspelled_hook_implementation_is_reported(install_plugin, run_lits):
    install_plugin("lits-plugin-typo", "toy_typo", MISSPELLED_HOOK_PLUGIN)
    info = plugins_json(run_lits("plugins", "--json"))["lits-plugin-typo"]
    assert "register_transitons" in info["error"]


def test_importing_lits_loads_no_plugins(install_plugin, run_python):
    install_plugin("lits-plugin-broken", "toy_broken", BROKEN_PLUGIN)
    result = run_python("""
        import sys, lits, lits.registry, lits.structures, lits.components.base
        from lits.plugin_host import plugins
        print(plugins._STATE.loaded, "toy_broken" in sys.modules)
    """)
    assert result.stdout.split() == ["False", "False"], result.stderr
