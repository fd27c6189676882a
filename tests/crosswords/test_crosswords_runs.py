"""Crosswords through the CLI: same agents, switched by the dataset name alone."""

from __future__ import annotations

import json

from lits.components.policy.env_grounded import EnvGroundedPolicy
from lits.testing import ScriptedModel
from lits_crosswords.transition import CrosswordsTransition


def test_duplicate_statistics_count_repeated_and_invalid_proposals():
    model = ScriptedModel(["h1. HEART", "h1. HEART", "h1. HEARTS", "v1. HEART"])
    policy = EnvGroundedPolicy(
        model, "crosswords", validate_action=CrosswordsTransition.validate_action, strategy="generate", max_attempts=3
    )
    steps = policy.get_actions(CrosswordsTransition().init_state(), n_actions=2, query="clues")
    assert [str(s.action) for s in steps] == ["h1. HEART", "v1. HEART"]
    stats = policy.stats.as_dict()
    assert stats["duplicates"] == 1 and stats["invalid"] == 1 and stats["escalations"] == 2
    assert stats["duplicate_rate"] == 0.25


def _words(prompt: str, body: dict) -> str:
    """A stubborn model that keeps proposing the same first-row word."""
    return "Yes" if "Answer Yes or No" in prompt else "h1. HEART"


def test_search_and_chain_run_on_crosswords_by_dataset_name(tmp_path):
    import subprocess
    import sys

    from lits.testing.servers.openai_compat import FakeOpenAIServer

    with FakeOpenAIServer(responder=_words) as srv:
        for command in (["search", "--search-arg", "n_iterations=3"], ["chain"]):
            run = tmp_path / command[0]
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "lits",
                    *command,
                    "--dataset",
                    "crosswords",
                    "--limit",
                    "2",
                    "--model",
                    "m",
                    "--base-url",
                    srv.base_url,
                    "--save-dir",
                    str(run),
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 0, result.stderr
            summary = json.loads((run / "eval_results.json").read_text())
            assert summary["instances"] == 2
            assert {"letter_acc", "word_acc", "game_acc", "duplicate_rate_incorrect"} <= set(summary["metrics"])
            assert summary["metrics"]["word_acc"] == 0.05  # h1 is right in puzzle 0 only: (0.1 + 0) / 2
    search = json.loads((tmp_path / "search" / "eval_results.json").read_text())
    assert search["policy_stats"]["duplicate_rate"] > 0
    assert search["diversity"]["unique_states"] >= 2
    # puzzle 1's answer is not HEART: every proposal there is wrong, and all repeats are duplicates
    second = json.loads((tmp_path / "search" / "results" / "1.json").read_text())["eval"]["metrics"]
    assert second["proposals_correct"] == 0.0 and second["duplicate_rate_incorrect"] > 0.5
