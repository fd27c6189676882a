"""Data files: a damaged split is one line naming it; only the selected instances are read."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from tests.cli.conftest import one_line_error

Lits = Callable[..., subprocess.CompletedProcess[str]]
PROBLEM = """(define (problem p) (:domain blocksworld)
(:objects a b)
(:init (handempty) (ontable a) (ontable b) (clear a) (clear b))
(:goal (and (on a b))))
"""


def _split(root: Path, entries: list) -> Path:
    (root / "split_v1").mkdir(parents=True)
    (root / "instances").mkdir()
    split = root / "split_v1" / "split_v1_step_2_data.json"
    split.write_text(json.dumps(entries))
    return split


def _blocksworld(lits_cmd: Lits, root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return lits_cmd(
        "chain",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        f"path={root}",
        "--dataset-arg",
        "steps=2",
        "--model",
        "scripted",
        "--save-dir",
        "run",
        *extra,
    )


@pytest.mark.parametrize("damage", ["truncated", "empty", "binary", "not-a-list"])
def test_a_damaged_split_file_is_one_line_naming_it(lits_cmd: Lits, tmp_path: Path, damage: str):
    split = _split(tmp_path / "bw", [["instances/p.pddl", "(pick-up a)\n(stack a b)\n", 2]])
    text = split.read_bytes()
    split.write_bytes(
        {
            "truncated": text[: len(text) // 2],
            "empty": b"",
            "binary": b"\x89PNG\r\n\x1a\n\xff\xfe",
            "not-a-list": b'{"a": 1}',
        }[damage]
    )
    line = one_line_error(_blocksworld(lits_cmd, tmp_path / "bw"))
    assert str(split) in line and "RAP split" in line


def test_only_the_selected_instances_pddl_is_read(lits_cmd: Lits, tmp_path: Path):
    root = tmp_path / "bw"
    entries = [[f"instances/p{i}.pddl", "(pick-up a)\n(stack a b)\n", 2] for i in range(1000)]
    _split(root, entries)
    (root / "instances" / "p3.pddl").write_text(PROBLEM)  # the other 999 files do not exist
    result = _blocksworld(lits_cmd, root, "--offset", "3", "--limit", "1")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "run" / "results" / "3.json").read_text())["eval"]["solved"] in (True, False)


def test_a_missing_pddl_file_of_a_selected_instance_is_one_line_naming_it(lits_cmd: Lits, tmp_path: Path):
    root = tmp_path / "bw"
    _split(root, [["instances/missing.pddl", "(pick-up a)\n(stack a b)\n", 2]])
    line = one_line_error(_blocksworld(lits_cmd, root))
    assert str(root / "instances" / "missing.pddl") in line
