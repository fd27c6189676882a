"""What ``lits search`` loads before its first iteration: the run's own modules, not every backend's client.

Start-up time is mostly imports (issue 42); a module that a BlocksWorld search on the scripted model never
uses must not be loaded on its way to the first iteration, by core or by a plugin's registration.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: Modules a BlocksWorld search on the scripted model does not use, and what loaded them before.
UNUSED_AT_START = (
    "httpx",  # the model-server slot probe's client (and, through httpx's CLI, rich, click and pygments)
    "rich",
    "click",
    "pygments",
    "asyncio",  # lits.api's run_async
    "anthropic",  # the hosted plugin's SDKs: loaded when a hosted model is built
    "boto3",
    "lits.lm.openai_compat",
    "lits.export",
    "lits.view",
)

#: Runs ``lits search`` and prints, at the first iteration's checkpoint, which of the modules are loaded.
AT_FIRST_ITERATION = """
import os, sys
from lits.agents.tree.base import BaseTreeSearch
watched = sys.argv.pop(1).split(",")
def first(self, *args, **kwargs):
    print("LOADED:" + ",".join(m for m in watched if m in sys.modules), flush=True)
    os._exit(0)
BaseTreeSearch.save_checkpoint = first
from lits.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_blocksworld_search_reaches_its_first_iteration_without_unused_clients(
    shared_data: Path, tmp_path: Path
) -> None:
    args = ["search", "--dataset", "blocksworld", "--dataset-arg", f"path={shared_data / 'blocksworld'}"]
    args += ["--dataset-arg", "steps=2", "--limit", "1", "--model", "scripted", "--search", "mcts"]
    args += ["--search-arg", "n_iterations=2", "--save-dir", str(tmp_path / "run")]
    done = subprocess.run(
        [sys.executable, "-c", AT_FIRST_ITERATION, ",".join(UNUSED_AT_START), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("LOADED:")]
    assert lines, done.stderr[-2000:]
    assert lines[0] == "LOADED:", f"loaded before the first iteration: {lines[0][len('LOADED:') :]}"


#: Runs ``lits search`` and prints, at the first iteration's checkpoint, whether the run record's validator is built.
RECORD_AT_FIRST_ITERATION = """
import os, sys
from lits.agents.tree.base import BaseTreeSearch
def first(self, *args, **kwargs):
    from lits.runs.record import RunRecord
    print("BUILT:" + str(RunRecord.__pydantic_complete__), flush=True)
    os._exit(0)
BaseTreeSearch.save_checkpoint = first
from lits.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_new_run_reaches_its_first_iteration_without_building_its_records_validator(
    shared_data: Path, tmp_path: Path
) -> None:
    """A new run makes its record without validation (it was checked as a spec); only a resume reads one back."""
    args = ["search", "--dataset", "blocksworld", "--dataset-arg", f"path={shared_data / 'blocksworld'}"]
    args += ["--dataset-arg", "steps=2", "--limit", "1", "--model", "scripted", "--search", "mcts"]
    args += ["--search-arg", "n_iterations=2", "--save-dir", str(tmp_path / "run")]
    done = subprocess.run(
        [sys.executable, "-c", RECORD_AT_FIRST_ITERATION, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("BUILT:")]
    assert lines == ["BUILT:False"], done.stderr[-2000:]
