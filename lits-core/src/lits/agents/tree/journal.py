"""An append-only journal of a search tree: what changed, one line per checkpoint.

Each line holds the nodes created or changed since the last line (their own
fields and parent id, never their subtrees), the leaves whose paths were
backed up (MCTS visits: one id per iteration, the values are recomputed from
the journaled rewards on replay), the policy's new proposals, the iteration
counter, the next node id and the search statistics.  Disk per run grows with
nodes, not nodes × iterations, and the cost of a checkpoint does not grow with
the tree.  When an instance finishes, the lines are merged into one.

A line cut short by a crash is dropped (with a warning) when the journal is
read, and the file is truncated to its last whole line before more is appended.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from lits.structures.base import atomic_write_text
from lits.structures.node import SearchNode
from lits.type_registry import deserialize

#: Checkpoints closer together than this share one journal line (a kill loses at most this
#: much work, which a resume redoes from the response cache; the clock decides only how
#: often lines are written, never what the search does).
FLUSH_SECONDS = 0.25
#: Node fields that change with every visit; the journal carries backed-up paths instead.
VISIT_FIELDS = ("visits", "cum_rewards")


class JournalError(ValueError):
    """A journal that cannot be replayed (damaged before its last line)."""


class TreeJournal:
    """Appends tree deltas for one instance to ``path`` and replays them."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh: Optional[Any] = None
        self._written = float("-inf")  # the first checkpoint is written at once
        self.bytes_written = 0
        self._nodes: dict[int, dict[str, Any]] = {}
        self._paths: list[int] = []
        self._proposals: list[tuple[str, bool]] = []
        self._counters: Optional[tuple[int, int, dict[str, Any]]] = None

    # -- writing -------------------------------------------------------------
    def append(self, iteration: int, next_id: int, stats: dict[str, Any],
               nodes: Iterable[SearchNode], paths: list[int],
               proposals: Iterable[tuple[str, bool]] = ()) -> None:
        """One checkpoint: the changed ``nodes`` and the leaves of the paths backed up since the last one.

        Checkpoints that come faster than FLUSH_SECONDS are merged into one line
        (a node changed twice is written once), so a zero-latency search does
        not spend its time encoding JSON; a slower one writes a line per
        checkpoint.  Merged or not, replaying gives the same tree.
        """
        for node in nodes:  # as they are now: the search goes on changing them
            self._nodes[node.id] = _flat(node, skip=VISIT_FIELDS)
        if paths:
            self._paths.extend(paths)
        if proposals:
            self._proposals.extend(proposals)
        self._counters = (iteration, next_id, stats.copy())
        if time.monotonic() - self._written >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write the pending checkpoints as one line and hand it to the OS."""
        if self._counters is None:
            return
        iteration, next_id, stats = self._counters
        record = {
            "iteration": iteration,
            "next_id": next_id,
            "stats": stats,
            "nodes": [self._nodes[i] for i in sorted(self._nodes)],
            "paths": self._paths,
            "proposals": self._proposals,
        }
        line = json.dumps(record, separators=(",", ":")) + "\n"
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(line)
        self._fh.flush()  # to the OS: a killed process loses nothing it wrote
        self.bytes_written += len(line)
        self._nodes, self._paths, self._proposals, self._counters = {}, [], [], None
        self._written = time.monotonic()

    def compact(self) -> None:
        """Merge the journal's lines into one (atomically, fsynced): the finished instance's tree.

        Works on the JSON itself, so nothing is serialized again.
        """
        self.close()
        records = self._read_records()
        if len(records) <= 1:
            return
        nodes: dict[int, dict[str, Any]] = {}
        merged: dict[str, Any] = {"compact": True, "nodes": [], "paths": [], "proposals": []}
        for record in records:
            for flat in record["nodes"]:
                nodes[int(flat["id"])] = flat
            merged["paths"].extend(record.get("paths") or [])
            merged["proposals"].extend(record.get("proposals") or [])
        merged.update({k: records[-1][k] for k in ("iteration", "next_id", "stats")})
        merged["nodes"] = [nodes[i] for i in sorted(nodes)]
        text = json.dumps(merged, separators=(",", ":")) + "\n"
        atomic_write_text(self.path, text)
        self.bytes_written += len(text)

    def close(self) -> None:
        """Write what is pending (a search that raised keeps its last checkpoints) and close."""
        self.flush()
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    # -- reading ---------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def replay(self, backup: Optional[Callable[[list[SearchNode]], Any]] = None
               ) -> Optional[tuple[SearchNode, dict[str, Any]]]:
        """The tree and the last line's counters, or None for an empty journal.

        ``backup(path)`` re-applies the search's backup to each journaled path
        (root to leaf), in the order the search applied them.
        """
        records = self._read_records()
        if not records:
            return None
        nodes: dict[int, SearchNode] = {}
        proposals: list[tuple[str, bool]] = []
        for record in records:
            proposals.extend((str(a), bool(d)) for a, d in record.get("proposals") or [])
            for flat in record["nodes"]:
                _apply(nodes, flat)
            leaves = record.get("paths") or []
            if leaves and backup is None:
                raise JournalError(f"{self.path}: backed-up paths but no backup to replay them with")
            for leaf_id in leaves:
                assert backup is not None
                backup(nodes[int(leaf_id)].path())
        if 0 not in nodes:
            raise JournalError(f"{self.path}: the journal has no root node")
        last = records[-1]
        return nodes[0], {"iteration": int(last["iteration"]), "next_id": int(last["next_id"]),
                          "stats": dict(last.get("stats") or {}), "proposals": proposals}

    def _read_records(self) -> list[dict[str, Any]]:
        if not self.exists():
            return []
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        records: list[dict[str, Any]] = []
        good_bytes = 0
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                good_bytes += len(line) + 1
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                if any(rest.strip() for rest in lines[number:]):
                    raise JournalError(f"{self.path}: line {number} is damaged; the run cannot resume "
                                       "from this journal (delete it to redo the instance)") from None
                warnings.warn(f"{self.path}: dropped a torn last line (the run was killed mid-write)",
                              stacklevel=2)
                with open(self.path, "r+b") as fh:  # appends must follow a whole line
                    fh.truncate(min(good_bytes, len(raw)))
                    fh.flush()
                    os.fsync(fh.fileno())
                break
            good_bytes += len(line) + 1
        return records


def _flat(node: SearchNode, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    out = node.to_flat_dict(skip=skip)
    out["parent"] = node.parent.id if node.parent is not None else None
    return out


def _apply(nodes: dict[int, SearchNode], flat: dict[str, Any]) -> None:
    flat = dict(flat)
    parent_id = flat.pop("parent", None)
    node_id = int(flat["id"])
    known = nodes.get(node_id)
    if known is not None:
        known.update_from_flat(flat)
        return
    node = deserialize(flat)
    nodes[node_id] = node
    if parent_id is not None:
        parent = nodes.get(int(parent_id))
        if parent is None:
            raise JournalError(f"node {node_id} refers to unknown parent {parent_id}")
        node.parent = parent
        parent.children.append(node)
