"""A misbehaving model server costs a run retries, never an instance or a different result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

from lits.testing import FAULT_KINDS, ChaosProxy, FakeOpenAIServer, evenly
from tests.cli.conftest import QUICK_ENV, first_listed_action, one_line_error, run_outputs

Lits = Callable[..., subprocess.CompletedProcess[str]]
#: Small timeouts: a hang costs 0.3 s, a call gives up after 20 s of faults.
FAULT_FLAGS = ["--call-budget", "20", "--read-timeout", "0.3"]


def _search(base_url: str, save_dir: str, *extra: str) -> list[str]:
    return [
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2,4",
        "--limit",
        "3",
        "--search-arg",
        "n_iterations=4",
        "--search-arg",
        "early_stop=false",
        "--concurrency",
        "4",
        "--model",
        "fake-model",
        "--base-url",
        base_url,
        "--save-dir",
        save_dir,
        *extra,
    ]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action) as srv:
        yield srv


@pytest.fixture(scope="module")
def fault_free(upstream: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The outputs of the same run with nothing in between."""
    run = tmp_path_factory.mktemp("fault-free") / "run"
    done = subprocess.run(
        [sys.executable, "-m", "lits", *_search(upstream.base_url, str(run), *FAULT_FLAGS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    outputs = run_outputs(run)
    assert len(outputs) == 9
    return outputs


@pytest.fixture
def chaos(upstream: FakeOpenAIServer, request: pytest.FixtureRequest) -> Iterator[ChaosProxy]:
    """A chaos proxy in front of ``upstream``; tests parametrize its rates (``indirect``)."""
    with ChaosProxy(upstream.base_url, request.param, seed=3, retry_after="0", hang_seconds=1.5) as proxy:
        yield proxy


RATES = [{kind: 0.2} for kind in FAULT_KINDS] + [evenly(FAULT_KINDS, 0.2)]


@pytest.mark.parametrize("chaos", RATES, indirect=True, ids=[*FAULT_KINDS, "mix-20%"])
def test_every_instance_finishes_with_the_fault_free_results(chaos, lits_cmd: Lits, tmp_path, fault_free):
    result = lits_cmd(*_search(chaos.base_url, "run", *FAULT_FLAGS), env=QUICK_ENV)
    assert result.returncode == 0, result.stderr
    assert sum(chaos.faults.values()) > 0
    assert run_outputs(tmp_path / "run") == fault_free
    summary = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert summary["instances"] == summary["total"] == 3 and summary["failed"] == 0
    faults = summary["faults"]
    assert faults["retries"] + faults["hedges_won"] >= 1 and faults["failed_calls"] == 0  # a hedged copy
    assert "server faults" in result.stdout or "hedged requests" in result.stdout  # may answer for a hang


@pytest.mark.parametrize("chaos", [{"hang": 0.05}], indirect=True, ids=["hang-5%"])
def test_hung_calls_are_answered_by_hedged_copies_with_the_fault_free_results(
    chaos, lits_cmd: Lits, tmp_path, fault_free
):
    # A read timeout far above the proxy's 1.5 s hang: only a copy can answer a hung call early.
    result = lits_cmd(*_search(chaos.base_url, "run", "--read-timeout", "30"), env=QUICK_ENV)
    assert result.returncode == 0, result.stderr
    assert run_outputs(tmp_path / "run") == fault_free
    faults = json.loads((tmp_path / "run" / "eval_results.json").read_text())["faults"]
    assert faults["hedges_won"] >= 1 and faults["failed_calls"] == 0
    assert "hedged requests" in result.stdout


class FailOneInstance(ChaosProxy):
    """Answers 500 to every request about one instance until a request about another one arrives."""

    def __init__(self, upstream: str, failing: dict, release: dict) -> None:
        super().__init__(upstream)
        self.failing, self.release = _marker(failing), _marker(release)
        self.released = False

    def decide(self, path: str, body: bytes) -> str | None:
        text = "\n".join(str(m.get("content")) for m in json.loads(body).get("messages", []))
        self.released = self.released or self.release in text
        if not self.released and self.failing in text:
            self.faults["500"] += 1
            return "500"
        return None


def _marker(example: dict) -> str:
    return f"Start: {example['init_state_str']}\nGoal: {example['query']}"


def test_an_instance_that_fails_is_retried_after_the_others_and_loses_nothing(upstream, lits_cmd: Lits, tmp_path: Path):
    from lits.registry import load_dataset

    cases = load_dataset("blocksworld", steps=2)  # instances 1..4 have distinct goals
    args = [
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2",
        "--offset",
        "1",
        "--limit",
        "4",
        "--search-arg",
        "n_iterations=3",
        "--concurrency",
        "1",
        "--model",
        "fake-model",
        "--call-budget",
        "1",
    ]
    assert lits_cmd(*args, "--base-url", upstream.base_url, "--save-dir", "whole").returncode == 0
    with FailOneInstance(upstream.base_url, failing=cases[1], release=cases[4]) as proxy:
        result = lits_cmd(*args, "--base-url", proxy.base_url, "--save-dir", "run", env=QUICK_ENV)
    assert result.returncode == 0, result.stderr
    assert proxy.faults["500"] > 1 and "retrying 1 failed instance(s)" in result.stderr
    assert run_outputs(tmp_path / "run") == run_outputs(tmp_path / "whole")
    summary = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert summary["retried_instances"] == {"1": 2} and summary["failed"] == 0


@pytest.mark.parametrize("status", [401, 500])
def test_a_server_that_always_fails_stops_the_run_within_seconds_in_one_line(lits_cmd: Lits, tmp_path, status):
    with FakeOpenAIServer(responder=first_listed_action) as srv:
        srv.fail_next(status, times=100_000)
        result = lits_cmd(
            "chain",
            "--dataset",
            "blocksworld",
            "--limit",
            "10",
            "--model",
            "fake-model",
            "--base-url",
            srv.base_url,
            "--concurrency",
            "2",
            "--call-budget",
            "1",
            "--save-dir",
            "run",
            env=QUICK_ENV,
        )
    line = one_line_error(result, code=1)
    assert line.startswith(
        f"lits: error: stopped after 3 instances failed in a row (model server {srv.base_url} answered {status}"
    )
    assert line.endswith("; fix the server, then run `lits chain --resume --save-dir run`")
    summary = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert summary["instances"] == 0 and summary["total"] == 10 and summary["stopped"] == "breaker"
    assert summary["failed"] <= 4  # the run stopped: it did not try all 10 instances
