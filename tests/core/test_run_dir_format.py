"""One versioned run-dir layout (lits.io.layout): every run records its format; a newer format is refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lits.io import layout


@pytest.fixture
def finished_run(tmp_path: Path) -> Path:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "search",
            "--dataset",
            "blocksworld",
            "--model",
            "scripted",
            "--limit",
            "1",
            "--save-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / "run"


def test_a_run_writes_every_file_where_the_layout_says(finished_run: Path) -> None:
    for name in (
        layout.CONFIG,
        layout.INFERENCE_LOG,
        layout.EXECUTION_LOG,
        layout.SUMMARY,
        layout.SUMMARY_TEXT,
        layout.result(0),
        layout.path(0),
        layout.terminal_nodes(0),
        layout.timing(0),
        f"{layout.CHECKPOINTS}/{layout.journal_name(0)}",
    ):
        assert (finished_run / name).is_file(), name
    assert json.loads((finished_run / layout.CONFIG).read_text())["format"] == layout.FORMAT


def test_a_run_from_a_newer_format_is_refused_in_one_line_by_every_reader(finished_run: Path) -> None:
    config = json.loads((finished_run / layout.CONFIG).read_text())
    (finished_run / layout.CONFIG).write_text(json.dumps({**config, "format": layout.FORMAT + 1}))
    for command in (
        ["eval", "--save-dir", str(finished_run)],
        ["search", "--resume", "--save-dir", str(finished_run)],
        ["rerun", str(finished_run), "--dry-run"],
        ["view", str(finished_run), "--out", str(finished_run / "page.html")],
    ):
        done = subprocess.run([sys.executable, "-m", "lits", *command], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"written in run-dir format {layout.FORMAT + 1} by a newer LiTS" in done.stderr.strip().splitlines()[-1]


def test_resume_removes_the_temporary_files_of_writes_a_kill_cut_short(finished_run: Path) -> None:
    torn = [finished_run / layout.TERMINAL_NODES / ".1.json.x1y2z3.tmp", finished_run / ".config.json.a1b2.tmp"]
    for path in torn:
        path.write_bytes(b"")
    done = subprocess.run(
        [sys.executable, "-m", "lits", "search", "--resume", "--save-dir", str(finished_run)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not any(path.exists() for path in torn)
    assert (finished_run / layout.result(0)).is_file()
