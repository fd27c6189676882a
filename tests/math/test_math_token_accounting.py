"""GSM8K ToT-BFS against a server with a paged prefix cache: the run's cached prompt tokens are the server's."""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from lits.testing.prefix_cache import PagedPrefixCache
from lits.testing.servers.openai_compat import FakeOpenAIServer

from .test_math_runs import obedient_solver


@pytest.fixture
def vllm_like() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=obedient_solver, prefix_cache=PagedPrefixCache(block_size=16)) as srv:
        yield srv


def _tot_bfs(run_lits, server: FakeOpenAIServer, *extra: str) -> None:
    """GSM8K ToT-BFS (beam 2, 2 problems) against ``server``, saved under ``tot``; it must succeed."""
    done = run_lits(
        "search",
        "--search-framework",
        "tot_bfs",
        "--search-arg",
        "beam_width=2",
        *extra,
        "--dataset",
        "gsm8k",
        "--limit",
        "2",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--save-dir",
        "tot",
    )
    assert done.returncode == 0, done.stderr


def test_a_tot_bfs_runs_cached_prompt_tokens_equal_the_servers(run_lits, vllm_like, tmp_path):
    _tot_bfs(run_lits, vllm_like)
    inference = json.loads((tmp_path / "tot" / "eval_results.json").read_text())["inference"]
    assert inference["tokens_cached"] == vllm_like.usage_reported["cached_tokens"] > 0
    assert inference["tokens_in"] == vllm_like.usage_reported["prompt_tokens"]


def test_the_judge_reads_the_policys_head_from_the_cache(run_lits, vllm_like, tmp_path):
    # The judge asks after the policy's prompt for the same steps, so only its question is read anew (76.5 % of
    # the prompt tokens from the cache; 56.5 % when the judge had a system prompt of its own).
    _tot_bfs(run_lits, vllm_like)
    reported = vllm_like.usage_reported
    assert reported["cached_tokens"] / reported["prompt_tokens"] >= 0.75


def test_on_a_server_that_takes_n_each_expansion_is_one_policy_request(run_lits, vllm_like, tmp_path):
    _tot_bfs(run_lits, vllm_like, "--search-arg", "n_actions=2")
    expansions = json.loads((tmp_path / "tot" / "eval_results.json").read_text())["diversity"]["expansions"]
    policy = [body for body in vllm_like.requests if not body.get("logprobs")]
    assert len(policy) == expansions > 0 and {body.get("n") for body in policy} == {2}
