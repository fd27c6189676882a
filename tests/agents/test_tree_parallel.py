"""Tree-parallel MCTS and concurrent BFS: the tree depends on the seed and K, not on thread timing."""

from __future__ import annotations

import random
import time

from lits.agents import BFS, MCTS, BFSConfig, MCTSConfig
from lits.runtime.concurrency import fan_out_width, start_round_clock
from lits.testing import ScriptedModel
from tests.agents.conftest import Parts
from tests.toy_domain import prefer

FAR = {"query": "9", "init_state_str": "0"}


class JitteryModel(ScriptedModel):
    """Scores like the toy model but takes a random few milliseconds, so threads finish in any order."""

    def _loglikelihood(self, prompt, continuations):
        time.sleep(random.uniform(0, 0.004))
        return super()._loglikelihood(prompt, continuations)


def _parts(concurrency: int = 16) -> Parts:
    return Parts(JitteryModel(scorer=prefer("move right", "wait", "move left"), concurrency=concurrency))


def _mcts_tree(k: int, width: int, seed: int = 0) -> dict:
    parts = _parts()
    config = MCTSConfig(n_iterations=12, early_stop=False, parallel_iterations=k, seed=seed, simulate="sample")
    with fan_out_width(width):
        search = MCTS(config, parts.policy, parts.transition, parts.reward)
        search.run("9", 0, FAR)
    return search.root.to_dict()


def test_tree_parallel_mcts_gives_the_same_tree_at_any_concurrency(isolated_registry):
    for seed in (0, 1):
        trees = [_mcts_tree(4, width, seed) for width in (1, 4, 16, 16)]
        assert all(tree == trees[0] for tree in trees[1:])


def test_a_batch_expands_distinct_leaves(isolated_registry):
    parts = _parts()
    search = MCTS(
        MCTSConfig(n_iterations=4, early_stop=False, parallel_iterations=4),
        parts.policy,
        parts.transition,
        parts.reward,
    )
    search.run("9", 0, FAR)
    root = search.root
    assert root.visits == 4
    # One leaf (the root) was open in the first batch; later rollouts went to distinct children.
    assert sum(1 for c in root.children if c.visits) >= 2


def test_virtual_losses_are_removed_after_the_batch(isolated_registry):
    parts = _parts()
    search = MCTS(
        MCTSConfig(n_iterations=9, early_stop=False, parallel_iterations=3),
        parts.policy,
        parts.transition,
        parts.reward,
    )
    search.run("9", 0, FAR)
    for node in search.root.iter_tree():
        assert node.visits == len(node.cum_rewards) and all(v >= 0 for v in node.cum_rewards)
    assert search.root.visits == 9


def test_tree_parallel_mcts_needs_fewer_dependent_rounds(isolated_registry):
    rounds = {}
    for k in (1, 4):
        parts = _parts()
        clock = start_round_clock()
        with fan_out_width(16):
            MCTS(
                MCTSConfig(n_iterations=12, early_stop=False, parallel_iterations=k),
                parts.policy,
                parts.transition,
                parts.reward,
            ).run("9", 0, FAR)
        rounds[k] = clock[0]
    assert rounds[4] < 0.7 * rounds[1]


def test_node_ids_follow_the_tree_not_the_threads(isolated_registry):
    search = MCTS(MCTSConfig(n_iterations=8, early_stop=False, parallel_iterations=4), *_components())
    search.run("9", 0, FAR)
    ids = sorted(n.id for n in search.root.iter_tree())
    assert ids == list(range(len(ids)))
    for node in search.root.iter_tree():
        assert [c.id for c in node.children] == sorted(c.id for c in node.children)


def test_bfs_picks_the_same_path_at_any_concurrency(isolated_registry):
    outcomes = []
    for width in (1, 4, 16, 4, 16):
        parts = _parts()
        with fan_out_width(width):
            result = BFS(
                BFSConfig(beam_width=3, max_depth=4, early_stop=False), parts.policy, parts.transition, parts.reward
            ).run("9", 0, FAR)
        outcomes.append(([n.id for n in result.best_path], result.root.to_dict()))
    assert all(o == outcomes[0] for o in outcomes[1:])


def _components():
    parts = _parts()
    return parts.policy, parts.transition, parts.reward
