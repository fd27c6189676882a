"""The paired statistics of `lits compare`, checked against examples computed by hand."""

from __future__ import annotations

import pytest

from lits.runs.results.paired import bootstrap_interval, compare_paired, describe, mcnemar_exact


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (1, 6, 0.125),  # 2 * (C(7,0) + C(7,1)) / 2**7 = 2 * 8/128
        (2, 8, 0.109375),  # 2 * (1 + 10 + 45) / 2**10 = 112/1024
        (0, 5, 0.0625),  # 2 / 2**5
        (3, 3, 1.0),  # a two-sided tail past one is one
        (0, 0, 1.0),  # no discordant pair: no evidence either way
    ],
)
def test_mcnemars_exact_test_matches_the_binomial_computed_by_hand(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p)


def test_the_bootstrap_interval_of_a_difference_that_never_varies_is_that_difference():
    assert bootstrap_interval([1] * 20) == (1.0, 1.0)


def test_the_bootstrap_interval_holds_the_observed_difference_and_is_the_same_every_time():
    diffs = [1, 1, 1, 0, 0, 0, 0, 0, -1, 0] * 2
    interval = bootstrap_interval(diffs)
    assert interval[0] < 0.1 < interval[1] and interval == bootstrap_interval(diffs)


def test_ten_problems_apart_by_one_are_inside_the_noise():
    a = {i: i < 3 for i in range(10)}  # 3/10
    b = {i: i < 4 for i in range(10)}  # 4/10, the same three and one more
    paired = compare_paired(a, b)
    assert paired["difference"] == 0.1 and paired["p_value"] == 1.0
    low, high = paired["interval"]
    assert low <= 0 < high


def test_the_instances_each_run_solves_alone_are_counted_over_the_shared_ones():
    a = {1: True, 2: True, 3: True, 4: False, 9: True}
    b = {1: True, 2: False, 3: False, 4: True, 8: True}
    paired = compare_paired(a, b)
    assert (paired["shared"], paired["only_in_a"], paired["only_in_b"]) == (4, 1, 1)
    assert (paired["solved_by_a_only"], paired["solved_by_b_only"]) == (2, 1)
    assert paired["accuracy_a"] == 0.75 and paired["accuracy_b"] == 0.5 and paired["difference"] == -0.25


def test_runs_with_no_instance_in_common_say_they_are_not_paired():
    paired = compare_paired({1: True}, {2: True})
    assert paired["difference"] is None and "not paired" in describe("a", "b", paired)
