"""A plugin's bug at run time is named (plugin, exception type, where), not retried as if it were flaky, and
counted once per instance; a domain whose generate_actions returns a str is named in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

LINE_WORLD = """
from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.registry import register_dataset, register_transition
from lits.structures.env_grounded import EnvState, EnvStep


@register_transition("{name}", task_type="env_grounded")
class Line(EnvGroundedTransition):
    @staticmethod
    def goal_check(goals, env_state):
        return env_state == goals, 0.0

    @staticmethod
    def generate_actions(env_state):
        return {actions}

    def init_state(self, **kwargs):
        return EnvState(init_state=kwargs["init_state_str"])

    def _step(self, state, step_or_action, goals, **kwargs):
        {step}


@register_dataset("{name}", task_type="env_grounded")
def load(**kwargs):
    return [{{"query": "3", "init_state_str": "0"}} for _ in range(int(kwargs.get("n", 2)))]
"""
BUGGY_STEP = 'return {}["no such key"], {}'
GOOD_STEP = "new = state.copy(); new.append(EnvStep(action=step_or_action.action, next_state='1')); return new, {}"


def _plugin(name: str, actions: str = '["move right", "wait"]', step: str = BUGGY_STEP) -> str:
    return LINE_WORLD.format(name=name, actions=actions, step=step)


def _run(run_lits, dataset: str, n: int):
    return run_lits(
        "chain", "--dataset", dataset, "--dataset-arg", f"n={n}", "--model", "scripted", "--save-dir", "run"
    )


def test_a_plugins_bug_names_the_plugin_the_type_and_where_and_is_not_retried(install_plugin, run_lits, site_dir):
    install_plugin("lits-plugin-buggy", "toy_buggy", _plugin("buggy"))
    done = _run(run_lits, "buggy", 2)
    assert done.returncode == 1
    assert (
        "lits: 2 instances failed (instance 0: KeyError in plugin lits-plugin-buggy (toy_buggy._step): "
        "'no such key')" in done.stderr
    )
    assert "retrying" not in done.stderr
    log = (Path(site_dir).parent / "run" / "execution.log").read_text()
    assert log.count("instance 0 failed") == 1 and log.count("instance 1 failed") == 1


def test_the_breaker_line_names_the_plugin_and_counts_instances(install_plugin, run_lits):
    install_plugin("lits-plugin-buggy", "toy_buggy", _plugin("buggy"))
    done = _run(run_lits, "buggy", 5)
    assert done.returncode == 1
    assert (
        "lits: error: stopped after 3 instances failed in a row (KeyError in plugin lits-plugin-buggy "
        "(toy_buggy._step): 'no such key'); see "
    ) in done.stderr


def test_generate_actions_returning_a_str_is_named_in_one_line(install_plugin, run_lits):
    install_plugin("lits-plugin-strs", "toy_strs", _plugin("strs", actions='"move right"', step=GOOD_STEP))
    done = _run(run_lits, "strs", 1)
    assert done.returncode == 1
    assert (
        "instance 0: PluginContractError in plugin lits-plugin-strs: toy_strs.Line.generate_actions returned "
        "a str, not a list of action strings"
    ) in done.stderr


@pytest.mark.parametrize(
    ("step", "said"),
    [
        ("import sys; sys.exit(3)", "SystemExit in plugin lits-plugin-quits (toy_quits._step): called sys.exit(3)"),
        ("import sys; sys.exit()", "SystemExit in plugin lits-plugin-quits (toy_quits._step): called sys.exit()"),
        (
            "raise KeyboardInterrupt",
            "KeyboardInterrupt in plugin lits-plugin-quits (toy_quits._step): raised KeyboardInterrupt (not a Ctrl-C)",
        ),
    ],
    ids=["sys.exit(3)", "sys.exit()", "KeyboardInterrupt"],
)
def test_a_plugins_sys_exit_at_run_time_fails_its_instances_named(install_plugin, run_lits, step, said):
    install_plugin("lits-plugin-quits", "toy_quits", _plugin("quits", step=step))
    done = _run(run_lits, "quits", 2)
    assert done.returncode == 1, done.stderr
    assert f"lits: 2 instances failed (instance 0: {said}); see " in done.stderr
    assert "retrying" not in done.stderr


def test_a_plugins_sys_exit_while_the_run_is_set_up_is_one_line(install_plugin, run_lits):
    source = _plugin("quitsearly", step=GOOD_STEP).replace(
        "def load(**kwargs):\n", "def load(**kwargs):\n    import sys; sys.exit(0)\n"
    )
    install_plugin("lits-plugin-quitsearly", "toy_quitsearly", source)
    done = _run(run_lits, "quitsearly", 1)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "lits: error: SystemExit in plugin lits-plugin-quitsearly (toy_quitsearly.load): called sys.exit(0)"
    )
