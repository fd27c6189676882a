"""Crosswords (an open-ended action space) keeps the plugin contract, checked by the conformance kit."""

from __future__ import annotations

from lits.testing import check_dataset, check_env_domain


def test_the_own_puzzles_conform():
    assert check_dataset("crosswords") == check_env_domain("crosswords") > 0


def test_the_tree_of_thoughts_file_conforms(shared_data):
    path = str(shared_data / "crosswords" / "mini0505.json")
    assert check_env_domain("crosswords", path=path) == 156
    assert check_env_domain("crosswords", path=path, oracle=True) == 156
