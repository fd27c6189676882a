"""`lits chain` / `lits search` with `--resource mcp`: the tools of a real MCP server process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer

STEPS = (
    '{"tool": "list_tables", "args": {}}',
    '{"tool": "query_sql", "args": {"query": "SELECT name, rating FROM places ORDER BY name LIMIT 3"}}',
)
MAPEVAL_MCP = ["--resource", "mcp", "--resource-arg", "command=lits-mapeval serve-mcp"]


def _analyst(prompt: str, body: dict) -> str:
    """A chat model that lists the tables, runs one query, then answers (Yes to the reward's question)."""
    if "Answer Yes or No" in prompt:
        return "Yes"
    done = prompt.count("user: Observation:")
    if done < len(STEPS):
        return f"Thought: step {done}\nAction: {STEPS[done]}"
    return "Thought: I have what I need\nAnswer: 1"


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with FakeOpenAIServer(responder=_analyst) as server:
        yield server.base_url


def lits(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lits", *args], capture_output=True, text=True, env=env, timeout=120)


def _chain(env: dict[str, str], url: str, save_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return lits(
        env,
        "chain",
        "--dataset",
        "mapeval-sql",
        "--limit",
        "2",
        "--model",
        "m",
        "--base-url",
        url,
        "--save-dir",
        str(save_dir),
        *extra,
    )


def _results(save_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((save_dir / "results").iterdir())}


@pytest.fixture(scope="module")
def in_process_run(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, model_url: str) -> Path:
    """The reference: the same chain with the dataset's own in-process tools."""
    save_dir = tmp_path_factory.mktemp("in-process") / "run"
    env = {**os.environ, "LITS_CACHE_DIR": str(cache_dir)}
    result = _chain(env, model_url, save_dir)
    assert result.returncode == 0, result.stderr
    return save_dir


@pytest.fixture(scope="module")
def stdio_run(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, model_url: str) -> Path:
    """The same chain with the tools of `lits-mapeval serve-mcp` over stdio."""
    save_dir = tmp_path_factory.mktemp("stdio") / "run"
    env = {
        **os.environ,
        "LITS_CACHE_DIR": str(cache_dir),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    result = _chain(env, model_url, save_dir, *MAPEVAL_MCP, "--resource-arg", "timeout=5")
    assert result.returncode == 0, result.stderr
    return save_dir


def test_the_react_chain_over_stdio_mcp_gives_the_in_process_trajectories(stdio_run, in_process_run):
    assert _results(stdio_run) == _results(in_process_run)
    steps = json.loads((stdio_run / "results" / "0.json").read_text())["final_state"]["steps"]
    assert steps[0]["observation"] == "directions, distances, nearby, places"
    config = json.loads((stdio_run / "config.json").read_text())
    assert (config["resource"], config["resource_args"]) == ("mcp", {"command": "lits-mapeval serve-mcp", "timeout": 5})


def test_the_react_chain_over_streamable_http_gives_the_in_process_trajectories(
    env, tmp_path, model_url, in_process_run, mapeval_http_url
):
    result = _chain(env, model_url, tmp_path / "run", "--resource", "mcp", "--resource-arg", f"url={mapeval_http_url}")
    assert result.returncode == 0, result.stderr
    assert _results(tmp_path / "run") == _results(in_process_run)


def test_mcts_searches_over_mcp_tools(env, tmp_path, model_url):
    result = lits(
        env,
        "search",
        "--dataset",
        "mapeval-sql",
        "--limit",
        "1",
        "--model",
        "m",
        "--base-url",
        model_url,
        "--search-arg",
        "n_iterations=2",
        "--search-arg",
        "n_actions=2",
        "--save-dir",
        str(tmp_path / "run"),
        *MAPEVAL_MCP,
    )
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    assert "SELECT name, rating FROM places" in json.dumps(record)
    assert record["eval"]["answer"] == "1"


def test_resume_takes_the_resource_from_the_run(env, stdio_run):
    again = lits(env, "chain", "--resume", "--save-dir", str(stdio_run))
    assert again.returncode == 0, again.stderr
    assert "2 instances were already done" in again.stderr
    changed = lits(env, "chain", "--resume", "--save-dir", str(stdio_run), "--resource-arg", "timeout=9")
    assert changed.returncode == 2
    assert changed.stderr.strip().splitlines() == [
        "lits: error: --resource-arg timeout=9 cannot be used with --resume: it would change what the run computes "
        "(the run has 5); start a new run with another --save-dir"
    ]


def _toy_caller(tool: str):
    def reply(prompt: str, body: dict) -> str:
        if "user: Observation:" in prompt:
            return "Thought: done\nAnswer: 1"
        return f'Thought: use the tool\nAction: {{"tool": "{tool}", "args": {{"a": 40}}}}'

    return reply


def test_any_mcp_servers_tools_serve_a_tool_use_dataset(env, tmp_path, toy_command):
    with FakeOpenAIServer(responder=_toy_caller("add")) as server:
        result = lits(
            env,
            "chain",
            "--dataset",
            "mapeval-sql",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--save-dir",
            str(tmp_path / "run"),
            "--resource",
            "mcp",
            "--resource-arg",
            f"command={toy_command}",
        )
        system = server.requests[0]["messages"][0]["content"]
    assert result.returncode == 0, result.stderr
    steps = json.loads((tmp_path / "run" / "results" / "0.json").read_text())["final_state"]["steps"]
    assert steps[0]["observation"] == "42"
    tools = system.split("Tools:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [json.loads(line)["name"] for line in tools] == ["add", "paint", "refuse", "sleep", "blob", "flaky", "crash"]


def test_a_server_that_dies_again_after_its_restart_fails_the_instance_in_one_line(env, tmp_path, toy_command):
    with FakeOpenAIServer(responder=_toy_caller("crash")) as server:
        result = lits(
            env,
            "chain",
            "--dataset",
            "mapeval-sql",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--save-dir",
            str(tmp_path / "run"),
            "--resource",
            "mcp",
            "--resource-arg",
            f"command={toy_command}",
        )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lits: error: stopped after 3 instances failed in a row (MCP server `")
    assert "toy_server.py` stopped again after a restart" in last
    assert "lits chain --resume --save-dir" in last
    assert "Traceback" not in result.stderr


def test_a_server_command_that_does_not_start_is_one_line_and_exit_2(env, tmp_path):
    result = lits(
        env,
        "chain",
        "--dataset",
        "mapeval-sql",
        "--limit",
        "1",
        "--model",
        "scripted",
        "--save-dir",
        str(tmp_path / "run"),
        "--resource",
        "mcp",
        "--resource-arg",
        f"command={sys.executable} -m no_such_mcp_server",
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"lits: error: MCP server `{sys.executable} -m no_such_mcp_server` could not be started: "
        f"{sys.executable}: No module named no_such_mcp_server"
    ]


@pytest.mark.slow
def test_the_react_chain_runs_over_mcp_on_the_embedded_model(env, tmp_path):
    result = lits(
        env,
        "chain",
        "--dataset",
        "mapeval-sql",
        "--limit",
        "1",
        "--model",
        "local",
        "--chain-arg",
        "max_steps=1",
        "--save-dir",
        str(tmp_path / "run"),
        *MAPEVAL_MCP,
    )
    assert result.returncode == 0, result.stderr
    first = json.loads((tmp_path / "run" / "results" / "0.json").read_text())["final_state"]["steps"][0]
    assert json.loads(first["action"]["text"])["tool"] in ("list_tables", "describe_table", "query_sql")
    assert first["observation"] and not first["observation"].startswith(("Invalid", "Unknown tool", "Tool "))


def test_resource_is_refused_for_a_dataset_that_is_not_tool_use(env, tmp_path):
    result = lits(
        env,
        "chain",
        "--dataset",
        "blocksworld",
        "--limit",
        "1",
        "--model",
        "scripted",
        "--save-dir",
        str(tmp_path / "run"),
        *MAPEVAL_MCP,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lits: error: --resource gives tools to tool-use datasets; 'blocksworld' is env_grounded"
    ]


def test_serve_mcp_refuses_to_listen_beyond_loopback():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lits-mapeval"), "serve-mcp", "--http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lits-mapeval: error: --host 0.0.0.0 is not a loopback address: the tools are served without "
        "authentication, so only 127.0.0.1, localhost or ::1 are allowed"
    ]


def test_a_resource_arg_without_a_resource_is_one_line(env, tmp_path):
    result = lits(
        env,
        "chain",
        "--dataset",
        "mapeval-sql",
        "--model",
        "scripted",
        "--save-dir",
        str(tmp_path / "run"),
        "--resource-arg",
        "command=lits-mapeval serve-mcp",
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lits: error: --resource-arg needs --resource NAME (e.g. --resource mcp)"
    ]


def _adder_that_takes_the_server_down(down: Path):
    """The model calls `add` once per instance; when the second instance starts, the toy server goes down for
    good (every call kills it, also after its restart) until ``down`` is removed."""
    questions: list[str] = []

    def reply(prompt: str, body: dict) -> str:
        question = prompt.rsplit("user: Question: ", 1)[-1].split("\n", 1)[0]
        if question not in questions:
            questions.append(question)
            if len(questions) == 2:
                down.write_text("down")
        return _toy_caller("add")(prompt, body)

    return reply


def test_an_mcp_server_down_for_good_leaves_its_instances_to_resume(env, tmp_path, toy_command):
    down = tmp_path / "toy-down"
    env = {**env, "TOY_DOWN": str(down)}
    args = [
        "--dataset",
        "mapeval-sql",
        "--limit",
        "4",
        "--model",
        "m",
        "--concurrency",
        "1",
        "--resource",
        "mcp",
        "--resource-arg",
        f"command={toy_command}",
    ]
    with FakeOpenAIServer(responder=_toy_caller("add")) as server:
        reference = lits(env, "chain", *args, "--base-url", server.base_url, "--save-dir", str(tmp_path / "ref"))
    assert reference.returncode == 0, reference.stderr

    run = tmp_path / "run"
    with FakeOpenAIServer(responder=_adder_that_takes_the_server_down(down)) as server:
        cut = lits(env, "chain", *args, "--base-url", server.base_url, "--save-dir", str(run))
    assert cut.returncode == 1, cut.stderr
    assert sorted(_results(run)) == ["0.json"]
    assert "stopped again after a restart" in cut.stderr.strip().splitlines()[-1]

    down.unlink()
    with FakeOpenAIServer(responder=_toy_caller("add")) as server:
        resumed = lits(env, "chain", "--resume", "--save-dir", str(run), "--base-url", server.base_url)
    assert resumed.returncode == 0, resumed.stderr
    assert _results(run) == _results(tmp_path / "ref")


def test_a_50_mb_tool_result_reaches_the_next_prompt_cut_to_4000_characters(env, tmp_path, toy_command):
    def blob_then_answer(prompt: str, body: dict) -> str:
        if "user: Observation:" in prompt:
            return "Thought: done\nAnswer: 1"
        return 'Thought: look\nAction: {"tool": "blob", "args": {"megabytes": 50}}'

    with FakeOpenAIServer(responder=blob_then_answer) as server:
        result = lits(
            env,
            "chain",
            "--dataset",
            "mapeval-sql",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--save-dir",
            str(tmp_path / "run"),
            "--resource",
            "mcp",
            "--resource-arg",
            f"command={toy_command}",
        )
        second = json.dumps(server.requests[1]["messages"])
    assert result.returncode == 0, result.stderr
    steps = json.loads((tmp_path / "run" / "results" / "0.json").read_text())["final_state"]["steps"]
    assert steps[0]["observation"].startswith("x" * 4000 + "\n[result cut at 4,000 characters of ")
    assert len(second) < 20_000
