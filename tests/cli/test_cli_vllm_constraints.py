"""A search against a current vLLM holds its replies with ``structured_outputs``, never the removed ``guided_*``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest

from lits.lm.base import GenerationParams
from lits.testing.scripted import listed_actions, obedient_reply
from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.commands import blocksworld_search

from .conftest import one_line_error

Run = Callable[..., subprocess.CompletedProcess[str]]


def chatty(prompt: str, body: dict, index: int) -> str:
    """A model that talks around the action it picks (unusable as a reply), and answers questions obediently."""
    listed = listed_actions(prompt)
    return f"I would {listed[0]}, I think." if listed else obedient_reply(prompt, GenerationParams(), index)


@pytest.fixture(params=[True, False], ids=["refusing", "ignoring"])
def vllm(request: pytest.FixtureRequest) -> Iterator[FakeOpenAIServer]:
    """vLLM 0.12, answering 400 to a ``guided_*`` field (refusing) or ignoring it, as vLLM itself does."""
    with FakeOpenAIServer(responder=chatty, vllm="0.12.0", refuse_unknown=request.param) as srv:
        yield srv


@pytest.fixture
def search(lits_cmd: Run, vllm: FakeOpenAIServer) -> Run:
    def go(*args: str) -> subprocess.CompletedProcess[str]:
        return lits_cmd(*blocksworld_search(), "--model", "m", "--base-url", vllm.base_url, *args)

    return go


def test_a_constrained_blocksworld_search_holds_every_choice_by_structured_outputs(
    search: Run, vllm: FakeOpenAIServer, tmp_path: Path
) -> None:
    done = search()
    assert done.returncode == 0, done.stderr
    held = [r["structured_outputs"] for r in vllm.requests if "structured_outputs" in r]
    assert any("choice" in h and any(c.startswith(("pick up", "unstack")) for c in h["choice"]) for h in held)
    assert any("regex" in h for h in held)  # the judge's numbered Yes/No lines
    assert not [f for r in vllm.requests for f in r if f.startswith("guided_") or f == "grammar"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model_info"]["constrained_replies"] == "structured_outputs (vLLM)"


def test_the_held_replies_need_no_re_ask(search: Run, tmp_path: Path) -> None:
    """The chatty model's replies, held to the listed actions, all parse (sent as ``guided_regex``, which vLLM
    0.12 ignores, 92 % of them did not, at 3.5 times the calls)."""
    assert search().returncode == 0
    parse = json.loads((tmp_path / "run" / "eval_results.json").read_text())["parse"]
    assert parse["replies"] and (parse["unparseable"], parse["reasks"], parse["fallbacks"]) == (0, 0, 0)


def test_an_unknown_constraints_setting_is_one_line(lits_cmd: Run) -> None:
    with FakeOpenAIServer() as srv:
        line = one_line_error(
            lits_cmd(
                "search",
                "--dataset",
                "blocksworld",
                "--limit",
                "1",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--policy-model-arg",
                "constraints=guided_regex",
            )
        )
        assert not srv.requests
    assert "--policy-model-arg constraints must be one of auto, gbnf, structured_outputs, guided, none" in line


def test_a_server_refusing_the_configured_field_stops_the_run_with_one_line_naming_it(lits_cmd: Run) -> None:
    with FakeOpenAIServer(responder=chatty, vllm="0.12.0", refuse_unknown=True) as srv:
        done = lits_cmd(
            "search",
            "--dataset",
            "blocksworld",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--policy-model-arg",
            "constraints=guided",
        )
    line = one_line_error(done, code=1)  # the instance failed (the breaker stopped the run)
    assert "the server refused `guided_choice`" in line and "constraints=structured_outputs" in line


def test_resume_may_change_the_constraints_setting(lits_cmd: Run, tmp_path: Path) -> None:
    """A server upgraded between the runs is asked the new way; the replies asked for are the same."""
    with FakeOpenAIServer(responder=chatty, vllm="0.11.0") as srv:  # knows both ways
        first = lits_cmd(
            *blocksworld_search(),
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--policy-model-arg",
            "constraints=guided",
        )
        assert first.returncode == 0, first.stderr
        for done in ("results", "checkpoints"):  # as if killed before the instance began
            for path in (tmp_path / "run" / done).glob("0.*"):
                path.unlink()
        sent = len(srv.requests)
        resumed = lits_cmd(
            "search",
            "--resume",
            "--save-dir",
            "run",
            "--no-cache",
            "--policy-model-arg",
            "constraints=structured_outputs",
        )
        assert resumed.returncode == 0, resumed.stderr
    assert any("guided_choice" in r for r in srv.requests[:sent])
    again = srv.requests[sent:]
    assert any("choice" in r.get("structured_outputs", {}) for r in again)
    assert not any("guided_choice" in r for r in again)
