"""No setting takes nan or an infinity, whichever door it comes in by (a flag, a config file, --set, a K=V arg,
a model arg, config.json on rerun or resume, the Python API): each is one line naming it, and no run starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lits
from lits.runs.spec import SpecError

from .conftest import one_line_error

RUN = ["--dataset", "blocksworld", "--dataset-arg", "steps=2", "--model", "scripted", "--limit", "1"]


@pytest.fixture
def finished_run(lits_cmd, tmp_path: Path) -> Path:
    done = lits_cmd("chain", *RUN, "--save-dir", "run")
    assert done.returncode == 0, done.stderr
    return tmp_path / "run"


@pytest.mark.parametrize(
    ("flag", "value", "line"),
    [
        ("--call-budget", "nan", "--call-budget must be a finite number, not nan"),
        ("--read-timeout", "inf", "--read-timeout must be a finite number, not inf"),
        ("--price-in", "nan", "--price-in must be a finite number, not nan"),
        ("--price-out", "1e999", "--price-out must be a finite number, not inf"),
    ],
)
def test_a_non_finite_flag_is_one_line_and_starts_no_run(lits_cmd, tmp_path, flag, value, line):
    done = lits_cmd("chain", *RUN, flag, value, "--save-dir", "run")
    assert one_line_error(done) == f"lits: error: {line}"
    assert not (tmp_path / "run" / "config.json").exists()


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        (
            "run.toml",
            'dataset = "blocksworld"\nmodel = "scripted"\ncall_budget = nan\n',
            "run.toml: call_budget must be a finite number, not nan (fix it in the file)",
        ),
        (
            "run.toml",
            'dataset = "blocksworld"\nmodel = "scripted"\n[search_args]\nruntime_limit = inf\n',
            "run.toml: search_args must hold finite numbers only (runtime_limit is inf) (fix it in the file)",
        ),
        (
            "run.yaml",
            "dataset: blocksworld\nmodel: scripted\nprice_in: .nan\n",
            "run.yaml: price_in must be a finite number, not nan (fix it in the file)",
        ),
    ],
)
def test_a_non_finite_number_in_a_config_file_is_one_line(lits_cmd, tmp_path, name, text, line):
    if name.endswith(".yaml"):
        pytest.importorskip("yaml")
    (tmp_path / name).write_text(text)
    assert one_line_error(lits_cmd("search", "--config", name, "--save-dir", "run")) == f"lits: error: {line}"


@pytest.mark.parametrize(
    ("given", "line"),
    [
        (["--set", "call_budget=NaN"], "--call-budget must be a finite number, not nan"),
        (
            ["--set", "search_args.runtime_limit=Infinity"],
            "--search-arg must hold finite numbers only (runtime_limit is inf)",
        ),
        (
            ["--search-arg", "runtime_limit=-Infinity"],
            "--search-arg must hold finite numbers only (runtime_limit is -inf)",
        ),
        (["--dataset-arg", "steps=1e999"], "--dataset-arg must hold finite numbers only (steps is inf)"),
        (
            ["--policy-model-arg", "temperature=NaN"],
            "--policy-model-arg temperature must be a finite number of 0 or more, not nan",
        ),
        (
            ["--policy-model-arg", "max_tokens=1e999"],
            "--policy-model-arg max_tokens must be a finite whole number of 0 or more, not inf",
        ),
    ],
)
def test_a_non_finite_set_or_arg_is_one_line(lits_cmd, given, line):
    assert one_line_error(lits_cmd("search", *RUN, *given, "--save-dir", "run")) == f"lits: error: {line}"


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_non_finite_search_arg_written_as_a_word_is_one_line(lits_cmd, value):
    """``nan`` and ``inf`` reach the agent's settings as words, which pydantic would read as numbers."""
    line = one_line_error(lits_cmd("search", *RUN, "--search-arg", f"runtime_limit={value}", "--save-dir", "run"))
    assert "runtime_limit" in line and "finite number" in line


def test_resume_with_a_non_finite_flag_is_one_line(lits_cmd, finished_run):
    done = lits_cmd("chain", "--resume", "--save-dir", "run", "--call-budget", "nan")
    assert one_line_error(done) == "lits: error: --call-budget must be a finite number, not nan"


@pytest.mark.parametrize("command", [["chain", "--resume", "--save-dir", "run"], ["rerun", "run"]])
def test_a_non_finite_number_in_config_json_is_one_line_naming_the_file(lits_cmd, finished_run, command):
    config = json.loads((finished_run / "config.json").read_text())
    config["call_budget"] = float("nan")
    (finished_run / "config.json").write_text(json.dumps(config))  # NaN, as json.dumps writes it
    assert one_line_error(lits_cmd(*command)) == (
        f"lits: error: {Path('run') / 'config.json'} has call_budget = nan, and every number in a run's settings "
        "must be finite; fix it, or start a new run with another --save-dir"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("call_budget", float("nan")), ("price_out", float("-inf")), ("search_args", {"runtime_limit": float("inf")})],
)
def test_the_python_api_refuses_a_non_finite_setting(tmp_path, field, value):
    with pytest.raises(SpecError, match=r"must (be a finite number|hold finite numbers only)"):
        lits.search("blocksworld", model="scripted", limit=1, save_dir=tmp_path / "run", **{field: value})
    assert not (tmp_path / "run" / "config.json").exists()


def test_the_python_apis_resume_refuses_a_non_finite_change(finished_run):
    with pytest.raises(SpecError, match="call_budget must be a finite number, not inf"):
        lits.resume(finished_run, call_budget=float("inf"))


@pytest.mark.parametrize("flag", ["--call-budget", "--read-timeout"])
def test_a_huge_but_finite_time_limit_does_not_crash_a_run(lits_cmd, server_args, flag):
    done = lits_cmd("chain", *server_args, flag, "1e308", "--save-dir", "run")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
