"""Runs through the hosted backends: installed, found by ``--model bedrock/...`` / ``anthropic/...``, and
writing no credential anywhere (the paper's BlocksWorld MCTS and a MapEval-SQL ReAct chain)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.testing.scripted import listed_actions
from tests.commands import blocksworld_search
from tests.hosted.conftest import SECRETS, SPECS, run_files_text, vendor_env
from tests.hosted.fake_hosted import FakeHostedServer

Run = Callable[..., Any]


def first_listed_action(prompt: str, body: dict[str, Any]) -> str:
    listed = listed_actions(prompt)
    return listed[0] if listed else "Yes"


def sql_agent(prompt: str, body: dict[str, Any]) -> str:
    """Two tool calls, then an answer (each step's prompt repeats the earlier ones: the cache's case)."""
    seen = sum(1 for message in body["messages"] if message["role"] == "assistant")  # steps taken
    if seen == 0:
        return 'Thought: what is there\nAction: {"tool": "list_tables", "args": {}}'
    if seen == 1:
        return 'Thought: count them\nAction: {"tool": "query_sql", "args": {"sql": "SELECT 1"}}'
    return "Thought: done\nAnswer: 1"


@pytest.fixture
def blocksworld_server() -> Iterator[FakeHostedServer]:
    with FakeHostedServer(first_listed_action) as srv:
        yield srv


def records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "inference.jsonl").read_text().splitlines() if line.strip()]


def test_lits_plugins_lists_the_hosted_backends(lits_hosted_cmd: Run):
    result = lits_hosted_cmd("plugins", "--json")
    infos = {p["distribution"]: p for p in json.loads(result.stdout)}
    assert infos["lits-plugin-hosted"]["registered"]["model"] == ["anthropic", "bedrock"]


@pytest.mark.parametrize("vendor", ["bedrock", "anthropic"])
def test_blocksworld_mcts_runs_through_the_hosted_backend_and_writes_no_secret(
    lits_hosted_cmd: Run, blocksworld_server: FakeHostedServer, tmp_path: Path, vendor: str
):
    result = lits_hosted_cmd(
        *blocksworld_search(iterations=3, limit=2, save_dir=None),
        "--model",
        SPECS[vendor],
        "--base-url",
        blocksworld_server.base_url,
        "--concurrency",
        "2",
        "--save-dir",
        "run",
    )
    assert result.returncode == 0, result.stderr
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "results").iterdir()) == ["0.json", "1.json"]
    calls = [r for r in records(run) if not r["cached"]]
    assert calls and sum(r.get("requests", 1) for r in calls) == len(blocksworld_server.bodies)
    assert all(r["cost"] > 0 and "tokens_cache_write" in r and "tokens_cached" in r for r in calls)
    assert sum(r["tokens_cached"] for r in calls) > 0  # the components' instructions and examples, read back
    config = (run / "config.json").read_text()
    assert '"cannot"' in config and '"vendor"' in config
    text = run_files_text(run) + result.stdout + result.stderr
    assert not any(secret in text for secret in SECRETS)


def test_resuming_a_finished_run_rebuilds_the_model_from_its_config_and_pays_for_nothing(
    lits_hosted_cmd: Run, blocksworld_server: FakeHostedServer
):
    args = [
        *blocksworld_search(iterations=2, limit=1, save_dir=None),
        "--model",
        SPECS["bedrock"],
        "--base-url",
        blocksworld_server.base_url,
        "--save-dir",
        "run",
    ]
    assert lits_hosted_cmd(*args).returncode == 0
    paid = len(blocksworld_server.bodies)
    again = lits_hosted_cmd("search", "--save-dir", "run", "--resume")
    assert again.returncode == 0, again.stderr
    assert len(blocksworld_server.bodies) == paid


@pytest.mark.parametrize("vendor", ["bedrock", "anthropic"])
def test_a_mapeval_sql_react_chain_calls_tools_and_reads_its_history_from_the_cache(
    lits_hosted_cmd: Run, tmp_path: Path, vendor: str
):
    with FakeHostedServer(sql_agent) as server:
        result = lits_hosted_cmd(
            "chain",
            "--model",
            SPECS[vendor],
            "--base-url",
            server.base_url,
            "--dataset",
            "mapeval-sql",
            "--limit",
            "1",
            "--save-dir",
            "run",
        )
    assert result.returncode == 0, result.stderr
    run = tmp_path / "run"
    steps = json.loads((run / "results" / "0.json").read_text())["final_state"]["steps"]
    assert json.loads(steps[0]["action"]["text"])["tool"] == "list_tables"
    assert steps[0]["observation"] and not steps[0]["observation"].startswith("Invalid tool call")
    calls = [r for r in records(run) if not r["cached"]]
    assert len(calls) == 3 and calls[0]["tokens_cached"] == 0
    assert calls[2]["tokens_cached"] > calls[1]["tokens_cached"] > 0  # the conversation so far, read back
    assert not any(secret in run_files_text(run) for secret in SECRETS)


def test_each_component_may_use_another_hosted_backend(
    lits_hosted_cmd: Run, blocksworld_server: FakeHostedServer, tmp_path: Path
):
    result = lits_hosted_cmd(
        *blocksworld_search(iterations=2, limit=1, save_dir=None),
        "--save-dir",
        "run",
        "--policy-model",
        SPECS["bedrock"],
        "--policy-base-url",
        blocksworld_server.base_url,
        "--eval-model",
        SPECS["anthropic"],
        "--eval-base-url",
        blocksworld_server.base_url,
        "--transition-model",
        SPECS["bedrock"],
        "--transition-base-url",
        blocksworld_server.base_url,
    )
    assert result.returncode == 0, result.stderr
    paths = set(blocksworld_server.paths)
    assert "/v1/messages" in paths and any(p.endswith("/converse") for p in paths)


@pytest.fixture(scope="module")
def vendor_credentials_for_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The dummy credentials in this process before Ray starts, so its workers inherit them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("AWS_PROFILE", raising=False)
        for name, value in vendor_env(tmp_path_factory.mktemp("aws")).items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="module")
def ray_with_credentials(vendor_credentials_for_ray: None) -> Iterator[None]:
    pytest.importorskip("ray")
    from tests.ray.conftest import local_ray

    yield from local_ray.__wrapped__()  # type: ignore[attr-defined]


def test_a_ray_run_builds_the_hosted_model_in_its_workers_and_writes_no_secret(
    ray_with_credentials: None, blocksworld_server: FakeHostedServer, tmp_path: Path, capsys
):
    from lits.cli.main import main

    save = tmp_path / "run"
    code = main(
        [
            *blocksworld_search(iterations=2, limit=2, save_dir=None),
            "--model",
            SPECS["bedrock"],
            "--base-url",
            blocksworld_server.base_url,
            "--executor",
            "ray",
            "--save-dir",
            str(save),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in (save / "results").iterdir()) == ["0.json", "1.json"]
    assert blocksworld_server.bodies and all(p.endswith("/converse") for p in blocksworld_server.paths)
    assert not any(secret in run_files_text(save) for secret in SECRETS)


def test_lits_compare_reports_the_cost_per_instance_of_a_priced_run(
    lits_hosted_cmd: Run, blocksworld_server: FakeHostedServer, tmp_path: Path
):
    assert (
        lits_hosted_cmd(
            "chain",
            "--model",
            SPECS["bedrock"],
            "--base-url",
            blocksworld_server.base_url,
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=2",
            "--limit",
            "2",
            "--save-dir",
            "run",
        ).returncode
        == 0
    )
    cost = json.loads((tmp_path / "run" / "eval_results.json").read_text())["inference"]["cost"]
    table = lits_hosted_cmd("compare", "run")
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.endswith("cost / instance") and row.endswith(f"{cost / 2:.4f}") and cost > 0


def test_the_same_run_again_with_a_shared_response_cache_pays_nothing(
    lits_hosted_cmd: Run, blocksworld_server: FakeHostedServer, tmp_path: Path
):
    def search(save_dir: str) -> None:
        result = lits_hosted_cmd(
            *blocksworld_search(iterations=2, limit=1, save_dir=None),
            "--model",
            SPECS["anthropic"],
            "--base-url",
            blocksworld_server.base_url,
            "--save-dir",
            save_dir,
            "--cache",
            "responses.sqlite",
        )
        assert result.returncode == 0, result.stderr

    search("first")
    paid = len(blocksworld_server.bodies)
    search("again")
    assert len(blocksworld_server.bodies) == paid > 0
    again = records(tmp_path / "again")
    assert again and all(r["cached"] for r in again)
    first, second = (json.loads((tmp_path / d / "results" / "0.json").read_text()) for d in ("first", "again"))
    assert second["final_state"] == first["final_state"]
