"""A large search tree written through the real journal (TreeJournal), for the viewer's scale checks."""

from __future__ import annotations

import json
import random
from pathlib import Path

from lits.agents.tree.journal import TreeJournal
from lits.structures.node import MCTSNode, SearchNode


def write_synthetic_run(root: Path, nodes: int = 10_000, branching: int = 4, seed: int = 0,
                        invalid: tuple[int, ...] = (), proposals: tuple[tuple[str, bool], ...] = ()) -> Path:
    """A finished one-instance MCTS run dir whose tree has ``nodes`` nodes (no model calls).

    Nodes in ``invalid`` get a step with an error (an illegal move); ``proposals``
    are the policy's sampled actions with their duplicate flags.
    """
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    tree: list[SearchNode] = [MCTSNode(id=0)]
    frontier = [tree[0]]
    while len(tree) < nodes:
        parent = frontier.pop(0)
        for _ in range(min(branching, nodes - len(tree))):
            child = parent.add_child(MCTSNode(id=len(tree), action=f"step {len(tree)}"))
            child.fast_reward, child.reward = rng.random(), rng.random()
            child.state = {"text": f"state after step {child.id}"}
            if child.id in invalid:
                child.step = {"action": child.action, "error": "that move is not allowed here"}
            tree.append(child)
            frontier.append(child)
    leaves = [n for n in tree if not n.children]
    paths = [rng.choice(leaves).id for _ in range(200)]
    best = max(leaves, key=lambda n: (n.reward, -n.id)).path()
    journal = TreeJournal(root / "checkpoints" / "0.journal.jsonl")
    journal.append(len(paths), len(tree), {"nodes": len(tree)}, tree, paths, list(proposals))
    journal.close()
    _json(root / "config.json", {"command": "search", "dataset": "synthetic", "search": "mcts", "model": "none",
                                 "search_args": {"aggregate": "mean", "n_iterations": len(paths)}})
    _json(root / "paths" / "0.json", [{"id": n.id} for n in best])
    _json(root / "terminal_nodes" / "0.json", [])
    _json(root / "results" / "0.json", {"idx": 0, "id": "synthetic-0", "query": "a large tree", "mode": "search",
                                        "final_state": None, "stopped": "budget", "iterations": len(paths),
                                        "eval": {"solved": False}})
    return root


def _json(path: Path, payload: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
