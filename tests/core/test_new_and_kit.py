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
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize(
    "kind, name, dist, tests",
    [
        ("domain", "x", "lits-plugin-x", "3 passed"),
        ("search", "y", "lits-search-y", "4 passed"),
    ],
)
def test_new_then_pip_install_editable_then_pytest_passes(child_venv, tmp_path, kind, name, dist, tests):
    """The user's three commands, literally: ``lits new KIND NAME && pip install -e NAME && pytest NAME``."""
    made = child_venv.run("-m", "lits", "new", kind, name, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f"next: pip install -e {name} && pytest {name}" in made.stdout
    installed = child_venv.run(
        "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation", "-e", name, cwd=tmp_path
    )
    assert installed.returncode == 0, installed.stderr
    listed = child_venv.run("-m", "lits", "plugins", "--json", cwd=tmp_path)
    assert f'"distribution": "{dist}"' in listed.stdout, listed.stdout + listed.stderr
    done = child_venv.run("-m", "pytest", name, "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert tests in done.stdout


def test_an_editable_install_sees_source_edits_without_reinstalling(child_venv, tmp_path):
    assert child_venv.run("-m", "lits", "new", "domain", "x", cwd=tmp_path).returncode == 0
    assert (
        child_venv.run(
            "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation", "-e", "x", cwd=tmp_path
        ).returncode
        == 0
    )
    (tmp_path / "x" / "lits_x" / "__init__.py").write_text("raise RuntimeError('edited in place')\n")
    listed = child_venv.run("-m", "lits", "plugins", cwd=tmp_path)
    assert "edited in place" in listed.stdout + listed.stderr


def _pytest_in(project: Path, site_dir: Path) -> subprocess.CompletedProcess[str]:
    """The generated project's own test suite, in a fresh pytest that sees the installed distribution."""
    env = {**os.environ, "PYTHONPATH": str(site_dir)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_new_distribution_installs_as_a_wheel_too(run_lits, install_path, site_dir, tmp_path):
    assert run_lits("new", "domain", "x").returncode == 0
    install_path(tmp_path / "x")
    done = _pytest_in(tmp_path / "x", site_dir)
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout + done.stderr


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
