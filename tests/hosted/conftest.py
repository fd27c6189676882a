"""Fixtures: a loopback server speaking both hosted APIs, dummy vendor credentials, and models built on them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.hosted.fake_hosted import FakeHostedServer

ANTHROPIC_KEY = "sk-ant-test-NEVER-WRITTEN-0123456789abcdef"
AWS_SECRET = "awsSecretNEVERwritten0123456789abcdefXYZ"
AWS_TOKEN = "awsSessionTokenNEVERwritten0123456789abcdef"
SECRETS = (ANTHROPIC_KEY, AWS_SECRET, AWS_TOKEN)
CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0"
#: Each vendor's ``--model`` spec for the paper's model.
SPECS = {"bedrock": f"bedrock/{CLAUDE}", "anthropic": "anthropic/claude-3-5-sonnet-20241022"}


def vendor_env(tmp: Path) -> dict[str, str]:
    """Dummy credentials from the vendors' usual variables; no AWS profile file of this machine is read."""
    return {
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "AWS_ACCESS_KEY_ID": "AKIDLOOPBACKTEST",
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "AWS_SESSION_TOKEN": AWS_TOKEN,
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "LITS_RETRY_BASE_WAIT": "0.01",
    }


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in vendor_env(tmp_path).items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def server() -> Iterator[FakeHostedServer]:
    with FakeHostedServer() as srv:
        yield srv


@pytest.fixture(params=["bedrock", "anthropic"])
def vendor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_model(credentials: None, server: FakeHostedServer, vendor: str) -> Callable[..., Any]:
    """``make_model(**options)``: the vendor's model of the paper, at the loopback server."""
    from lits_hosted import anthropic_model, bedrock_model

    made: list[Any] = []

    def make(**options: Any) -> Any:
        factory = bedrock_model if vendor == "bedrock" else anthropic_model
        options.setdefault("retry_base_wait", 0.01)
        model = factory(SPECS[vendor], base_url=server.base_url, **options)
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


@pytest.fixture
def lits_hosted_cmd(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``python -m lits ARGS`` with the vendors' dummy credentials in the environment."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full = {k: v for k, v in os.environ.items() if k != "AWS_PROFILE"}
        full.update(vendor_env(tmp_path), LITS_CACHE_DIR=str(tmp_path / "cache"), **(env or {}))
        return subprocess.run(
            [sys.executable, "-m", "lits", *args], capture_output=True, text=True, env=full, cwd=tmp_path, timeout=600
        )

    return run


def run_files_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="ignore") for p in root.rglob("*") if p.is_file())
