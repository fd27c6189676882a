"""Whole runs against the real instruct model: default settings cause no false faults; each component its model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


pytestmark = pytest.mark.realmodel


def lits(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "lits", *args, "--save-dir", "run"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )


def test_a_chain_at_default_concurrency_waits_for_the_one_slot_instead_of_faulting(
    instruct_server: str, tmp_path: Path
) -> None:
    done = lits(
        tmp_path,
        "chain",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2",
        "--limit",
        "2",
        "--chain-arg",
        "max_steps=1",  # a call per instance: the concurrency, the slots and the fault counts are what is checked
        "--model",
        "qwen",
        "--base-url",
        instruct_server,
    )
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["concurrency"] == 16 and config["model_info"]["server_slots"] == 1
    faults = json.loads((tmp_path / "run" / "eval_results.json").read_text())["faults"]
    assert faults["retries"] == 0 and faults["failed_calls"] == 0


def test_rest_with_a_separate_reward_model_sends_each_components_calls_to_its_server(
    instruct_server: str, upstream_server: str, tmp_path: Path
) -> None:
    """The reward model's server is the session's upstream llama-server (the same model, another server):
    no server is started for this test alone."""
    done = lits(
        tmp_path,
        "search",
        "--dataset",
        "gsm8k",
        "--limit",
        "1",
        "--search-framework",
        "rest",
        "--reward",
        "prm-logprob",
        "--search-arg",
        "n_iterations=1",
        "--search-arg",
        "n_actions=2",
        "--search-arg",
        "max_depth=2",
        "--model",
        "qwen-policy",
        "--base-url",
        instruct_server,
        "--eval-model",
        "qwen-prm",
        "--eval-base-url",
        upstream_server,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "inference.jsonl").read_text().splitlines()]
    by_component = {(r["context"].get("component"), r["model"]) for r in records if not r.get("cached")}
    assert ("policy", "qwen-policy") in by_component and ("reward", "qwen-prm") in by_component
    assert {model for component, model in by_component if component == "reward"} == {"qwen-prm"}
