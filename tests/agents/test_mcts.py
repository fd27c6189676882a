"""MCTS: UCT selection and backpropagation on hand-built trees, and whole searches."""

from __future__ import annotations

import json
import math

import pytest

from lits.agents import MCTS, MCTSConfig
from lits.agents.tree.journal import TreeJournal
from lits.agents.tree.mcts import backpropagate, uct_score, uct_select
from lits.runtime.observability import InferenceLog, collecting
from lits.structures.node import MCTSNode
from tests.agents.conftest import EXAMPLE


def _tree() -> MCTSNode:
    root = MCTSNode(id=0, visits=10)
    root.add_child(MCTSNode(id=1, visits=6, cum_rewards=[0.5] * 6))  # Q 0.5
    root.add_child(MCTSNode(id=2, visits=3, cum_rewards=[0.6] * 3))  # Q 0.6
    root.add_child(MCTSNode(id=3, visits=1, cum_rewards=[0.2]))  # Q 0.2
    return root


def test_uct_score_adds_the_exploration_bonus_to_q():
    child = _tree().children[1]
    assert uct_score(child, 10, 1.0) == pytest.approx(0.6 + math.sqrt(math.log(10) / 3))


def test_uct_select_picks_the_child_with_the_best_score():
    # scores: 0.5+0.619=1.119, 0.6+0.876=1.476, 0.2+1.517=1.717 -> the rarely visited child
    assert uct_select(_tree(), 1.0).id == 3


def test_uct_select_without_exploration_picks_the_best_q():
    assert uct_select(_tree(), 0.0).id == 2


def test_unvisited_child_is_valued_by_its_fast_reward():
    root = MCTSNode(id=0, visits=1)
    root.add_child(MCTSNode(id=1, fast_reward=0.2))
    root.add_child(MCTSNode(id=2, fast_reward=0.9))
    assert uct_select(root, 1.0).id == 2


def _path(rewards: list[float]) -> list[MCTSNode]:
    root = MCTSNode(id=0)
    path, node = [root], root
    for i, r in enumerate(rewards, start=1):
        node = node.add_child(MCTSNode(id=i, reward=r))
        path.append(node)
    return path


def test_backprop_mean_gives_each_node_the_mean_of_rewards_from_it_down():
    path = _path([0.2, 0.4, 0.9])
    backpropagate(path, "mean")
    assert [n.cum_rewards[0] for n in path] == pytest.approx([0.5, 0.5, 0.65, 0.9])
    assert [n.visits for n in path] == [1, 1, 1, 1]


def test_backprop_max_gives_each_node_the_best_reward_from_it_down():
    path = _path([0.2, 0.9, 0.4])
    backpropagate(path, "max")
    assert [n.cum_rewards[0] for n in path] == pytest.approx([0.9, 0.9, 0.9, 0.4])


def test_mcts_finds_the_goal_and_stops_early(parts):
    search = MCTS(MCTSConfig(n_iterations=10, n_actions=3, max_depth=4), parts.policy, parts.transition, parts.reward)
    result = search.run("2", 0, EXAMPLE)
    assert result.solved and result.stopped == "solution"
    assert result.best_state.env_state == "2"
    assert result.iterations < 10


def test_mcts_recovers_from_a_misleading_policy_through_rewards(misleading_parts):
    p = misleading_parts
    search = MCTS(MCTSConfig(n_iterations=30, n_actions=3, max_depth=4, w_exp=1.0), p.policy, p.transition, p.reward)
    assert search.run("2", 0, EXAMPLE).solved


def test_mcts_stops_after_the_iteration_budget_without_a_solution(parts):
    search = MCTS(MCTSConfig(n_iterations=2, max_depth=1), parts.policy, parts.transition, parts.reward)
    result = search.run("5", 0, {"query": "5", "init_state_str": "0"})
    assert not result.solved and result.stopped == "budget" and result.iterations == 2


def test_runtime_limit_stops_the_search(parts):
    search = MCTS(
        MCTSConfig(n_iterations=1000, runtime_limit=0.05, early_stop=False),
        parts.policy,
        parts.transition,
        parts.reward,
    )
    result = search.run("99", 0, {"query": "99", "init_state_str": "0"})
    assert result.stopped == "time" and result.iterations < 1000


def test_a_finished_search_leaves_one_compacted_journal_holding_the_tree(parts, tmp_path):
    search = MCTS(
        MCTSConfig(n_iterations=3, early_stop=False),
        parts.policy,
        parts.transition,
        parts.reward,
        checkpoint_dir=tmp_path,
    )
    search.run("9", 7, {"query": "9", "init_state_str": "0"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["7.journal.jsonl"]
    lines = (tmp_path / "7.journal.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["compact"] is True
    root, counters = TreeJournal(tmp_path / "7.journal.jsonl").replay(search.backup_values)
    assert root.to_dict() == search.root.to_dict() and counters["iteration"] == 3


def test_resume_continues_from_the_latest_checkpoint(parts, tmp_path):
    config = MCTSConfig(n_iterations=4, early_stop=False)
    MCTS(
        config.model_copy(update={"n_iterations": 2}),
        parts.policy,
        parts.transition,
        parts.reward,
        checkpoint_dir=tmp_path,
    ).run("9", 0, {"query": "9", "init_state_str": "0"})
    calls_before = len(parts.model.calls)
    resumed = MCTS(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path)
    result = resumed.run("9", 0, {"query": "9", "init_state_str": "0"}, resume=True)
    assert result.iterations == 4
    assert resumed.root.visits == 4
    assert len(parts.model.calls) - calls_before < calls_before


def test_model_calls_are_tagged_with_instance_phase_and_depth(parts):
    log = InferenceLog()
    with collecting(log):
        MCTS(MCTSConfig(n_iterations=2), parts.policy, parts.transition, parts.reward).run("2", 5, EXAMPLE)
    contexts = [r.context for r in log.records]
    assert contexts and all(c["instance"] == 5 and c["search"] == "mcts" for c in contexts)
    assert {c["phase"] for c in contexts} <= {"expand", "simulate", "select"}
    assert all("depth" in c and c["component"] in ("policy", "reward") for c in contexts)
