"""Chain-in-Tree continuation passes the search conformance kit: same tree twice, and after kills at any point."""

from __future__ import annotations

import pytest

from lits.testing import check_search
from lits.testing.search_conformance import first_difference


@pytest.mark.parametrize("search", ["mcts", "bfs"])
@pytest.mark.parametrize("method", ["direct", "sc", "sc_exact", "entropy"])
def test_each_bn_method_resumes_exactly_after_a_kill(search, method):
    result = check_search(search, {"add_continuation": True, "bn_method": method, "n_actions": 3})
    assert result.stats["bn_decisions"] >= 1
    verdicts = [n.branching for n in result.root.iter_tree() if n.branching is not None]
    assert verdicts and all(v["method"] == method for v in verdicts)


def _tree_of_a_parallel_run(seed: int, width: int) -> tuple[dict, int]:
    """Tree-parallel MCTS with continuation on the kit's toy domain, the policy's replies delayed at random."""
    import random
    import tempfile
    import time
    from pathlib import Path

    from lits.concurrency import fan_out_width
    from lits.registry import get_registration, isolated_registry
    from lits.structures.base import step_key
    from lits.testing import search_conformance as kit

    with isolated_registry(), fan_out_width(width), tempfile.TemporaryDirectory() as tmp:
        kit._register_toy()
        config = kit._config("x", get_registration("search", "mcts"), {
            "add_continuation": True, "bn_method": "sc_exact", "n_actions": 3, "max_depth": 3, "n_iterations": 24,
            "parallel_iterations": 4, "early_stop": False})
        run = kit._Run(get_registration("search", "mcts").obj, config, Path(tmp))
        propose, rng = run.search.policy.get_actions, random.Random(seed)

        def late(*args, **kwargs):
            time.sleep(rng.uniform(0, 0.02))
            return propose(*args, **kwargs)

        run.search.policy.get_actions = late
        root = run.run().root
    twins = sum(len(n.children) - len({step_key(c.step) for c in n.children}) for n in root.iter_tree())
    return root.to_dict(), twins


def test_tree_parallel_rollouts_that_end_below_one_node_reopen_it_once_and_alike_every_run():
    # Two rollouts of a batch reopening one continued node at once gave it twin children and a tree that
    # changed from run to run; reopens now run one after another in selection order.
    trees = [_tree_of_a_parallel_run(seed, width=4) for seed in range(4)]
    sequential, _ = _tree_of_a_parallel_run(0, width=1)
    assert all(twins == 0 for _tree, twins in trees)
    assert [first_difference(tree, sequential) for tree, _twins in trees] == [None] * 4  # NaN values equal too


def test_the_bn_evaluator_samples_at_bn_temperature_and_the_search_elsewhere_at_its_own():
    import tempfile
    from pathlib import Path

    from lits.registry import get_registration, isolated_registry
    from lits.testing import search_conformance as kit

    seen: list[tuple[str, float]] = []
    with isolated_registry(), tempfile.TemporaryDirectory() as tmp:
        kit._register_toy()
        config = kit._config("x", get_registration("search", "mcts"), {
            "add_continuation": True, "bn_method": "sc_exact", "bn_temperature": 0.3, "temperature": 0.8,
            "n_actions": 2, "max_depth": 3, "n_iterations": 12, "early_stop": False})
        run = kit._Run(get_registration("search", "mcts").obj, config, Path(tmp))
        propose = run.search.policy.get_actions

        def recorded(*args, **kwargs):
            seen.append((kwargs["from_phase"], kwargs["temperature"]))
            return propose(*args, **kwargs)

        run.search.policy.get_actions = recorded
        stats = run.run().stats
    assert stats["bn_samples"] >= 2 and stats.get("bn_reopened", 0) >= 1
    assert {t for phase, t in seen if phase != "reopen"} == {0.3}
    assert {t for phase, t in seen if phase == "reopen"} == {0.8}
