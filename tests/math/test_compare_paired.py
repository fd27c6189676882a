"""`lits compare` on two runs of the same 20 GSM8K problems: the paired difference, its interval, McNemar."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.data import load_gsm8k

N = 20


def _solver(known: set[int], problems: list[dict[str, Any]]) -> Callable[[str, dict[str, Any]], str]:
    """A chat model that answers right the problems whose positions are in ``known``, and 0 otherwise."""

    def reply(prompt: str, body: dict[str, Any]) -> str:
        last = str(body["messages"][-1]["content"]) if body.get("messages") else prompt
        for i, problem in enumerate(problems):
            if problem["query"] in last:
                return f"The answer is {problem['answer'] if i in known else '-12345'}."
        return "The answer is 0."

    return reply


@pytest.fixture(scope="module")
def problems(shared_data: Path) -> list[dict[str, Any]]:
    return load_gsm8k(str(shared_data / "math"), limit=N)


@pytest.fixture
def two_runs(run_lits, tmp_path, shared_data, problems) -> tuple[Path, Path]:
    """Run A solves problems 0-9; run B solves 0-7 and 10-15 (2 only by A, 6 only by B)."""
    runs = []
    for name, known in (("a", set(range(10))), ("b", set(range(8)) | set(range(10, 16)))):
        with FakeOpenAIServer(responder=_solver(known, problems)) as srv:
            done = run_lits(
                "chain",
                "--dataset",
                "gsm8k",
                "--dataset-arg",
                f"path={shared_data / 'math'}",
                "--limit",
                str(N),
                "--chain-arg",
                "whole_solution=true",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--save-dir",
                name,
            )
        assert done.returncode == 0, done.stderr
        runs.append(tmp_path / name)
    return runs[0], runs[1]


def test_compare_prints_the_paired_difference_with_its_interval_and_mcnemars_p(run_lits, two_runs):
    shown = run_lits("compare", str(two_runs[0]), str(two_runs[1]))
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if "McNemar" in x)
    # 10/20 -> 14/20: +20 pts; discordant 2 and 6: p = 2 * (1 + 8 + 28) / 2**8 = 0.2890625
    assert re.search(r": \+20\.0 pts \[[+-]\d+\.\d, \+\d+\.\d\]", line), line
    assert "McNemar p = 0.289" in line and "only by cot (chain) [a]: 2" in line and "over 20 shared" in line


def test_two_runs_of_one_method_are_told_apart_by_their_folders(run_lits, two_runs):
    rows = json.loads(run_lits("compare", "--json", str(two_runs[0]), str(two_runs[1])).stdout)
    assert [row["method"] for row in rows] == ["cot (chain) [a]", "cot (chain) [b]"]


def test_compare_json_carries_the_paired_statistics(run_lits, two_runs):
    rows = json.loads(run_lits("compare", "--json", str(two_runs[0]), str(two_runs[1])).stdout)
    paired = rows[1]["paired_with_first"]
    assert (paired["shared"], paired["solved_by_a_only"], paired["solved_by_b_only"]) == (20, 2, 6)
    assert paired["difference"] == 0.2 and paired["p_value"] == pytest.approx(0.2890625, abs=1e-6)
    low, high = paired["interval"]
    assert low < 0.2 < high and "paired_with_first" not in rows[0]
