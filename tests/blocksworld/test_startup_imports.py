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

#: Runs ``lits search`` and, at its first iteration's checkpoint, prints ``FIRST:`` and what ``{probe}`` (an
#: expression over ``sys.argv[1]``'s text, the probe's argument) gives, then exits.
AT_FIRST_ITERATION = """
import os, sys
from lits.agents.tree.base import BaseTreeSearch
argument = sys.argv.pop(1)
def first(self, *args, **kwargs):
    print("FIRST:" + str({probe}), flush=True)
    os._exit(0)
BaseTreeSearch.save_checkpoint = first
from lits.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def at_first_iteration(probe: str, argument: str, workdir: Path, shared_data: Path) -> str:
    """What ``probe`` gives at the first iteration of a one-case BlocksWorld MCTS search on the scripted model."""
    args = ["search", "--dataset", "blocksworld", "--dataset-arg", f"path={shared_data / 'blocksworld'}"]
    args += ["--dataset-arg", "steps=2", "--limit", "1", "--model", "scripted", "--search", "mcts"]
    args += ["--search-arg", "n_iterations=2", "--save-dir", str(workdir / "run")]
    done = subprocess.run(
        [sys.executable, "-c", AT_FIRST_ITERATION.format(probe=probe), argument, *args],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("FIRST:")]
    assert lines, done.stderr[-2000:]
    return lines[0][len("FIRST:") :]


def test_a_blocksworld_search_reaches_its_first_iteration_without_unused_clients(
    shared_data: Path, tmp_path: Path
) -> None:
    loaded = at_first_iteration(
        '",".join(m for m in argument.split(",") if m in sys.modules)', ",".join(UNUSED_AT_START), tmp_path, shared_data
    )
    assert loaded == "", f"loaded before the first iteration: {loaded}"


def test_a_new_run_reaches_its_first_iteration_without_building_its_records_validator(
    shared_data: Path, tmp_path: Path
) -> None:
    """A new run makes its record without validation (it was checked as a spec); only a resume reads one back."""
    built = at_first_iteration(
        "__import__('lits.runs.record').runs.record.RunRecord.__pydantic_complete__", "", tmp_path, shared_data
    )
    assert built == "False"
