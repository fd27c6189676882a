"""A run accounts for prompt tokens as its server does: cached tokens to the token, and per solved instance in the
summary, ``eval_results.json``, the instances' timings and ``lits compare``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest

from lits.lm.base import GenerationParams
from lits.testing.prefix_cache import PagedPrefixCache
from lits.testing.scripted import obedient_reply
from lits.testing.servers.openai_compat import FakeOpenAIServer

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def vllm_like() -> Iterator[FakeOpenAIServer]:
    """A server with a paged prefix cache that reports its hits as vLLM does."""
    with FakeOpenAIServer(
        responder=lambda prompt, body, i: obedient_reply(prompt, GenerationParams(), i),
        prefix_cache=PagedPrefixCache(block_size=16),
    ) as srv:
        yield srv


@pytest.fixture
def mcts_run(run_lits: Run, vllm_like: FakeOpenAIServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """BlocksWorld MCTS on two 2-step cases (no hedged copies: each request is one the run asked for)."""
    done = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2",
        "--limit",
        "2",
        "--search-arg",
        "n_iterations=6",
        "--model",
        "m",
        "--base-url",
        vllm_like.base_url,
        "--save-dir",
        "run",
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_runs_cached_prompt_tokens_equal_the_servers_to_the_token(mcts_run, vllm_like, tmp_path):
    summary = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    reported = vllm_like.usage_reported
    assert summary["inference"]["tokens_cached"] == reported["cached_tokens"] > 0
    assert summary["inference"]["tokens_in"] == reported["prompt_tokens"]
    assert summary["inference"]["requests"] == len(vllm_like.requests)
    spend = summary["spend"]
    assert spend["cached_prompt_tokens"] == reported["cached_tokens"]
    assert spend["evaluated_prompt_tokens"] == reported["prompt_tokens"] - reported["cached_tokens"]
    assert spend["cached_share"] == round(reported["cached_tokens"] / reported["prompt_tokens"], 4)


def test_each_instances_timing_holds_its_share_of_the_cached_tokens(mcts_run, vllm_like, tmp_path):
    timings = [json.loads(p.read_text()) for p in sorted((tmp_path / "run" / "timings").glob("*.json"))]
    assert len(timings) == 2
    assert sum(t["inference"]["tokens_cached"] for t in timings) == vllm_like.usage_reported["cached_tokens"]


def test_the_summary_shows_evaluated_prompt_tokens_and_model_seconds_per_solved_instance(mcts_run, tmp_path):
    summary = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    spend, solved = summary["spend"], summary["solved"]
    assert solved > 0
    assert spend["evaluated_prompt_tokens_per_solved"] == round(spend["evaluated_prompt_tokens"] / solved, 1)
    for text in (mcts_run.stdout, (tmp_path / "run" / "eval.log").read_text()):
        assert f"evaluated prompt tokens / solved  {spend['evaluated_prompt_tokens_per_solved']:.0f}" in text
        assert f"{spend['cached_prompt_tokens']} from the server's cache" in text
        assert "model seconds / solved" in text and "server requests" in text


def test_compare_reports_the_cached_share_and_the_per_solved_figures(mcts_run, run_lits, tmp_path):
    done = run_lits("compare", "run", "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    spend = json.loads((tmp_path / "run" / "eval_results.json").read_text())["spend"]
    assert row["cached_share"] == spend["cached_share"] and row["requests"] == spend["requests"]
    assert row["evaluated_prompt_tokens_per_solved"] == spend["evaluated_prompt_tokens_per_solved"]
    header, line = run_lits("compare", "run").stdout.splitlines()
    assert "cached prompt" in header and "eval. prompt / solved" in header and "model s / solved" in header
    assert f"{spend['cached_share']:.1%}" in line
