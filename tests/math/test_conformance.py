"""The math datasets keep the plugin contract: each gold answer is equal to itself and judged solved."""

from __future__ import annotations

import pytest

from lits.testing import check_dataset, check_language_domain


@pytest.mark.parametrize("dataset", ["gsm8k", "math500"])
def test_the_own_problems_conform(dataset):
    assert check_dataset(dataset) > 0


@pytest.mark.parametrize("dataset, size", [("gsm8k", 1319), ("math500", 500)])
def test_the_real_test_sets_conform(shared_data, dataset, size):
    assert check_dataset(dataset, path=str(shared_data / "math")) == size


@pytest.mark.parametrize("framework", [None, "rap", "rest", "tot_bfs"])
@pytest.mark.parametrize("dataset", ["gsm8k", "math500"])
def test_every_reasoning_formulation_conforms(dataset, framework):
    assert check_language_domain(dataset, framework=framework) > 0
