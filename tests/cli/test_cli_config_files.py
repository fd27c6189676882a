"""Config files, --set, --dry-run and `lits rerun`: one run described from a file, checked without a call,
repeated from its record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer

from .conftest import one_line_error, run_outputs

RUN_TOML = """\
dataset = "blocksworld"
model = "scripted"
limit = 2

[search_args]
n_iterations = 4
max_depth = 4
"""


@pytest.fixture
def run_toml(tmp_path: Path) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(RUN_TOML)
    return path


def test_a_config_file_describes_the_run_and_flags_and_set_override_it(lits_cmd, run_toml, tmp_path) -> None:
    done = lits_cmd(
        "search", "--config", str(run_toml), "--limit", "1", "--set", "search_args.max_depth=3", "--save-dir", "run"
    )
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (config["limit"], config["search_args"]["n_iterations"], config["search_args"]["max_depth"]) == (1, 4, 3)


def test_a_yaml_config_file_gives_the_same_run_as_toml(lits_cmd, run_toml, tmp_path) -> None:
    pytest.importorskip("yaml")
    (tmp_path / "run.yaml").write_text(
        "dataset: blocksworld\nmodel: scripted\nlimit: 2\nsearch_args: {n_iterations: 4, max_depth: 4}\n"
    )
    assert lits_cmd("search", "--config", "run.yaml", "--save-dir", "y").returncode == 0
    assert lits_cmd("search", "--config", str(run_toml), "--save-dir", "t").returncode == 0
    assert run_outputs(tmp_path / "y") == run_outputs(tmp_path / "t")


def test_dry_run_checks_everything_calls_no_model_and_writes_nothing(lits_cmd, tmp_path) -> None:
    with FakeOpenAIServer() as server:
        done = lits_cmd(
            "search",
            "--dataset",
            "blocksworld",
            "--model",
            "fake",
            "--base-url",
            server.base_url,
            "--limit",
            "3",
            "--search-arg",
            "n_iterations=2",
            "--save-dir",
            "planned",
            "--dry-run",
        )
        assert done.returncode == 0, done.stderr
        assert server.requests == []
    assert not (tmp_path / "planned").exists()
    resolved = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    assert resolved["dataset"] == "blocksworld" and resolved["search_args"]["n_iterations"] == 2
    assert "instances     3 (0, 1, 2)" in done.stdout
    assert "model calls   at most 180 (60 per instance)" in done.stdout


@pytest.mark.parametrize(
    "bad, expected",
    [
        (["--set", "limt=3"], "lits: error: --set limt is not a run setting (did you mean 'limit'?)"),
        (
            ["--search-arg", "n_iteration=3"],
            "lits: error: mcts: no --search-arg setting named 'n_iteration' (did you mean 'n_iterations'?)",
        ),
        (["--concurrency", "0"], "lits: error: --concurrency must be at least 1"),
        (["--search", "mtcs"], "lits: error: no search named 'mtcs' (did you mean 'mcts'?)"),
        (["--model", "missing.gguf"], "lits: error: model file missing.gguf not found"),
        (["--policy", "nope"], "lits: error: "),
        (["--set", "search_args=3", "--search-arg", "x=1"], "lits: error: "),
    ],
)
def test_dry_run_rejects_each_bad_option_in_one_line(lits_cmd, run_toml, bad, expected) -> None:
    done = lits_cmd("search", "--config", str(run_toml), "--dry-run", *bad)
    assert one_line_error(done).startswith(expected)


def test_a_broken_config_file_is_one_line(lits_cmd, tmp_path) -> None:
    (tmp_path / "bad.toml").write_text("dataset = \n")
    assert one_line_error(lits_cmd("search", "--config", "bad.toml")).startswith(
        "lits: error: bad.toml is not valid TOML:"
    )


def test_a_config_file_that_is_not_utf8_is_one_line_naming_it_and_the_fix(lits_cmd, tmp_path) -> None:
    (tmp_path / "latin.toml").write_bytes('dataset = "blocksworld"\n# réglage\n'.encode("latin-1"))
    line = one_line_error(lits_cmd("search", "--config", "latin.toml", "--dry-run"))
    assert line.startswith("lits: error: latin.toml is not UTF-8 text") and "save it as UTF-8" in line


@pytest.mark.parametrize(
    "table, expected",
    [
        (
            '[component_models.polcy]\nmodel = "judge"\n',
            "lits: error: bad.toml: component_models.polcy is not a component with its own model (did you mean 'policy'?)",
        ),
        (
            '[component_models.eval]\nmodle = "judge"\n',
            "lits: error: bad.toml: component_models.eval.modle is not a setting (did you mean 'model'?)",
        ),
    ],
)
def test_a_misspelled_component_models_key_is_one_line_naming_the_file_and_the_key(
    lits_cmd, tmp_path, table, expected
) -> None:
    # It said "component_models is not a run setting", and "component_models.polcy.[key] is not valid: ...".
    (tmp_path / "bad.toml").write_text(RUN_TOML + table)
    assert one_line_error(lits_cmd("search", "--config", "bad.toml", "--dry-run")).startswith(expected)


def test_a_misspelled_component_models_role_in_config_json_is_one_line_naming_it(lits_cmd, run_toml, tmp_path):
    assert lits_cmd("search", "--config", str(run_toml), "--save-dir", "first").returncode == 0
    config = json.loads((tmp_path / "first" / "config.json").read_text())
    config["component_models"] = {"polcy": {"model": "judge"}}
    (tmp_path / "first" / "config.json").write_text(json.dumps(config))
    line = one_line_error(lits_cmd("rerun", "first", "--dry-run"))
    assert line.startswith(f"lits: error: {Path('first') / 'config.json'}: component_models.polcy is not a component")
    assert "(did you mean 'policy'?)" in line


def test_rerun_repeats_a_run_byte_identically_from_its_config(lits_cmd, run_toml, tmp_path) -> None:
    assert lits_cmd("search", "--config", str(run_toml), "--save-dir", "first").returncode == 0
    again = lits_cmd("rerun", "first", "--save-dir", "second")
    assert again.returncode == 0, again.stderr
    assert run_outputs(tmp_path / "first") == run_outputs(tmp_path / "second") != {}


def test_rerun_of_a_chain_repeats_the_chain(lits_cmd, tmp_path) -> None:
    assert (
        lits_cmd(
            "chain", "--dataset", "blocksworld", "--model", "scripted", "--limit", "2", "--save-dir", "first"
        ).returncode
        == 0
    )
    assert lits_cmd("rerun", "first", "--save-dir", "second").returncode == 0
    assert run_outputs(tmp_path / "first") == run_outputs(tmp_path / "second") != {}


def test_rerun_of_a_folder_without_a_run_is_one_line(lits_cmd, tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    assert "config.json" in one_line_error(lits_cmd("rerun", "empty"))
