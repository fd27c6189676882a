"""MCTS, BFS and chain end to end through the CLI, and evaluating a save dir."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.conftest import SECRET


def _files_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="ignore") for p in root.rglob("*") if p.is_file())


def test_plugins_lists_blocksworld_and_core_algorithms(lits_cmd):
    result = lits_cmd("plugins", "--json")
    infos = {p["distribution"]: p for p in json.loads(result.stdout)}
    assert infos["lits-plugin-blocksworld"]["registered"]["transition"] == ["blocksworld"]
    assert infos["lits-plugin-crosswords"]["registered"]["transition"] == ["crosswords"]
    core = infos["lits-core"]["registered"]
    assert {"mcts", "bfs"} <= set(core["search"]) and "env_chain" in core["chain"]


def test_mcts_search_runs_against_an_openai_compatible_server(lits_cmd, server_args, tmp_path):
    result = lits_cmd("search", *server_args, "--search", "mcts", "--search-arg", "n_iterations=3", "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "results").iterdir()) == ["0.json", "1.json"]
    assert any((run / "checkpoints").iterdir())
    assert (run / "paths" / "0.json").exists() and (run / "terminal_nodes" / "0.json").exists()
    summary = json.loads((run / "eval_results.json").read_text())
    assert summary["instances"] == 2 and summary["inference"]["calls"] > 0
    assert "solved" in result.stdout


def test_bfs_search_runs_against_an_openai_compatible_server(lits_cmd, server_args, tmp_path):
    result = lits_cmd("search", *server_args, "--search", "bfs", "--search-arg", "beam_width=2", "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "run" / "eval_results.json").read_text())["instances"] == 2


def test_chain_runs_against_an_openai_compatible_server(lits_cmd, server_args, tmp_path):
    result = lits_cmd("chain", *server_args, "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    assert record["mode"] == "chain" and record["eval"]["plan_length"] >= 1


def test_eval_re_evaluates_a_save_dir_without_other_options(lits_cmd, server_args, tmp_path):
    assert lits_cmd("chain", *server_args, "--save-dir", "run").returncode == 0
    (tmp_path / "run" / "eval_results.json").unlink()
    result = lits_cmd("eval", "--save-dir", "run", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["instances"] == 2
    assert (tmp_path / "run" / "eval_results.json").exists()


def test_config_json_and_every_artifact_hold_no_api_key(lits_cmd, server_args, tmp_path):
    assert lits_cmd("search", *server_args, "--search-arg", "n_iterations=2", "--save-dir", "run").returncode == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["dataset"] == "blocksworld" and config["search"] == "mcts"
    assert SECRET not in _files_text(tmp_path / "run")


def test_inference_log_tags_calls_with_component_instance_and_phase(lits_cmd, server_args, tmp_path):
    assert lits_cmd("search", *server_args, "--search-arg", "n_iterations=2", "--save-dir", "run").returncode == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "inference.jsonl").read_text().splitlines()]
    tags = {(r["context"].get("component"), r["context"].get("phase")) for r in records}
    assert ("policy", "expand") in tags
    assert {r["context"]["instance"] for r in records} == {0, 1}
    assert all(r["tokens_in"] >= 0 and r["seconds"] >= 0 for r in records)


def test_console_script_aliases_are_installed():
    bin_dir = Path(sys.executable).parent
    for name in ("lits", "lits-search", "lits-chain", "lits-eval"):
        assert (bin_dir / name).exists(), name


def test_results_do_not_depend_on_the_concurrency(lits_cmd, server_args, tmp_path):
    for level in ("1", "4"):
        args = [*server_args, "--search-arg", "n_iterations=3", "--concurrency", level, "--save-dir", f"run{level}"]
        assert lits_cmd("search", *args).returncode == 0
    for idx in ("0", "1"):
        one = json.loads((tmp_path / "run1" / "results" / f"{idx}.json").read_text())
        four = json.loads((tmp_path / "run4" / "results" / f"{idx}.json").read_text())
        assert one["final_state"] == four["final_state"] and one["eval"] == four["eval"]


def test_no_cache_leaves_no_cache_file(lits_cmd, server_args, tmp_path):
    assert lits_cmd("chain", *server_args, "--no-cache", "--save-dir", "run").returncode == 0
    assert not (tmp_path / "run" / "cache.sqlite").exists()


def test_log_prompts_records_each_calls_prompt_and_reply(lits_cmd, server_args, tmp_path):
    result = lits_cmd("chain", *server_args, "--limit", "1", "--log-prompts", "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in (tmp_path / "run" / "inference.jsonl").read_text().splitlines()]
    generated = [r for r in lines if r["kind"] == "generate"]
    assert generated and all(r["prompt"] and isinstance(r["reply"], list) for r in generated)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["log_prompts"] is True


def test_prompts_are_not_logged_by_default(lits_cmd, server_args, tmp_path):
    assert lits_cmd("chain", *server_args, "--limit", "1", "--save-dir", "run").returncode == 0
    lines = [json.loads(line) for line in (tmp_path / "run" / "inference.jsonl").read_text().splitlines()]
    assert lines and not any("prompt" in r or "reply" in r for r in lines)
