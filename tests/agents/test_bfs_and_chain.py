"""BFS beam search and the EnvChain agent."""

from __future__ import annotations

import threading

from lits.agents import BFS, BFSConfig, ChainConfig, EnvChain, MCTS, MCTSConfig
from lits.components.base import RewardModel
from tests.agents.conftest import EXAMPLE


def test_bfs_finds_the_goal(parts):
    result = BFS(BFSConfig(beam_width=2, max_depth=4), parts.policy, parts.transition, parts.reward).run(
        "2", 0, EXAMPLE
    )
    assert result.solved and result.best_state.env_state == "2"


def test_bfs_keeps_at_most_beam_width_nodes_per_depth(parts):
    search = BFS(BFSConfig(beam_width=2, max_depth=3, early_stop=False), parts.policy, parts.transition, parts.reward)
    search.run("9", 0, {"query": "9", "init_state_str": "0"})
    expanded_at_depth = {}
    for node in search.root.iter_tree():
        if node.children:
            expanded_at_depth[node.depth] = expanded_at_depth.get(node.depth, 0) + 1
    assert expanded_at_depth == {0: 1, 1: 2, 2: 2}


def test_chain_reaches_the_goal_with_a_good_policy(parts):
    result = EnvChain(ChainConfig(max_steps=5), parts.policy, parts.transition).run("2", 0, EXAMPLE)
    assert result.solved and result.steps == 2 and result.stopped == "solution"


def test_chain_stops_at_max_steps(misleading_parts):
    p = misleading_parts
    result = EnvChain(ChainConfig(max_steps=3), p.policy, p.transition).run("2", 0, EXAMPLE)
    assert not result.solved and result.steps == 3 and result.stopped == "max_steps"


def test_chain_resumes_from_its_checkpoint(parts, tmp_path):
    chain = EnvChain(ChainConfig(max_steps=1), parts.policy, parts.transition, checkpoint_dir=tmp_path)
    chain.run("2", 0, EXAMPLE)
    longer = EnvChain(ChainConfig(max_steps=5), parts.policy, parts.transition, checkpoint_dir=tmp_path)
    result = longer.run("2", 0, EXAMPLE, resume=True)
    assert result.solved and result.steps == 2


class MeetingReward(RewardModel):
    """Each sibling's reward waits until all three are being computed at once (a barrier, not a clock):
    computed one after another, the first would wait alone until the barrier gives up."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(3, timeout=60)
        self.met: list[bool] = []

    def _fast_reward(self, state, action, query, query_idx, from_phase="", **kwargs):
        try:
            self.barrier.wait()
            self.met.append(True)
        except threading.BrokenBarrierError:
            self.met.append(False)
        return 0.5, {}


def test_sibling_fast_rewards_are_computed_concurrently(parts):
    reward = MeetingReward()
    search = MCTS(MCTSConfig(n_iterations=1, max_depth=1), parts.policy, parts.transition, reward)
    search.root = search.NODE_CLASS(id=0, state=parts.transition.init_state(**EXAMPLE))
    search.query = "2"
    children = search.expand(search.root)
    assert len(children) == 3
    assert reward.met == [True, True, True]


def test_duplicate_actions_among_siblings_are_dropped_and_counted(parts):
    class Repeating(type(parts.policy)):
        def _get_actions(self, state, n_actions, temperature, **kwargs):
            steps = super()._get_actions(state, n_actions, temperature, **kwargs)
            return steps + steps[:1]

    policy = Repeating(parts.model, "line", generate_all_actions=parts.policy.generate_all_actions)
    search = MCTS(MCTSConfig(n_iterations=1, max_depth=1), policy, parts.transition, parts.reward)
    search.root = search.NODE_CLASS(id=0, state=parts.transition.init_state(**EXAMPLE))
    search.query = "2"
    assert len(search.expand(search.root)) == 3
    assert search.stats["duplicates"] == 1
