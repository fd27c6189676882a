"""Progress lines while a run works."""

from __future__ import annotations

import io
import time

from lits.runtime.observability import InferenceLog, InferenceRecord, _totals
from lits.runs.runner import Progress


def test_progress_reports_while_an_instance_is_still_running():
    out = io.StringIO()
    with Progress(2, InferenceLog(), out, every=0.05):
        deadline = time.monotonic() + 60  # generous: a line is due every 0.05 s
        while "running]" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)  # until the progress thread has spoken (not a guess at how soon)
    assert "[0/2 running] solved 0 | calls 0 (+0 cached) | tokens 0 |" in out.getvalue()


def test_progress_counts_finished_solved_and_failed_instances():
    out = io.StringIO()
    progress = Progress(3, InferenceLog(), out, every=60)
    progress.update(True)
    progress.update(None)
    assert out.getvalue().splitlines()[-1].startswith("[2/3] solved 1, failed 1 |")


def test_the_run_totals_equal_a_recount_of_every_record_however_records_arrive():
    log = InferenceLog()
    for i in range(40):
        record = InferenceRecord(
            "m", "chat", tokens_in=10 + i, tokens_out=i, seconds=0.1 * i, cost=0.001 * i, cached=i % 5 == 0
        )
        if i % 2:
            log.add(record)
        else:  # as InferenceLog.read fills a log
            log.records.append(record)
        if i % 7 == 0:
            assert log.summary() == _totals(log.records)
    assert log.summary() == _totals(log.records)
    assert log.summary()["cache_hits"] == 8


def test_an_instances_totals_count_only_its_own_records():
    log = InferenceLog()
    for i in range(30):
        log.add(
            InferenceRecord(
                "m", "chat", tokens_in=i, tokens_out=1, seconds=0.5, context={"instance": i % 3, "attempt": i % 2}
            )
        )
    log.records.append(InferenceRecord("m", "chat", tokens_in=100, tokens_out=1, seconds=0.5, context={"instance": 1}))
    assert log.summary(instance=1) == _totals([r for r in log.records if r.context.get("instance") == 1])
    assert log.summary(instance=1, attempt=0)["calls"] == 5
    assert log.summary(instance=7)["calls"] == 0


def test_after_an_instances_records_are_taken_the_next_instance_is_counted():
    # A Ray worker hands each finished instance's records to the driver; its next instance's totals were zero.
    log = InferenceLog()
    for _ in range(3):
        log.add(InferenceRecord("m", "chat", tokens_in=1, tokens_out=1, seconds=0.1, context={"instance": 0}))
    assert log.summary(instance=0)["calls"] == 3
    assert len(log.take(0)) == 3 and log.records == []
    for _ in range(2):
        log.add(InferenceRecord("m", "chat", tokens_in=1, tokens_out=1, seconds=0.1, context={"instance": 1}))
    assert log.summary(instance=1)["calls"] == 2
    assert log.summary()["calls"] == 2
