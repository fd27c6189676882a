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


@pytest.fixture
def wrong_answers(install_path) -> None:
    install_path(EXAMPLES / "lits-memory-wrong-answers")


@pytest.mark.usefixtures("wrong_answers")
def test_third_party_augmentor_is_listed_and_its_notes_reach_the_next_attempt(run_lits, site_dir):
    info = plugins_json(run_lits("plugins", "--json"))["lits-memory-wrong-answers"]
    assert info["registered"]["augmentor"] == ["wrong_answers"]
    result = run_lits(
        "chain",
        "--dataset",
        "blocksworld",
        "--model",
        "scripted",
        "--limit",
        "2",
        "--attempts",
        "3",
        "--memory-arg",
        "augmentors=wrong_answers",
        "--memory-arg",
        "max_wrong=1",
        "--save-dir",
        "run",
        "--chain-arg",
        "avoid_repeats=false",
    )  # the scripted model's chain must fail for a 2nd try
    assert result.returncode == 0, result.stderr
    record = json.loads((site_dir.parent / "run" / "results" / "0.json").read_text())
    first, second = record["attempts"][:2]
    assert second["notes"] == (
        "Notes from earlier attempts:\n- This answer was judged wrong; do not give it again: " + first["answer"]
    )


@pytest.mark.usefixtures("switches")
def test_domain_example_is_listed_with_its_registrations(run_lits):
    info = plugins_json(run_lits("plugins", "--json"))["lits-plugin-switches"]
    assert info["registered"]["transition"] == ["switches"] and info["registered"]["dataset"] == ["switches"]


@pytest.mark.usefixtures("switches")
@pytest.mark.parametrize("command", [["search"], ["search", "--search", "bfs"], ["chain"]])
def test_domain_example_runs_under_every_agent_with_the_generic_components(run_lits, site_dir, command):
    result = run_lits(*command, "--dataset", "switches", "--model", "scripted", "--limit", "2", "--save-dir", "run")
    assert result.returncode == 0, result.stderr
    summary = json.loads((site_dir.parent / "run" / "eval_results.json").read_text())
    assert summary["instances"] == 2


@pytest.mark.usefixtures("best_first")
def test_third_party_search_is_usable_from_the_cli_without_core_changes(run_lits, site_dir):
    result = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--search",
        "best_first",
        "--model",
        "scripted",
        "--limit",
        "1",
        "--search-arg",
        "n_expansions=6",
        "--save-dir",
        "run",
    )
    assert result.returncode == 0, result.stderr
    config = json.loads((site_dir.parent / "run" / "config.json").read_text())
    assert config["search_args"]["n_expansions"] == 6
    assert list((site_dir.parent / "run" / "checkpoints").iterdir())


@pytest.mark.usefixtures("best_first")
def test_a_third_party_search_s_tree_shows_in_the_viewer_with_its_iterations(run_lits, site_dir):
    result = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--search",
        "best_first",
        "--model",
        "scripted",
        "--limit",
        "1",
        "--search-arg",
        "n_expansions=4",
        "--save-dir",
        "run",
    )
    assert result.returncode == 0, result.stderr
    from lits.view.model import build_report

    tree = build_report(site_dir.parent / "run")["trees"]["0"]
    assert tree["kind"] == "search" and len(tree["nodes"]) > 4
    born = {n["id"]: n["born"] for n in tree["nodes"]}
    parents = {n["id"]: n["parent"] for n in tree["nodes"]}
    assert tree["iterations"] >= 2
    assert born[0] == 0 and set(born.values()) == set(range(tree["iterations"] + 1))  # an expansion each
    assert all(born[i] > born[parents[i]] for i in born if parents[i] is not None)


@pytest.mark.usefixtures("best_first")
def test_the_inference_log_names_the_search_as_registered(run_lits, site_dir):
    result = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--search",
        "best_first",
        "--model",
        "scripted",
        "--limit",
        "1",
        "--search-arg",
        "n_expansions=2",
        "--save-dir",
        "run",
    )
    assert result.returncode == 0, result.stderr
    lines = (site_dir.parent / "run" / "inference.jsonl").read_text().splitlines()
    assert lines and {json.loads(line)["context"]["search"] for line in lines} == {"best_first"}


@pytest.mark.usefixtures("best_first")
def test_third_party_search_settings_are_validated(run_lits):
    result = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--search",
        "best_first",
        "--model",
        "scripted",
        "--search-arg",
        "n_expansions=0",
    )
    assert result.returncode == 2 and "n_expansions" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.usefixtures("switches")
def test_domain_example_passes_the_conformance_kit(run_python):
    result = run_python("""
        from lits.testing import check_dataset, check_env_domain
        print(check_dataset("switches"), check_env_domain("switches"), check_env_domain("switches", n=20, width=6))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["5", "5", "20"]


@pytest.mark.usefixtures("best_first")
def test_search_example_passes_the_conformance_kit(run_python):
    result = run_python("""
        from lits.testing import check_search
        for settings in ({}, {"n_expansions": 5}, {"n_actions": 3, "max_depth": 3}):
            print(check_search("best_first", settings).stopped)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["budget", "budget", "budget"]


@pytest.fixture
def self_refine(self_refine_example):
    return self_refine_example


def test_self_refine_written_as_in_the_structures_doc_runs_under_bfs(self_refine):
    from lits.testing import ScriptedModel
    from lits.type_registry import deserialize

    result = self_refine.solve(ScriptedModel(), "Add the first five odd numbers.")
    state = result.best_state
    assert result.solved and type(state) is self_refine.RefineState
    assert [s.iteration for s in state] == list(range(len(state))) and len(state) == 3
    assert state[1].feedback and state[1].refined and deserialize(state.to_dict()) == state


def test_self_refine_keeps_three_feedback_options_per_draft(self_refine):
    from lits.testing import ScriptedModel

    result = self_refine.solve(ScriptedModel(), "Add the first five odd numbers.")
    draft = result.root.children[0]
    assert len(draft.children) == 3 and len({c.step.feedback for c in draft.children}) == 3


def test_self_refine_example_runs_as_a_script(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "self_refine.py")], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "[Iteration 2]" in done.stdout and "solved=True" in done.stdout


@pytest.mark.usefixtures("best_first")
def test_a_third_party_search_gets_continuation_with_no_code_of_its_own(run_lits, site_dir):
    result = run_lits(
        "search",
        "--dataset",
        "blocksworld",
        "--search",
        "best_first",
        "--model",
        "scripted",
        "--limit",
        "1",
        "--search-arg",
        "n_expansions=4",
        "--search-arg",
        "add_continuation=true",
        "--search-arg",
        "bn_method=direct",
        "--save-dir",
        "run",
    )
    assert result.returncode == 0, result.stderr
    stats = json.loads((site_dir.parent / "run" / "results" / "0.json").read_text())["search_stats"]
    assert stats["bn_decisions"] == stats["bn_continued"] == stats["expansions"] >= 2
    assert stats["nodes"] == stats["expansions"] + 1  # one child per expansion: a chain
