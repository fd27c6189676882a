"""``BaseTreeSearch``: everything around a search algorithm but the algorithm.

It owns node ids, the root, checkpoints (save and resume), the runtime limit,
terminal-node collection and the call tags (instance, phase, depth,
iteration) that the inference log records.  A subclass implements only
:meth:`search`.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, TypeVar

from lits.agents.config import TreeSearchConfig
from lits.concurrency import parallel_map
from lits.observability import call_context
from lits.structures.base import atomic_write_text
from lits.structures.node import SearchNode
from lits.type_registry import deserialize

N = TypeVar("N", bound=SearchNode)


@dataclass
class SearchResult:
    root: SearchNode
    terminal_nodes: list[SearchNode]
    best_path: list[SearchNode]
    best_state: Any
    solved: bool
    iterations: int
    stopped: str
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def flat(node: SearchNode) -> dict[str, Any]:
            data = node.to_dict()
            data.pop("children", None)
            return data

        return {
            "solved": self.solved,
            "iterations": self.iterations,
            "stopped": self.stopped,
            "stats": self.stats,
            "best_path": [flat(n) for n in self.best_path],
            "terminal_nodes": [flat(n) for n in self.terminal_nodes],
        }


def step_key(step: Any) -> str:
    """Identity of a proposed step: siblings with equal keys are duplicates.

    The whole step counts, not just its action: Self-Refine steps that share a
    draft but differ in feedback are different proposals.
    """
    to_dict = getattr(step, "to_dict", None)
    if to_dict is None:
        return str(step)
    return json.dumps(to_dict(), sort_keys=True, default=str)


class BaseTreeSearch(ABC):
    NODE_CLASS: type[SearchNode] = SearchNode

    def __init__(
        self,
        config: TreeSearchConfig,
        policy: Any,
        transition: Any,
        reward_model: Any,
        *,
        checkpoint_dir: Optional[Path] = None,
    ) -> None:
        self.config = config
        self.policy = policy
        self.transition = transition
        self.reward_model = reward_model
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.root: SearchNode = self.NODE_CLASS()
        self.query: Any = None
        self.query_idx = 0
        self.iteration = 0  # completed iterations (or depths)
        self.stats: dict[str, Any] = {"nodes": 1, "expansions": 0, "duplicates": 0}
        self._next_id = 1
        self._deadline: Optional[float] = None
        self._solutions: list[SearchNode] = []  # kept as found: no tree walk per iteration

    # -- the algorithm -----------------------------------------------------
    @abstractmethod
    def search(self, query: Any, query_idx: int) -> None:
        """Grow ``self.root``; read ``self.iteration`` to continue after a resume."""

    def stop_reason(self) -> str:
        """Why :meth:`search` returned (subclasses may refine)."""
        if self.first_solution() is not None and self.config.early_stop:
            return "solution"
        if self.out_of_time():
            return "time"
        return "budget"

    # -- running -----------------------------------------------------------
    def run(self, query: Any, query_idx: int, example: dict[str, Any], *, resume: bool = False) -> SearchResult:
        self.query, self.query_idx = query, query_idx
        limit = self.config.runtime_limit
        self._deadline = time.monotonic() + limit if limit else None
        name = getattr(self, "search_name", type(self).__name__.lower())
        with call_context(instance=query_idx, search=name):
            if not (resume and self.load_latest_checkpoint()):
                self.root = self.NODE_CLASS(id=0, state=self.transition.init_state(**example))
            self.search(query, query_idx)
        return self.result()

    def result(self) -> SearchResult:
        states = [n.state for n in self.root.iter_tree() if n.state is not None]
        unique = {str(getattr(s, "env_state", None) or s.to_dict()) for s in states}
        self.stats["unique_states"] = len(unique)
        self.stats["policy_calls_per_state"] = round(self.stats["expansions"] / max(1, len(unique)), 2)
        terminals = self.terminal_nodes()
        path = self.best_path()
        leaf = path[-1]
        return SearchResult(
            root=self.root,
            terminal_nodes=terminals,
            best_path=path,
            best_state=leaf.state if leaf.state is not None else self.root.state,
            solved=bool(leaf.is_terminal),
            iterations=self.iteration,
            stopped=self.stop_reason(),
            stats=dict(self.stats),
        )

    # -- helpers for subclasses ----------------------------------------------
    def new_node(self, cls: Optional[type[N]] = None, **fields: Any) -> N:
        node = (cls or self.NODE_CLASS)(id=self._next_id, **fields)  # type: ignore[arg-type]
        self._next_id += 1
        self.stats["nodes"] += 1
        return node  # type: ignore[return-value]

    def out_of_time(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    @contextlib.contextmanager
    def phase(self, name: str, **tags: Any) -> Iterator[None]:
        with call_context(phase=name, **tags):
            yield

    def expand(self, node: SearchNode, phase: str = "expand") -> list[SearchNode]:
        """Ask the policy for children of ``node`` and score them (fast rewards, concurrently)."""
        if node.children or node.is_terminal:
            return node.children
        self.materialize(node)
        if node.is_terminal or node.depth >= self.config.max_depth:
            return []
        with self.phase(phase, depth=node.depth, iteration=self.iteration):
            steps = self.policy.get_actions(
                node.state, n_actions=self.config.n_actions, temperature=self.config.temperature,
                query=self.query, query_idx=self.query_idx, from_phase=phase,
            )
            seen: set[str] = set()
            for step in steps:
                key = step_key(step)
                if key in seen:
                    self.stats["duplicates"] += 1
                    continue
                seen.add(key)
                node.add_child(self.new_node(action=step.get_action(), step=step))
            self.stats["expansions"] += 1

            def score(child: SearchNode) -> None:
                child.fast_reward, child.fast_reward_details = self.reward_model.fast_reward(
                    node.state, child.action, self.query, self.query_idx, from_phase=phase, step=child.step)

            parallel_map(score, node.children)
        return node.children

    def materialize(self, node: SearchNode, phase: str = "expand") -> None:
        """Compute ``node.state`` with the transition, then its reward and terminal flag."""
        if node.state is not None or node.parent is None:
            if node.parent is None and node.state is not None:
                node.is_terminal = bool(self.transition.is_terminal(node.state, query_or_goals=self.query))
                if node.is_terminal and node not in self._solutions:
                    self._solutions.append(node)
            return
        parent = node.parent
        self.materialize(parent, phase)
        with self.phase(phase, depth=node.depth, iteration=self.iteration):
            step_or_action = node.step if node.step is not None else node.action
            node.state, aux = self.transition.step(parent.state, step_or_action, self.query,
                                                   self.query_idx, from_phase=phase)
            extra = {k: v for k, v in aux.items() if k not in ("fast_reward",)}
            node.reward, node.reward_details = self.reward_model.reward(
                parent.state, node.action, fast_reward=node.fast_reward, **extra)
            node.is_terminal = bool(self.transition.is_terminal(node.state, query_or_goals=self.query))
            if node.is_terminal:
                self._solutions.append(node)

    def materialize_all(self, nodes: list[SearchNode], phase: str = "expand") -> None:
        parallel_map(lambda n: self.materialize(n, phase), nodes)

    def terminal_nodes(self) -> list[SearchNode]:
        return [n for n in self.root.iter_tree() if n.is_terminal]

    def first_solution(self) -> Optional[SearchNode]:
        return self._solutions[0] if self._solutions else None

    def path_reward(self, node: SearchNode) -> float:
        return sum(n.reward for n in node.path()[1:])

    def best_path(self) -> list[SearchNode]:
        """The best solved path if any, else the best-scored materialized leaf."""
        solved = self.terminal_nodes()
        if solved:
            return max(solved, key=lambda n: (self.path_reward(n), -n.depth, -n.id)).path()
        leaves = [n for n in self.root.iter_tree() if n.state is not None]
        return max(leaves, key=lambda n: (self.path_reward(n), n.depth, -n.id)).path()

    # -- checkpoints -------------------------------------------------------
    def save_checkpoint(self, iteration: int) -> None:
        if self.checkpoint_dir is None:
            return
        payload = {"iteration": iteration, "next_id": self._next_id, "stats": self.stats,
                   "tree": self.root.to_dict()}
        atomic_write_text(self.checkpoint_dir / f"{self.query_idx}_{iteration}.json", json.dumps(payload))

    def load_latest_checkpoint(self) -> bool:
        """Restore the tree of the latest checkpoint of this instance, if any."""
        if self.checkpoint_dir is None or not self.checkpoint_dir.is_dir():
            return False
        pattern = re.compile(rf"^{self.query_idx}_(\d+)\.json$")
        found = [(int(m.group(1)), p) for p in self.checkpoint_dir.iterdir() if (m := pattern.match(p.name))]
        if not found:
            return False
        iteration, path = max(found)
        payload = json.loads(path.read_text(encoding="utf-8"))
        self.root = deserialize(payload["tree"])
        self.iteration = int(payload["iteration"])
        self._next_id = int(payload["next_id"])
        self.stats.update(payload.get("stats", {}))
        self._solutions = self.terminal_nodes()
        return True
