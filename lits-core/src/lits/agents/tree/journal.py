"""An append-only journal of a search tree: what changed, one line per checkpoint.

Each line holds the nodes created or changed since the last line (their own
fields and parent id, never their subtrees), the leaves whose paths were
backed up (MCTS visits: one id per iteration, the values are recomputed from
the journaled rewards on replay), the policy's new proposals, the iteration
counter, the next node id and the search statistics.  A node whose state is its
parent's plus steps is written with those steps alone (``parent_steps``: how
many it shares), so a record costs one step at any depth.  Disk per run grows
with nodes, not nodes × iterations or depth, and the cost of a checkpoint does
not grow with the tree.  When an instance finishes, the lines are merged into
one.

Compaction and replay read the journal a line at a time: compaction keeps only
the latest JSON text of each node (never every line's parsed dicts), replay only
the tree it builds, so neither needs memory for the journal's superseded lines.

A line cut short by a crash is dropped (with a warning) when the journal is
read, and the file is truncated to its last whole line before more is appended.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO

from lits.io import fastjson
from lits.io.durable import atomic_writer
from lits.structures.base import TrajectoryState, field_names
from lits.structures.node import PARENT_STEPS, SearchNode
from lits.type_registry import deserialize, serialize

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
        self._fh: TextIO | None = None
        # The clock starts now: a search shorter than FLUSH_SECONDS writes its tree once, when it is compacted.
        self._written = time.monotonic()
        self.bytes_written = 0
        self._nodes: dict[int, dict[str, object]] = {}
        self._paths: list[int] = []
        self._proposals: list[tuple[str, bool]] = []
        self._counters: tuple[int, int, dict[str, Any]] | None = None
        #: The lines this journal wrote, kept as compaction needs them (latest text per node), while the
        #: file holds nothing else and the copy stays small: compaction then reads nothing back.
        self._mirror: _Mirror | None = None
        self._mirror_usable = True

    # -- writing -------------------------------------------------------------
    def append(
        self,
        iteration: int,
        next_id: int,
        stats: dict[str, Any],
        nodes: Iterable[SearchNode],
        paths: list[int],
        proposals: Iterable[tuple[str, bool]] = (),
    ) -> None:
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
        texts = [(i, _dumps(self._nodes[i])) for i in sorted(self._nodes)]
        proposals = [_dumps(list(p)) for p in self._proposals]
        # The compact JSON of the whole record, built from its parts.
        line = (
            _dumps({"iteration": iteration, "next_id": next_id, "stats": stats})[:-1]
            + ',"nodes":['
            + ",".join(text for _, text in texts)
            + '],"paths":'
            + _dumps(self._paths)
            + ',"proposals":['
            + ",".join(proposals)
            + "]}\n"
        )
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._mirror is None and self._mirror_usable:
                self._mirror_usable = not self.exists()  # lines of an earlier process: read the file
                self._mirror = _Mirror() if self._mirror_usable else None
            self._fh = open(self.path, "a", encoding="utf-8")
        if self._mirror is not None:
            self._mirror.add(texts, self._paths, proposals, (iteration, next_id, stats))
            if self._mirror.size > MIRROR_BYTES:
                self._mirror, self._mirror_usable = None, False
        self._fh.write(line)
        self._fh.flush()  # to the OS: a killed process loses nothing it wrote
        self.bytes_written += len(line)
        self._nodes, self._paths, self._proposals, self._counters = {}, [], [], None
        self._written = time.monotonic()

    def compact(self) -> None:
        """Merge the journal's lines and the pending checkpoints into one line (atomically, fsynced).

        Inside :func:`~lits.io.durable.durable_together` (the runner's end of an instance) the merged
        file replaces the journal when that block ends, made durable together with the instance's files.

        Streams: each node's latest JSON text is kept (later lines win), the rest of a line is dropped once
        read, and the merged line is written piece by piece.  Pending checkpoints join the merge from
        memory, never written as a line of their own first (a short search's whole tree is often still
        pending).  The text is the compact JSON of the merged record.
        """
        pending = self._counters is not None
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        nodes: dict[int, str] = {}
        paths: list[object] = []
        proposals: list[str] = []
        last: dict[str, Any] | None = None
        count = 0
        mirror = self._mirror if self._mirror_usable else None
        if mirror is not None:
            nodes, paths, proposals, count = mirror.nodes, list(mirror.paths), list(mirror.proposals), mirror.lines
            if mirror.last is not None:
                last = dict(zip(("iteration", "next_id", "stats"), mirror.last))
        else:
            for record in self._records():
                count += 1
                for flat in record.pop("nodes"):
                    nodes[int(flat["id"])] = _dumps(flat)
                paths.extend(record.get("paths") or [])
                proposals.extend(_dumps(p) for p in record.get("proposals") or [])
                last = record
        only_pending = not nodes  # nothing written before (a short search): its nodes encoded in one call
        if pending:
            iteration, next_id, stats = self._counters  # type: ignore[misc]
            last = {"iteration": iteration, "next_id": next_id, "stats": stats}
            if not only_pending:
                nodes.update((node_id, _dumps(flat)) for node_id, flat in self._nodes.items())
            paths.extend(self._paths)
            if self._proposals:  # their texts joined by commas, as the line lists them
                proposals.append(_dumps([list(p) for p in self._proposals])[1:-1])
            count += 1
        if count <= 1 and not pending or last is None:
            return
        tail = _dumps({k: last[k] for k in ("iteration", "next_id", "stats")})[1:]
        try:
            with atomic_writer(self.path, grouped=True) as fh:

                def write(piece: str) -> None:
                    fh.write(piece)
                    self.bytes_written += len(piece)

                if only_pending:
                    write('{"compact":true,"nodes":' + _dumps([self._nodes[i] for i in sorted(self._nodes)]))
                else:
                    write('{"compact":true,"nodes":[')
                    for k, node_id in enumerate(sorted(nodes)):  # one node at a time: no second copy of the text
                        write("," + nodes[node_id] if k else nodes[node_id])
                    write("]")
                write(',"paths":' + _dumps(paths) + ',"proposals":[' + ",".join(proposals) + "]," + tail + "\n")
        except BaseException:
            self.close()  # the pending checkpoints as a line of their own, if the disk takes it
            raise
        self._nodes, self._paths, self._proposals, self._counters = {}, [], [], None
        self._mirror, self._mirror_usable = None, False  # the file is one merged line now

    def close(self) -> None:
        """Write what is pending (a search that raised keeps its last checkpoints) and close."""
        self.flush()
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    # -- reading ---------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def replay(
        self, backup: Callable[[list[SearchNode]], object] | None = None
    ) -> tuple[SearchNode, dict[str, Any]] | None:
        """The tree and the last line's counters, or None for an empty journal.

        ``backup(path)`` re-applies the search's backup to each journaled path
        (root to leaf), in the order the search applied them.
        """
        nodes: dict[int, SearchNode] = {}
        proposals: list[tuple[str, bool]] = []
        last: dict[str, Any] | None = None
        for record in self._records():
            last = record
            proposals.extend((str(a), bool(d)) for a, d in record.get("proposals") or [])
            deltas: dict[int, dict[str, Any]] = {}
            for flat in record["nodes"]:
                _apply(nodes, flat, deltas)
            _rebuild_states(nodes, deltas, self.path)
            leaves = record.get("paths") or []
            if leaves and backup is None:
                raise JournalError(f"{self.path}: backed-up paths but no backup to replay them with")
            for leaf_id in leaves:
                assert backup is not None
                backup(nodes[int(leaf_id)].path())
        if last is None:
            return None
        if 0 not in nodes:
            raise JournalError(f"{self.path}: the journal has no root node")
        return nodes[0], {
            "iteration": int(last["iteration"]),
            "next_id": int(last["next_id"]),
            "stats": dict(last.get("stats") or {}),
            "proposals": proposals,
        }

    def _records(self) -> Iterator[dict[str, Any]]:
        """The journal's records, parsed one line at a time; a torn last line is dropped (and cut off the file)."""
        if not self.exists():
            return
        good_bytes = 0
        torn_at = 0
        with open(self.path, "rb") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    good_bytes += len(line)
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    if any(rest.strip() for rest in fh):
                        raise JournalError(
                            f"{self.path}: line {number} is damaged; the run cannot resume "
                            "from this journal (delete it to redo the instance)"
                        ) from None
                    torn_at = number
                    break
                good_bytes += len(line)
                yield record
        if torn_at:
            warnings.warn(f"{self.path}: dropped a torn last line (the run was killed mid-write)", stacklevel=3)
            with open(self.path, "r+b") as out:  # appends must follow a whole line
                out.truncate(good_bytes)
                out.flush()
                os.fsync(out.fileno())


#: Compaction reads the journal back instead once the lines it wrote exceed this (bounded memory).
MIRROR_BYTES = 8 << 20


class _Mirror:
    """What compaction needs of the lines written so far: each node's latest text, paths, proposals."""

    def __init__(self) -> None:
        self.nodes: dict[int, str] = {}
        self.paths: list[object] = []
        self.proposals: list[str] = []
        self.last: tuple[int, int, dict[str, Any]] | None = None
        self.lines = 0
        self.size = 0

    def add(
        self,
        texts: list[tuple[int, str]],
        paths: list[int],
        proposals: list[str],
        counters: tuple[int, int, dict[str, Any]],
    ) -> None:
        for node_id, text in texts:
            self.size += len(text) - len(self.nodes.get(node_id, ""))
            self.nodes[node_id] = text
        self.paths.extend(paths)
        self.proposals.extend(proposals)
        self.size += 8 * len(paths) + sum(len(p) for p in proposals)
        self.last = counters
        self.lines += 1


def _dumps(value: object) -> str:
    """Compact JSON of a journal record or node (every node of every line: the fast encoder)."""
    return fastjson.compact(value)


def _flat(node: SearchNode, skip: tuple[str, ...] = ()) -> dict[str, object]:
    delta = _state_delta(node)
    out = node.to_flat_dict(skip=skip, given=None if delta is None else {"state": delta})
    out["parent"] = node.parent.id if node.parent is not None else None
    return out


def _state_delta(node: SearchNode) -> dict[str, object] | None:
    """A state that is its parent's plus steps, as those steps alone (None: journal it whole).

    Its parent's steps must be its first steps (the very objects, as a transition's copy shares them) and
    its other fields equal; the record then costs one step, not the whole trajectory.
    """
    state, parent = node.state, node.parent
    if parent is None or not isinstance(state, TrajectoryState) or type(parent.state) is not type(state):
        return None
    if not _plain_trajectory(type(state)):
        return None
    base: TrajectoryState[Any] = parent.state
    shared = len(base)
    if len(state) < shared or not all(map(operator.is_, base, state)):
        return None
    if not _same_fields(state, base):
        return None
    return {"__type__": type(state).__name__, PARENT_STEPS: shared, "steps": [serialize(s) for s in state[shared:]]}


def _same_fields(state: TrajectoryState[Any], base: TrajectoryState[Any]) -> bool:
    """Whether two states of one class agree on every field besides their steps."""
    if dataclasses.is_dataclass(state):
        return all(getattr(state, name) == getattr(base, name) for name in field_names(type(state)))
    return state._extra_fields() == base._extra_fields()


@functools.lru_cache(maxsize=None)
def _plain_trajectory(cls: type) -> bool:
    """A list-of-steps state serialized as :class:`TrajectoryState` does (one that writes itself its own way
    is journaled whole)."""
    return (
        issubclass(cls, TrajectoryState)
        and cls.to_dict is TrajectoryState.to_dict
        and cls.from_dict.__func__ is TrajectoryState.from_dict.__func__  # type: ignore[attr-defined]
    )


def _apply(nodes: dict[int, SearchNode], flat: dict[str, Any], deltas: dict[int, dict[str, Any]]) -> None:
    flat = dict(flat)
    parent_id = flat.pop("parent", None)
    node_id = int(flat["id"])
    state = flat.get("state")
    if type(state) is dict and PARENT_STEPS in state:  # rebuilt from its parent's once the record is read
        deltas[node_id] = flat.pop("state")
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


def _rebuild_states(nodes: dict[int, SearchNode], deltas: dict[int, dict[str, Any]], path: Path) -> None:
    """Each journaled-as-delta state: its parent's state (rebuilt first) copied, plus its own steps."""
    for node_id in sorted(deltas):
        chain = []
        node: SearchNode | None = nodes[node_id]
        while node is not None and node.id in deltas:  # ancestors in this record come first
            chain.append(node)
            node = node.parent
        for node in reversed(chain):
            delta = deltas.pop(node.id)
            base = node.parent.state if node.parent is not None else None
            if not isinstance(base, TrajectoryState) or len(base) != delta[PARENT_STEPS]:
                raise JournalError(f"{path}: node {node.id}'s state extends a parent state the journal lacks")
            state = base.copy()
            list.extend(state, [deserialize(step) for step in delta["steps"]])
            node.state = state
