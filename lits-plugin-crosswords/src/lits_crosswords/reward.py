"""Rewards for crosswords search.

``crosswords`` (the default for this dataset) scores from the board alone:
how well the word fits its clue according to the model, and how much of the
board is filled. It never reads the answers. ``crosswords-oracle`` does read
them — only with ``--dataset-arg oracle=true`` — for studying search with a
perfect reward; results say which reward was used (``config.json``).
"""

from __future__ import annotations

from typing import Any

from lits.api import EnvGroundedPRM, RewardModel, register_reward_model, score_else_ask
from lits.structures.env_grounded import EnvState
from lits_crosswords.board import cells, parse_action, parse_board, place


def clue_for(query: object, slot: str) -> str:
    for line in str(query or "").splitlines():
        if line.lower().startswith(f"{slot}."):
            return line.split(".", 1)[1].strip()
    return ""


def filled_fraction(state: EnvState, action: object) -> float:
    slot, word = parse_action(str(action))
    board = place(parse_board(state.env_state), slot, word)
    return sum(c != "_" for c in board.grid) / 25


@register_reward_model("crosswords", task_type="env_grounded")
class CrosswordsPRM(EnvGroundedPRM):
    """Clue fit judged by the model plus board coverage; no ground truth."""

    def _fast_reward(
        self, state: EnvState, action: object, query: object, query_idx: int | None, from_phase: str = "", **kwargs: Any
    ) -> tuple[float, dict[str, object]]:
        if self.base_model is None or action is None:
            return 0.0, {}
        slot, word = parse_action(str(action))
        clue = clue_for(query, slot)

        def question() -> str:
            template = (self.usr_prompt_spec or {}).get("fit", "Clue: {clue}\nAnswer: {word}\nCorrect? Yes or No:")
            return str(template.format(clue=clue, word=word))

        verdict = score_else_ask(
            self.base_model,
            question,
            system=str(self.task_prompt_spec or ""),
            answer=(f"Crossword clue: {clue}\nFive-letter answer:", f" {word}"),
            per=len(word),
            scoring=self.use_scoring,
        )
        if verdict.unsupported:
            self.use_scoring = False
        if verdict.route == "loglikelihood":
            return verdict.p_yes, {"clue_logprob": verdict.logprob}
        return verdict.p_yes, {"clue_fit": verdict.p_yes}

    def reward(self, state: EnvState, action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        if kwargs.get("error") or action is None:
            return 0.0, {"error": kwargs.get("error")}
        fast = float(kwargs.get("fast_reward", 0.0))
        coverage = filled_fraction(state, action)
        value = self.fast_weight * fast + (1.0 - self.fast_weight) * coverage
        return value, {"fast_reward": fast, "coverage": coverage}


@register_reward_model("crosswords-oracle", task_type="env_grounded")
class CrosswordsOracleRM(RewardModel[EnvState, object]):
    """Reads the answers (ground truth): for experiments only, never the default."""

    TASK_TYPE = "env_grounded"

    def _answer(self, query: object) -> str:
        answer = getattr(query, "answer", None)
        if not answer:
            raise ValueError("the crosswords-oracle reward reads the answers: add --dataset-arg oracle=true")
        return str(answer)

    def _fast_reward(
        self, state: EnvState, action: object, query: object, query_idx: int | None, from_phase: str = "", **kwargs: Any
    ) -> tuple[float, dict[str, object]]:
        answer = self._answer(query)
        slot, word = parse_action(str(action))
        return float(word == "".join(answer[i] for i in cells(slot))), {"oracle": True}

    def reward(self, state: EnvState, action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        if kwargs.get("error") or action is None:
            return 0.0, {"oracle": True}
        return float(kwargs.get("fast_reward", 0.0)), {"oracle": True}
