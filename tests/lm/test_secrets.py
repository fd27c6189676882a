"""API keys never reach an error message, stderr or a run directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from lits.lm.base import ModelError
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.io.secrets import redact_text
from lits.testing.servers.openai_compat import FakeOpenAIServer

CANARY = "sk-canary-0123456789abcdefXYZ"
RunLits = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def canary_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    return CANARY


@pytest.fixture
def run_lits(tmp_path: Path) -> RunLits:
    """``python -m lits ARGS`` in ``tmp_path`` with the canary as the API key."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "OPENAI_API_KEY": CANARY}
        return subprocess.run(
            [sys.executable, "-m", "lits", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
        )

    return run


def _everything_under(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_redact_text_hides_the_environment_keys(canary_env):
    assert redact_text(f"Incorrect API key provided: {CANARY}.") == "Incorrect API key provided: ***."


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"])
def test_redact_text_hides_the_hosted_sdks_keys(monkeypatch, variable):
    monkeypatch.setenv(variable, CANARY)
    assert redact_text(f"signature computed with {CANARY}") == "signature computed with ***"


def test_redact_text_hides_url_credentials():
    assert (
        redact_text("cannot reach https://user:pa%40ss@example.com:8080/v1 now")
        == "cannot reach https://***@example.com:8080/v1 now"
    )


def test_redact_text_keeps_urls_without_credentials_and_placeholder_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    text = "model server http://127.0.0.1:8000/v1 answered 404: EMPTY model list; see me@example.com"
    assert redact_text(text) == text


def test_a_key_echoed_in_a_401_body_is_redacted_from_the_error(canary_env, quick_model, upstream):
    upstream.fail_next(401, message=f"Incorrect API key provided: {CANARY}")
    model = quick_model(upstream.base_url, api_key=None)
    with pytest.raises(ModelError) as info:
        model.complete("x")
    assert upstream.headers[0]["Authorization"] == f"Bearer {CANARY}"  # it was really sent
    assert CANARY not in str(info.value) and "Incorrect API key provided: ***" in str(info.value)


def test_a_key_passed_as_an_argument_is_redacted_too(upstream):
    upstream.fail_next(401, message="bad key sk-argument-key-0987654321")
    model = OpenAICompatibleModel("fake", upstream.base_url, api_key="sk-argument-key-0987654321")
    with pytest.raises(ModelError) as info:
        model.complete("x")
    assert "sk-argument-key" not in str(info.value)


@pytest.mark.parametrize("url", [f"http://user:{CANARY}@127.0.0.1:8000/v1", f"user:{CANARY}@127.0.0.1:8000/v1"])
def test_credentials_in_the_base_url_are_refused_without_echoing_them(url):
    with pytest.raises(ValueError, match="must not carry credentials") as info:
        OpenAICompatibleModel("m", url)
    assert CANARY not in str(info.value)


def test_a_key_echoed_by_the_server_reaches_neither_the_cli_nor_the_run_dir(run_lits, tmp_path):
    with FakeOpenAIServer() as server:
        server.fail_next(401, times=1000, message=f"Incorrect API key provided: {CANARY}")
        result = run_lits(
            "chain",
            "--dataset",
            "blocksworld",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--save-dir",
            "run",
        )
    assert result.returncode == 1, result.stderr
    assert "answered 401: Incorrect API key provided: ***" in result.stderr
    assert CANARY not in result.stdout + result.stderr
    assert CANARY not in _everything_under(tmp_path / "run")


def test_credentials_in_the_cli_base_url_give_one_line_and_are_written_nowhere(run_lits, tmp_path):
    result = run_lits(
        "chain",
        "--dataset",
        "blocksworld",
        "--limit",
        "1",
        "--model",
        "m",
        "--base-url",
        f"http://user:{CANARY}@127.0.0.1:9/v1",
        "--save-dir",
        "run",
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lits: error: --base-url must not carry credentials (user:password@host); "
        "put the key in $OPENAI_API_KEY or $LITS_API_KEY"
    ]
    assert CANARY not in result.stdout + _everything_under(tmp_path)


QUERY_KEY = "gw-query-key-5f2e9a1c77"


@pytest.mark.parametrize(
    "url, shown",
    [
        (f"https://gw.example/v1?api-version=2024-06-01&api-key={QUERY_KEY}", "https://gw.example/v1?***"),
        (f"https://gw.example/v1?key={QUERY_KEY}", "https://gw.example/v1?***"),
        (f"https://gw.example/v1?access_token={QUERY_KEY}&x=1", "https://gw.example/v1?***"),
        (f"https://store.example/f?sig={QUERY_KEY}", "https://store.example/f?***"),
        (f"https://gw.example/v1?pass={QUERY_KEY}", "https://gw.example/v1?***"),
        (f"https://gw.example/v1?session={QUERY_KEY}#frag", "https://gw.example/v1?***"),
        (f"https://gw.example/v1?api%2Dkey={QUERY_KEY}", "https://gw.example/v1?***"),
    ],
)
def test_a_urls_query_string_is_never_shown_whatever_its_names(url, shown):
    assert redact_text(f"calling {url} failed") == f"calling {shown} failed"


def test_a_key_in_the_base_urls_query_reaches_the_server_and_nothing_written(run_lits, tmp_path):
    with FakeOpenAIServer(responder=lambda prompt, body: "pick up the red block") as server:
        result = run_lits(
            "chain",
            "--dataset",
            "blocksworld",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            f"{server.base_url}?api-key={QUERY_KEY}",
            "--save-dir",
            "run",
        )
        assert result.returncode == 0, result.stderr
        assert run_lits("view", "run").returncode == 0
    assert server.queries and set(server.queries) == {f"api-key={QUERY_KEY}"}
    assert (tmp_path / "run" / "report.html").exists()
    assert QUERY_KEY not in result.stdout + result.stderr + _everything_under(tmp_path / "run")
    assert f'"base_url": "{server.base_url}?***"' in (tmp_path / "run" / "config.json").read_text()


def test_resuming_a_run_whose_base_url_held_a_query_key_asks_for_the_url_again(run_lits, tmp_path):
    with FakeOpenAIServer(responder=lambda prompt, body: "pick up the red block") as server:
        first = run_lits(
            "chain",
            "--dataset",
            "blocksworld",
            "--limit",
            "2",
            "--model",
            "m",
            "--base-url",
            f"{server.base_url}?api-key={QUERY_KEY}",
            "--save-dir",
            "run",
        )
        assert first.returncode == 0, first.stderr
        again = run_lits("chain", "--resume", "--save-dir", "run")
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1
    assert "key in the URL's query string is never saved with the run, so give --base-url" in again.stderr
