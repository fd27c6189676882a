"""The step-pair comparison the real-model tests and ``benchmarks/step_ranking.py`` share, on a fake reward model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lits.export.step_ranking import Ranking, StepPair, load_step_pairs, rank, rank_all, right_first_share

PAIR = StepPair("Q?", ("first step",), "right step", "wrong step")


class TablePRM:
    """Scores each step from a table; records what it was asked."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.asked: list[tuple[list[str], str, str]] = []

    def fast_reward(self, state: Any, action: str, query: str) -> tuple[float, dict[str, object]]:
        self.asked.append(([str(step.action) for step in state], action, query))
        return self.scores[action], {}


def test_both_steps_are_scored_after_the_same_steps_of_the_same_question() -> None:
    prm = TablePRM({"right step": 0.7, "wrong step": 0.2})
    assert rank(prm, PAIR) == Ranking(right=0.7, wrong=0.2)
    assert prm.asked == [(["first step"], "right step", "Q?"), (["first step"], "wrong step", "Q?")]


def test_a_tie_does_not_put_the_right_step_first() -> None:
    assert Ranking(0.5, 0.5).right_first is False
    assert Ranking(0.51, 0.5).right_first and not Ranking(0.4, 0.5).right_first


def test_the_share_counts_the_pairs_won_with_wilsons_interval() -> None:
    prm = TablePRM({"right step": 0.9, "wrong step": 0.1, "right": 0.2, "wrong": 0.3})
    rankings = rank_all(prm, [PAIR, PAIR, StepPair("Q2?", (), "right", "wrong")])
    wins, (lo, hi) = right_first_share(rankings)
    assert wins == 2
    assert lo == pytest.approx(0.2077, abs=1e-4) and hi == pytest.approx(0.9385, abs=1e-4)


def test_pairs_load_from_the_realmodel_tiers_file() -> None:
    path = Path(__file__).parents[1] / "realmodel" / "step_pairs.json"
    pairs = load_step_pairs(path)
    assert len(pairs) == len(json.loads(path.read_text())) >= 12
    assert all(p.correct != p.wrong and isinstance(p.steps, tuple) for p in pairs)
