"""The Python API (lits.run / lits.search / lits.chain / lits.resume): the library under the CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lits
from lits.api import EnvAction, EnvStep, Policy


class SeededLegalMoves(Policy):  # type: ignore[type-arg]
    """A model-free policy: legal BlocksWorld moves in an order drawn from the instance and depth."""

    def _get_actions(
        self, state: Any, n_actions: int, temperature: float, query_idx: Any = None, **kwargs: Any
    ) -> list[Any]:
        from lits_blocksworld.world import generate_actions

        moves = generate_actions(state.env_state)
        random.Random(f"{query_idx}:{len(state)}").shuffle(moves)
        return [EnvStep(action=EnvAction(move)) for move in moves[:n_actions]]


def _files(root: Path, folder: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / folder).glob("*.json"))}


def test_a_search_from_python_writes_what_the_command_line_writes(tmp_path: Path) -> None:
    lits.search("blocksworld", model="scripted", limit=2, search_args={"n_iterations": 4}, save_dir=tmp_path / "api")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "search",
            "--dataset",
            "blocksworld",
            "--model",
            "scripted",
            "--limit",
            "2",
            "--search-arg",
            "n_iterations=4",
            "--save-dir",
            str(tmp_path / "cli"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for folder in ("results", "paths", "terminal_nodes"):
        assert _files(tmp_path / "api", folder) == _files(tmp_path / "cli", folder)


def test_a_policy_object_drives_mcts_on_blocksworld_and_is_recorded_by_class(tmp_path: Path) -> None:
    result = lits.search(
        "blocksworld",
        policy=SeededLegalMoves(n_actions=3),
        model="scripted",
        limit=3,
        search_args={"n_iterations": 20, "max_depth": 6},
        save_dir=tmp_path / "run",
    )
    assert [i.idx for i in result.instances] == [0, 1, 2]
    assert result.solved >= 1 and all(i.finished for i in result.instances)
    solved = next(i for i in result.instances if i.solved)
    tree = result.tree(solved.idx)
    assert tree is not None and tree["selected"][0] == 0 and len(tree["nodes"]) > 3
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["policy"] == f"object:{__name__}.SeededLegalMoves"


def test_an_unknown_field_is_one_spec_error_suggesting_the_closest() -> None:
    with pytest.raises(lits.SpecError) as caught:
        lits.search("blocksworld", model="scripted", limt=3)
    assert str(caught.value) == "limt is not a run setting (did you mean 'limit'?)"


def test_a_search_setting_on_a_chain_is_refused() -> None:
    with pytest.raises(lits.SpecError, match="^search_args is for search runs, and this is a chain run$"):
        lits.chain("blocksworld", model="scripted", search_args={"n_iterations": 3})


def test_a_policy_that_is_not_a_component_is_refused_when_the_spec_is_made() -> None:
    # policy=42 passed validation and failed at run time, after the run dir was made.
    with pytest.raises(lits.SpecError, match=r"^policy must be a registered policy name .* not 42$"):
        lits.RunSpec.make(dataset="blocksworld", model="scripted", policy=42)


def test_objects_cannot_go_to_ray_workers() -> None:
    with pytest.raises(lits.SpecError, match="cannot be sent to Ray workers"):
        lits.RunSpec.make(dataset="blocksworld", executor="ray", policy=SeededLegalMoves())


def test_resume_finishes_only_what_is_missing_and_refuses_a_meaning_change(tmp_path: Path) -> None:
    first = lits.search("blocksworld", model="scripted", limit=2, save_dir=tmp_path / "run")
    (tmp_path / "run" / "results" / "1.json").unlink()
    again = lits.resume(tmp_path / "run", concurrency=2)
    assert [i.solved for i in again.instances] == [i.solved for i in first.instances]
    with pytest.raises(lits.SpecError, match="^limit cannot change on resume"):
        lits.resume(tmp_path / "run", limit=5)


def test_resume_of_a_run_with_an_object_needs_the_object_again(tmp_path: Path) -> None:
    lits.search(
        "blocksworld",
        policy=SeededLegalMoves(n_actions=2),
        model="scripted",
        limit=1,
        search_args={"n_iterations": 3},
        save_dir=tmp_path / "run",
    )
    with pytest.raises(lits.SpecError, match="^policy was an object"):
        lits.resume(tmp_path / "run")
    assert lits.resume(tmp_path / "run", policy=SeededLegalMoves(n_actions=2)).instances[0].finished


def test_run_async_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    spec = lits.RunSpec(command="chain", dataset="blocksworld", model="scripted", limit=1, save_dir=tmp_path / "r")

    async def main() -> lits.RunResult:
        return await lits.run_async(spec)

    # A thread of its own: a session fixture (Playwright's sync API) may hold the worker thread's event loop.
    with ThreadPoolExecutor(1) as thread:
        assert thread.submit(asyncio.run, main()).result().instances[0].finished


def test_importing_lits_does_not_load_the_api_until_it_is_used() -> None:
    code = (
        "import sys, lits; before = 'lits.api' in sys.modules; lits.RunSpec; print(before, 'lits.api' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_the_result_shows_itself_as_a_table_in_jupyter(tmp_path: Path) -> None:
    result = lits.chain("blocksworld", model="scripted", limit=2, save_dir=tmp_path / "run")
    page = result._repr_html_()
    assert page.count("<tr>") == 3 and "chain blocksworld" in page


def test_runs_started_in_the_same_second_without_a_save_dir_get_their_own_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("lits.runs.spec.time.strftime", lambda fmt: "20261125-120000")
    first = lits.chain("blocksworld", model="scripted", limit=1)
    second = lits.chain("blocksworld", model="scripted", limit=1)
    assert (first.save_dir.name, second.save_dir.name) == (
        "blocksworld-chain-20261125-120000",
        "blocksworld-chain-20261125-120000-2",
    )


def test_a_new_runs_default_dir_is_claimed_when_chosen_so_a_run_started_meanwhile_gets_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two processes started in the same second both saw the name free before either had written to it.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("lits.runs.spec.time.strftime", lambda fmt: "20261126-120000")
    spec = lits.RunSpec(command="chain", dataset="blocksworld", model="scripted")
    chosen = [spec.default_save_dir(claim=True) for _ in range(2)]
    assert [p.name for p in chosen] == ["blocksworld-chain-20261126-120000", "blocksworld-chain-20261126-120000-2"]
    assert all(p.is_dir() for p in chosen)
