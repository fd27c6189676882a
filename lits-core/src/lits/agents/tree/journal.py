"""An append-only journal of a search tree: what changed, one line per checkpoint.

Each line holds the nodes created or changed since the last line (their own
fields and parent id, never their subtrees), the returns backed up through
nodes (``[id, value]`` pairs, so a visit costs a few bytes however often a node
is visited), the policy's new proposals, the iteration counter, the next node
id and the search statistics.  Disk per run grows with nodes, not nodes × iterations, and the
cost of a checkpoint does not grow with the tree.  When an instance finishes,
the journal is compacted into one line holding the whole tree.

A line cut short by a crash is dropped (with a warning) when the journal is
read, and the file is truncated to its last whole line before more is appended.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Optional

from lits.structures.base import atomic_write_text
from lits.structures.node import SearchNode
from lits.type_registry import deserialize

#: Node fields that change with every visit; the journal carries them as backups.
VISIT_FIELDS = ("visits", "cum_rewards")


class JournalError(ValueError):
    """A journal that cannot be replayed (damaged before its last line)."""


class TreeJournal:
    """Appends tree deltas for one instance to ``path`` and replays them."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh: Optional[Any] = None
        self.bytes_written = 0

    # -- writing -------------------------------------------------------------
    def append(self, iteration: int, next_id: int, stats: dict[str, Any],
               nodes: Iterable[SearchNode], backups: list[tuple[int, float]],
               proposals: Iterable[tuple[str, bool]] = ()) -> None:
        """One checkpoint: the changed ``nodes`` and the returns backed up since the last one."""
        record = {
            "iteration": iteration,
            "next_id": next_id,
            "stats": stats,
            "nodes": [_flat(n, skip=VISIT_FIELDS) for n in nodes],
            "backups": backups,
            "proposals": list(proposals),
        }
        line = json.dumps(record, separators=(",", ":")) + "\n"
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(line)
        self._fh.flush()  # to the OS: a killed process loses nothing it wrote
        self.bytes_written += len(line)

    def compact(self, iteration: int, next_id: int, stats: dict[str, Any], root: SearchNode,
                proposals: Iterable[tuple[str, bool]] = ()) -> None:
        """Replace the journal with one line holding the whole tree (atomically, fsynced)."""
        self.close()
        record = {"compact": True, "iteration": iteration, "next_id": next_id, "stats": stats,
                  "nodes": [_flat(n) for n in root.iter_tree()], "backups": [], "proposals": list(proposals)}
        text = json.dumps(record, separators=(",", ":")) + "\n"
        atomic_write_text(self.path, text)
        self.bytes_written += len(text)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    # -- reading ---------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def replay(self) -> Optional[tuple[SearchNode, dict[str, Any]]]:
        """The tree and the last line's counters, or None for an empty journal."""
        records = self._read_records()
        if not records:
            return None
        nodes: dict[int, SearchNode] = {}
        proposals: list[tuple[str, bool]] = []
        for record in records:
            proposals.extend((str(a), bool(d)) for a, d in record.get("proposals") or [])
            for flat in record["nodes"]:
                _apply(nodes, flat)
            for node_id, value in record["backups"]:
                node = nodes[int(node_id)]
                node.cum_rewards.append(float(value))  # type: ignore[attr-defined]
                node.visits += 1  # type: ignore[attr-defined]
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
