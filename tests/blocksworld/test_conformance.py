"""BlocksWorld keeps the plugin contract, checked by the conformance kit a plugin author would run."""

from __future__ import annotations

from lits.testing import check_dataset, check_env_domain


def test_the_generated_instances_conform():
    assert check_dataset("blocksworld") == check_env_domain("blocksworld") > 0


def test_the_whole_rap_split_conforms(bw_root):
    # Every case: its PDDL problem read, each valid action executed, the optimal plan replayed to the goal.
    assert check_env_domain("blocksworld", path=str(bw_root)) == 590
