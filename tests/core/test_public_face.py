"""LiTS's public face from Python, as a newcomer meets it: ``import lits`` then ``lits.api.X``, ``lits.__all__``,
a spec from a file, one error type for a bad spec, quiet library runs, and a tree's rows with their action."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import lits
from lits.api import RunSpec, SpecError


def _python(code: str) -> list[str]:
    """What ``code`` prints in a fresh interpreter (where nothing has imported ``lits.api`` yet)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_lits_api_is_reachable_right_after_import_lits_and_loads_only_then() -> None:
    code = (
        "import sys, lits; before = 'lits.api' in sys.modules; spec = lits.api.RunSpec; "
        "print(before, 'lits.api' in sys.modules, spec is lits.RunSpec)"
    )
    assert _python(code) == ["False", "True", "True"]


def test_lits_all_lists_the_public_face_and_star_import_gives_it() -> None:
    assert {"run", "search", "chain", "resume", "plan", "RunSpec", "RunResult", "SpecError", "api"} <= set(lits.__all__)
    code = "from lits import *; print(RunSpec.__name__, callable(search), api.__name__)"
    assert _python(code) == ["RunSpec", "True", "lits.api"]


def test_a_bad_value_in_runspec_is_the_same_spec_error_lits_search_raises() -> None:
    with pytest.raises(SpecError) as made:
        RunSpec(dataset="blocksworld", concurrency=0)
    with pytest.raises(SpecError) as searched:
        lits.search("blocksworld", model="scripted", concurrency=0)
    assert str(made.value) == str(searched.value) == "concurrency must be at least 1"
    assert made.value.field == "concurrency"


def test_an_unknown_runspec_field_is_one_spec_error_line_naming_the_closest() -> None:
    with pytest.raises(SpecError, match=r"^limt is not a run setting \(did you mean 'limit'\?\)$"):
        RunSpec(dataset="blocksworld", limt=3)


def test_a_spec_file_loads_from_python_as_the_command_line_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('dataset = "blocksworld"\nlimit = 2\n[search_args]\nn_iterations = 5\n', encoding="utf-8")
    spec = RunSpec.from_file(path, model="scripted", search_args={"max_depth": 4})
    assert (spec.dataset, spec.limit, spec.model) == ("blocksworld", 2, "scripted")
    assert spec.search_args == {"n_iterations": 5, "max_depth": 4}


def test_a_bad_value_in_a_spec_file_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('dataset = "blocksworld"\nlimit = 0\n', encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        RunSpec.from_file(path)
    assert str(caught.value) == f"{path}: limit must be at least 1 (fix it in the file)"


def test_a_library_run_with_progress_off_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = lits.search(
        "blocksworld",
        model="scripted",
        limit=2,
        search_args={"n_iterations": 3},
        save_dir=tmp_path / "run",
        progress=False,
    )
    assert len(result.instances) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")


def test_a_resumed_library_run_with_progress_off_prints_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lits.chain("blocksworld", model="scripted", limit=1, save_dir=tmp_path / "run", progress=False)
    lits.resume(tmp_path / "run", progress=False)
    assert capsys.readouterr().err == ""


def test_progress_is_not_recorded_in_the_runs_config(tmp_path: Path) -> None:
    result = lits.chain("blocksworld", model="scripted", limit=1, save_dir=tmp_path / "run", progress=False)
    assert "progress" not in result.config


def test_each_row_of_a_result_tree_carries_its_action(tmp_path: Path) -> None:
    result = lits.search(
        "blocksworld",
        model="scripted",
        limit=1,
        search_args={"n_iterations": 3},
        save_dir=tmp_path / "run",
        progress=False,
    )
    tree = result.tree(0)
    assert tree is not None
    root, *children = tree["nodes"]
    assert root["action"] == ""
    assert children and all(row["action"] == row["detail"]["action"] != "" for row in children)


def test_the_command_line_prints_progress_unless_set_progress_false(run_lits) -> None:
    args = ("chain", "--dataset", "blocksworld", "--model", "scripted", "--limit", "1")
    loud = run_lits(*args, "--save-dir", "loud")
    quiet = run_lits(*args, "--save-dir", "quiet", "--set", "progress=false")
    assert loud.returncode == quiet.returncode == 0, loud.stderr + quiet.stderr
    assert "[1/1] solved" in loud.stderr and "lits: chain blocksworld" in loud.stderr
    assert quiet.stderr == ""
