"""The stop decision: a breaker on failures in a row, stopped calls, one line for machine errors."""

from __future__ import annotations

import errno
import io
from pathlib import Path
from typing import Iterator

import pytest

from lits.lm.base import CallsStopped
from lits.lm.cache import CacheError
from lits.runs.faults.control import BREAKER, RunControl, resource_problem
from lits.testing.scripted import ScriptedModel


@pytest.fixture
def control() -> Iterator[RunControl]:
    made = RunControl(stream=io.StringIO())
    yield made
    made.close()  # model calls may start again for the next test


def test_the_breaker_trips_at_three_failures_in_a_row(control: RunControl):
    control.failed("a")
    control.failed("b")
    assert not control.stopping
    control.failed("model server http://x answered 500")
    assert control.reason == BREAKER
    assert control.message == (
        "stopped after 3 instances failed in a row (model server http://x answered 500); fix the server"
    )


def test_a_success_in_between_resets_the_breaker(control: RunControl):
    for _ in range(5):
        control.failed("a")
        control.failed("b")
        control.succeeded()
    assert not control.stopping


def test_failures_that_are_not_the_servers_point_to_the_log(control: RunControl):
    for _ in range(3):
        control.failed("KeyError: 'x'", server=False, log="run/execution.log")
    assert control.message.endswith("; see run/execution.log and fix the cause")


def test_once_stopped_no_model_call_starts(control: RunControl):
    model = ScriptedModel()
    assert model.complete("before")
    control.stop("interrupt")
    with pytest.raises(CallsStopped):
        model.complete("after")
    control.close()
    assert model.complete("after")


def test_a_failed_write_names_the_file_its_writer_was_writing(tmp_path: Path):
    class Journal:
        path = tmp_path / "checkpoints" / "3.journal.jsonl"

        def flush(self) -> None:
            raise OSError(errno.EFBIG, "File too large")

    try:
        Journal().flush()
    except OSError as exc:
        line = resource_problem(exc, str(tmp_path))
    assert line == f"no space left writing {Journal.path} (File too large); free some space"


def test_a_cache_error_is_reported_as_the_cache(tmp_path: Path):
    line = resource_problem(CacheError(tmp_path / "c.sqlite", "cannot be opened (file is not a database)"))
    assert line is not None and line.startswith(f"the response cache {tmp_path / 'c.sqlite'} cannot be opened")


def test_an_ordinary_error_is_not_a_resource_problem():
    assert resource_problem(ValueError("bad output")) is None
    assert resource_problem(OSError(errno.ECONNREFUSED, "refused")) is None
