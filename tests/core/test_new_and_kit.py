"""``lits new`` writes distributions that really install and whose own tests (the conformance kit) pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _pytest_in(project: Path, site_dir: Path) -> subprocess.CompletedProcess[str]:
    """The generated project's own test suite, in a fresh pytest that sees the installed distribution."""
    env = {**os.environ, "PYTHONPATH": str(site_dir)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project,
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("kind, name, dist, tests", [
    ("domain", "x", "lits-plugin-x", "3 passed"),
    ("search", "y", "lits-search-y", "4 passed"),
])
def test_a_new_distribution_installs_and_its_own_tests_pass(run_lits, install_path, site_dir, tmp_path,
                                                            kind, name, dist, tests):
    made = run_lits("new", kind, name)
    assert made.returncode == 0, made.stderr
    assert f"wrote {dist} ({kind} '{name}')" in made.stdout
    project = tmp_path / name
    assert (project / "pyproject.toml").is_file() and list((project / "tests").glob("test_*.py"))

    install_path(project)
    listed = run_lits("plugins", "--json")
    assert f'"distribution": "{dist}"' in listed.stdout, listed.stdout + listed.stderr
    done = _pytest_in(project, site_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert tests in done.stdout


def test_a_new_domain_runs_from_the_cli(run_lits, install_path, site_dir):
    assert run_lits("new", "domain", "jugs", "--dir", "plugin").returncode == 0
    install_path(site_dir.parent / "plugin")
    result = run_lits("search", "--dataset", "jugs", "--model", "scripted", "--limit", "2", "--save-dir", "run")
    assert result.returncode == 0, result.stderr


def test_names_with_hyphens_make_valid_modules_and_classes(run_lits, tmp_path):
    assert run_lits("new", "domain", "water-jugs_2").returncode == 0
    source = (tmp_path / "water-jugs_2" / "lits_water_jugs_2" / "transition.py").read_text()
    assert "class WaterJugs2Transition(" in source and '@register_transition("water-jugs_2"' in source
    pyproject = (tmp_path / "water-jugs_2" / "pyproject.toml").read_text()
    assert 'lits-plugin-water-jugs_2 = "lits_water_jugs_2"' in pyproject


@pytest.mark.parametrize("name", ["My Domain", "9lives", "x--y", "dom.ain", "x-", "Upper"])
def test_a_name_that_cannot_make_a_plugin_is_one_line(run_lits, tmp_path, name):
    result = run_lits("new", "domain", name)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"lits: error: {name!r} is not a usable plugin name")
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # nothing written


def test_an_existing_non_empty_directory_is_refused(run_lits, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    result = run_lits("new", "search", "taken")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "taken already exists and is not an empty directory" in result.stderr
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]


def test_an_empty_directory_is_used(run_lits, tmp_path):
    (tmp_path / "empty").mkdir()
    assert run_lits("new", "search", "z", "--dir", "empty").returncode == 0
    assert (tmp_path / "empty" / "lits_search_z" / "__init__.py").is_file()
