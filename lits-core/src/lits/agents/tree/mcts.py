"""Monte Carlo tree search with UCT (as in RAP): select, expand, simulate, backpropagate."""

from __future__ import annotations

import math
import random
from typing import cast

from lits.agents.config import MCTSConfig
from lits.agents.tree.base import BaseTreeSearch
from lits.structures.node import MCTSNode, SearchNode, backpropagate

__all__ = ["MCTS", "backpropagate", "uct_score", "uct_select"]


def uct_score(child: MCTSNode, parent_visits: int, w_exp: float) -> float:
    """Q + w·sqrt(ln N_parent / max(1, N_child)); an unvisited child's Q is its fast reward."""
    q = child.Q if child.visits else child.fast_reward
    return q + w_exp * math.sqrt(math.log(max(1, parent_visits)) / max(1, child.visits))


def uct_select(node: MCTSNode, w_exp: float) -> MCTSNode:
    children = cast("list[MCTSNode]", node.children)
    return max(children, key=lambda c: (uct_score(c, node.visits, w_exp), -c.id))


class MCTS(BaseTreeSearch):
    """UCT search; with ``parallel_iterations=K`` K rollouts run at once (tree parallelism).

    Tree-parallel MCTS selects K paths one after another, each adding a
    virtual loss (a visit with return ``-virtual_loss``, kept apart from the
    real returns) along its path so
    the next selection looks elsewhere; the K leaves are then expanded and
    simulated concurrently, the virtual losses removed and the real returns
    backed up in selection order.  Selection is sequential and new nodes are
    numbered in rollout order, so a fixed K and seed give the same tree at
    any ``--concurrency``.
    """

    NODE_CLASS = MCTSNode
    search_name = "mcts"
    config: MCTSConfig

    def search(self, query: object, query_idx: int) -> None:
        self.materialize(self.root)
        limit = self.iteration_limit(self.config.n_iterations)
        while self.iteration < limit:
            if self.out_of_time() or (self.config.early_stop and self.first_solution()):
                break
            if self.root.is_terminal:
                break
            width = min(self.config.parallel_iterations, limit - self.iteration)
            selected = self._select_batch(width)
            if len(selected) == 1:
                paths = [self._rollout((selected[0], self.iteration))]
            else:
                paths = self.numbered([(p, self.iteration + k) for k, p in enumerate(selected)], self._rollout)
            self._reopen_dead_ends(selected)
            with self.phase("backprop", iteration=self.iteration):
                for path in paths:
                    self.backup(path)  # type: ignore[arg-type]
            self.iteration += len(paths)
            self.save_checkpoint(self.iteration)

    def backup_values(self, path: list[SearchNode]) -> list[float]:
        return backpropagate(path, self.config.aggregate)  # type: ignore[arg-type]

    def _rollout(self, task: tuple[list[MCTSNode], int]) -> list[MCTSNode]:
        """Expand the selected leaf and simulate from it (one iteration's model work)."""
        path, iteration = task
        leaf = path[-1]
        if not leaf.is_terminal and leaf.depth < self.config.max_depth:
            with self.working_on(iteration):
                self.expand(leaf)
                return self._simulate(path, f"{self.config.seed}:{self.query_idx}:{iteration}")
        return path

    def _reopen_dead_ends(self, selected: list[list[MCTSNode]]) -> None:
        """Chains that ended unsolved at the depth limit get their spared siblings, so the next selection may
        try them; one after another in selection order, as two rollouts of a batch may end below one node."""
        if not self.config.add_continuation:
            return
        from lits.agents.tree.continuation import reopen

        for k, path in enumerate(selected):
            leaf = path[-1]
            if not leaf.is_terminal and leaf.depth >= self.config.max_depth:
                with self.working_on(self.iteration + k):
                    reopen(self, path)

    def stop_reason(self) -> str:
        if self.config.early_stop and self.first_solution() is not None:
            return "solution"
        if self.out_of_time():
            return "time"
        if self.iteration >= self.iteration_limit(self.config.n_iterations):
            return "budget"
        return "exhausted"

    def _select_batch(self, width: int) -> list[list[MCTSNode]]:
        """Up to ``width`` paths to distinct leaves, diverted from each other by virtual loss."""
        paths = [self._select()]
        if width == 1:
            return paths
        claimed = {id(paths[0][-1])}
        loss = -abs(self.config.virtual_loss)
        touched: list[MCTSNode] = []
        try:
            while len(paths) < width:
                for node in paths[-1]:
                    node.visits += 1
                    node.__dict__.setdefault("virtual_losses", []).append(loss)
                    touched.append(node)
                path = self._select()
                leaf = path[-1]
                expandable = not leaf.is_terminal and leaf.depth < self.config.max_depth
                if expandable and id(leaf) in claimed:
                    break  # every open leaf is taken: run a smaller batch
                claimed.add(id(leaf))
                paths.append(path)
        finally:
            for node in touched:
                node.visits -= 1
                node.__dict__.pop("virtual_losses", None)
        return paths

    def _select(self) -> list[MCTSNode]:
        node: MCTSNode = self.root  # type: ignore[assignment]
        path = [node]
        with self.phase("select", iteration=self.iteration):
            while node.children and not node.is_terminal:
                node = uct_select(node, self.config.w_exp)
                self.materialize(node, "select")
                path.append(node)
        return path

    def _simulate(self, path: list[MCTSNode], seed: str) -> list[MCTSNode]:
        """Roll out from the expanded leaf, following the best (or, drawn from the rollout's ``seed``, a sampled)
        fast reward."""
        depth_limit = self.config.rollout_depth if self.config.rollout_depth is not None else self.config.max_depth
        path = list(path)
        node = path[-1]
        rng: random.Random | None = None  # seeding costs microseconds: only a sampling rollout needs one
        while node.children and not self.out_of_time():
            if rng is None and self.config.simulate == "sample":
                rng = random.Random(seed)
            child = self._pick(node.children, rng)  # type: ignore[arg-type]
            self.materialize(child, "simulate")
            path.append(child)
            node = child
            if node.is_terminal or node.depth >= depth_limit:
                break
            self.expand(node, "simulate")
        return path

    def _pick(self, children: list[MCTSNode], rng: random.Random | None) -> MCTSNode:
        if rng is not None:
            weights = [max(1e-6, c.fast_reward) for c in children]
            return rng.choices(children, weights=weights, k=1)[0]
        return max(children, key=lambda c: (c.fast_reward, -c.id))

    def best_path(self) -> list[SearchNode]:
        solved = self.terminal_nodes()
        if solved:
            return super().best_path()
        node: MCTSNode | None = cast(MCTSNode, self.root)
        path: list[SearchNode] = []
        while node is not None:
            path.append(node)
            children = cast(list[MCTSNode], node.children)
            visited = [c for c in children if c.visits > 0 and c.state is not None]
            node = max(visited, key=lambda c: (c.Q, -c.id)) if visited else None
        return path
