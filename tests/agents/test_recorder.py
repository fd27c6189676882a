"""The tree recorder: the changes a search marks wait for its next checkpoint, then go to the journal once."""

from __future__ import annotations

import json

from lits.agents.tree.recorder import TreeRecorder
from lits.structures.node import SearchNode


def _tree() -> tuple[SearchNode, SearchNode]:
    root = SearchNode(id=0)
    return root, root.add_child(SearchNode(id=1))


def _force_lines(monkeypatch) -> None:
    monkeypatch.setattr("lits.agents.tree.journal.FLUSH_SECONDS", 0.0)


def test_a_recorder_without_a_journal_keeps_nothing():
    recorder = TreeRecorder()
    root, child = _tree()
    recorder.mark(child)
    recorder.backed_up(child)
    recorder.checkpoint(1, 2, {}, [])
    assert not recorder.active and recorder.replay(lambda path: None) is None
    assert not recorder._dirty and not recorder._paths  # nothing held in memory for a checkpoint that never comes


def test_marked_nodes_and_backed_up_leaves_go_into_the_next_checkpoint_only(tmp_path, monkeypatch):
    _force_lines(monkeypatch)
    recorder = TreeRecorder()
    recorder.open(tmp_path / "0.journal.jsonl")
    root, child = _tree()
    recorder.mark(root)
    recorder.mark(child)
    recorder.mark(child)  # marked twice, written once
    recorder.backed_up(child)
    recorder.checkpoint(1, 2, {"nodes": 2}, [("pick up the red block", False)])
    recorder.checkpoint(2, 2, {"nodes": 2}, [])
    recorder.close()
    first, second = [json.loads(line) for line in (tmp_path / "0.journal.jsonl").read_text().splitlines()]
    assert [n["id"] for n in first["nodes"]] == [0, 1] and first["paths"] == [1]
    assert second["nodes"] == [] and second["paths"] == []


def test_a_fresh_start_removes_the_journal_an_earlier_run_left(tmp_path, monkeypatch):
    _force_lines(monkeypatch)
    path = tmp_path / "0.journal.jsonl"
    earlier = TreeRecorder()
    earlier.open(path)
    earlier.mark(_tree()[0])
    earlier.checkpoint(1, 1, {}, [])
    earlier.close()
    fresh = TreeRecorder()
    fresh.open(path)
    fresh.forget_earlier_run()
    assert not path.exists() and fresh.replay(lambda p: None) is None
