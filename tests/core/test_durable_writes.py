"""Atomic writes made durable together: one fsync wait for a group of files, renamed in order."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from lits.io import durable
from lits.io.durable import atomic_write_text, durable_together


def test_grouped_writes_appear_when_the_block_ends_in_the_order_they_were_written(tmp_path: Path, monkeypatch):
    renamed: list[str] = []
    replace = os.replace

    def spy(src: str, dst: str | Path) -> None:
        renamed.append(Path(dst).name)
        replace(src, dst)

    monkeypatch.setattr(durable.os, "replace", spy)
    with durable_together():
        atomic_write_text(tmp_path / "b.json", "B", grouped=True)
        atomic_write_text(tmp_path / "a.json", "A", grouped=True)
        assert not (tmp_path / "a.json").exists() and not (tmp_path / "b.json").exists()
        atomic_write_text(tmp_path / "now.json", "N")  # not grouped: in place at once
        assert (tmp_path / "now.json").read_text() == "N"
    assert renamed == ["now.json", "b.json", "a.json"]
    assert (tmp_path / "a.json").read_text() == "A" and (tmp_path / "b.json").read_text() == "B"
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_block_inside_another_joins_its_group_and_waits_for_its_end(tmp_path: Path):
    with durable_together():
        atomic_write_text(tmp_path / "journal.json", "J", grouped=True)
        with durable_together():
            atomic_write_text(tmp_path / "result.json", "R", grouped=True)
        assert not (tmp_path / "result.json").exists()  # never before the journal written ahead of it
    assert (tmp_path / "journal.json").read_text() == "J" and (tmp_path / "result.json").read_text() == "R"


def test_an_instances_files_become_durable_in_one_group_the_result_last(tmp_path: Path, monkeypatch):
    from lits.cli.main import main

    groups: list[list[str]] = []
    commit = durable._commit
    monkeypatch.setattr(
        durable, "_commit", lambda staged: (groups.append([s.path.parent.name for s in staged]), commit(staged))[1]
    )
    assert (
        main(
            [
                "search",
                "--dataset",
                "blocksworld",
                "--limit",
                "1",
                "--model",
                "scripted",
                "--search",
                "mcts",
                "--search-arg",
                "n_iterations=2",
                "--save-dir",
                str(tmp_path / "run"),
            ]
        )
        == 0
    )
    assert groups == [["checkpoints", "terminal_nodes", "paths", "timings", "results"]]


def test_a_grouped_write_outside_a_group_is_in_place_at_once(tmp_path: Path):
    atomic_write_text(tmp_path / "x.json", "X", grouped=True)
    assert (tmp_path / "x.json").read_text() == "X"


def test_files_written_before_an_error_in_the_block_are_still_put_in_place(tmp_path: Path):
    with pytest.raises(RuntimeError), durable_together():
        atomic_write_text(tmp_path / "kept.json", "K", grouped=True)
        raise RuntimeError("the instance failed after its journal was compacted")
    assert (tmp_path / "kept.json").read_text() == "K"


def test_a_failed_fsync_names_its_file_and_leaves_no_file_of_the_group(tmp_path: Path, monkeypatch):
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(durable.os, "fsync", full)
    with pytest.raises(OSError) as caught, durable_together():
        atomic_write_text(tmp_path / "a.json", "A", grouped=True)
        atomic_write_text(tmp_path / "b.json", "B", grouped=True)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename in (
        str(tmp_path / "a.json"),
        str(tmp_path / "b.json"),
    )
    assert not list(tmp_path.iterdir())


def test_the_process_counters_are_fsynced_only_at_the_runs_end(tmp_path: Path, monkeypatch):
    # They are rewritten after every instance on its thread; their reader skips a damaged file, and a killed
    # process loses nothing the OS already has, so only the last rewrite waits for the disk.
    import lits
    from lits.runs.results import artifacts

    writes: list[bool] = []
    write = artifacts.atomic_write_text

    def spy(path: Path, text: str, **kwargs: bool) -> None:
        if path.parent.name == "stats":
            writes.append(kwargs.get("durable", True))
        write(path, text, **kwargs)

    monkeypatch.setattr(artifacts, "atomic_write_text", spy)
    monkeypatch.setenv("LITS_CACHE_DIR", str(tmp_path / "cache"))
    lits.chain("blocksworld", model="scripted", limit=3, save_dir=tmp_path / "run")
    assert len(writes) >= 4 and writes[-1] is True and not any(writes[:-1])
