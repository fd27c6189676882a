"""Bad input gives one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import pytest


def _one_line_error(result) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("lits: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_unknown_dataset_lists_the_registered_ones(lits_cmd):
    line = _one_line_error(lits_cmd("search", "--dataset", "nope", "--model", "scripted"))
    assert "no dataset named 'nope'" in line and "blocksworld" in line


def test_unknown_search_algorithm_lists_the_registered_ones(lits_cmd):
    line = _one_line_error(lits_cmd("search", "--dataset", "blocksworld", "--search", "astar", "--model", "scripted"))
    assert "mcts" in line and "bfs" in line


def test_unknown_search_setting_is_named(lits_cmd):
    line = _one_line_error(
        lits_cmd("search", "--dataset", "blocksworld", "--model", "scripted", "--search-arg", "n_iteration=3")
    )
    assert "n_iteration" in line


def test_wrongly_typed_search_setting_is_named(lits_cmd):
    line = _one_line_error(
        lits_cmd("search", "--dataset", "blocksworld", "--model", "scripted", "--search-arg", "n_iterations=many")
    )
    assert "n_iterations" in line


@pytest.mark.parametrize("pair", ["novalue", "=3"])
def test_malformed_key_value_option_is_rejected(lits_cmd, pair):
    line = _one_line_error(lits_cmd("search", "--dataset", "blocksworld", "--search-arg", pair))
    assert "KEY=VALUE" in line


def test_resume_without_a_save_dir_is_rejected(lits_cmd):
    assert "--save-dir" in _one_line_error(lits_cmd("search", "--resume"))


def test_eval_of_a_folder_that_is_not_a_run_is_rejected(lits_cmd, tmp_path):
    (tmp_path / "empty").mkdir()
    assert "not a LiTS run directory" in _one_line_error(lits_cmd("eval", "--save-dir", "empty"))


def test_bad_dataset_argument_is_reported(lits_cmd):
    line = _one_line_error(
        lits_cmd("search", "--dataset", "blocksworld", "--model", "scripted", "--dataset-arg", "colour=red")
    )
    assert "colour" in line


def test_missing_dataset_path_is_reported(lits_cmd):
    line = _one_line_error(
        lits_cmd("search", "--dataset", "blocksworld", "--model", "scripted", "--dataset-arg", "path=/no/such/folder")
    )
    assert "/no/such/folder" in line


def test_negative_limit_is_rejected(lits_cmd):
    assert "--limit" in _one_line_error(lits_cmd("search", "--dataset", "blocksworld", "--limit", "0"))


def test_unreachable_server_fails_instances_with_a_clear_message(lits_cmd, tmp_path):
    result = lits_cmd(
        "chain",
        "--dataset",
        "blocksworld",
        "--limit",
        "1",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--save-dir",
        "run",
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "cannot reach model server http://127.0.0.1:9/v1" in result.stderr
    assert "Traceback" in (tmp_path / "run" / "execution.log").read_text()


def test_existing_save_dir_is_not_overwritten(lits_cmd, tmp_path):
    assert (
        lits_cmd(
            "chain", "--dataset", "blocksworld", "--limit", "1", "--model", "scripted", "--save-dir", "run"
        ).returncode
        == 0
    )
    line = _one_line_error(
        lits_cmd("chain", "--dataset", "blocksworld", "--limit", "1", "--model", "scripted", "--save-dir", "run")
    )
    assert "--resume" in line
