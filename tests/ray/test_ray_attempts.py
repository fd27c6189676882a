"""``--attempts`` and ``--memory-arg`` on ``--executor ray`` find what the in-process run finds, byte for byte."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ray.conftest import eval_without_timings, outputs

pytestmark = pytest.mark.usefixtures("local_ray")

ATTEMPTS = [
    "--model",
    "scripted",
    "--dataset",
    "blocksworld",
    "--limit",
    "4",
    "--attempts",
    "3",
    "--memory-arg",
    "augmentors=fact,reflection",
]


def _attempts(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted((run / "attempts").iterdir())}


@pytest.mark.parametrize("command", [["chain"], ["search", "--search-arg", "n_iterations=2"]])
def test_attempts_with_memory_on_ray_equal_in_process(
    lits_here: Callable[..., int], tmp_path: Path, command: list[str]
) -> None:
    assert lits_here(*command, *ATTEMPTS, "--save-dir", "here") == 0
    assert lits_here(*command, *ATTEMPTS, "--save-dir", "ray", "--executor", "ray") == 0
    here, ray = tmp_path / "here", tmp_path / "ray"
    assert outputs(ray) == outputs(here) and _attempts(ray) == _attempts(here)
    assert eval_without_timings(ray)["pass_at"] == eval_without_timings(here)["pass_at"]
    later = sorted(p.relative_to(here) for p in (here / "checkpoints").glob("attempt-*/*"))
    assert later and later == sorted(p.relative_to(ray) for p in (ray / "checkpoints").glob("attempt-*/*"))


def test_memory_over_the_run_is_refused_on_ray_in_one_line(
    lits_here: Callable[..., int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lits_here("chain", *ATTEMPTS, "--memory-arg", "scope=run", "--executor", "ray", "--save-dir", "r") == 2
    assert "scope=run passes memory from instance to instance in order" in capsys.readouterr().err
