"""Discovery survives any plugin: one that ends the process at import, or never finishes importing, is named and
skipped, every command keeps working, and the probe's verdicts are cached per environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.core.conftest import plugins_json

EXITING_PLUGIN = "import os\nos._exit(4)\n"
LOOPING_PLUGIN = "while True:\n    pass\n"
COUNTING_PLUGIN = """
import os
with open(os.environ["COUNT_FILE"], "a") as f:
    f.write("imported\\n")
"""

#: Imports at once until $HANG_FIFO exists, then blocks opening it (no writer ever comes).
HANGS_LATER_PLUGIN = """
import os
if os.path.exists(os.environ["HANG_FIFO"]):
    open(os.environ["HANG_FIFO"]).read()
"""


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    return {
        "LITS_PLUGIN_PROBE_CACHE": str(tmp_path / "probe-cache"),
        "LITS_PLUGIN_PROBE_TIMEOUT": "3",
        "COUNT_FILE": str(tmp_path / "count"),
        "HANG_FIFO": str(tmp_path / "hang.fifo"),
    }


def test_a_plugin_that_exits_the_process_at_import_is_named_and_skipped(install_plugin, run_lits, probe_env):
    install_plugin("lits-plugin-exits", "toy_exits", EXITING_PLUGIN)
    listed = run_lits("plugins", "--json", env=probe_env)
    assert (
        plugins_json(listed)["lits-plugin-exits"]["error"] == "exited the process while importing (status 4); skipped"
    )
    done = run_lits(
        "search", "--dataset", "blocksworld", "--model", "scripted", "--limit", "1", "--save-dir", "run", env=probe_env
    )
    assert done.returncode == 0, done.stderr
    assert (
        "lits: warning: plugin 'lits-plugin-exits' (lits-plugin-exits) failed to load: exited the process "
        "while importing (status 4); skipped"
    ) in done.stderr


def test_a_plugin_that_never_finishes_importing_is_named_and_skipped(install_plugin, run_lits, probe_env):
    install_plugin("lits-plugin-loops", "toy_loops", LOOPING_PLUGIN)
    done = run_lits(
        "search", "--dataset", "blocksworld", "--model", "scripted", "--limit", "1", "--save-dir", "run", env=probe_env
    )
    assert done.returncode == 0, done.stderr
    assert (
        "plugin 'lits-plugin-loops' (lits-plugin-loops) failed to load: did not finish importing within 3 s"
        in done.stderr
    )
    listing = run_lits("plugins", env=probe_env)
    assert "lits-plugin-loops" in listing.stdout and "ERROR did not finish importing within 3 s" in listing.stdout


def test_the_verdicts_are_reused_until_the_installed_plugins_change(install_plugin, run_lits, probe_env):
    count = Path(probe_env["COUNT_FILE"])
    install_plugin("lits-plugin-counts", "toy_counts", COUNTING_PLUGIN)
    assert run_lits("plugins", env=probe_env).returncode == 0
    assert count.read_text().count("imported") == 2  # in the probe, then here
    assert run_lits("plugins", env=probe_env).returncode == 0
    assert count.read_text().count("imported") == 3  # the probe's verdict came from the cache
    install_plugin("lits-plugin-exits", "toy_exits", EXITING_PLUGIN)
    assert run_lits("plugins", env=probe_env).returncode == 1  # one plugin failed to load
    assert count.read_text().count("imported") == 5  # a new plugin: probed again


def test_disable_plugin_skips_a_plugin_without_importing_it(install_plugin, run_lits, probe_env):
    install_plugin("lits-plugin-exits", "toy_exits", EXITING_PLUGIN)
    install_plugin("lits-plugin-counts", "toy_counts", COUNTING_PLUGIN)
    done = run_lits("--disable-plugin", "lits-plugin-counts", "plugins", "--json", env=probe_env)
    info = plugins_json(done)["lits-plugin-counts"]
    assert info["disabled"] is True and info["error"] is None and info["registered"] == {}
    assert not Path(probe_env["COUNT_FILE"]).exists()
    by_env = run_lits("plugins", "--json", env={**probe_env, "LITS_DISABLE_PLUGINS": "lits-plugin-exits"})
    assert plugins_json(by_env)["lits-plugin-exits"]["disabled"] is True


def test_a_plugin_whose_import_hangs_after_its_verdict_was_cached_is_named_and_skipped(
    install_plugin, run_lits, probe_env
):
    install_plugin("lits-plugin-hangs", "toy_hangs", HANGS_LATER_PLUGIN)
    env = {**probe_env, "LITS_PLUGINS": "lits-plugin-hangs"}
    assert plugins_json(run_lits("plugins", "--json", env=env))["lits-plugin-hangs"]["error"] is None  # cached ok
    os.mkfifo(probe_env["HANG_FIFO"])  # from now on its import blocks
    listed = run_lits("plugins", "--json", env=env)
    assert (
        plugins_json(listed)["lits-plugin-hangs"]["error"]
        == "did not finish importing within 3 s (set LITS_PLUGIN_PROBE_TIMEOUT to wait longer); skipped"
    )
    again = run_lits("plugins", "--json", env=env)  # the wrong verdict was dropped: the probe finds it now
    assert plugins_json(again)["lits-plugin-hangs"]["error"].startswith("did not finish importing within 3 s")


def test_a_search_goes_on_without_a_plugin_that_started_hanging(install_plugin, run_lits, probe_env):
    install_plugin("lits-plugin-hangs", "toy_hangs", HANGS_LATER_PLUGIN)
    assert run_lits("plugins", env=probe_env).returncode == 0
    os.mkfifo(probe_env["HANG_FIFO"])
    done = run_lits(
        "search", "--dataset", "blocksworld", "--model", "scripted", "--limit", "1", "--save-dir", "run", env=probe_env
    )
    assert done.returncode == 0, done.stderr
    assert (
        "lits: warning: plugin 'lits-plugin-hangs' (lits-plugin-hangs) failed to load: did not finish importing "
        "within 3 s"
    ) in done.stderr
