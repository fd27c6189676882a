"""The byte-identity benchmark's comparison: two run dirs match unless a decided value differs (durations aside)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import byte_identical  # noqa: E402  (the benchmarks folder is not a package)


def _run_dir(root: Path, *, answer: str = "15", seconds: float = 0.5, depth: float = 2) -> Path:
    for sub in ("results", "terminal_nodes", "paths", "checkpoints"):
        (root / sub).mkdir(parents=True)
    (root / "results" / "0.json").write_text(json.dumps({"idx": 0, "answer": answer, "solved": True}))
    (root / "terminal_nodes" / "0.json").write_text(json.dumps([{"id": 3, "depth": depth}]))
    (root / "paths" / "0.json").write_text(json.dumps([{"id": 0}, {"id": 3}]))
    journal = [{"event": "expand", "node": 0}, {"event": "expand", "node": 3, "depth": depth}]
    (root / "checkpoints" / "0.journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in journal))
    inference = {"calls": 4, "tokens_in": 100, "seconds": seconds}
    (root / "eval_results.json").write_text(json.dumps({"solved": 1, "run_seconds": seconds, "inference": inference}))
    (root / "config.json").write_text(json.dumps({"save_dir": str(root)}))  # never compared
    return root


def test_run_dirs_that_differ_only_in_durations_are_identical(tmp_path):
    before = _run_dir(tmp_path / "before", seconds=0.5)
    after = _run_dir(tmp_path / "after", seconds=2.25)
    assert byte_identical.compare_runs(before, after) == (5, [])


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        ({"answer": "16"}, "results/0.json: answer: '15' != '16'"),
        ({"depth": 3}, "checkpoints/0.journal.jsonl: [1].depth: 2 != 3"),
        ({"depth": 2.0}, "checkpoints/0.journal.jsonl: [1].depth: 2 != 2.0"),  # written differently
    ],
)
def test_a_differing_value_is_reported_by_its_file_and_first_key(tmp_path, change, reported):
    before = _run_dir(tmp_path / "before")
    after = _run_dir(tmp_path / "after", **change)
    count, differing = byte_identical.compare_runs(before, after)
    assert count == 5 and differing[0] == reported


def test_a_file_written_by_one_version_only_is_a_difference(tmp_path):
    before = _run_dir(tmp_path / "before")
    after = _run_dir(tmp_path / "after")
    (after / "results" / "1.json").write_text("{}")
    assert byte_identical.compare_runs(before, after) == (6, ["results/1.json: only in after"])
