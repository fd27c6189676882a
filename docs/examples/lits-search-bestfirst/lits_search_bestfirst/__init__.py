"""Best-first search: always expand the open node with the highest path reward."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from lits.api import BaseTreeSearch, TreeSearchConfig, register_search


class BestFirstConfig(TreeSearchConfig):
    n_expansions: int = Field(20, ge=1, description="nodes expanded per instance")


@register_search("best_first", config_class=BestFirstConfig)
class BestFirstSearch(BaseTreeSearch):
    config: BestFirstConfig

    def search(self, query: Any, query_idx: int) -> None:
        self.materialize(self.root)
        while self.iteration < self.config.n_expansions and not self.out_of_time():
            if self.config.early_stop and self.first_solution() is not None:
                break
            # Recomputed from the tree each time, so a resumed search needs no extra state.
            frontier = [n for n in self.root.iter_tree()
                        if n.state is not None and not n.children and not n.is_terminal
                        and n.depth < self.config.max_depth]
            if not frontier:
                break
            node = max(frontier, key=lambda n: (self.path_reward(n), -n.id))
            with self.phase("expand", depth=node.depth, iteration=self.iteration):
                self.materialize_all(self.expand(node))
            self.iteration += 1
            self.save_checkpoint(self.iteration)
