"""A run asks a server that constrains decoding for listed actions only, unless ``--free-replies`` says not to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

from lits.lm.base import GenerationParams
from lits.testing.scripted import obedient_reply
from lits.testing.servers.openai_compat import FakeOpenAIServer

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def llama_like() -> Iterator[FakeOpenAIServer]:
    """An obedient server that says at /props what llama.cpp's says (so it takes grammars)."""
    with FakeOpenAIServer(responder=lambda p, b, i: obedient_reply(p, GenerationParams(), i), slots=1) as srv:
        yield srv


@pytest.fixture
def run(tmp_path: Path, llama_like: FakeOpenAIServer) -> Run:
    def go(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "chain",
                "--dataset",
                "blocksworld",
                "--limit",
                "1",
                "--chain-arg",
                "max_steps=2",
                "--model",
                "m",
                "--base-url",
                llama_like.base_url,
                "--save-dir",
                "run",
                *args,
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )

    return go


def test_the_policy_asks_for_one_of_the_legal_actions_by_grammar(run: Run, llama_like: FakeOpenAIServer) -> None:
    assert run().returncode == 0
    grammars = [str(r["grammar"]) for r in llama_like.requests if "grammar" in r]
    assert grammars and all(g.startswith("root ::= line0") for g in grammars)
    assert "pick up the" in grammars[0] or "unstack the" in grammars[0]


def test_free_replies_sends_no_constraint_and_is_recorded(
    run: Run, llama_like: FakeOpenAIServer, tmp_path: Path
) -> None:
    assert run("--free-replies").returncode == 0
    assert llama_like.requests and not any("grammar" in r for r in llama_like.requests)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["free_replies"] is True and config["model_info"]["constrained_replies"] == "off (--free-replies)"


def test_resume_keeps_free_replies(run: Run, llama_like: FakeOpenAIServer, tmp_path: Path) -> None:
    assert run("--free-replies").returncode == 0
    for done in ("results", "checkpoints"):  # as if killed before the instance began
        for path in (tmp_path / "run" / done).glob("0.*"):
            path.unlink()
    sent = len(llama_like.requests)
    resumed = subprocess.run(
        [sys.executable, "-m", "lits", "chain", "--resume", "--save-dir", "run", "--no-cache"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(llama_like.requests) > sent and not any("grammar" in r for r in llama_like.requests[sent:])
