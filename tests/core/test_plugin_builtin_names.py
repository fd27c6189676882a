"""A plugin that registers a name LiTS has built in (a search named `bfs`): the built-in is kept, the plugin's
other registrations too, and the refusal is said in one line with advice that can be followed."""

from __future__ import annotations

from tests.core.conftest import plugins_json

CLASHING_PLUGIN = """
from lits.registry import register_search, register_dataset
from lits.agents.tree.breadth_first import BFS

@register_search("bfs")
class MyBFS(BFS):
    pass

@register_search("my_greedy")
class Greedy(BFS):
    pass

@register_dataset("clash_data", task_type="env_grounded")
def load(**kwargs):
    return [{"query": "done", "init_state_str": "start"}]
"""


def test_the_built_in_keeps_its_name_and_the_plugin_keeps_its_other_registrations(install_plugin, run_lits):
    install_plugin("lits-plugin-clash", "toy_clash", CLASHING_PLUGIN)
    info = plugins_json(run_lits("plugins", "--json"))["lits-plugin-clash"]
    assert info["error"] is None
    assert info["registered"] == {"dataset": ["clash_data"], "search": ["my_greedy"]}
    assert info["refused"] == [
        "registers a search named 'bfs', which LiTS has built in: the built-in is kept and "
        "so are the plugin's other registrations; register it under its own name, e.g. "
        "'clash-bfs'"
    ]


def test_a_run_with_the_built_in_name_uses_the_built_in_and_warns_once(install_plugin, run_lits):
    install_plugin("lits-plugin-clash", "toy_clash", CLASHING_PLUGIN)
    done = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--search",
        "bfs",
        "--model",
        "scripted",
        "--limit",
        "1",
        "--save-dir",
        "run",
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("lits: warning:")]
    assert warnings == [
        "lits: warning: plugin 'lits-plugin-clash' (lits-plugin-clash) registers a search named 'bfs', which "
        "LiTS has built in: the built-in is kept and so are the plugin's other registrations; "
        "register it under its own name, e.g. 'clash-bfs'"
    ]


def test_the_human_listing_shows_the_refusal(install_plugin, run_lits):
    install_plugin("lits-plugin-clash", "toy_clash", CLASHING_PLUGIN)
    listing = run_lits("plugins").stdout
    assert "  REFUSED registers a search named 'bfs'" in listing and "  search: my_greedy" in listing
