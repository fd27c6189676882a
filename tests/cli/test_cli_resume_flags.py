"""--resume keeps a run's meaning, restores its operational settings and merges its statistics."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import first_listed_action, one_line_error

Lits = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def finished_run(lits_cmd: Lits, server_args: list[str], tmp_path: Path) -> Path:
    """A finished two-instance MCTS run against the loopback server, at concurrency 2."""
    result = lits_cmd(
        "search", *server_args, "--search-arg", "n_iterations=3", "--concurrency", "2", "--save-dir", "run"
    )
    assert result.returncode == 0, result.stderr
    return tmp_path / "run"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_resume_with_a_new_concurrency_keeps_it_in_config_and_summary(lits_cmd: Lits, finished_run: Path):
    (finished_run / "results" / "1.json").unlink()
    assert lits_cmd("search", "--resume", "--save-dir", "run", "--concurrency", "8").returncode == 0
    config = _json(finished_run / "config.json")
    assert config["concurrency"] == 8 and config["model_info"]["concurrency"] == 8
    assert config["resumed"][-1]["changed"] == {"concurrency": 8}
    assert _json(finished_run / "eval_results.json")["config"]["concurrency"] == 8
    assert lits_cmd("search", "--resume", "--save-dir", "run").returncode == 0  # no flag: 8 is restored
    assert _json(finished_run / "config.json")["concurrency"] == 8


def test_resume_against_the_same_model_at_a_new_address_pays_nothing_twice(lits_cmd: Lits, finished_run: Path):
    """The cache keys on the model, not the URL: a redone instance's calls are all answered from it."""
    expected = (finished_run / "results" / "1.json").read_bytes()
    (finished_run / "results" / "1.json").unlink()
    (finished_run / "checkpoints" / "1.journal.jsonl").unlink()  # so the instance is searched again
    with FakeOpenAIServer(responder=first_listed_action) as moved:
        result = lits_cmd("search", "--resume", "--save-dir", "run", "--base-url", moved.base_url)
        assert result.returncode == 0, result.stderr
        assert moved.requests == []
    assert (finished_run / "results" / "1.json").read_bytes() == expected


@pytest.mark.parametrize(
    "flag",
    [
        ["--dataset", "crosswords"],
        ["--dataset-arg", "steps=4"],
        ["--search-arg", "n_iterations=9"],
        ["--search", "bfs"],
        ["--model", "other"],
        ["--offset", "1"],
        ["--limit", "5"],
        ["--policy", "generic"],
        ["--reward", "other"],
        ["--api", "completion"],
    ],
)
def test_a_flag_that_changes_the_runs_meaning_is_refused_in_one_line(lits_cmd: Lits, finished_run: Path, flag):
    line = one_line_error(lits_cmd("search", "--resume", "--save-dir", "run", *flag))
    assert line.startswith(f"lits: error: {flag[0]} ") and "cannot be used with --resume" in line


def test_flags_that_repeat_the_runs_settings_are_accepted_on_resume(lits_cmd: Lits, finished_run: Path):
    result = lits_cmd(
        "search",
        "--resume",
        "--save-dir",
        "run",
        "--dataset",
        "blocksworld",
        "--search-arg",
        "n_iterations=3",
        "--limit",
        "2",
        "--model",
        "fake-model",
    )
    assert result.returncode == 0, result.stderr


def test_policy_stats_in_the_summary_cover_every_process_of_the_run(lits_cmd: Lits, finished_run: Path):
    whole = _json(finished_run / "eval_results.json")["policy_stats"]
    assert whole["calls"] > 0
    (finished_run / "results" / "1.json").unlink()  # the resumed process replays its journal: no policy call
    assert lits_cmd("search", "--resume", "--save-dir", "run").returncode == 0
    assert _json(finished_run / "eval_results.json")["policy_stats"] == whole
    assert len(list((finished_run / "stats").iterdir())) == 2


def test_a_torn_line_in_the_inference_log_stops_neither_resume_nor_eval(lits_cmd: Lits, finished_run: Path):
    log = finished_run / "inference.jsonl"
    calls = len(log.read_text().splitlines())
    (finished_run / "results" / "1.json").unlink()
    with log.open("a") as fh:
        fh.write('{"model": "fake-model", "kind": "gen')  # a record cut off by a kill
    resumed = lits_cmd("search", "--resume", "--save-dir", "run")
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert all(json.loads(line) for line in log.read_text().splitlines())  # the torn record was cut off
    assert len(log.read_text().splitlines()) >= calls
    with log.open("a") as fh:
        fh.write('{"model": "fake-model", "ki')
    evaluated = lits_cmd("eval", "--save-dir", "run")
    assert evaluated.returncode == 0 and "Traceback" not in evaluated.stderr, evaluated.stderr
    assert "lits: warning:" in evaluated.stderr and "skipped 1 damaged line" in evaluated.stderr
