"""What a tree search writes down as it goes: the nodes it changed and the paths it backed up since its
last checkpoint, handed at each checkpoint to the instance's :class:`~lits.agents.tree.journal.TreeJournal`.

:class:`~lits.agents.tree.base.BaseTreeSearch` owns one recorder and keeps the algorithm-facing calls
(``mark``, ``backup``, ``save_checkpoint``); this is the bookkeeping behind them.  Without a checkpoint
folder there is no journal and nothing is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from lits.agents.tree.journal import TreeJournal
from lits.structures.node import SearchNode


class TreeRecorder:
    """One instance's journal and the changes waiting for its next checkpoint."""

    def __init__(self) -> None:
        self.journal: TreeJournal | None = None
        self._dirty: dict[int, SearchNode] = {}  # changed since the last checkpoint, by object id
        self._paths: list[int] = []  # leaves of the paths backed up since the last checkpoint

    @property
    def active(self) -> bool:
        return self.journal is not None

    def open(self, path: Path) -> None:
        """Record into the journal at ``path`` (what an earlier run left there is replayed or removed)."""
        self.journal = TreeJournal(path)
        self._dirty, self._paths = {}, []

    def replay(self, backup: Callable[[list[SearchNode]], object]) -> tuple[SearchNode, dict[str, Any]] | None:
        """The journaled tree and its counters (None: no journal, or an empty one)."""
        if self.journal is None or not self.journal.exists():
            return None
        return self.journal.replay(backup)

    def forget_earlier_run(self) -> None:
        """A fresh start: a journal an earlier run left must not be replayed later."""
        if self.journal is not None and self.journal.exists():
            self.journal.path.unlink()

    def mark(self, node: SearchNode) -> None:
        if self.journal is not None:
            self._dirty[id(node)] = node

    def backed_up(self, leaf: SearchNode) -> None:
        if self.journal is not None:
            self._paths.append(leaf.id)

    def checkpoint(
        self, iteration: int, next_id: int, stats: dict[str, Any], proposals: list[tuple[str, bool]]
    ) -> None:
        """Hand what changed since the last checkpoint to the journal."""
        if self.journal is None:
            return
        # Once the tree stops growing, most checkpoints carry only a backed-up leaf: keep that path cheap.
        nodes = sorted(self._dirty.values(), key=_node_id) if self._dirty else ()
        self.journal.append(iteration, next_id, stats, nodes, self._paths, proposals)
        if nodes:
            self._dirty = {}
        self._paths = []

    def compact(self) -> None:
        """Merge the journal into one line (the instance is done)."""
        if self.journal is not None:
            self.journal.compact()

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()


def _node_id(node: SearchNode) -> int:
    return node.id
