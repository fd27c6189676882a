"""Chain-in-Tree continuation passes the search conformance kit: same tree twice, and after kills at any point."""

from __future__ import annotations

import pytest

from lits.testing import check_search


@pytest.mark.parametrize("search", ["mcts", "bfs"])
@pytest.mark.parametrize("method", ["direct", "sc", "sc_exact", "entropy"])
def test_each_bn_method_resumes_exactly_after_a_kill(search, method):
    result = check_search(search, {"add_continuation": True, "bn_method": method, "n_actions": 3})
    assert result.stats["bn_decisions"] >= 1
    verdicts = [n.branching for n in result.root.iter_tree() if n.branching is not None]
    assert verdicts and all(v["method"] == method for v in verdicts)
