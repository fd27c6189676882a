"""The crosswords transition: place a word, reject malformed or clashing ones."""

from __future__ import annotations

import re
from typing import Any

from lits.api import EnvGroundedTransition, register_transition
from lits.structures.env_grounded import EnvState, EnvStep
from lits_crosswords.board import SLOTS, Board, cells, clash, parse_action, parse_board, place, repeats

_ANSWER = re.compile(r"^Answer:\s*([A-Za-z]{25})\s*$", re.M)


def answer_in(goals: object) -> str | None:
    """The 25-letter solution when the goals carry it (evaluation only), else None."""
    m = _ANSWER.search(str(goals or ""))
    return m.group(1).upper() if m else None


@register_transition("crosswords", task_type="env_grounded")
class CrosswordsTransition(EnvGroundedTransition):
    @staticmethod
    def goal_check(query_or_goals: str, env_state: str) -> tuple[bool, float]:
        """(all 10 words right, fraction of words right) — needs the answer, so eval only."""
        answer = answer_in(query_or_goals)
        if answer is None:
            return False, 0.0
        board = parse_board(env_state)
        right = sum(board.word(s) == "".join(answer[i] for i in cells(s)) for s in SLOTS)
        return right == len(SLOTS), right / len(SLOTS)

    @staticmethod
    def validate_action(env_state: str, action: str) -> tuple[bool, str]:
        try:
            slot, word = parse_action(action)
        except ValueError as exc:
            return False, str(exc)
        board = parse_board(env_state)
        reason = repeats(board, slot, word) or clash(board, slot, word)
        return reason is None, reason or ""

    @staticmethod
    def eval_metrics(query_or_goals: str, env_state: str) -> dict[str, float]:
        """Letter, word and game accuracy against the answer, as Tree of Thoughts reports them."""
        answer = answer_in(query_or_goals)
        if answer is None:
            return {}
        board = parse_board(env_state)
        words = sum(board.word(s) == "".join(answer[i] for i in cells(s)) for s in SLOTS)
        letters = sum(a == b for a, b in zip(board.grid, answer))
        return {"letter_acc": letters / 25, "word_acc": words / 10, "game_acc": float(words == 10)}

    @staticmethod
    def action_correct(query_or_goals: str, action: str) -> bool | None:
        answer = answer_in(query_or_goals)
        if answer is None:
            return None
        try:
            slot, word = parse_action(action)
        except ValueError:
            return False
        return word == "".join(answer[i] for i in cells(slot))

    def init_state(self, **kwargs: Any) -> EnvState:
        return EnvState(init_state=kwargs.get("init_state_str") or Board().render())

    def _step(self, state: EnvState, step_or_action: Any, query_or_goals: str, **kwargs: Any) -> tuple[EnvState, dict]:
        action = step_or_action.action if isinstance(step_or_action, EnvStep) else step_or_action
        slot, word = parse_action(str(action))
        new_env_state = place(parse_board(state.env_state), slot, word).render()
        new_state = state.copy()
        new_state.append(EnvStep(action=action, next_state=new_env_state))
        return new_state, {"goal_reached": self.goal_check(query_or_goals, new_env_state)}

    def is_terminal(self, state: EnvState, query_or_goals: Any = None, **kwargs: Any) -> bool:
        """A full board ends the search; whether it is right is for evaluation to say."""
        return parse_board(state.env_state).is_full()
