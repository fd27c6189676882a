"""The embedded Gemma 3 270M model on llama.cpp, and the real llama.cpp server."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

from lits.lm.local import LocalLlamaModel, flatten_messages, model_path
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing.llama_server import llama_server

pytestmark = pytest.mark.slow

PLAN_PROMPT = (
    "### Problem\nStart: the red block is clear, the blue block is clear, the hand is empty, the red block is "
    "on the table and the blue block is on the table\nGoal: the red block is on top of the blue block\n"
    "### Plan\npick up the red block\nstack the red block on top of the blue block\n### End\n\n"
    "### Problem\nStart: the yellow block is clear, the orange block is clear, the hand is empty, the yellow "
    "block is on the table and the orange block is on the table\nGoal: the yellow block is on top of the orange "
    "block\n### Plan\n"
)


@pytest.fixture(scope="module")
def local() -> Iterator[LocalLlamaModel]:
    model = LocalLlamaModel()
    yield model
    model.close()


def test_the_model_file_is_assembled_into_the_cache_once():
    first = model_path()
    mtime = first.stat().st_mtime_ns
    assert first.stat().st_size == 253_113_024
    assert model_path().stat().st_mtime_ns == mtime


def test_greedy_generation_is_deterministic(local):
    a = local.complete("The capital of France is", max_tokens=8, temperature=0.0)
    b = local.complete("The capital of France is", max_tokens=8, temperature=0.0)
    assert a == b and a.tokens_out > 0


def test_n_samples_are_generated_by_looping(local):
    outs = local.generate("Once upon a time", n=2, temperature=0.9, max_tokens=6)
    assert len(outs) == 2 and outs[0] != outs[1]


def test_a_reply_held_to_listed_lines_is_one_of_them(local):
    allowed = ["the red block", "a quiet morning by the sea"]
    outs = local.generate("My favourite colour is", n=2, temperature=1.0, max_tokens=12, reply_lines=[allowed])
    assert {o.text for o in outs} <= set(allowed)


def test_loglikelihood_ranks_the_right_blocksworld_action_first(local):
    candidates = ["pick up the yellow block\n", "pick up the orange block\n", "put down the yellow block\n"]
    scores = local.loglikelihood(PLAN_PROMPT, candidates)
    assert scores[0] == max(scores)


def test_loglikelihood_prefers_natural_text_over_garbage(local):
    good, bad = local.loglikelihood("The cat sat on the", [" mat.", " qzx vbn"])
    assert good > bad


def test_loglikelihood_is_the_same_whatever_was_evaluated_before(local):
    first = local.loglikelihood(PLAN_PROMPT, ["pick up the yellow block\n"])
    local._scores.clear()
    local.complete("Something unrelated", max_tokens=4)
    assert local.loglikelihood(PLAN_PROMPT, ["pick up the yellow block\n"]) == pytest.approx(first, abs=1e-3)


def test_concurrent_calls_from_many_threads_are_safe(local):
    results: list[object] = []

    def work(i: int) -> None:
        local._scores.clear()
        results.append(local.loglikelihood(f"Number {i} is", [" even", " odd"]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4


def test_chat_messages_are_flattened_for_the_base_model():
    assert flatten_messages([{"role": "system", "content": "A"}, {"role": "user", "content": "B"}]) == "A\n\nB\n"


@pytest.fixture(scope="module")
def scoring_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server with ``--logits_all``, needed for echo scoring (slow: ~7x per prompt)."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(model_path(), n_ctx=2048, extra=["--logits_all", "true"], log=log) as base:
        yield base


def test_real_llama_cpp_server_completes_through_the_http_backend(gemma_server):
    model = OpenAICompatibleModel("gemma", gemma_server, api="completion")
    reply = model.complete("The capital of France is", max_tokens=6, temperature=0.0)
    assert reply.text.strip() and reply.tokens_out > 0


def test_real_llama_cpp_server_scores_text_with_echo(scoring_server):
    model = OpenAICompatibleModel("gemma", scoring_server, api="completion")
    good, bad = model.loglikelihood("The cat sat on the", [" mat.", " qzx vbn"])
    assert good > bad


def test_blocksworld_search_runs_through_the_real_llama_cpp_server(gemma_server, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "search",
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=2",
            "--limit",
            "1",
            "--model",
            "gemma",
            "--base-url",
            gemma_server,
            "--api",
            "chat",
            "--search-arg",
            "n_iterations=1",  # one expansion, judgement and rollout go through the server: all it checks
            "--search-arg",
            "n_actions=2",
            "--search-arg",
            "max_depth=2",
            "--save-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert (Path(tmp_path) / "run" / "results" / "0.json").exists()


def test_loading_the_embedded_model_prints_nothing():
    done = subprocess.run(
        [sys.executable, "-c", "from lits.lm.local import LocalLlamaModel; LocalLlamaModel()"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stderr


def test_a_repeated_prompt_reports_the_prefix_its_context_already_held(local):
    """Like a server's prompt cache: all but the last prompt token are re-used, and said to be."""
    from lits.runtime.observability import InferenceLog, collecting

    with collecting(InferenceLog()) as log:
        local.complete(PLAN_PROMPT, max_tokens=4)
        local.complete(PLAN_PROMPT, max_tokens=4)
        local.loglikelihood(PLAN_PROMPT, ["pick up the yellow block"])
        local.loglikelihood(PLAN_PROMPT + "unstack", ["the yellow block"])
    repeated, scored, rescored = log.records[1], log.records[2], log.records[3]
    assert repeated.tokens_cached == repeated.tokens_in - 1
    assert scored.tokens_cached and rescored.tokens_cached  # the shared prompt, read once
    assert scored.tokens_in > scored.tokens_cached
