"""Does a step reward model score a right step above a wrong one?  Hand-written step pairs, ranked (a verifier's
report card in miniature, for the real-model tests and the benchmark).

The real-model tests pin a few clear pairs; ``benchmarks/step_ranking.py``
measures the share over every pair, with its interval (a statistical figure
has no place in a test that must pass or fail the same way every time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from lits.export.verifier import wilson
from lits.structures.language_grounded import ThoughtState, ThoughtStep


@dataclass(frozen=True)
class StepPair:
    """A problem, the steps so far, and a correct and a wrong next step."""

    question: str
    steps: tuple[str, ...]
    correct: str
    wrong: str


@dataclass(frozen=True)
class Ranking:
    """One reward model's scores for the two steps of one pair."""

    right: float
    wrong: float

    @property
    def right_first(self) -> bool:
        """Strictly above: a model that scores both the same has not told them apart."""
        return self.right > self.wrong


def load_step_pairs(path: Path) -> list[StepPair]:
    """Pairs from a JSON list of ``{question, steps, correct, wrong}``."""
    return [
        StepPair(str(p["question"]), tuple(str(s) for s in p["steps"]), str(p["correct"]), str(p["wrong"]))
        for p in json.loads(path.read_text(encoding="utf-8"))
    ]


def rank(prm: Any, pair: StepPair) -> Ranking:
    """``prm``'s fast rewards for the right and the wrong step after the same steps of the same question."""
    state = ThoughtState([ThoughtStep(action=s) for s in pair.steps])
    right = prm.fast_reward(state, pair.correct, pair.question)[0]
    wrong = prm.fast_reward(state, pair.wrong, pair.question)[0]
    return Ranking(float(right), float(wrong))


def rank_all(prm: Any, pairs: Iterable[StepPair]) -> list[Ranking]:
    return [rank(prm, pair) for pair in pairs]


def right_first_share(rankings: Sequence[Ranking]) -> tuple[int, tuple[float, float]]:
    """How many pairs put the right step first, and the Wilson 95 % interval of that share."""
    wins = sum(r.right_first for r in rankings)
    return wins, wilson(wins, len(rankings))
