"""The docs' example plugins install as real distributions and work from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.conftest import plugins_json

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.fixture
def switches(install_path) -> None:
    install_path(EXAMPLES / "lits-plugin-switches")


@pytest.fixture
def best_first(install_path) -> None:
    install_path(EXAMPLES / "lits-search-bestfirst")


@pytest.mark.usefixtures("switches")
def test_domain_example_is_listed_with_its_registrations(run_lits):
    info = plugins_json(run_lits("plugins", "--json"))["lits-plugin-switches"]
    assert info["registered"]["transition"] == ["switches"] and info["registered"]["dataset"] == ["switches"]


@pytest.mark.usefixtures("switches")
@pytest.mark.parametrize("command", [["search"], ["search", "--search", "bfs"], ["chain"]])
def test_domain_example_runs_under_every_agent_with_the_generic_components(run_lits, site_dir, command):
    result = run_lits(*command, "--dataset", "switches", "--model", "scripted", "--limit", "2",
                      "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    summary = json.loads((site_dir.parent / "run" / "eval_results.json").read_text())
    assert summary["instances"] == 2


@pytest.mark.usefixtures("best_first")
def test_third_party_search_is_usable_from_the_cli_without_core_changes(run_lits, site_dir):
    result = run_lits("search", "--dataset", "blocksworld", "--search", "best_first", "--model", "scripted",
                      "--limit", "1", "--search-arg", "n_expansions=6", "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    config = json.loads((site_dir.parent / "run" / "config.json").read_text())
    assert config["search_args"]["n_expansions"] == 6
    assert list((site_dir.parent / "run" / "checkpoints").iterdir())


@pytest.mark.usefixtures("best_first")
def test_third_party_search_settings_are_validated(run_lits):
    result = run_lits("search", "--dataset", "blocksworld", "--search", "best_first", "--model", "scripted",
                      "--search-arg", "n_expansions=0")
    assert result.returncode == 2 and "n_expansions" in result.stderr and "Traceback" not in result.stderr
