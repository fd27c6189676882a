"""Tree-parallel MCTS must not buy its speed with solved problems."""

from __future__ import annotations

from pathlib import Path

import lits

SHAPE = {"n_iterations": 10, "n_actions": 3, "max_depth": 6, "early_stop": False}


def _solved(tmp_path: Path, **search_args: object) -> int:
    result = lits.search(
        "blocksworld",
        search="mcts",
        model="scripted",
        limit=30,
        no_cache=True,
        dataset_args={"steps": "2,4,6", "n": 30},
        save_dir=tmp_path,
        search_args={**SHAPE, **search_args},
    )
    return sum(bool(instance.solved) for instance in result.instances)


def test_four_rollouts_at_once_solve_as_many_problems_as_one_at_a_time(tmp_path):
    sequential = _solved(tmp_path / "k1")
    # With the old default virtual loss of 1.0 (a return far below any real one) K = 4 solved 2 fewer.
    assert _solved(tmp_path / "k4", parallel_iterations=4) >= sequential - 1
