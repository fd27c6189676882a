"""docs/training-data.md's commands run as written and print what the page shows.

The page's ``bash`` blocks are read as they stand: each ``lits`` command (continuation lines joined) with the
output shown under it (its ``#  `` lines).  The runs the examples name are made as the export and verifier
tests make them; the self-training loop runs against a loopback server in place of its vLLM one (the
training step needs TRL and a GPU, ``vllm serve`` a GPU: those two are left out).
"""

from __future__ import annotations

import shlex

import pytest

from lits.cli.main import main
from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests import doc_commands
from tests.core.test_export import search_blocksworld_mcts, search_gsm8k_tot, two_minded_solver
from tests.core.test_verifier import proposed_first, run_tot

#: The server the page's loop searches with.
PAGE_SERVER = "http://127.0.0.1:8000/v1"


def page_commands(section: str | None) -> list[tuple[str, list[str]]]:
    return doc_commands.page_commands("training-data.md", section)


def run_page_command(command: str, capsys: pytest.CaptureFixture[str], base_url: str = "") -> list[str]:
    """Run one of the page's commands (its server swapped for ``base_url``); its output lines."""
    argv = shlex.split(command.replace(PAGE_SERVER, base_url) if base_url else command)
    assert argv[0] == "lits"
    capsys.readouterr()
    assert main(argv[1:]) == 0, capsys.readouterr().err
    return [line.strip() for line in capsys.readouterr().out.splitlines()]


def test_the_export_example_prints_the_rows_the_page_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    search_gsm8k_tot(tmp_path / "runs" / "gsm8k-tot")
    search_blocksworld_mcts(tmp_path / "runs" / "bw-mcts")
    [(command, shown)] = [step for step in page_commands(None) if " export " in step[0]]
    assert run_page_command(command, capsys) == shown


def test_the_verifier_example_prints_what_the_page_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run_tot(tmp_path / "runs" / "gsm8k-tot", proposed_first)  # the page's biased judge
    [(command, shown)] = page_commands("The verifier's report card")
    out = run_page_command(command, capsys)
    lines = [line for line in shown if not line.startswith("...")]
    report = out[out.index(lines[0]) :]
    assert report[: len(lines)] == lines


def test_the_self_training_loop_searches_exports_searches_again_and_compares(tmp_path, monkeypatch, capsys):
    from lits_math.data import load_gsm8k

    monkeypatch.chdir(tmp_path)
    steps = [command for command, _ in page_commands("A self-training loop")]
    assert [shlex.split(c)[1] for c in steps] == ["search", "export", "search", "compare"]
    with FakeOpenAIServer(responder=two_minded_solver({e["query"]: e["answer"] for e in load_gsm8k()})) as server:
        outputs = [run_page_command(command, capsys, server.base_url) for command in steps]
    assert {"policy-0", "policy-1"} <= {body["model"] for body in server.requests}
    data = tmp_path / "data" / "round-0"
    for kind in ("sft", "preference", "process"):
        assert (data / f"{kind}.jsonl").is_file() and (data / f"{kind}.holdout.jsonl").is_file()
    table = outputs[-1]
    assert any("policy-0" in row for row in table) and any("policy-1" in row for row in table)
