"""``lits curve``: the answer a search would have returned had it stopped after B iterations, from one run's
journals, equals a separate run stopped there (same seed), instance by instance."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lits
from lits.api import EnvAction, EnvStep, Policy
from lits.components.policy.concat import ConcatPolicy
from lits.structures import ThoughtStep
from lits.testing import ScriptedModel
from lits.runs.sweeps.curve import curves, run_curve

POINTS = (10, 20, 50)
INSTANCES = 6
#: MCTS that keeps searching after a solution, sampled rollouts from a fixed seed.
SEARCH = {"early_stop": False, "seed": 7, "simulate": "sample", "max_depth": 6, "w_exp": 1.0}


class SeededLegalMoves(Policy):  # type: ignore[type-arg]
    """A model-free policy: three legal BlocksWorld moves in an order drawn from the instance and depth."""

    def _get_actions(
        self, state: Any, n_actions: int, temperature: float, query_idx: Any = None, **kwargs: Any
    ) -> list[Any]:
        from lits_blocksworld.world import generate_actions

        moves = generate_actions(state.env_state)
        random.Random(f"{query_idx}:{len(state)}").shuffle(moves)
        return [EnvStep(action=EnvAction(move)) for move in moves[:n_actions]]


class GuessingThoughts(ConcatPolicy):
    """A model-free language policy: a thought, then stated answers (4 is right) drawn from the path so far."""

    def _get_actions(
        self, state: Any, n_actions: int, temperature: float, query_idx: Any = None, **kwargs: Any
    ) -> list[Any]:
        rng = random.Random(f"{query_idx}:{len(state)}:{state[-1].action if len(state) else ''}")
        if not len(state):
            return [ThoughtStep(action=f"Consider part {rng.randint(1, 9)}") for _ in range(n_actions)]
        return [ThoughtStep(action=f"The answer is {rng.choice([4, 5, 6])}.") for _ in range(n_actions)]


def _mcts(save_dir: Path, iterations: int) -> Path:
    lits.search(
        "blocksworld",
        policy=SeededLegalMoves(n_actions=3),
        model="scripted",
        limit=INSTANCES,
        search_args={**SEARCH, "n_iterations": iterations},
        save_dir=save_dir,
    )
    return save_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """One 50-iteration run and separate runs at 10 and 20 iterations (the 50 one is the third)."""
    root = tmp_path_factory.mktemp("curve-runs")
    return {n: _mcts(root / f"mcts-{n}", n) for n in POINTS}


def _outcomes(run: Path, dataset: str = "blocksworld") -> dict[object, tuple[bool, object, list[str]]]:
    """Each instance's (solved, answer, plan) as the run judged it."""
    out = {}
    for path in sorted((run / "results").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        out[(dataset, str(record["id"]))] = (
            record["eval"]["solved"],
            record["eval"].get("answer"),
            record["eval"]["plan"],
        )
    return out


def test_the_curve_of_one_50_iteration_run_equals_separate_runs_at_10_20_and_50(runs: dict[int, Path]) -> None:
    curve = run_curve(runs[50], "iterations", POINTS)
    for k, n in enumerate(POINTS):
        separate = _outcomes(runs[n])
        assert curve.solved[k] == {key: solved for key, (solved, _, _) in separate.items()}, f"at {n}"
        assert curve.answers[k] == {key: answer for key, (_, answer, _) in separate.items()}, f"at {n}"
        assert set(curve.iterations[k].values()) == {n}
    # not a flat curve: some instance is solved at 50 that is not at 10 (else the test proves little)
    assert sum(curve.solved[2].values()) > sum(curve.solved[0].values())


def test_the_final_state_at_each_point_is_the_separate_runs_plan(runs: dict[int, Path]) -> None:
    from lits.runs.sweeps.curve import SearchRun, tree_at
    from lits.agents.tree.journal import TreeJournal

    run = SearchRun(runs[50])
    for n in (10, 20):
        separate = _outcomes(runs[n])
        for idx, record in run.results.items():
            agent = run.agent_class(run.agent_config, None, None, None)
            agent.root = tree_at(TreeJournal(runs[50] / "checkpoints" / f"{idx}.journal.jsonl"), agent, n)
            plan = [str(s.action) for s in agent.result().best_state]
            assert plan == separate[("blocksworld", str(record["id"]))][2], f"instance {idx} at {n}"


def test_a_bfs_curve_by_depth_equals_separate_runs_with_that_max_depth(tmp_path: Path) -> None:
    def bfs(depth: int) -> Path:
        lits.search(
            "blocksworld",
            policy=SeededLegalMoves(n_actions=3),
            model="scripted",
            limit=INSTANCES,
            search="bfs",
            search_args={"early_stop": False, "beam_width": 2, "max_depth": depth},
            save_dir=tmp_path / f"bfs-{depth}",
        )
        return tmp_path / f"bfs-{depth}"

    deep = bfs(6)
    curve = run_curve(deep, "iterations", [2, 4, 6])
    for k, depth in enumerate((2, 4, 6)):
        separate = _outcomes(bfs(depth) if depth < 6 else deep)
        assert curve.solved[k] == {key: solved for key, (solved, _, _) in separate.items()}, f"at depth {depth}"
    assert sum(curve.solved[2].values()) > sum(curve.solved[0].values())


def test_a_language_task_votes_over_the_terminal_nodes_a_separate_run_had(
    tmp_path: Path, isolated_registry: None
) -> None:
    from lits.registry import register_dataset

    @register_dataset("toy-guess", task_type="language_grounded")
    def load(**kwargs: Any) -> list[dict[str, object]]:
        return [{"query": f"What is {i}+{4 - i}?", "answer": "4", "id": f"q{i}"} for i in range(5)]

    def run(iterations: int) -> Path:
        policy = GuessingThoughts(base_model=ScriptedModel(), task_name="toy", n_actions=3)
        lits.search(
            "toy-guess",
            model="scripted",
            policy=policy,
            save_dir=tmp_path / f"guess-{iterations}",
            search_args={"n_iterations": iterations, "early_stop": False, "seed": 2, "max_depth": 3},
        )
        return tmp_path / f"guess-{iterations}"

    longest = run(12)
    curve = run_curve(longest, "iterations", [2, 4, 12])
    for k, n in enumerate((2, 4, 12)):
        separate = {
            key: answer for key, (_, answer, _) in _outcomes(run(n) if n < 12 else longest, "toy-guess").items()
        }
        assert curve.answers[k] == separate, f"at {n}"
    assert curve.answers[0] != curve.answers[2]  # more terminal nodes changed some vote


def test_tree_parallel_mcts_equals_separate_runs_at_multiples_of_its_batch(tmp_path: Path) -> None:
    def run(iterations: int) -> Path:
        save_dir = tmp_path / f"parallel-{iterations}"
        lits.search(
            "blocksworld",
            policy=SeededLegalMoves(n_actions=3),
            model="scripted",
            limit=INSTANCES,
            search_args={**SEARCH, "n_iterations": iterations, "parallel_iterations": 4},
            save_dir=save_dir,
        )
        return save_dir

    longest = run(16)
    curve = run_curve(longest, "iterations", [4, 8])
    for k, n in enumerate((4, 8)):
        assert curve.solved[k] == {key: solved for key, (solved, _, _) in _outcomes(run(n)).items()}, f"at {n}"
    assert curve.notes == ["parallel_iterations=4: a point equals a separate run only at multiples of 4"]


def test_with_early_stop_a_point_after_the_solution_is_the_runs_answer_as_a_separate_run_finds(tmp_path: Path) -> None:
    def early(iterations: int) -> Path:
        save_dir = tmp_path / f"early-{iterations}"
        lits.search(
            "blocksworld",
            policy=SeededLegalMoves(n_actions=3),
            model="scripted",
            limit=INSTANCES,
            search_args={**SEARCH, "early_stop": True, "n_iterations": iterations},
            save_dir=save_dir,
        )
        return save_dir

    longest = early(50)
    curve = run_curve(longest, "iterations", [2, 5, 50])
    for k, n in enumerate((2, 5, 50)):
        separate = _outcomes(early(n) if n < 50 else longest)
        assert curve.solved[k] == {key: solved for key, (solved, _, _) in separate.items()}, f"at {n}"
    assert len(curve.solved[2]) == INSTANCES  # stopped sooner on a solution: known at any larger budget


def test_a_point_beyond_the_runs_iterations_is_left_out(runs: dict[int, Path]) -> None:
    (curve,) = curves([runs[10]], "iterations", [10, 20])
    assert len(curve.solved[0]) == INSTANCES and curve.solved[1] == {}
    assert curve.rows()[1]["accuracy"] is None


def test_a_calls_budget_maps_each_instance_to_the_last_iteration_it_pays_for(runs: dict[int, Path]) -> None:
    curve = run_curve(runs[50], "calls", [0, 1e9])
    assert set(curve.iterations[0].values()) == {0}  # nothing affordable: the root alone
    assert set(curve.iterations[1].values()) == {50}  # everything: the run's own answer
    assert curve.solved[1] == {key: solved for key, (solved, _, _) in _outcomes(runs[50]).items()}


@pytest.mark.parametrize("budget", ["calls", "tokens"])
def test_what_the_curve_counts_by_iteration_b_is_what_a_separate_run_of_b_spent(
    runs: dict[int, Path], budget: str
) -> None:
    from lits.runs.sweeps.curve import SearchRun

    spent = SearchRun(runs[50]).spend_by_iteration(budget)
    for n in (10, 20):
        separate = SearchRun(runs[n]).spend_by_iteration(budget)
        assert {idx: s[n] for idx, s in spent.items()} == {idx: s[-1] for idx, s in separate.items()}, f"at {n}"


def test_a_model_seconds_budget_counts_the_seconds_each_call_took_not_its_wait(
    runs: dict[int, Path], tmp_path: Path
) -> None:
    from lits.runs.sweeps.curve import SearchRun

    copy = tmp_path / "run"
    shutil.copytree(runs[50], copy)
    log = copy / "inference.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("".join(json.dumps({**r, "seconds": 0.5, "queued_seconds": 3.0}) + "\n" for r in lines))
    calls = SearchRun(copy).spend_by_iteration("calls")
    assert SearchRun(copy).spend_by_iteration("seconds") == {i: [c * 0.5 for c in s] for i, s in calls.items()}
    by_seconds, by_calls = run_curve(copy, "seconds", [2.0, 5.0]), run_curve(copy, "calls", [4, 10])
    assert by_seconds.iterations == by_calls.iterations and by_seconds.solved == by_calls.solved


def test_two_runs_get_the_paired_interval_at_each_point(runs: dict[int, Path]) -> None:
    first, second = curves([runs[20], runs[50]], "iterations", [10, 20])
    rows = second.rows(first)
    assert [r["paired_with_first"]["shared"] for r in rows] == [INSTANCES, INSTANCES]  # type: ignore[index]
    assert rows[0]["paired_with_first"]["difference"] == 0.0  # type: ignore[index]  # the same search up to 20


def _lits(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lits", *args], check=False, capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_the_command_prints_accuracy_per_point_and_draws_the_png(runs: dict[int, Path], tmp_path: Path) -> None:
    import matplotlib.image

    out = tmp_path / "curve.png"
    done = _lits("curve", str(runs[10]), str(runs[50]), "--points", "5,10,20,50", "--plot", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[0] == "iterations" and [line.split()[0] for line in lines[1:5]] == ["5", "10", "20", "50"]
    assert lines[0].split()[1:] == ["[0]", "mcts", "(mcts-10)", "[1]", "mcts", "(mcts-50)"]
    assert "iterations 10: [1] − [0]: +0.0 pts" in done.stdout
    image = matplotlib.image.imread(out)
    assert image.shape[:2] == (550, 880)  # 8 x 5 inches at 110 dpi
    colours = {tuple(px) for px in image.reshape(-1, image.shape[2])[::97].tolist()}
    assert len(colours) > 2 and image[..., :3].min() < 0.5  # lines and text drawn on the white page
    pixels = {tuple(round(255 * v) for v in px[:3]) for px in image.reshape(-1, image.shape[2]).tolist()}
    assert {(31, 119, 180), (255, 127, 14)} <= pixels  # both runs' lines: matplotlib's first two colours


def test_a_chain_run_is_refused_in_one_line(tmp_path: Path) -> None:
    lits.chain("blocksworld", model="scripted", limit=1, save_dir=tmp_path / "chain")
    done = _lits("curve", str(tmp_path / "chain"), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"lits: error: {tmp_path / 'chain'} is a chain run; an anytime curve needs a search run (lits search)"
    )
