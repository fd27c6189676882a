"""Trust: a config file or a run's config.json never starts a command or sends a key on its own (issue 41,
items 1-3); what the command line gives is the user's, what a file gives is confirmed first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import SECRET, first_listed_action, one_line_error
from tests.commands import blocksworld_search

Lits = Callable[..., subprocess.CompletedProcess[str]]
TOOL_RUN = ["--dataset", "mapeval-sql", "--limit", "1", "--model", "scripted", "--resource", "mcp"]
PATH_KEY = "sk9f8e7d6c5b4a3928170XYZ"
QUERY_SECRETS = {"pass": "pass-0123456789-secret", "session": "session-abcdef-secret"}


@pytest.fixture
def lits(tmp_path: Path) -> Lits:
    """``python -m lits`` with a key, its own trust store and city cache, stdin not a terminal."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "OPENAI_API_KEY": SECRET,
            "LITS_STATE_DIR": str(tmp_path / "state"),
            "LITS_CACHE_DIR": str(tmp_path / "cache"),
            "LITS_HEDGE_SHARE": "0",
        }
        return subprocess.run(
            [sys.executable, "-m", "lits", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )

    return run


@pytest.fixture
def sentinel(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


@pytest.fixture
def sentinel_command(sentinel: Path) -> str:
    """A command that only leaves a file behind (an MCP server that never answers: the start fails)."""
    return f"{sys.executable} -c \"open(r'{sentinel}', 'w').close()\""


@pytest.fixture
def command_file(tmp_path: Path, sentinel_command: str) -> Path:
    config = tmp_path / "run.toml"
    config.write_text(
        f'dataset = "mapeval-sql"\nresource = "mcp"\n[resource_args]\ncommand = {json.dumps(sentinel_command)}\n'
    )
    return config


# -- item 1: commands -----------------------------------------------------------------------------------------


def test_a_dry_run_starts_no_mcp_server(lits, sentinel, sentinel_command):
    done = lits("search", *TOOL_RUN, "--resource-arg", f"command={sentinel_command}", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert not sentinel.exists()


def test_a_dry_run_lists_a_command_from_a_config_file_to_confirm(lits, sentinel, command_file, sentinel_command):
    done = lits("search", "--config", str(command_file), "--model", "scripted", "--limit", "1", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert not sentinel.exists()
    assert f"to confirm    start `{sentinel_command}` (from a file: a run asks, or give --trust-config)" in done.stdout


def test_a_command_from_a_config_file_is_not_started_without_confirmation(
    lits, sentinel, command_file, sentinel_command
):
    line = one_line_error(lits("search", "--config", str(command_file), "--model", "scripted", "--limit", "1"))
    assert not sentinel.exists()
    assert line == (
        f"lits: error: the run's settings come from a file and would start `{sentinel_command}`; "
        "nothing was started or sent: check them and give --trust-config (or give these values on the "
        "command line)"
    )


def test_trust_config_starts_the_command_from_a_config_file_and_says_so(lits, sentinel, command_file, sentinel_command):
    done = lits("search", "--config", str(command_file), "--model", "scripted", "--limit", "1", "--trust-config")
    assert sentinel.exists()  # it ran (and, being no MCP server, failed to start in one line)
    assert f"lits: confirmed: start `{sentinel_command}`" in done.stderr
    assert done.returncode == 2 and "could not be started" in done.stderr


def test_a_config_file_cannot_set_trust_config(lits, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('dataset = "blocksworld"\ntrust_config = true\n')
    line = one_line_error(lits("search", "--config", str(config), "--model", "scripted"))
    assert "trust_config cannot be set in a file; give --trust-config on the command line" in line


# -- item 2: keys and where they go ------------------------------------------------------------------------------


@pytest.fixture
def finished(lits: Lits, tmp_path: Path) -> Path:
    """A run made against a loopback server given on the command line; its results removed (work left)."""
    with FakeOpenAIServer(responder=first_listed_action) as server:
        done = lits(*blocksworld_search(iterations=1), "--model", "m", "--base-url", server.base_url)
    assert done.returncode == 0, done.stderr
    for result in (tmp_path / "run" / "results").iterdir():
        result.unlink()
    return tmp_path / "run"


def _point_at(run: Path, url: str) -> None:
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "base_url": url}))


def test_the_console_says_where_calls_go_before_the_first_call(lits):
    with FakeOpenAIServer(responder=first_listed_action) as server:
        done = lits(
            *blocksworld_search(iterations=1, save_dir=None),
            "--model",
            "m",
            "--base-url",
            f"{server.base_url}?api-version=1",
        )
    assert done.returncode == 0, done.stderr
    assert f"; calls go to {server.base_url}?*** (policy, eval, transition, bn)" in done.stderr.splitlines()[0]


def test_resume_sends_no_key_to_a_base_url_changed_in_config_json(lits, finished):
    with FakeOpenAIServer(responder=first_listed_action) as elsewhere:
        _point_at(finished, elsewhere.base_url)
        line = one_line_error(lits("search", "--resume", "--save-dir", "run"))
    assert elsewhere.headers == [] and elsewhere.requests == []
    assert f"would send $OPENAI_API_KEY to {elsewhere.base_url}; nothing was started or sent" in line


def test_resuming_ones_own_run_asks_nothing(lits, finished):
    with FakeOpenAIServer(responder=first_listed_action) as server:
        _point_at(finished, server.base_url)  # the same server, back on another port: given again below
        assert lits("search", "--resume", "--save-dir", "run", "--base-url", server.base_url).returncode == 0
        for result in (finished / "results").iterdir():
            result.unlink()
        again = lits("search", "--resume", "--save-dir", "run")  # confirmed by the run before
    assert again.returncode == 0, again.stderr
    assert f"lits: confirmed: send $OPENAI_API_KEY to {server.base_url}" in again.stderr


def test_trust_config_sends_the_key_to_the_url_in_config_json(lits, finished):
    with FakeOpenAIServer(responder=first_listed_action) as elsewhere:
        _point_at(finished, elsewhere.base_url)
        done = lits("rerun", "run", "--save-dir", "again", "--trust-config")
    assert done.returncode == 0, done.stderr
    assert elsewhere.headers and all(h.get("Authorization") == f"Bearer {SECRET}" for h in elsewhere.headers)


def test_an_api_key_env_from_a_file_that_does_not_look_like_a_key_is_not_read(lits, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        'dataset = "blocksworld"\nmodel = "m"\n[component_models.policy]\nmodel = "m"\n'
        '[component_models.policy.args]\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n'
    )
    with FakeOpenAIServer(responder=first_listed_action) as server:
        env_done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "search",
                "--config",
                str(config),
                "--base-url",
                server.base_url,
                "--limit",
                "1",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            timeout=300,
            env={**os.environ, "AWS_SECRET_ACCESS_KEY": "aws-secret-value-123456", "LITS_STATE_DIR": str(tmp_path)},
        )
    line = one_line_error(env_done)
    assert server.requests == [] and server.headers == []
    assert "would use $AWS_SECRET_ACCESS_KEY as the API key" in line


# -- item 3: secrets in URLs -------------------------------------------------------------------------------------


def test_a_urls_query_string_and_a_key_in_its_path_reach_the_server_and_no_file(lits, tmp_path):
    query = "&".join(f"{name}={value}" for name, value in QUERY_SECRETS.items())
    with FakeOpenAIServer(responder=first_listed_action) as server:
        url = server.base_url.replace("/v1", f"/{PATH_KEY}/v1")
        done = lits(*blocksworld_search(iterations=1), "--model", "m", "--base-url", f"{url}?{query}")
        assert done.returncode == 0, done.stderr
        assert lits("view", "run").returncode == 0
    assert server.queries and set(server.queries) == {query}
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert (tmp_path / "run" / "report.html").exists()
    for secret in (PATH_KEY, *QUERY_SECRETS.values(), "pass=", "session="):
        assert secret not in written + done.stdout + done.stderr, secret
    assert (
        server.base_url.replace("/v1", "/***/v1?***")
        in json.loads((tmp_path / "run" / "config.json").read_text())["base_url"]
    )


@pytest.mark.parametrize("answer, starts", [("y", True), ("n", False)])
def test_an_answer_typed_at_a_terminal_decides_whether_the_command_starts(
    tmp_path, command_file, sentinel, sentinel_command, answer, starts
):
    main, terminal = os.openpty()
    os.write(main, f"{answer}\n".encode())
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "search",
                "--config",
                str(command_file),
                "--model",
                "scripted",
                "--limit",
                "1",
            ],
            stdin=terminal,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
            env={**os.environ, "LITS_STATE_DIR": str(tmp_path / "state"), "LITS_CACHE_DIR": str(tmp_path / "cache")},
        )
    finally:
        os.close(main)
        os.close(terminal)
    assert f"lits: a file asks this run to start `{sentinel_command}`" in done.stderr
    assert sentinel.exists() is starts
    assert done.returncode == 2 and "Traceback" not in done.stderr
