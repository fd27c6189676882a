"""A search may go far deeper than Python's recursion limit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import first_listed_action


def test_a_huge_max_depth_is_no_recursion_error(tmp_path: Path):
    """Depth far past Python's recursion limit: nothing in search, journal or results recurses per level."""
    code = (
        "import sys, lits.plugin_host.plugins, lits.runs.session, lits.lm.openai_compat, lits.runs.runner;"
        "lits.plugin_host.plugins.ensure_plugins_loaded(); sys.setrecursionlimit(150);"
        "from lits.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    with FakeOpenAIServer(responder=first_listed_action) as srv:  # never solves: the search only goes deeper
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "search",
                "--dataset",
                "blocksworld",
                "--limit",
                "1",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--search-arg",
                "max_depth=1000000000",
                "--search-arg",
                "n_iterations=1",
                "--search-arg",
                "rollout_depth=300",
                "--save-dir",
                "run",
                "--no-cache",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
    assert result.returncode == 0, result.stderr
    assert "RecursionError" not in (tmp_path / "run" / "execution.log").read_text()
    depth = json.loads((tmp_path / "run" / "results" / "0.json").read_text())["eval"]["plan_length"]
    assert depth == 300  # twice the recursion limit
