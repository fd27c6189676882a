"""``--executor ray`` on a local Ray with 2 workers finds what the in-process run finds, byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lits.testing.servers.openai_compat import FakeOpenAIServer

from tests.ray.conftest import (
    eval_without_timings,
    first_listed_action,
    outputs,
    records_per_instance,
)

pytestmark = pytest.mark.usefixtures("local_ray")

SCRIPTED = ["--model", "scripted", "--dataset", "blocksworld", "--dataset-arg", "steps=2,4", "--limit", "4"]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action, latency=0.02) as srv:
        yield srv


def test_scripted_search_on_ray_equals_in_process(lits_here: Callable[..., int], tmp_path: Path) -> None:
    assert lits_here("search", *SCRIPTED, "--save-dir", "here") == 0
    assert lits_here("search", *SCRIPTED, "--save-dir", "ray", "--executor", "ray") == 0
    here, ray = tmp_path / "here", tmp_path / "ray"
    assert outputs(ray) == outputs(here) and len(outputs(here)) == 12
    assert eval_without_timings(ray) == eval_without_timings(here)
    assert records_per_instance(ray) == records_per_instance(here)
    assert json.loads((ray / "config.json").read_text())["executor"] == "ray"


def test_server_search_on_ray_equals_in_process_within_one_bound_of_calls(
    lits_here: Callable[..., int], tmp_path: Path, server: FakeOpenAIServer
) -> None:
    """Two workers, each running instances at once, share the one bound of --concurrency."""
    args = [
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2,4",
        "--limit",
        "4",
        "--concurrency",
        "3",
        "--search-arg",
        "n_iterations=3",
    ]
    assert lits_here("search", *args, "--save-dir", "here") == 0
    server.max_in_flight = 0
    assert lits_here("search", *args, "--save-dir", "ray", "--executor", "ray") == 0
    here, ray = tmp_path / "here", tmp_path / "ray"
    assert outputs(ray) == outputs(here)
    assert eval_without_timings(ray) == eval_without_timings(here)
    assert server.max_in_flight == 3


@pytest.mark.parametrize("dataset", ["crosswords", "mapeval-sql", "math500"])  # blocksworld: above
def test_every_other_shipped_domain_runs_on_ray(lits_here: Callable[..., int], tmp_path: Path, dataset: str) -> None:
    args = ["--model", "scripted", "--dataset", dataset, "--limit", "2", "--search-arg", "n_iterations=3"]
    assert lits_here("search", *args, "--save-dir", "here") == 0
    assert lits_here("search", *args, "--save-dir", "ray", "--executor", "ray") == 0
    assert len(list((tmp_path / "ray" / "results").iterdir())) == 2
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "here")


def test_chain_on_ray_equals_in_process(lits_here: Callable[..., int], tmp_path: Path) -> None:
    args = ["chain", "--model", "scripted", "--dataset", "blocksworld", "--limit", "3"]
    assert lits_here(*args, "--save-dir", "here") == 0
    assert lits_here(*args, "--save-dir", "ray", "--executor", "ray") == 0
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "here")
    assert sorted(p.name for p in (tmp_path / "ray" / "checkpoints").iterdir()) == ["0.json", "1.json", "2.json"]
    assert eval_without_timings(tmp_path / "ray") == eval_without_timings(tmp_path / "here")


def test_resume_on_ray_redoes_only_unfinished_instances(lits_here: Callable[..., int], tmp_path: Path) -> None:
    """An in-process run resumed with --executor ray (an operational flag) redoes only what is missing."""
    assert lits_here("search", *SCRIPTED, "--save-dir", "whole") == 0
    assert lits_here("search", *SCRIPTED, "--save-dir", "part") == 0
    part = tmp_path / "part"
    (part / "results" / "2.json").unlink()
    (part / "checkpoints" / "2.journal.jsonl").unlink()  # else its finished tree is replayed without a call
    before = records_per_instance(part)
    assert lits_here("search", "--resume", "--save-dir", "part", "--executor", "ray") == 0
    assert outputs(part) == outputs(tmp_path / "whole")
    after = records_per_instance(part)
    assert {idx: after[idx] - before[idx] for idx in after if after[idx] != before[idx]} == {2: before[2]}
    config = json.loads((part / "config.json").read_text())
    assert config["executor"] == "ray" and config["resumed"][-1]["changed"] == {"executor": "ray"}


def test_ray_address_without_ray_executor_is_one_line(
    lits_here: Callable[..., int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert lits_here("search", *SCRIPTED, "--ray-address", "auto") == 2
    assert capsys.readouterr().err.strip() == "lits: error: --ray-address needs --executor ray"


def test_missing_ray_names_the_extra(
    lits_here: Callable[..., int], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert lits_here("search", *SCRIPTED, "--executor", "ray") == 2
    assert capsys.readouterr().err.strip() == ("lits: error: --executor ray needs Ray: pip install 'lits-core[ray]'")


def test_worker_without_the_plugin_says_install_it_on_every_node() -> None:
    """A worker that cannot find a registered name answers with one line, not a dead actor."""
    from lits.runs.ray.actors import RunCoordinator
    from lits.runs.ray.worker import InstanceWorker
    from lits.runs.record import RunRecord
    from lits.runs.spec import RunSpec

    import ray

    name = "test-coordinator-missing-plugin"
    coordinator = RunCoordinator.options(name=name).remote(1, None)  # type: ignore[attr-defined]
    settings = RunRecord.of(RunSpec.make(dataset="no-such-dataset", search="mcts", model="scripted", no_cache=True))
    worker = InstanceWorker.remote("w0", settings, "search", name)  # type: ignore[attr-defined]
    out = ray.get(worker.run.remote(0, {"query": "q"}, False, {}), timeout=60)
    assert out["status"] == "setup"
    assert "no-such-dataset" in out["error"]
    assert "installed on every node of the cluster" in out["error"]
    ray.kill(worker)
    ray.kill(coordinator)
