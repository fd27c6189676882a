"""A full disk, an unwritable save dir, a broken cache or a damaged run file: one line, no traceback."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests.cli.conftest import one_line_error, run_outputs

Lits = Callable[..., subprocess.CompletedProcess[str]]
SCRIPTED = ["search", "--dataset", "blocksworld", "--model", "scripted", "--limit", "6"]


def _file_size_limit(limit: int) -> Callable[[], None]:
    """A child where no file may grow past ``limit`` bytes: writes fail with EFBIG, as on a full disk."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _lits_on_a_full_disk(cwd: Path, *args: str, room: int = 64 * 1024) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lits", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        preexec_fn=_file_size_limit(room),
    )


def test_a_full_disk_stops_the_run_in_one_line_and_resume_completes_it(lits_cmd: Lits, tmp_path: Path):
    # Room for some instances' files, not all of them (the inference log outgrows it mid-run).
    full = _lits_on_a_full_disk(tmp_path, *SCRIPTED, "--no-cache", "--save-dir", "run", room=24 * 1024)
    line = one_line_error(full)
    assert line.startswith("lits: error: no space left writing run/")
    assert line.endswith("free some space, then run `lits search --resume --save-dir run`")
    assert lits_cmd(*SCRIPTED, "--no-cache", "--save-dir", "whole").returncode == 0
    resumed = lits_cmd("search", "--resume", "--save-dir", "run")
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert run_outputs(tmp_path / "run") == run_outputs(tmp_path / "whole")


def test_a_full_disk_under_the_cache_says_it_is_the_cache(tmp_path: Path):
    line = one_line_error(_lits_on_a_full_disk(tmp_path, *SCRIPTED, "--save-dir", "run"))
    assert f"the response cache {Path('run') / 'cache.sqlite'} cannot be written" in line
    assert "--no-cache" in line


def test_a_save_dir_that_cannot_be_created_is_one_line(lits_cmd: Lits, tmp_path: Path):
    (tmp_path / "a-file").write_text("not a folder")
    line = one_line_error(lits_cmd(*SCRIPTED, "--save-dir", "a-file/run"))
    assert "cannot write the save dir a-file/run" in line and "--save-dir" in line


@pytest.mark.parametrize("make", ["folder", "under-a-file", "not-a-database"])
def test_a_cache_that_cannot_be_used_says_it_is_the_cache(lits_cmd: Lits, tmp_path: Path, make: str):
    cache = {"folder": "folder", "under-a-file": "a-file/cache.sqlite", "not-a-database": "junk.sqlite"}[make]
    (tmp_path / "folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "junk.sqlite").write_bytes(os.urandom(4096))
    line = one_line_error(lits_cmd(*SCRIPTED, "--cache", cache, "--save-dir", "run"))
    assert line.startswith(f"lits: error: the response cache {cache} cannot be")
    assert "--no-cache" in line


@pytest.fixture
def finished(lits_cmd: Lits, tmp_path: Path) -> Path:
    assert lits_cmd(*SCRIPTED, "--limit", "2", "--save-dir", "run").returncode == 0
    return tmp_path / "run"


@pytest.mark.parametrize("command", [["eval", "--save-dir", "run"], ["search", "--resume", "--save-dir", "run"]])
def test_a_damaged_config_is_one_line_naming_it(lits_cmd: Lits, finished: Path, command):
    (finished / "config.json").write_text('{"command": "sea')
    line = one_line_error(lits_cmd(*command))
    assert f"{Path('run') / 'config.json'} is damaged" in line


@pytest.mark.parametrize("command", [["eval", "--save-dir", "run"], ["search", "--resume", "--save-dir", "run"]])
def test_a_damaged_result_is_one_line_naming_it_and_how_to_redo_it(lits_cmd: Lits, finished: Path, command):
    (finished / "results" / "1.json").write_bytes(b"\x00\x01 not json")
    line = one_line_error(lits_cmd(*command))
    assert f"{Path('run') / 'results' / '1.json'} is damaged" in line
    assert "delete it and run `lits search --resume --save-dir run` to redo instance 1" in line


def test_a_log_that_a_full_tmpfs_refuses_at_close_is_one_line_naming_it_and_resume(tmp_path: Path, monkeypatch, capsys):
    # On a full tmpfs the execution log's buffered lines failed only when it was closed: "no space left writing
    # a file (No space left on device); free some space", with neither the file nor --resume.
    import errno

    from lits.cli.main import main
    from lits.runs.results import artifacts

    def full(self: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(artifacts._QuietFileHandler, "flush", full)
    run = tmp_path / "run"
    assert main([*SCRIPTED, "--limit", "1", "--no-cache", "--save-dir", str(run)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("lits: error:")]
    assert lines == [
        f"lits: error: no space left writing {run / 'execution.log'} (No space left on device); "
        f"free some space, then run `lits search --resume --save-dir {run}`"
    ]
