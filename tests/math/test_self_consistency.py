"""Self-consistency as a chain method (`lits chain --chain sc`): k sampled chains, a majority vote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.lm.base import sampling_stream
from lits.testing.scripted import ScriptedModel
from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.data import load_gsm8k

QUESTION, GOLD = next((e["query"], e["answer"]) for e in load_gsm8k())
#: What each chain's seed makes the model answer: the gold answer wins three votes of five.
BY_SEED = {0: "1", 1: GOLD, 2: GOLD, 3: "1", 4: GOLD}


def seeded_solver(prompt: str, body: dict[str, Any]) -> str:
    """A model whose sample depends only on the request's seed (as a server that honours seeds)."""
    return f"The answer is {BY_SEED.get(body.get('seed'), 'unseeded')}."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=seeded_solver) as srv:
        yield srv


@pytest.fixture
def sc(tmp_path: Path, server: FakeOpenAIServer, run_lits) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(save_dir: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return run_lits(
            "chain",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--chain",
            "sc",
            "--chain-arg",
            "k=5",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--save-dir",
            save_dir,
            *extra,
        )

    return run


def test_the_majority_answer_of_the_chains_is_the_instance_s_answer(sc, tmp_path):
    done = sc("run")
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    vote = result["answer_selection"]
    assert vote["answer"] == GOLD and vote["share"] == 0.6
    assert sorted(c["count"] for c in vote["clusters"]) == [2, 3]
    assert result["eval"]["solved"] is True and result["eval"]["answer"] == GOLD
    assert result["final_state"]  # a chain that gave the winning answer


def test_each_chain_samples_with_its_own_seed(sc, server):
    assert sc("run").returncode == 0
    assert sorted(body.get("seed") for body in server.requests) == [0, 1, 2, 3, 4]


def test_a_second_run_replays_every_chain_from_the_cache(sc, server, tmp_path):
    assert sc("first").returncode == 0
    paid = len(server.requests)
    assert sc("second").returncode == 0
    assert len(server.requests) == paid
    first, second = (json.loads((tmp_path / d / "results" / "0.json").read_text()) for d in ("first", "second"))
    assert first["answer_selection"] == second["answer_selection"]


def test_the_inference_log_tags_each_call_with_its_chain(sc, tmp_path):
    assert sc("run").returncode == 0
    lines = (tmp_path / "run" / "inference.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["context"]["sample"] for line in lines) == [0, 1, 2, 3, 4]


def test_self_consistency_on_an_env_grounded_dataset_is_a_one_line_error(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "chain",
            "--dataset",
            "blocksworld",
            "--chain",
            "sc",
            "--model",
            "scripted",
            "--limit",
            "1",
            "--save-dir",
            "run",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "lits: error: --chain sc works on language_grounded and tool_use tasks, not on this env_grounded dataset"
    )


def test_a_sampling_stream_offsets_the_seed_of_every_call_inside():
    model = ScriptedModel()
    model.generate("q", seed=None)
    with sampling_stream(3):
        model.generate("q", seed=None)
        model.generate("q", seed=10)
    assert [params.seed for _, params in model.calls] == [None, 3, 13]


def greedy_right_samples_apart(prompt: str, body: dict[str, Any]) -> str:
    """Greedy (temperature 0), the gold answer; sampled, a different wrong answer per seed."""
    if float(body.get("temperature") or 0) == 0:
        return f"The answer is {GOLD}."
    return f"The answer is {1000 + int(body.get('seed') or 0)}."


def test_greedy_first_decodes_the_first_chain_greedily_and_a_vote_without_majority_goes_to_it(run_lits, tmp_path):
    with FakeOpenAIServer(responder=greedy_right_samples_apart) as srv:
        done = run_lits(
            "chain",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--chain",
            "sc",
            "--chain-arg",
            "k=3",
            "--chain-arg",
            "greedy_first=true",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--no-cache",
            "--save-dir",
            "run",
        )
        temperatures = [body["temperature"] for body in srv.requests]
    assert done.returncode == 0, done.stderr
    assert temperatures == [0.0, 0.7, 0.7]
    result = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    assert result["answer_selection"]["answer"] == GOLD and result["eval"]["solved"]
