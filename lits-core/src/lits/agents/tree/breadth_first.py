"""Breadth-first beam search (ToT-BFS): expand a whole depth, keep the best ``beam_width``.

With ``score_last_depth`` off, the children of the last depth are not scored: nothing ranks them for a next
depth, and where the answer is an unweighted vote over terminal nodes (language tasks) their scores change
nothing, so their reward-model calls would be paid for nothing.
"""

from __future__ import annotations

from typing import Any, Mapping

from lits.agents.config import BFSConfig
from lits.agents.tree.base import BaseTreeSearch, SearchResult
from lits.runtime.concurrency import parallel_map
from lits.structures.node import BFSNode, SearchNode


class BFS(BaseTreeSearch):
    NODE_CLASS = BFSNode
    search_name = "bfs"
    config: BFSConfig

    def search(self, query: object, query_idx: int) -> None:
        self.materialize(self.root)
        frontier = self._frontier()
        limit = self.iteration_limit(self.config.max_depth)  # a budget's grant: max_depth stays the depth limit
        while frontier and self.iteration < limit:
            if self.out_of_time() or (self.config.early_stop and self.first_solution()):
                break
            with self.phase("expand", depth=self.iteration):
                open_nodes = [n for n in frontier if not n.children]
                proposals = parallel_map(self.propose, open_nodes)
                for node, steps in zip(open_nodes, proposals):  # ids in frontier order
                    self.attach(node, steps)
                if self.iteration + 1 < self.config.max_depth or self.config.score_last_depth:
                    self.score_children(open_nodes)
                else:
                    self._leave_unscored(open_nodes)
                children = [c for n in frontier for c in n.children]
                self.materialize_all(children)
            for child in children:
                child.cum_reward = self._score(child)  # type: ignore[attr-defined]
                self.mark(child)
            ranked = sorted(children, key=lambda c: (-c.cum_reward, c.id))  # type: ignore[attr-defined]
            frontier = [c for c in ranked[: self.config.beam_width] if not c.is_terminal]
            self.iteration += 1
            self.save_checkpoint(self.iteration)

    def _leave_unscored(self, parents: list[SearchNode]) -> None:
        """Mark the last depth's children as not scored (their fast reward stays 0) and count the skipped calls."""
        skipped = 0
        for parent in parents:
            for child in parent.children:
                child.fast_reward_details = {"unscored": "last depth"}
                skipped += 1
        self.stats["scores_skipped"] = self.stats.get("scores_skipped", 0) + skipped

    def _frontier(self) -> list[SearchNode]:
        """Nodes to expand next: the root, or after a resume the deepest kept nodes."""
        if self.iteration == 0:
            return [] if self.root.is_terminal else [self.root]
        deepest = [n for n in self.root.iter_tree() if n.depth == self.iteration and n.state is not None]
        ranked = sorted(deepest, key=lambda c: (-c.cum_reward, c.id))  # type: ignore[attr-defined]
        return [n for n in ranked[: self.config.beam_width] if not n.is_terminal]

    def _score(self, node: SearchNode) -> float:
        rewards = [n.reward for n in node.path()[1:]]
        if self.config.reward_aggregate == "last":
            return rewards[-1]
        if self.config.reward_aggregate == "mean":
            return sum(rewards) / len(rewards)
        return sum(rewards)

    def stop_reason(self) -> str:
        if self.config.early_stop and self.first_solution() is not None:
            return "solution"
        if self.out_of_time():
            return "time"
        return "budget" if self.iteration >= self.iteration_limit(self.config.max_depth) else "exhausted"


def bfs(
    query: object,
    policy: Any,
    transition: Any,
    reward_model: Any,
    *,
    n_actions: int = 3,
    max_depth: int = 6,
    beam_width: int = 3,
    example: Mapping[str, object] | None = None,
    query_idx: int = 0,
    **settings: Any,
) -> SearchResult:
    """Run BFS over ``query`` with the given components (the structures doc's functional form).

    ``settings`` are further :class:`BFSConfig` fields (e.g. ``early_stop``);
    ``example`` is what ``transition.init_state(**example)`` receives.
    """
    config = BFSConfig(n_actions=n_actions, max_depth=max_depth, beam_width=beam_width, **settings)
    return BFS(config, policy, transition, reward_model).run(query, query_idx, example or {"query": query})
