"""The suite's ``--dist loadgroup`` schedule (tests/conftest.py): a group's tests on one worker, long groups first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import LONG_GROUPS, pytest_xdist_make_scheduler, xdist_group

#: In collection order: small files first, the long groups last.
COLLECTION = [
    "tests/core/test_a.py::test_one",
    "tests/cli/test_b.py::test_one",
    "tests/cli/test_b.py::test_two[x@y]",
    "tests/realmodel/test_r.py::test_one",
    "tests/ray/test_one.py::test_one",
    "tests/cli/test_b.py::test_three",
    "tests/ray/test_two.py::test_one",
]


class FakeNode:
    """A worker as xdist's scheduler sees it: it is sent test indices, and shut down."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


def _config(dist: str) -> Any:
    option = SimpleNamespace(dist=dist, tx=["2*popen"], loadscopereorder=True)
    return SimpleNamespace(option=option, getvalue=lambda name: getattr(option, name))


@pytest.fixture
def scheduled() -> list[FakeNode]:
    """Two workers given COLLECTION; what each was sent first."""
    scheduler = pytest_xdist_make_scheduler(_config("loadgroup"), None)
    nodes = [FakeNode("gw0"), FakeNode("gw1")]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, COLLECTION)
    scheduler.schedule()
    return nodes


def test_a_test_belongs_to_its_server_area_else_to_its_file() -> None:
    assert xdist_group("tests/ray/test_one.py::test_one") == "ray"
    assert xdist_group("tests/mapeval/postgres/test_pg.py::test_x[a@b]") == "postgres"
    assert xdist_group("tests/cli/test_b.py::test_two[x@y]") == "cli/test_b.py"


def test_the_long_groups_go_out_first_each_whole_to_one_worker(scheduled: list[FakeNode]) -> None:
    first = [[COLLECTION[i] for i in node.sent[0]] for node in scheduled]
    assert first == [
        ["tests/ray/test_one.py::test_one", "tests/ray/test_two.py::test_one"],
        ["tests/realmodel/test_r.py::test_one"],
    ]
    assert LONG_GROUPS.index("ray") < LONG_GROUPS.index("realmodel")


def test_then_the_rest_go_out_most_tests_first(scheduled: list[FakeNode]) -> None:
    then = [[COLLECTION[i] for i in sent] for node in scheduled for sent in node.sent[1:]]
    assert then == [
        ["tests/cli/test_b.py::test_one", "tests/cli/test_b.py::test_two[x@y]", "tests/cli/test_b.py::test_three"],
        ["tests/core/test_a.py::test_one"],
    ]


def test_other_dist_modes_keep_xdists_scheduler() -> None:
    assert pytest_xdist_make_scheduler(_config("load"), None) is None
