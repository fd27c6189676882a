"""The cluster watch: a dead node is lost at once, a silent cluster after ``silent_for``, a healthy one never."""

from __future__ import annotations

import threading

import pytest
from lits.runs.ray.watch import ClusterWatch

from tests.ray.conftest import wait_for


@pytest.fixture
def watch():
    made: list[ClusterWatch] = []

    def make(check, silent_for: float = 0.3) -> ClusterWatch:
        w = ClusterWatch(coordinator=None, node_id="n", every=0.01, silent_for=silent_for)
        w._check = lambda: check(w)  # type: ignore[method-assign]
        made.append(w)
        return w.start()

    yield make
    for w in made:
        w.stop()


def test_a_dead_node_is_reported_as_lost(watch):
    def dead(w: ClusterWatch) -> None:
        w._dead = "the Ray node of this run died (its raylet is gone)"

    w = watch(dead, silent_for=3600)
    wait_for(lambda: w.lost is not None, 10, "the dead node")
    assert w.lost == "the Ray node of this run died (its raylet is gone)"


def test_a_cluster_that_stops_answering_is_lost_with_the_last_problem(watch):
    def unreachable(w: ClusterWatch) -> None:
        raise ConnectionError("GCS at 127.0.0.1:6379\nunreachable")

    w = watch(unreachable)
    wait_for(lambda: w.lost is not None, 10, "the silent cluster")
    assert w.lost is not None and w.lost.startswith("the Ray cluster did not answer for ")
    assert w.lost.endswith("(ConnectionError: GCS at 127.0.0.1:6379 unreachable)")


def test_a_check_that_hangs_counts_as_silence(watch):
    never = threading.Event()
    w = watch(lambda w: never.wait())
    wait_for(lambda: w.lost is not None, 10, "the hanging check")
    assert "the GCS and the coordinator gave no reply" in (w.lost or "")
    never.set()


def test_a_cluster_that_answers_is_never_lost(watch):
    answered = []
    w = watch(lambda w: answered.append(1), silent_for=1.0)
    wait_for(lambda: len(answered) >= 300, 60, "300 good checks")  # 3 s or more: well past silent_for
    assert w.lost is None
