"""The viewer's data, built from real small runs of every domain (MCTS, BFS, RAP and chains)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.view.conftest import RUNS, journal_nodes

SEARCH_RUNS = [name for name, args in RUNS.items() if args[0] == "search"]
CHAIN_RUNS = [name for name, args in RUNS.items() if args[0] == "chain"]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_finished_instance_has_a_row_and_a_tree(
    name: str, runs: dict[str, Path], reports: dict[str, dict[str, Any]]
) -> None:
    report = reports[name]
    results = sorted(int(p.stem) for p in (runs[name] / "results").glob("*.json"))
    assert [r["idx"] for r in report["instances"]] == results
    assert all(r["status"] == "finished" and r["has_tree"] for r in report["instances"])
    assert sorted(report["trees"]) == sorted(str(i) for i in results)
    assert report["run"]["dataset"] == RUNS[name][RUNS[name].index("--dataset") + 1]


@pytest.mark.parametrize("name", SEARCH_RUNS)
def test_a_search_tree_holds_the_journal_nodes_and_the_selected_path(
    name: str, runs: dict[str, Path], reports: dict[str, dict[str, Any]]
) -> None:
    for idx, tree in reports[name]["trees"].items():
        flat = journal_nodes(runs[name], int(idx))
        assert [n["id"] for n in tree["nodes"]] == [n["id"] for n in flat]
        assert {n["id"]: n["parent"] for n in tree["nodes"]} == {n["id"]: n["parent"] for n in flat}
        path = [n["id"] for n in json.loads((runs[name] / "paths" / f"{idx}.json").read_text())]
        assert [n["id"] for n in tree["nodes"] if n["on_path"]] == sorted(path)
        terminal = {n["id"] for n in json.loads((runs[name] / "terminal_nodes" / f"{idx}.json").read_text())}
        assert terminal <= {n["id"] for n in tree["nodes"] if n["terminal"]}


def test_mcts_visits_and_q_agree_with_the_search_s_own_replay(
    runs: dict[str, Path], reports: dict[str, dict[str, Any]]
) -> None:
    from lits.agents.tree.journal import TreeJournal
    from lits.agents.tree.mcts import backpropagate
    from lits.structures.node import MCTSNode

    run = runs["blocksworld-mcts"]
    for idx, tree in reports["blocksworld-mcts"]["trees"].items():
        copy = run.parent / f"replay-{idx}.journal.jsonl"  # replay may repair a file: never the run's own
        shutil.copyfile(run / "checkpoints" / f"{idx}.journal.jsonl", copy)
        replayed = TreeJournal(copy).replay(lambda path: backpropagate(path, "mean"))  # type: ignore[arg-type]
        assert replayed is not None
        truth = {n.id: (n.visits, n.Q) for n in replayed[0].iter_tree() if isinstance(n, MCTSNode)}
        for node in tree["nodes"]:
            visits, q = truth[node["id"]]
            assert node["visits"] == visits
            assert node["q"] == (pytest.approx(q, abs=1e-4) if visits else None)
        assert tree["nodes"][0]["visits"] == len(tree["paths"]) == replayed[1]["iteration"]


def test_mcts_nodes_are_born_in_the_iteration_that_expanded_their_parent(reports: dict[str, dict[str, Any]]) -> None:
    tree = reports["blocksworld-mcts"]["trees"]["1"]
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert nodes[0]["born"] == 0
    first_path = set()
    node_id = tree["paths"][0]
    while node_id is not None:
        first_path.add(node_id)
        node_id = nodes[node_id]["parent"]
    born_first = {i for i, n in nodes.items() if n["born"] == 1}
    assert born_first == {i for i, n in nodes.items() if n["parent"] in first_path}


def test_bfs_nodes_carry_their_beam_score_and_no_visits(reports: dict[str, dict[str, Any]]) -> None:
    for tree in reports["blocksworld-bfs"]["trees"].values():
        assert tree["paths"] == []
        assert all("score" in n and n["visits"] is None for n in tree["nodes"])
        assert all(n["born"] == n["depth"] for n in tree["nodes"])


@pytest.mark.parametrize("name", CHAIN_RUNS)
def test_a_chain_is_drawn_as_one_path_of_its_steps(
    name: str, runs: dict[str, Path], reports: dict[str, dict[str, Any]]
) -> None:
    for idx, tree in reports[name]["trees"].items():
        steps = json.loads((runs[name] / "results" / f"{idx}.json").read_text())["final_state"]["steps"]
        assert tree["kind"] == "chain"
        assert [(n["id"], n["parent"]) for n in tree["nodes"]] == [
            (i, i - 1 if i else None) for i in range(len(steps) + 1)
        ]
        assert all(n["on_path"] for n in tree["nodes"])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_call_of_an_instance_is_listed_on_some_node(name: str, reports: dict[str, dict[str, Any]]) -> None:
    for idx, tree in reports[name]["trees"].items():
        listed = {i for calls in tree["node_calls"].values() for i in calls}
        assert listed == set(range(len(tree["calls"])))
        row = next(r for r in reports[name]["instances"] if str(r["idx"]) == idx)
        assert row["calls"] == sum(1 for c in tree["calls"] if not c[8])


def test_an_mcts_call_is_listed_on_exactly_one_node_on_its_iteration_s_path(reports: dict[str, dict[str, Any]]) -> None:
    tree = reports["blocksworld-mcts"]["trees"]["0"]
    owners: dict[int, list[int]] = {}
    for node_id, calls in tree["node_calls"].items():
        for call in calls:
            owners.setdefault(call, []).append(int(node_id))
    depth = {n["id"]: n["depth"] for n in tree["nodes"]}
    for call, nodes in owners.items():
        assert len(nodes) == 1
        assert depth[nodes[0]] == tree["calls"][call][4]  # the call's depth tag


@pytest.mark.parametrize("name", ["blocksworld-mcts", "mapeval-react"])
def test_cost_breakdowns_add_up_to_the_run_s_calls_and_tokens(
    name: str, runs: dict[str, Path], reports: dict[str, dict[str, Any]]
) -> None:
    report = reports[name]
    summary = json.loads((runs[name] / "eval_results.json").read_text())["inference"]
    assert report["run"]["inference"]["calls"] == summary["calls"]
    for key in ("by_component", "by_phase", "by_depth"):
        groups = report["costs"][key]
        assert sum(g["calls"] for g in groups) == summary["calls"]
        assert sum(g["tokens_in"] + g["tokens_out"] for g in groups) == summary["tokens_in"] + summary["tokens_out"]


def test_calls_in_flight_rise_and_fall_back_to_zero(reports: dict[str, dict[str, Any]]) -> None:
    curve = reports["blocksworld-mcts"]["costs"]["in_flight"]
    assert curve and all(n >= 0 for _, n in curve)
    assert max(n for _, n in curve) >= 1 and curve[-1][1] == 0
    assert [t for t, _ in curve] == sorted(t for t, _ in curve)


def test_a_running_instance_is_shown_from_its_journal_which_is_left_untouched(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    from lits.view.model import build_report

    run = tmp_path / "running"
    shutil.copytree(runs["blocksworld-mcts"], run)
    (run / "results" / "1.json").unlink()
    (run / "eval_results.json").unlink()
    journal = run / "checkpoints" / "1.journal.jsonl"
    with open(journal, "a", encoding="utf-8") as fh:
        fh.write('{"iteration": 9, "nodes": [{"id": 99')  # a line the search is writing right now
    before = journal.read_bytes()
    report = build_report(run)
    assert [r["status"] for r in report["instances"]] == ["finished", "running"]
    assert report["run"]["running"] == 1 and report["run"]["summary"] is None
    assert len(report["trees"]["1"]["nodes"]) == len(journal_nodes(runs["blocksworld-mcts"], 1))
    assert journal.read_bytes() == before


def test_without_its_journal_a_search_instance_shows_its_selected_path(runs: dict[str, Path], tmp_path: Path) -> None:
    from lits.view.model import build_report

    run = tmp_path / "no-journal"
    shutil.copytree(runs["blocksworld-mcts"], run)
    (run / "checkpoints" / "0.journal.jsonl").unlink()
    tree = build_report(run)["trees"]["0"]
    path = [n["id"] for n in json.loads((run / "paths" / "0.json").read_text())]
    assert tree["path_only"] and [n["id"] for n in tree["nodes"]] == path
    assert [n["parent"] for n in tree["nodes"]] == [None, *path[:-1]]


def test_a_run_that_has_only_just_started_has_a_page(runs: dict[str, Path], tmp_path: Path) -> None:
    from lits.view.html import write_report

    run = tmp_path / "starting"
    run.mkdir()
    shutil.copyfile(runs["blocksworld-mcts"] / "config.json", run / "config.json")
    page = write_report(run).read_text(encoding="utf-8")
    assert '"instances":[]' in page and '"summary":null' in page


def test_a_directory_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    from lits.view.model import NotARunError, build_report

    with pytest.raises(NotARunError, match="no readable config.json"):
        build_report(tmp_path)
